//! What a run of seeds says: the [`Report`] of its first failing seed,
//! ready to print, or the [`Summary`] of a passing run and its one line.

use std::collections::BTreeSet;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use super::determinism::NonDeterminism;
use super::failure::Failure;
use super::fold;
use super::seed::Seed;
use super::test_id::TestId;

/// What passing seeds add up to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// How many seeds ran (each twice under the determinism check).
    pub seeds: u64,
    /// Each seed with its trace hash, in run order.
    pub hashes: Vec<(Seed, u64)>,
    /// Virtual time, summed over the runs.
    pub virtual_time: Duration,
    /// Each seed's interleaving fingerprint (what its lanes and tasks did,
    /// in order; see [`Trace::interleaving`](super::Trace::interleaving)).
    pub interleavings: Vec<u64>,
    /// Where the seeds came from when the environment chose them
    /// (`LIVESIM_SEEDS=10000`), and whether that overrode a seed the test
    /// pinned.
    pub chosen_by: Option<String>,
    /// How many of the seeds were recorded regressions, run first.
    pub regressions: u64,
}

impl Summary {
    /// How many distinct interleavings the seeds produced.
    pub fn distinct_interleavings(&self) -> usize {
        self.interleavings.iter().collect::<BTreeSet<_>>().len()
    }

    /// The one line a passing run prints: `10000 seeds passed in 4.3 s;
    /// 308 distinct interleavings`, and where the seeds came from when
    /// the environment chose them. `wall` is the real time the run took,
    /// for the reader only.
    pub fn line(&self, wall: Duration) -> String {
        let seeds = if self.seeds == 1 { "seed" } else { "seeds" };
        let distinct = self.distinct_interleavings();
        let kinds = if distinct == 1 {
            "interleaving"
        } else {
            "interleavings"
        };
        let mut line = format!(
            "livesim: {} {seeds} passed in {:.1} s; {distinct} distinct {kinds}",
            self.seeds,
            wall.as_secs_f64()
        );
        if self.regressions > 0 {
            let seeds = if self.regressions == 1 {
                "seed"
            } else {
                "seeds"
            };
            line.push_str(&format!(
                "; {} recorded regression {seeds} ran first",
                self.regressions
            ));
        }
        if let Some(chosen_by) = &self.chosen_by {
            line.push_str(&format!(" ({chosen_by})"));
        }
        line
    }
}

/// Why a run of seeds failed, ready to print.
#[derive(Debug)]
pub struct Report {
    /// The test that failed.
    pub test: TestId,
    /// The failure of the first failing seed.
    pub failure: Box<Failure>,
    /// Set when the failure is that two runs of the seed differed.
    pub nondeterminism: Option<NonDeterminism>,
    /// Which run of the plan failed (1-based) and how many were planned.
    pub position: (u64, u64),
    /// Captured log lines, and the filter they were captured with.
    pub logs: Option<(String, Vec<String>, usize)>,
    /// Whether the trace and logs show every scheduling decision
    /// (`LIVESIM_LOG=scheduling`) rather than one folded line per instant.
    pub scheduling: bool,
    /// Where the failing seed's timeline page was written, or why it
    /// could not be (set by a [failure hook](super::Runner::on_failure);
    /// `#[livesim::test]` writes one).
    pub timeline: Option<Result<PathBuf, String>>,
    /// What the regressions file says of the seed: recorded now, or
    /// recorded before.
    pub regression: Option<String>,
}

/// Trace entries (other than scheduling) shown in a report.
pub(crate) const REPORT_TRACE_LINES: usize = 40;
/// Log lines shown in a report.
pub(crate) const REPORT_LOG_LINES: usize = 40;

impl Report {
    /// The command that replays the failing seed.
    pub fn replay_command(&self) -> String {
        let mut line = self.test.replay_command(self.failure.seed);
        if self.nondeterminism.is_some() {
            line = format!("LIVESIM_CHECK_DETERMINISM=1 {line}");
        }
        line
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let failure = &self.failure;
        writeln!(
            f,
            "livesim: seed {} failed (run {} of {}) in {}",
            failure.seed, self.position.0, self.position.1, self.test
        )?;
        let what = match &self.nondeterminism {
            Some(nd) => nd.to_string(),
            None => failure.summary(),
        };
        writeln!(f, "  {}", what.replace('\n', "\n  "))?;
        writeln!(f, "  swarm: {}", failure.swarm)?;
        let total = failure.trace.len();
        let (lines, shown, folded) =
            fold::trace_tail(&failure.trace, REPORT_TRACE_LINES, self.scheduling);
        if self.scheduling {
            writeln!(f, "  trace (last {shown} of {total} entries):")?;
        } else {
            writeln!(
                f,
                "  trace (last {shown} of {total} entries; {folded} scheduling entries \
                 folded, LIVESIM_LOG=scheduling shows each):"
            )?;
        }
        for line in lines {
            writeln!(f, "    {line}")?;
        }
        if let Some((filter, lines, earlier)) = &self.logs {
            let folded = if self.scheduling {
                ""
            } else {
                "; scheduling folded"
            };
            if lines.is_empty() {
                writeln!(f, "  logs ({filter}{folded}): none")?;
            } else {
                writeln!(
                    f,
                    "  logs ({filter}; last {} lines, {earlier} earlier{folded}):",
                    lines.len()
                )?;
                for line in lines {
                    writeln!(f, "    {line}")?;
                }
            }
        }
        match &self.timeline {
            Some(Ok(path)) => writeln!(f, "  timeline: {}", path.display())?,
            Some(Err(why)) => writeln!(f, "  timeline: not written ({why})")?,
            None => {}
        }
        if let Some(note) = &self.regression {
            writeln!(f, "  {note}")?;
        }
        write!(f, "  replay: {}", self.replay_command())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_line_counts_seeds_and_interleavings() {
        let summary = Summary {
            seeds: 10_000,
            interleavings: vec![1, 2, 2, 3],
            chosen_by: Some("LIVESIM_SEEDS=10000 overrides the pinned seed 0x24".into()),
            ..Summary::default()
        };
        assert_eq!(
            summary.line(Duration::from_millis(4321)),
            "livesim: 10000 seeds passed in 4.3 s; 3 distinct interleavings \
             (LIVESIM_SEEDS=10000 overrides the pinned seed 0x24)"
        );
    }
}
