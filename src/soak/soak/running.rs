//! Running a soak: one seed, one case, a kept entry, shrinking, all the
//! seeds; and several agents' soaks together.

use std::io::Write as _;
use std::ops::Range;
use std::path::PathBuf;
use std::time::Duration;

use crate::executor::{Seed, SeedPlan, Swarm, Trace};
use crate::soak::case::Case;
use crate::soak::check::report::Summary;
use crate::soak::generate::faults::Faults;
use crate::soak::generate::steps::{Step, as_code as steps_as_code, script as steps_script};
use crate::soak::keep::corpus::CorpusEntry;
use crate::soak::keep::replay::kept_cases;
use crate::soak::keep::shrink::ShrinkBudget;
use crate::soak::keep::shrink::{ShrinkError, ShrinkProgress, Shrunk};
use crate::soak::run::engine::{Checks, SeedRun, Target, run_case, run_seed, simulate};
use crate::soak::run::plan::{KeptCase, Plan, Progress, run_plan};
use crate::soak::run::shard::Shard;
use crate::testing::ScriptedServer;

use super::{CASE_VARIABLE, Soak};

impl Soak {
    /// Runs one seed and returns everything about it (the record, each
    /// verdict, the goals reached, the failures).
    ///
    /// # Panics
    /// At the caller, on a setting that cannot be what was meant, as
    /// [`try_run`](Self::try_run) does.
    #[track_caller]
    pub fn run_seed(&self, seed: Seed) -> SeedRun {
        self.refuse_mistakes();
        run_seed(&self.target, seed, self.checks).handed_out()
    }

    /// Plays `case` in its simulation as a run does (the session, the
    /// script, the typing user, the record) and checks nothing: the floor
    /// `benches/soak.rs` measures a run against. The run's virtual time,
    /// or `None` when the simulation failed.
    #[doc(hidden)]
    pub fn play_unchecked(&self, case: &Case) -> Option<Duration> {
        simulate(&self.target, case, case.schedule())
            .ok()
            .map(|outcome| outcome.value.virtual_time)
    }

    /// What seed `seed` plays: its swarm, faults and generated script.
    pub fn case(&self, seed: Seed) -> Case {
        self.target.case(seed)
    }

    /// Runs `case` (a seed's own, a shrunk one, a corpus entry's) and
    /// returns everything about it, as [`run_seed`](Self::run_seed) does.
    pub fn run_case(&self, case: &Case) -> SeedRun {
        run_case(&self.target, case, self.checks, None).handed_out()
    }

    /// Replays a corpus entry: its case, with every invariant checked and
    /// determinism too (the case runs twice). It passes when
    /// `failures` is empty.
    pub fn replay(&self, entry: &CorpusEntry) -> SeedRun {
        let checks = Checks {
            determinism_every: 1,
        };
        run_case(&self.target, &entry.case, checks, None).handed_out()
    }

    /// Shrinks `case`, which breaks `invariant`, to a small case that
    /// breaks it too, within `budget`: candidate runs, and wall time as an
    /// outer cap (a [`Duration`] is that cap with [`DEFAULT_RUNS`]
    /// runs; see the [shrinking stages](crate::soak::Shrunk));
    /// `progress` hears of each stage.
    ///
    /// [`DEFAULT_RUNS`]: crate::soak::DEFAULT_RUNS
    ///
    /// ```no_run
    /// use livesim::soak::{Agent, Case, DEFAULT_BUDGET, Soak};
    ///
    /// let soak = Soak::agent(&Agent::load("sim/payment").unwrap());
    /// let summary = soak.try_run().unwrap_err();
    /// let failure = summary.failures().next().unwrap();
    /// let shrunk = Soak::agent(&Agent::load("sim/payment").unwrap())
    ///     .shrink(&Case::from(failure), &failure.invariant, DEFAULT_BUDGET, &|p| eprintln!("{p}"))
    ///     .unwrap();
    /// println!("{shrunk}"); // payment seed 0xf: … shrunk from 57 to 3 actions in 212 runs, 4.1s
    /// ```
    pub fn shrink(
        &self,
        case: &Case,
        invariant: &str,
        budget: impl Into<ShrinkBudget>,
        progress: &(dyn Fn(&ShrinkProgress) + Sync),
    ) -> Result<Shrunk, ShrinkError> {
        crate::soak::keep::shrink::shrink(&self.target, case, invariant, budget.into(), progress)
    }

