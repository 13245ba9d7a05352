//! The seed runner: what a test calls to run itself under many seeds.
//!
//! Each seed runs in a fresh [`Simulation`]. Which seeds run comes from the
//! environment when it says so, from the test otherwise:
//!
//! | variable | meaning |
//! |---|---|
//! | `LIVESIM_SEED=0x2a` | run exactly this seed (replaying a failure) |
//! | `LIVESIM_SEEDS=1000` | run seeds `0..1000` |
//! | `LIVESIM_SEEDS=5000..6000` | run that range (sharding a soak) |
//! | `LIVESIM_CHECK_DETERMINISM=1` | run every seed twice and compare traces |
//! | `LIVESIM_CHECK_DETERMINISM=0` | skip the check, even on the first seed |
//! | `LIVESIM_LOG=scheduling` | show every scheduling decision in reports |
//! | `RUST_LOG=livesim=debug` | capture logs at that level for the report |
//! | `LIVESIM_REGRESSIONS=read` | run the recorded regression seeds, but never write the file (CI); `off`: neither |
//! | `LIVESIM_REGRESSIONS_DIR=dir` | keep regression files under `dir` instead of the crate |
//!
//! A test with a [regressions file](super::regressions_file) (every
//! `#[livesim::test]` has one) runs the seeds recorded there first, then
//! its own, however few (a run of one seed, `LIVESIM_SEED` or a pinned
//! `seed = …`, runs that seed alone); a seed of its own that fails in a
//! run of several is appended to the file, so it runs first from then on.
//!
//! A run of several seeds checks determinism on its first seed by default
//! (it runs twice and the traces must match), which catches a leak of real
//! time or OS randomness before a thousand seeds are spent on it;
//! [`Runner::check_determinism`] or the variable turn it off or extend it
//! to every seed.
//!
//! The first failing seed stops the run with a [`Report`]: the seed, what
//! failed and where, the swarm options, the last trace entries (scheduling
//! folded), the captured logs, and one line that replays it exactly. A
//! passing run of several seeds (or of a pinned seed the environment
//! overrode) prints one line to stderr, straight to the process's stderr
//! so `cargo test` shows it for passing tests too (nextest shows it with
//! `--success-output immediate`): `livesim: 10000 seeds passed in 4.3 s;
//! 308 distinct interleavings (seeds from LIVESIM_SEEDS=10000)`.

use std::fmt;
use std::future::Future;
use std::io::Write as _;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::determinism;
use super::failure::{Failure, FailureKind};
use super::fold::show_scheduling;
use super::logs::Capture;
use super::regressions::{self, Use};
use super::report::{REPORT_LOG_LINES, Report, Summary};
use super::runtime::{DEFAULT_POLL_LIMIT, DEFAULT_TIME_LIMIT, Simulation};
use super::seed::Seed;
use super::swarm::Swarm;
use super::test_id::TestId;
use super::watch::{Sentinel, Watch};

/// Which seeds a run covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SeedPlan {
    /// Exactly one seed.
    One(Seed),
    /// Every seed in the range.
    Range(Range<u64>),
}

impl SeedPlan {
    /// The plan the environment asks for (`LIVESIM_SEED`, then
    /// `LIVESIM_SEEDS`), or `default` when it asks for nothing.
    ///
    /// # Errors
    /// When a variable is set to something that is not a seed or a count.
    pub fn from_env(default: SeedPlan) -> Result<SeedPlan, String> {
        Ok(Self::env()?.map_or(default, |(plan, _)| plan))
    }

    /// The plan the environment asks for, with the setting that asked
    /// (`LIVESIM_SEEDS=1000`), or `None`.
    fn env() -> Result<Option<(SeedPlan, String)>, String> {
        if let Ok(one) = std::env::var("LIVESIM_SEED") {
            let plan = one
                .parse::<Seed>()
                .map(SeedPlan::One)
                .map_err(|e| format!("LIVESIM_SEED: {e}"))?;
            return Ok(Some((plan, format!("LIVESIM_SEED={}", one.trim()))));
        }
        match std::env::var("LIVESIM_SEEDS") {
            Ok(spec) => {
                let plan = SeedPlan::parse(&spec).map_err(|e| format!("LIVESIM_SEEDS: {e}"))?;
                Ok(Some((plan, format!("LIVESIM_SEEDS={}", spec.trim()))))
            }
            Err(_) => Ok(None),
        }
    }

