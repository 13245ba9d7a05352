//! `sim soak`'s triage from the command line: `--triage FILE` writes the
//! soak's failures by signature, `--baseline FILE` compares them with an
//! earlier soak's (the previous night's), `--step-summary FILE` (or
//! `GITHUB_STEP_SUMMARY`) gets the comparison as Markdown, and the JUnit
//! report carries each signature and its status.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use clap::Args;
use livesim::soak::{Comparison, KEPT_PER_AGENT, Shard, Summary, Triage};

/// The environment variable GitHub Actions names the step summary in.
const STEP_SUMMARY_VARIABLE: &str = "GITHUB_STEP_SUMMARY";

#[derive(Args, Debug)]
pub struct TriageArgs {
    /// Write the failures by signature (agent, invariant, the shape of
    /// the shrunk script) to FILE as JSON: each with its count, lowest
    /// seed and replay line.
    #[arg(long, value_name = "FILE")]
    pub triage: Option<PathBuf>,
    /// Compare with FILE (an earlier soak's --triage file): each
    /// signature new, still failing or fixed.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Append the triage as Markdown to FILE. Default: the file
    /// GITHUB_STEP_SUMMARY names, when set (a GitHub Actions step).
    #[arg(long, value_name = "FILE")]
    pub step_summary: Option<PathBuf>,
}

/// Reads `--baseline` before the soak starts, so a damaged file costs no
/// soak.
pub fn baseline(args: &TriageArgs) -> Result<Option<Triage>, String> {
    let Some(path) = &args.baseline else {
        return Ok(None);
    };
    Triage::load(path)
        .map(Some)
        .map_err(|e| format!("--baseline {e}"))
}

/// A soak's triage, and its comparison with the baseline when there is
/// one.
pub struct Triaged {
    pub triage: Triage,
    pub comparison: Option<Comparison>,
    /// Failures beyond those the summary keeps per agent: counted, not
    /// triaged.
    pub untriaged: u64,
}

impl Triaged {
    pub fn new(summary: &Summary, baseline: Option<Triage>, args: &TriageArgs) -> Self {
        let triage = Triage::of_summary(summary);
        let comparison = baseline.map(|baseline| {
            let name = args
                .baseline
                .as_deref()
                .map_or_else(String::new, |p| p.display().to_string());
            triage.compare(&baseline, name)
        });
        let untriaged = summary.agents.iter().map(|a| a.failures_not_kept).sum();
        Triaged {
            triage,
            comparison,
            untriaged,
        }
    }

    /// The section printed after the summary: when something failed, or
    /// there is a baseline to compare with.
    pub fn section(&self) -> Option<String> {
        if self.triage.failures() == 0 && self.comparison.is_none() {
            return None;
        }
        let mut text = self.triage.text(self.comparison.as_ref());
        if self.untriaged > 0 {
            text.push_str(&format!(
                "\n  ({} more failures, beyond the {KEPT_PER_AGENT} kept per agent, not triaged)",
                self.untriaged
            ));
        }
        Some(text)
    }

    /// Writes the summary's JUnit report with each signature added.
    pub fn write_junit(&self, summary: &Summary, path: &Path) -> Result<(), String> {
        let mut report = summary.junit();
        self.triage
            .annotate_junit(&mut report, self.comparison.as_ref());
        let xml = report
            .to_string()
            .map_err(|e| format!("{}: {e}", path.display()))?;
        std::fs::write(path, xml).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Writes `--triage`, and appends the Markdown to the step summary;
    /// each file written named on stderr. `open_ended`: no --seeds, only
    /// the time budget ended the soak.
    pub fn write(
        &self,
        summary: &Summary,
        args: &TriageArgs,
        open_ended: bool,
    ) -> Result<(), String> {
        if let Some(path) = &args.triage {
            self.triage
                .write(path)
                .map_err(|e| format!("cannot write the triage file: {e}"))?;
            note!("livesim sim soak: triage written to {}", path.display());
        }
        let step_summary = args.step_summary.clone().or_else(|| {
            std::env::var_os(STEP_SUMMARY_VARIABLE)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        });
        if let Some(path) = step_summary {
            let markdown = self
                .triage
                .markdown(&title(summary, open_ended), self.comparison.as_ref());
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .and_then(|mut file| writeln!(file, "{markdown}"))
                .map_err(|e| format!("cannot write the step summary: {}: {e}", path.display()))?;
            note!(
                "livesim sim soak: triage appended to {} as Markdown",
                path.display()
            );
        }
        Ok(())
    }
}

/// `livesim sim soak: booking, payment (seeds 0..2000, shard 3/8)`; a
/// soak only its time budget ended (`open_ended`) says where it started.
fn title(summary: &Summary, open_ended: bool) -> String {
    let names: Vec<&str> = summary.agents.iter().map(|a| a.name.as_str()).collect();
    let seeds = if open_ended {
        format!("seeds from {}", summary.seeds.start)
    } else {
        format!("seeds {}..{}", summary.seeds.start, summary.seeds.end)
    };
    let shard = if summary.shard == Shard::WHOLE {
        String::new()
    } else {
        format!(", shard {}", summary.shard)
    };
    format!("livesim sim soak: {} ({seeds}{shard})", names.join(", "))
}