    /// Plays a conversation written as [`Step`]s (what a property test
    /// draws: see [`fuzz`](crate::soak::fuzz)) against this soak's agent
    /// under `seed` (its swarm and faults), and checks every invariant.
    ///
    /// ```
    /// use livesim::Seed;
    /// use livesim::prelude::*;
    /// use livesim::soak::{Soak, Step};
    ///
    /// let soak = Soak::new("echo", || {
    ///     Live::builder().tools(T::simple("echo", "Says it back", |args| async move { Ok(args) }))
    /// });
    /// let steps = [Step::Parallel(vec![0, 0]), Step::Cancel(0), Step::Pause(20)];
    /// let run = soak.run_steps(Seed::new(3), &steps);
    /// assert_eq!(run.verdict(), Ok(()));
    /// ```
    ///
    /// # Panics
    /// At the caller, on a setting that cannot be what was meant, as
    /// [`try_run`](Self::try_run) does.
    #[track_caller]
    pub fn run_steps(&self, seed: Seed, steps: &[Step]) -> SeedRun {
        self.refuse_mistakes();
        let case = Case {
            seed,
            swarm: Swarm::draw(seed),
            faults: self.target.faults(seed),
            script: steps_script(steps, &self.target.repertoire, seed),
            decisions: None,
        };
        let mut run = run_case(&self.target, &case, self.checks, None).handed_out();
        // The seed alone does not replay it (the steps are not drawn from
        // it): the replay is the case as code.
        let replay = format!(
            "the case as code: run_steps(Seed::new({}), &{}) (a property test's failing case \
             runs first when the test runs again: proptest keeps it beside the test's source)",
            seed,
            steps_as_code(steps)
        );
        for failure in &mut run.failures {
            failure.replay = replay.clone();
        }
        run
    }

    /// Runs one seed and returns only its trace (the run's fingerprint;
    /// two runs of a seed must leave equal traces).
    pub fn trace(&self, seed: Seed) -> Trace {
        self.trace_case(&self.case(seed))
    }

    /// Runs `case` once and returns only its trace.
    pub fn trace_case(&self, case: &Case) -> Trace {
        crate::soak::run::engine::trace_of(&self.target, case)
    }

    /// The script and faults seed `seed` plays.
    pub fn script_for(&self, seed: Seed) -> (ScriptedServer, Faults) {
        let faults = self.target.faults(seed);
        (self.target.script(seed, &faults), faults)
    }

    /// Runs the seeds, then keeps every failure (see
    /// [`corpus`](Self::corpus)); panics at the caller with the summary:
    /// each kept failure shrunk, with what happened in it, its corpus
    /// file, its timeline page and the line that replays it. A passing
    /// run prints one line to stderr.
    #[track_caller]
    pub fn run(self) -> Summary {
        match self.try_run() {
            Ok(summary) => summary,
            Err(summary) => panic!("\n{}", for_terminal(&summary.to_string())),
        }
    }