    /// Parses `N` (seeds `0..N`), `A..B` or `A..=B` (hex or decimal).
    pub fn parse(spec: &str) -> Result<SeedPlan, String> {
        let spec = spec.trim();
        let bad = |why: String| {
            format!(
                "`{spec}` is not a seed count or range: {why} (write 1000, 0..1000 or 0x10..=0x20)"
            )
        };
        if let Some((a, b)) = spec.split_once("..") {
            let (b, inclusive) = match b.strip_prefix('=') {
                Some(b) => (b, true),
                None => (b, false),
            };
            let a = a.parse::<Seed>().map_err(|e| bad(e.to_string()))?.value();
            let b = b.parse::<Seed>().map_err(|e| bad(e.to_string()))?.value();
            if inclusive && b == u64::MAX {
                // The largest seed cannot end a half-open range: alone it
                // is a plan of one, with others it would be dropped.
                if a == b {
                    return Ok(SeedPlan::One(Seed::new(b)));
                }
                return Err(bad(format!(
                    "a range cannot reach the largest seed, {b:#x}: end it at {:#x}, and run {b:#x} on its own",
                    b - 1
                )));
            }
            let end = if inclusive { b + 1 } else { b };
            if end <= a {
                return Err(bad("the range is empty".to_string()));
            }
            return Ok(SeedPlan::Range(a..end));
        }
        let n = spec
            .parse::<Seed>()
            .map_err(|e| bad(e.to_string()))?
            .value();
        if n == 0 {
            return Err(bad("zero seeds would test nothing".to_string()));
        }
        Ok(SeedPlan::Range(0..n))
    }

    /// The seeds, in order.
    pub fn seeds(&self) -> impl Iterator<Item = Seed> + '_ {
        // Inclusive, so that a plan of the largest seed holds it.
        let (first, last) = match self {
            SeedPlan::One(seed) => (seed.value(), Some(seed.value())),
            SeedPlan::Range(range) => (range.start, range.end.checked_sub(1)),
        };
        last.filter(|last| *last >= first)
            .into_iter()
            .flat_map(move |last| first..=last)
            .map(Seed::new)
    }

    /// How many seeds the plan covers.
    pub fn len(&self) -> u64 {
        match self {
            SeedPlan::One(_) => 1,
            SeedPlan::Range(r) => r.end - r.start,
        }
    }

    /// Whether the plan covers no seed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What a test future may return: `()` passes, `Err` fails the seed.
pub trait Outcome {
    /// `Ok` if the run passed, or the error to report.
    fn into_result(self) -> Result<(), String>;
}

impl Outcome for () {
    fn into_result(self) -> Result<(), String> {
        Ok(())
    }
}

impl<E: fmt::Debug> Outcome for Result<(), E> {
    fn into_result(self) -> Result<(), String> {
        self.map_err(|e| format!("{e:?}"))
    }
}

/// How much of a run the determinism check covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Check {
    Off,
    FirstSeed,
    EverySeed,
}

/// Runs a test under a plan of seeds.
///
/// ```
/// use livesim::executor::Runner;
///
/// Runner::new(livesim::test_id!()).seeds(20).run(|seed| async move {
///     livesim::executor::yield_point("demo").await;
///     assert_eq!(livesim::executor::seed(), Some(seed));
/// });
/// ```
#[derive(Clone, Debug)]
pub struct Runner {
    test: TestId,
    default_plan: SeedPlan,
    time_limit: Duration,
    poll_limit: u64,
    swarm: Option<Swarm>,
    check_determinism: Option<bool>,
    on_failure: Option<fn(&mut Report)>,
    /// The regressions file, and the source file it is for.
    regressions: Option<(PathBuf, String)>,
    /// Wall time a seed may run before it is reported as a hang.
    hang_after: Duration,
}

/// Log filter for re-running a failing seed when `RUST_LOG` is unset.
const FAILURE_LOG_FILTER: &str = "livesim=debug";

impl Runner {
    /// A runner for `test` (use [`test_id!`](crate::test_id)); one seed, 0,
    /// unless told otherwise.
    pub fn new(test: TestId) -> Self {
        Runner {
            test,
            default_plan: SeedPlan::Range(0..1),
            time_limit: DEFAULT_TIME_LIMIT,
            poll_limit: DEFAULT_POLL_LIMIT,
            swarm: None,
            check_determinism: None,
            on_failure: None,
            regressions: None,
            hang_after: super::watch::hang_bound(),
        }
    }

    /// Keeps this test's failing seeds in `file`, and runs the seeds
    /// recorded there first (see [`regressions_file`](super::regressions_file)
    /// for the format and the environment).
    pub fn regressions(mut self, file: impl Into<PathBuf>) -> Self {
        let file = file.into();
        let source = file.display().to_string();
        self.regressions = Some((file, source));
        self
    }

    /// Keeps this test's failing seeds in the regressions file of the
    /// source file `file` (`file!()`) of the crate in `manifest_dir`
    /// (`env!("CARGO_MANIFEST_DIR")`): what `#[livesim::test]` does.
    pub fn regressions_beside(mut self, manifest_dir: &str, file: &str) -> Self {
        let path = regressions::regressions_file(manifest_dir, file);
        self.regressions = Some((path, file.replace('\\', "/")));
        self
    }

    /// Runs seeds `0..n` unless the environment names other seeds.
    pub fn seeds(mut self, n: u64) -> Self {
        self.default_plan = SeedPlan::Range(0..n.max(1));
        self
    }

    /// Runs exactly `seed` unless the environment names other seeds.
    pub fn seed(mut self, seed: Seed) -> Self {
        self.default_plan = SeedPlan::One(seed);
        self
    }

    /// How long one seed may run in wall time before the runner reports
    /// it as a hang and ends the process with status 101 (default
    /// [`DEFAULT_HANG`](super::DEFAULT_HANG), or `LIVESIM_HANG`). A task
    /// that never yields (a busy loop with no `.await`) holds the thread
    /// the simulation runs on, so neither the virtual time limit nor the
    /// deadlock watchdog can end it; this guard, on a thread of its own,
    /// prints what was running, its replay line and the last trace
    /// entries instead of hanging the test run.
    pub fn hang_after(mut self, bound: Duration) -> Self {
        self.hang_after = bound;
        self
    }

    /// Each run's virtual time limit.
    pub fn time_limit(mut self, limit: Duration) -> Self {
        self.time_limit = limit;
        self
    }

    /// Each run's poll limit (livelock detection).
    pub fn poll_limit(mut self, limit: u64) -> Self {
        self.poll_limit = limit;
        self
    }

    /// Uses this swarm for every seed instead of drawing one per seed.
    pub fn swarm(mut self, swarm: Swarm) -> Self {
        self.swarm = Some(swarm);
        self
    }

    /// Whether to check determinism (run a seed twice, compare traces):
    /// `true` checks every seed, `false` none. By default a run of several
    /// seeds checks its first seed. `LIVESIM_CHECK_DETERMINISM` overrides
    /// both: `1` every seed, `0` none.
    pub fn check_determinism(mut self, on: bool) -> Self {
        self.check_determinism = Some(on);
        self
    }

    /// Calls `hook` with the report of a failing seed before [`run`](Self::run)
    /// prints it: `#[livesim::test]` passes
    /// [`timeline::write_test_timeline`](crate::timeline::write_test_timeline),
    /// which writes the seed's timeline page and names it in the report.
    pub fn on_failure(mut self, hook: fn(&mut Report)) -> Self {
        self.on_failure = Some(hook);
        self
    }

    /// The determinism check for a plan of `seeds` seeds.
    fn check(&self, seeds: u64) -> Check {
        let env = std::env::var("LIVESIM_CHECK_DETERMINISM").unwrap_or_default();
        match env.trim() {
            "" => {}
            "0" | "false" | "off" | "no" => return Check::Off,
            _ => return Check::EverySeed,
        }
        match self.check_determinism {
            Some(true) => Check::EverySeed,
            Some(false) => Check::Off,
            None if seeds > 1 => Check::FirstSeed,
            None => Check::Off,
        }
    }