    /// Runs the seeds and keeps the failures as [`run`](Self::run) does;
    /// the summary is `Err` if any invariant broke. The kept cases of the
    /// corpus run first (see [`corpus`](Self::corpus)), whatever the
    /// seeds; with `LIVESIM_CASE` set to a corpus file, that kept case
    /// runs alone, and with `LIVESIM_SEED` set, that seed alone.
    ///
    /// # Panics
    /// At the caller, before anything runs, on a setting that cannot be
    /// what was meant: a tool named (by `tool_latency`, `allow_panic`, a
    /// budget) that the agent does not declare, an invariant named as one
    /// of livesim's own, a liveness bound shorter than the settle window,
    /// a name no corpus folder can have, a bad
    /// `LIVESIM_SEED`, `LIVESIM_SEEDS`, `LIVESIM_CASE` or
    /// `LIVESIM_REGRESSIONS`.
    #[track_caller]
    pub fn try_run(self) -> Result<Summary, Box<Summary>> {
        // Every panic here is at the caller's line (a closure's would be
        // at livesim's): `match`, not `unwrap_or_else`.
        self.refuse_mistakes();
        let keeping = match self.keeping() {
            Ok(keeping) => keeping,
            Err(e) => panic!("livesim: {}", for_terminal(&e)),
        };
        let case_file = std::env::var_os(CASE_VARIABLE).filter(|v| !v.is_empty());
        let (kept, errors, seeds) = match &case_file {
            Some(file) => {
                let file = PathBuf::from(file);
                let entry = match crate::soak::keep::replay::load_for(&self, &file) {
                    Ok(entry) => entry,
                    Err(e) => panic!("livesim: {CASE_VARIABLE}={}", for_terminal(&e)),
                };
                let seed = entry.case.seed.value();
                let kept = KeptCase {
                    target: 0,
                    replay: self.replay_case_command(&file),
                    case: entry.case,
                };
                (vec![kept], Vec::new(), seed..seed)
            }
            None => {
                // The kept cases run first, however few the seeds; one
                // named seed (`LIVESIM_SEED`, what a seed's replay line
                // sets) runs alone.
                let (seeds, one_seed) = match SeedPlan::from_env(self.seeds.clone()) {
                    Ok(SeedPlan::One(seed)) => (seed.value()..seed.value().saturating_add(1), true),
                    Ok(SeedPlan::Range(range)) => (range, false),
                    Err(e) => panic!("livesim: {}", for_terminal(&e)),
                };
                let (kept, errors) = match &keeping {
                    Some(keeping) if !one_seed => kept_cases(&self, keeping.corpus.as_deref()),
                    _ => (Vec::new(), Vec::new()),
                };
                (kept, errors, seeds)
            }
        };
        let mut summary = run_plan(
            &Plan {
                targets: std::slice::from_ref(&self.target),
                seeds,
                shard: self.shard,
                jobs: self.jobs,
                duration: self.duration,
                checks: self.checks,
                kept: &kept,
                stop_at_first_failure: self.stop_at_first_failure,
                hang: self.hang,
            },
            &|_| {},
        );
        summary.corpus_errors = errors;
        if !summary.passed() {
            // A kept case that fails again is in the corpus already.
            if let Some(keeping) = keeping.filter(|_| case_file.is_none()) {
                keeping.keep(&mut summary, std::slice::from_ref(&self), &|line| {
                    eprintln!("livesim: {}", for_terminal(line))
                });
            }
            return Err(Box::new(summary));
        }
        let _ = writeln!(
            std::io::stderr().lock(),
            "{}",
            for_terminal(&summary.line())
        );
        Ok(summary)
    }
}
/// [`soak_all`], each agent's kept cases in `corpus`
/// (`corpus/<agent>/<seed>.json`) first, as a soak of one agent runs its
/// own: what `livesim sim soak` runs, so a failure it kept is checked by
/// every later soak. Only the first shard runs them (`--shard 1/N`), so a
/// sharded soak runs each once. An entry that cannot be read, or names a
/// check its agent does not run, is one of the summary's
/// [corpus errors](Summary::corpus_errors).
///
/// ```no_run
/// use livesim::soak::{Agent, Checks, Shard, Soak, soak_corpus_first};
///
/// let agents = Agent::load_all("sim").unwrap();
/// let soaks: Vec<Soak> = agents.iter().map(Soak::agent).collect();
/// let summary = soak_corpus_first(
///     &soaks, "seeds".as_ref(), 0..100, Shard::WHOLE, 2, None, Checks::default(), &|_| {},
/// );
/// println!("{summary}");
/// ```
#[allow(clippy::too_many_arguments)]
pub fn soak_corpus_first(
    soaks: &[Soak],
    corpus: &std::path::Path,
    seeds: Range<u64>,
    shard: Shard,
    jobs: usize,
    duration: Option<Duration>,
    checks: Checks,
    progress: &(dyn Fn(Progress) + Sync),
) -> Summary {
    let mut kept = Vec::new();
    let mut errors = Vec::new();
    if shard.index == 1 {
        for (target, soak) in soaks.iter().enumerate() {
            let (cases, unread) = kept_cases(soak, Some(corpus));
            kept.extend(cases.into_iter().map(|case| KeptCase { target, ..case }));
            errors.extend(unread);
        }
    }
    let mut summary = run_all(soaks, &kept, seeds, shard, jobs, duration, checks, progress);
    summary.corpus_errors = errors;
    summary
}

/// Several agents soaked together (what `livesim sim soak DIR` runs): the
/// seeds go to every agent, seed by seed, so a time budget covers them all
/// alike.
pub fn soak_all(
    soaks: &[Soak],
    seeds: Range<u64>,
    shard: Shard,
    jobs: usize,
    duration: Option<Duration>,
    checks: Checks,
    progress: &(dyn Fn(Progress) + Sync),
) -> Summary {
    run_all(soaks, &[], seeds, shard, jobs, duration, checks, progress)
}

/// `soaks` together, `kept` cases first.
#[allow(clippy::too_many_arguments)]
fn run_all(
    soaks: &[Soak],
    kept: &[KeptCase],
    seeds: Range<u64>,
    shard: Shard,
    jobs: usize,
    duration: Option<Duration>,
    checks: Checks,
    progress: &(dyn Fn(Progress) + Sync),
) -> Summary {
    let targets: Vec<Target> = soaks.iter().map(|s| s.target.clone()).collect();
    run_plan(
        &Plan {
            targets: &targets,
            seeds,
            shard,
            jobs,
            duration,
            checks,
            kept,
            stop_at_first_failure: false,
            hang: soaks
                .iter()
                .map(|s| s.hang)
                .max()
                .unwrap_or_else(crate::executor::hang_bound),
        },
        progress,
    )
}

/// `text` as a soak writes it to stderr, or panics with it: the names and
/// messages it quotes come from agent files and the user's code (an
/// invariant's name, a tool's, why a check failed), so what acts on a
/// terminal is escaped and each line cut, as the CLI prints them.
fn for_terminal(text: &str) -> std::borrow::Cow<'_, str> {
    crate::wire::printable_lines(
        text,
        crate::wire::Escape::Rust,
        crate::wire::MAX_PRINTED_LINE,
    )
}