    /// The simulation one seed runs in.
    pub fn simulation(&self, seed: Seed) -> Simulation {
        let mut sim = Simulation::new(seed)
            .time_limit(self.time_limit)
            .poll_limit(self.poll_limit);
        if let Some(swarm) = &self.swarm {
            sim = sim.swarm(swarm.clone());
        }
        sim
    }

    /// Runs the plan; panics with the report of the first failing seed.
    /// The panic is reported at the caller (the test), and the report
    /// names where the test's own code panicked.
    #[track_caller]
    pub fn run<F, Fut>(self, test: F) -> Summary
    where
        F: Fn(Seed) -> Fut,
        Fut: Future + 'static,
        Fut::Output: Outcome + 'static,
    {
        let hook = self.on_failure;
        match self.try_run(test) {
            Ok(summary) => summary,
            // The trace and captured logs may quote what a server sent:
            // scrubbed of every remembered secret before it is printed.
            Err(mut report) => {
                if let Some(hook) = hook {
                    hook(&mut report);
                }
                panic!("\n{}\n", crate::wire::scrub_known(&report.to_string()))
            }
        }
    }

    /// Runs the plan; returns the report of the first failing seed.
    ///
    /// # Panics
    /// When `LIVESIM_SEED` or `LIVESIM_SEEDS` is set to something that is
    /// not a seed plan.
    #[track_caller]
    pub fn try_run<F, Fut>(self, test: F) -> Result<Summary, Box<Report>>
    where
        F: Fn(Seed) -> Fut,
        Fut: Future + 'static,
        Fut::Output: Outcome + 'static,
    {
        self.try_run_with(|sim: &Simulation| {
            let seed = sim.seed();
            sim.run(|| test(seed))
        })
    }

    /// Runs the plan with each seed's run made by `run` from the seed's
    /// [`Simulation`], for runs that [`Simulation::run`] cannot host (a
    /// network simulator stepped in [enter mode](Simulation::enter)).
    /// Reports, the determinism check and the replay line are the same.
    #[track_caller]
    pub fn run_with<F, T>(self, run: F) -> Summary
    where
        F: Fn(&Simulation) -> Result<super::runtime::Outcome<T>, Box<Failure>>,
        T: Outcome,
    {
        let hook = self.on_failure;
        match self.try_run_with(run) {
            Ok(summary) => summary,
            Err(mut report) => {
                if let Some(hook) = hook {
                    hook(&mut report);
                }
                panic!("\n{report}\n")
            }
        }
    }

    /// [`run_with`](Self::run_with), returning the report of the first
    /// failing seed.
    ///
    /// # Panics
    /// At the caller, when `LIVESIM_SEED`, `LIVESIM_SEEDS` or
    /// `LIVESIM_REGRESSIONS` holds something it cannot mean, or the
    /// regressions file cannot be read.
    #[track_caller]
    pub fn try_run_with<F, T>(self, run: F) -> Result<Summary, Box<Report>>
    where
        F: Fn(&Simulation) -> Result<super::runtime::Outcome<T>, Box<Failure>>,
        T: Outcome,
    {
        let (plan, chosen_by) = match SeedPlan::env() {
            Ok(Some((plan, setting))) => {
                let note = match &self.default_plan {
                    SeedPlan::One(pinned) if plan != self.default_plan => {
                        format!("{setting} overrides the test's pinned seed {pinned}")
                    }
                    _ => format!("seeds from {setting}"),
                };
                (plan, Some(note))
            }
            Ok(None) => (self.default_plan.clone(), None),
            Err(e) => panic!("livesim: {e}"),
        };
        // Recorded regressions run first whenever the test runs a range
        // of seeds, however short (`LIVESIM_SEEDS=1` too); one seed, pinned
        // or replayed (`LIVESIM_SEED`), runs alone. Only a run of several
        // seeds records its failing seed: one seed's failure needs no
        // file to run again.
        let regressions = match (&self.regressions, &plan) {
            (Some((file, _)), SeedPlan::Range(range)) => {
                let use_ = match Use::from_env() {
                    Ok(Use::ReadWrite) if range.end - range.start <= 1 => Use::Read,
                    Ok(use_) => use_,
                    Err(e) => panic!("livesim: {e}"),
                };
                let seeds = match use_ {
                    Use::Off => Vec::new(),
                    _ => match regressions::read(file, &self.test.name) {
                        Ok(seeds) => seeds,
                        Err(e) => panic!("livesim: regressions file {e}"),
                    },
                };
                Some((use_, seeds))
            }
            _ => None,
        };
        let recorded: Vec<Seed> = regressions
            .as_ref()
            .map(|(_, seeds)| seeds.clone())
            .unwrap_or_default();
        // Wall time is for the summary line only; it never enters a run.
        #[allow(clippy::disallowed_methods)]
        let started = std::time::Instant::now();
        let overlap = recorded
            .iter()
            .filter(|s| plan_contains(&plan, **s))
            .count() as u64;
        let check = self.check(plan.len() + recorded.len() as u64 - overlap);
        let env_filter = std::env::var("RUST_LOG").ok().filter(|f| !f.is_empty());
        let total = plan.len() + recorded.len() as u64 - overlap;
        let mut summary = Summary {
            chosen_by: chosen_by.clone(),
            regressions: recorded.len() as u64,
            ..Summary::default()
        };
        let mut warned = false;
        let watch = Arc::new(Watch::default());
        let _sentinel = Sentinel::exiting(watch.clone(), self.hang_after);
        let seeds = recorded
            .iter()
            .copied()
            .chain(plan.seeds().filter(|seed| !recorded.contains(seed)));
        for (i, seed) in seeds.enumerate() {
            let capture = env_filter.as_deref().map(Capture::new);
            let first = self.run_seed(seed, &run, capture.as_ref(), &watch);
            if !warned && let Some(warning) = first.warnings().first() {
                warned = true;
                eprint_direct(&format!("livesim: {warning}"));
            }
            let twice = check == Check::EverySeed || (check == Check::FirstSeed && i == 0);
            let mut nondeterminism = None;
            if twice {
                let second = self.run_seed(seed, &run, None, &watch);
                if let Err(nd) = determinism::compare(seed, first.trace(), second.trace()) {
                    nondeterminism = Some(nd);
                }
            }
            let failure = match (first, nondeterminism.as_ref()) {
                (Ok(outcome), None) => {
                    summary.seeds += 1;
                    summary.hashes.push((seed, outcome.trace.hash()));
                    summary.interleavings.push(outcome.trace.interleaving());
                    summary.virtual_time += outcome.elapsed;
                    continue;
                }
                (Ok(outcome), Some(nd)) => Box::new(Failure::new(
                    seed,
                    self.simulation(seed).swarm_options().clone(),
                    FailureKind::Error(format!(
                        "the run is not deterministic (first divergence at entry #{})",
                        nd.divergence.index
                    )),
                    outcome.elapsed,
                    outcome.trace,
                )),
                (Err(failure), _) => failure,
            };
            // Logs: what RUST_LOG captured, or a re-run of the seed at debug
            // level (the run is deterministic, so it fails the same way).
            let capture = capture.unwrap_or_else(|| {
                let capture = Capture::new(FAILURE_LOG_FILTER);
                let _ = self.run_seed(seed, &run, Some(&capture), &watch);
                capture
            });
            let (lines, earlier) = capture.tail(REPORT_LOG_LINES);
            let regression = self.note_regression(
                regressions.as_ref().map(|(use_, _)| *use_),
                recorded.contains(&seed),
                seed,
                &failure.summary(),
            );
            return Err(Box::new(Report {
                regression,
                test: self.test.clone(),
                failure,
                nondeterminism,
                position: (i as u64 + 1, total),
                logs: Some((capture.filter().to_string(), lines, earlier)),
                scheduling: show_scheduling(),
                timeline: None,
            }));
        }
        if total > 1 || chosen_by.is_some_and(|_| matches!(self.default_plan, SeedPlan::One(_))) {
            eprint_direct(&summary.line(started.elapsed()));
        }
        Ok(summary)
    }

    /// Records a failing `seed` in the regressions file when it is new
    /// and writing is allowed; says what the report should say about it.
    fn note_regression(
        &self,
        use_: Option<Use>,
        recorded: bool,
        seed: Seed,
        why: &str,
    ) -> Option<String> {
        let (file, source) = self.regressions.as_ref()?;
        let use_ = use_?;
        if recorded {
            return Some(format!(
                "seed {seed} is a recorded regression ({}): it failed before",
                file.display()
            ));
        }
        if use_ != Use::ReadWrite {
            return None;
        }
        Some(
            match regressions::append(file, source, &self.test.name, seed, why) {
                Ok(()) => format!(
                    "seed {seed} recorded in {}: it runs first from now on (commit the file)",
                    file.display()
                ),
                Err(e) => format!(
                    "seed {seed} could not be recorded in {}: {e}",
                    file.display()
                ),
            },
        )
    }

    fn run_seed<F, T>(
        &self,
        seed: Seed,
        run: &F,
        capture: Option<&Capture>,
        watch: &Arc<Watch>,
    ) -> Result<super::runtime::Outcome<()>, Box<Failure>>
    where
        F: Fn(&Simulation) -> Result<super::runtime::Outcome<T>, Box<Failure>>,
        T: Outcome,
    {
        let sim = self.simulation(seed);
        let once = || run(&sim);
        let watched = || match capture {
            Some(capture) => capture.scope(once),
            None => once(),
        };
        let what = format!("{} seed {seed}", self.test.name);
        let result = watch.run(what, self.test.replay_command(seed), watched);
        let outcome = result?;
        match outcome.value.into_result() {
            Ok(()) => Ok(super::runtime::Outcome {
                value: (),
                trace: outcome.trace,
                elapsed: outcome.elapsed,
                warnings: outcome.warnings,
            }),
            Err(e) => {
                let mut failure = Failure::new(
                    seed,
                    sim.swarm_options().clone(),
                    FailureKind::Error(e),
                    outcome.elapsed,
                    outcome.trace,
                );
                failure.warnings = outcome.warnings;
                Err(Box::new(failure))
            }
        }
    }
}

/// Whether `plan` runs `seed`.
fn plan_contains(plan: &SeedPlan, seed: Seed) -> bool {
    match plan {
        SeedPlan::One(one) => *one == seed,
        SeedPlan::Range(range) => range.contains(&seed.value()),
    }
}

/// Writes one line to the process's stderr, past the test harness's
/// output capture: a passing test's summary must show under `cargo test`.
fn eprint_direct(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// The trace and warnings of a run, whichever way it ended.
trait RunOf {
    fn trace(&self) -> &super::trace::Trace;
    fn warnings(&self) -> &[String];
}

impl RunOf for Result<super::runtime::Outcome<()>, Box<Failure>> {
    fn trace(&self) -> &super::trace::Trace {
        match self {
            Ok(outcome) => &outcome.trace,
            Err(failure) => &failure.trace,
        }
    }

    fn warnings(&self) -> &[String] {
        match self {
            Ok(outcome) => &outcome.warnings,
            Err(failure) => &failure.warnings,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_parse() {
        assert_eq!(SeedPlan::parse("3").unwrap(), SeedPlan::Range(0..3));
        assert_eq!(SeedPlan::parse("10..20").unwrap(), SeedPlan::Range(10..20));
        assert_eq!(
            SeedPlan::parse("0x10..=0x11").unwrap(),
            SeedPlan::Range(16..18)
        );
        assert!(SeedPlan::parse("0").unwrap_err().contains("zero seeds"));
        assert!(SeedPlan::parse("5..5").unwrap_err().contains("empty"));
        assert!(SeedPlan::parse("x").unwrap_err().contains("`x`"));
    }

    /// The largest seed is a plan of its own, and runs; a range that
    /// would end past it is refused, not cut short.
    #[test]
    fn the_largest_seed_is_planned_alone() {
        let max = u64::MAX;
        let alone = SeedPlan::parse(&format!("{max}..={max}")).unwrap();
        assert_eq!(alone, SeedPlan::One(Seed::new(max)));
        assert_eq!(alone.seeds().collect::<Vec<_>>(), [Seed::new(max)]);
        assert_eq!(alone.len(), 1);
        let error = SeedPlan::parse(&format!("{}..={max}", max - 2)).unwrap_err();
        assert!(error.contains("end it at 0xfffffffffffffffe"), "{error}");
        assert_eq!(
            SeedPlan::Range(max - 2..max).seeds().count(),
            2,
            "a half-open range ends before its end"
        );
        assert_eq!(SeedPlan::Range(4..4).seeds().count(), 0);
    }
}
