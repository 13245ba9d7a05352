//! The soak engine: one seed of one agent, and a plan of many.
//!
//! A soak runs seeds against one agent or several. Each (agent, seed) is
//! one session in its own [`Simulation`](crate::executor::Simulation):
//! the seed's faults, the generated script, the session, the liveness
//! phase, then every invariant and every "sometimes" goal over the run's
//! record. Runs go to a pool of OS threads (the sessions themselves stay
//! single-threaded, each inside its simulation), and results are merged in
//! (agent, seed) order, so a summary is the same for the same seeds
//! whatever the number of jobs, apart from wall time.

use std::collections::BTreeSet;
use std::ops::Range;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use crate::executor::logs::Capture;
use crate::executor::{
    FailureKind, Outcome, Schedule, Seed, Simulation, Swarm, Trace, format_time,
};
use crate::flow::FlowSpec;
use crate::session::{LiveBuilder, LiveEvent};
use crate::soak::agent::RunContext;
use crate::soak::agent::repertoire::Repertoire;
use crate::soak::case::Case;
use crate::soak::check::excerpt::excerpt;
use crate::soak::check::invariants::{self, Invariant};
use crate::soak::check::report::{AgentSummary, Failure, Summary};
use crate::soak::check::sometimes::{self, Reach, Sometimes};
use crate::soak::generate::faults::{FaultKind, Faults};
use crate::soak::generate::script::generate;
use crate::soak::run::calibrate::{Calibration, calibrate};
use crate::soak::run::record::RunRecord;
use crate::soak::run::session;
use crate::soak::run::shard::Shard;
use crate::state::State;
use crate::testing::ScriptedServer;

type BuilderFn = dyn Fn(&RunContext) -> LiveBuilder + Send + Sync;
type ScriptFn = dyn Fn(Seed, &Faults) -> ScriptedServer + Send + Sync;
type ReplayFn = dyn Fn(Seed) -> String + Send + Sync;
type CaseReplayFn = dyn Fn(&Path) -> String + Send + Sync;

/// How a failure is replayed: the line for a seed, and the line for a
/// kept case's file (a shrunk case is not its seed's case any more).
#[derive(Clone)]
pub(crate) struct Replay {
    pub seed: Arc<ReplayFn>,
    pub case: Arc<CaseReplayFn>,
}

/// One agent as the engine runs it.
#[derive(Clone)]
pub(crate) struct Target {
    pub name: String,
    pub builder: Arc<BuilderFn>,
    pub repertoire: Repertoire,
    pub script: Option<Arc<ScriptFn>>,
    pub tuning: Vec<(FaultKind, f64)>,
    /// Replaces the governing spec in `journal-replays-clean`.
    pub spec: Option<Arc<FlowSpec>>,
    pub invariants: Vec<Invariant>,
    pub sometimes: Vec<Sometimes>,
    pub replay: Replay,
    /// How long the session may take to settle after the fault phase.
    pub liveness_bound: Duration,
    /// A Rust agent's tools, measured once before the first case is drawn
    /// (see [`calibrate`](super::calibrate)); `None` for an agent whose
    /// file declares every tool's latency.
    pub calibration: Option<Arc<OnceLock<Calibration>>>,
    /// The tools whose latency the user declared: calibration keeps it.
    pub declared_latency: BTreeSet<String>,
    /// The tools allowed to panic (their panic is answered as an error
    /// and not reported as `panic`).
    pub allowed_panics: BTreeSet<String>,
}

impl Target {
    pub(crate) fn faults(&self, seed: Seed) -> Faults {
        let drawn = if self.repertoire.resumption.is_on() {
            Faults::draw_resuming(seed)
        } else {
            Faults::draw(seed)
        };
        drawn.tuned(&self.tuning)
    }

    /// What seed `seed` plays: the swarm and faults it draws, its script.
    pub(crate) fn case(&self, seed: Seed) -> Case {
        let faults = self.faults(seed);
        Case {
            seed,
            swarm: Swarm::draw(seed),
            script: self.script(seed, &faults),
            faults,
            decisions: None,
        }
    }

    pub(crate) fn script(&self, seed: Seed, faults: &Faults) -> ScriptedServer {
        match &self.script {
            Some(script) => script(seed, faults),
            None => generate(&self.name, self.repertoire(), seed, faults),
        }
    }

    /// What conversations are drawn from: the repertoire, its tools'
    /// latencies measured first for a Rust agent.
    pub(crate) fn repertoire(&self) -> &Repertoire {
        match self.calibrated() {
            Some(calibration) => &calibration.repertoire,
            None => &self.repertoire,
        }
    }

    /// The calibration, measured on first use.
    fn calibrated(&self) -> Option<&Calibration> {
        let cell = self.calibration.as_ref()?;
        Some(cell.get_or_init(|| calibrate(self, &self.declared_latency)))
    }

    /// What the agent can reach, from one builder it makes.
    fn reach(&self) -> Reach {
        let ctx = RunContext {
            seed: Seed::new(0),
            faults: Faults::calm(),
            state: State::new(),
        };
        let builder = (self.builder)(&ctx);
        let config = &builder.inner.config;
        // Simulated tools take time, fail and check their arguments as
        // their file says; a Rust agent's tools, as measured.
        let measured = self.calibrated();
        Reach {
            slow_tools: measured.is_none_or(|c| c.slow_tools),
            failing_tools: measured.is_none_or(|c| c.failing_tools),
            checks_args: measured.is_none_or(|c| c.checks_args),
            tools: !config.tools.is_empty(),
            governed: config.governance.is_some(),
            escalates: config
                .governance
                .as_ref()
                .is_some_and(|g| g.spec.steps().iter().any(|s| !s.escalate().is_never())),
            extractors: config
                .extractors
                .iter()
                .map(|e| e.name().to_string())
                .collect(),
            resumes: config.resumption.is_on(),
            transparent: config.resumption.is_transparent(),
        }
    }
}

/// Which of the engine's own checks run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checks {
    /// Every seed divisible by this runs twice and must leave the same
    /// trace (`determinism`); 0 turns the sample off.
    pub determinism_every: u64,
}

impl Default for Checks {
    fn default() -> Self {
        Checks {
            determinism_every: 64,
        }
    }
}

/// The result of one (agent, seed): its record, what the checks said.
#[derive(Debug)]
pub struct SeedRun {
    /// The record; `None` when the session's simulation itself failed
    /// (a panic, a deadlock).
    pub record: Option<RunRecord>,
    /// Each invariant checked, and its verdict.
    pub verdicts: Vec<(String, Result<(), String>)>,
    /// The goals the run reached.
    pub reached: Vec<String>,
    /// The failures, one per broken invariant.
    pub failures: Vec<Failure>,
}

impl SeedRun {
    /// `Ok` when every invariant held; else each failure, what happened
    /// in the run and the line that replays it. What a property asserts:
    /// `prop_assert_eq!(run.verdict(), Ok(()))`.
    pub fn verdict(&self) -> Result<(), String> {
        if self.failures.is_empty() {
            return Ok(());
        }
        let told: Vec<String> = self.failures.iter().map(ToString::to_string).collect();
        Err(told.join("\n"))
    }

    /// Invariant `name`'s verdict; `Err` too when it was not checked.
    pub fn verdict_of(&self, name: &str) -> Result<(), String> {
        self.verdicts
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| {
                let checked: Vec<&str> = self.verdicts.iter().map(|(n, _)| n.as_str()).collect();
                Err(format!(
                    "`{name}` was not checked (checked: {})",
                    checked.join(", ")
                ))
            })
    }
}

/// The log lines kept for `handle-secret`: everything livesim logs but
/// the executor's scheduling (which never sees a frame).
const HANDLE_LOG_FILTER: &str = "trace,livesim::executor=info";

/// Runs `case` of `target` once and returns its trace, however the run
/// ended (a failed run's trace stops where it failed).
pub(crate) fn trace_of(target: &Target, case: &Case) -> Trace {
    match simulate(target, case, None) {
        Ok(outcome) => outcome.trace,
        Err(failure) => failure.trace,
    }
}

/// Runs `case` of `target` once, in its simulation: the case's swarm, and
/// `schedule` numbering (and perhaps calming) its decisions.
pub(crate) fn simulate(
    target: &Target,
    case: &Case,
    schedule: Option<Schedule>,
) -> Result<Outcome<RunRecord>, Box<crate::executor::Failure>> {
    let mut simulation = Simulation::new(case.seed).swarm(case.swarm.clone());
    if let Some(schedule) = schedule {
        simulation = simulation.schedule(schedule);
    }
    let (target, seed, faults, swarm, script) = (
        target.clone(),
        case.seed,
        case.faults.clone(),
        case.swarm.clone(),
        case.script.clone(),
    );
    simulation.run(move || async move { session::play(&target, seed, faults, swarm, script).await })
}

/// Runs one seed of `target`.
pub(crate) fn run_seed(target: &Target, seed: Seed, checks: Checks) -> SeedRun {
    run_case(target, &target.case(seed), checks, None)
}

/// Runs `case` of `target`: its simulation, then every check. `schedule`
/// numbers the run's decisions (its restriction, or the case's, applies);
/// without one, the case's own decides.
pub(crate) fn run_case(
    target: &Target,
    case: &Case,
    checks: Checks,
    schedule: Option<Schedule>,
) -> SeedRun {
    let seed = case.seed;
    let schedule = schedule.or_else(|| case.schedule());
    // A run whose script gives resumption handles keeps its log lines, so
    // `handle-secret` can look for them there too.
    let capture = case
        .script
        .uses_resumption()
        .then(|| Capture::new(HANDLE_LOG_FILTER));
    let outcome = match &capture {
        Some(capture) => capture.scope(|| simulate(target, case, schedule.clone())),
        None => simulate(target, case, schedule.clone()),
    };
    let failure = |invariant: &str, message: String, script: &ScriptedServer| Failure {
        agent: target.name.clone(),
        seed,
        swarm: case.swarm.clone(),
        faults: case.faults.clone(),
        invariant: invariant.to_string(),
        message,
        script: script.clone(),
        replay: (target.replay.seed)(seed),
        excerpt: String::new(),
    };
    let script = &case.script;
    let mut record = match outcome {
        Ok(outcome) => {
            let mut record = outcome.value;
            record.trace_hash = outcome.trace.hash();
            record.trace = outcome.trace;
            record.virtual_time = outcome.elapsed;
            record
        }
        Err(broken) => {
            let invariant = match broken.kind {
                FailureKind::Panic { .. } => invariants::PANIC,
                _ => invariants::LIVENESS,
            };
            let message = format!(
                "{}\n  last trace entries:\n{}",
                broken.summary(),
                broken.trace.tail(12).trim_end()
            );
            return SeedRun {
                record: None,
                verdicts: vec![(invariant.to_string(), Err(message.clone()))],
                reached: Vec::new(),
                failures: vec![failure(invariant, message, script)],
            };
        }
    };
    // Run again before the record is checked; reported after the others.
    let determinism =
        if checks.determinism_every > 0 && seed.value().is_multiple_of(checks.determinism_every) {
            let verdict = match simulate(target, case, schedule.as_ref().map(Schedule::fresh)) {
                Ok(again) => match record.trace.first_divergence(&again.trace) {
                    None => Ok(()),
                    Some(divergence) => Err(format!("two runs of the seed differ: {divergence}")),
                },
                Err(broken) => Err(format!(
                    "the first run finished, the second did not: {}",
                    broken.summary()
                )),
            };
            Some((invariants::DETERMINISM.to_string(), verdict))
        } else {
            None
        };
    let mut verdicts = Vec::new();
    record.script = script.clone();
    if let Some(capture) = capture {
        record.logs = capture.tail(usize::MAX).0;
    }
    if let Some(error) = record.connect_error.clone() {
        verdicts.push((invariants::SETUP.to_string(), Err(error)));
    } else {
        for invariant in invariants::builtin().iter().chain(&target.invariants) {
            verdicts.push((invariant.name().to_string(), checked(invariant, &record)));
        }
        verdicts.push((
            invariants::PANIC.to_string(),
            invariants::tool_panics(&record, &target.allowed_panics),
        ));
    }
    verdicts.extend(determinism);
    let failures = verdicts
        .iter()
        .filter_map(|(name, verdict)| {
            let message = verdict.as_ref().err()?;
            let mut failure = failure(name, message.clone(), &record.script);
            failure.excerpt = excerpt(&record, message);
            Some(failure)
        })
        .collect();
    // A goal that panics is not reached (its author learns of it from the
    // summary's goal counts, and the soak goes on).
    let reached = target
        .sometimes
        .iter()
        .filter(|goal| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| goal.reached(&record)))
                .unwrap_or(false)
        })
        .map(|goal| goal.name().to_string())
        .collect();
    SeedRun {
        record: Some(record),
        verdicts,
        reached,
        failures,
    }
}

/// An invariant's verdict; an invariant that panics fails, saying where,
/// and the soak goes on.
fn checked(invariant: &Invariant, record: &RunRecord) -> Result<(), String> {
    let panicked = crate::executor::panics::catch(|| invariant.check(record));
    match panicked {
        Ok(verdict) => verdict,
        Err(panic) => Err(format!(
            "the invariant `{}` itself panicked{}: {} (a check must return Err, not panic)",
            invariant.name(),
            panic
                .location
                .map(|l| format!(" at {l}"))
                .unwrap_or_default(),
            panic.message
        )),
    }
}

/// How many runs have finished, for a progress display.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// Runs finished.
    pub done: u64,
    /// Runs planned (`None` when only a time budget ends the soak).
    pub total: Option<u64>,
    /// Failures found so far.
    pub failures: u64,
}

/// A soak over several agents: the seeds, the shard, the jobs, the budget.
pub(crate) struct Plan<'a> {
    pub targets: &'a [Target],
    pub seeds: Range<u64>,
    pub shard: Shard,
    pub jobs: usize,
    pub duration: Option<Duration>,
    pub checks: Checks,
    /// Kept cases of the corpus, run before the seeds.
    pub kept: &'a [KeptCase],
    /// Start no new run once a run has failed.
    pub stop_at_first_failure: bool,
}

/// A case from the corpus, run first: which target, the case, and the
/// line that replays it.
pub(crate) struct KeptCase {
    pub target: usize,
    pub case: Case,
    pub replay: String,
}

/// Runs `work(i)` for `i` in `0..total` on `jobs` threads, taking no new
/// `i` once `stop()` says so. Results go wherever `work` puts them: a soak
/// may run millions of sessions, and keeps counts, not runs.
pub(crate) fn pool(
    total: u64,
    jobs: usize,
    stop: &(dyn Fn() -> bool + Sync),
    work: &(dyn Fn(u64) + Sync),
) {
    let next = AtomicU64::new(0);
    let worker = || {
        while !stop() {
            let index = next.fetch_add(1, Ordering::Relaxed);
            if index >= total {
                return;
            }
            work(index);
        }
    };
    if jobs <= 1 {
        worker();
    } else {
        // OS threads outside the sessions: each run is a whole simulation
        // on one thread, and nothing is shared between runs but the queue
        // of indexes and the results.
        std::thread::scope(|scope| {
            for _ in 0..jobs {
                scope.spawn(worker);
            }
        });
    }
}

/// The (agent, seed) of run `index` of a plan over `agents` agents: seed
/// by seed, every agent in turn, so a time budget covers them alike.
pub(crate) fn item(seeds: &Range<u64>, shard: Shard, agents: u64, index: u64) -> (usize, Seed) {
    let offset = index / agents.max(1);
    let seed = seeds.start + (shard.index - 1) + offset * shard.of;
    ((index % agents.max(1)) as usize, Seed::new(seed))
}

/// Runs the plan; `progress` hears of every finished run.
pub(crate) fn run_plan(plan: &Plan<'_>, progress: &(dyn Fn(Progress) + Sync)) -> Summary {
    // The budget is wall-clock time by definition; it only decides which
    // seeds start, never what happens inside a run.
    #[allow(clippy::disallowed_methods)]
    let started = std::time::Instant::now();
    let agents = plan.targets.len() as u64;
    let total = plan
        .shard
        .count(&plan.seeds)
        .saturating_mul(agents)
        .saturating_add(plan.kept.len() as u64);
    let finished = AtomicU64::new(0);
    let failed = AtomicU64::new(0);
    let out_of_time = AtomicBool::new(false);
    let reaches: Vec<Vec<Sometimes>> = plan
        .targets
        .iter()
        .map(|t| {
            // A builder that panics fails every run as `panic`; here it
            // only means no built-in goal applies.
            let reach = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| t.reach()))
                .unwrap_or_default();
            let mut goals = sometimes::builtin(&reach);
            goals.extend(t.sometimes.iter().cloned());
            goals
        })
        .collect();
    let targets: Vec<Target> = plan
        .targets
        .iter()
        .zip(&reaches)
        .map(|(t, goals)| Target {
            sometimes: goals.clone(),
            ..t.clone()
        })
        .collect();
    let stop = || {
        let over = plan
            .duration
            .is_some_and(|budget| started.elapsed() >= budget);
        if over {
            out_of_time.store(true, Ordering::Relaxed);
        }
        over || (plan.stop_at_first_failure && failed.load(Ordering::Relaxed) > 0)
    };
    let summaries: Vec<Mutex<AgentSummary>> = targets
        .iter()
        .zip(&reaches)
        .map(|(t, goals)| Mutex::new(AgentSummary::new(&t.name, goals.iter().map(|g| g.name()))))
        .collect();
    let throughput: Mutex<Vec<u64>> = Mutex::new(Vec::new());
    let kept = plan.kept.len() as u64;
    let work = |index: u64| {
        let (agent, run) = match index.checked_sub(kept) {
            None => {
                let kept = &plan.kept[index as usize];
                // A kept case runs as a replay does: determinism checked.
                let replaying = Checks {
                    determinism_every: 1,
                };
                let mut run = run_case(&targets[kept.target], &kept.case, replaying, None);
                for failure in &mut run.failures {
                    failure.replay = kept.replay.clone();
                }
                (kept.target, run)
            }
            Some(index) => {
                let (agent, seed) = item(&plan.seeds, plan.shard, agents, index);
                (agent, run_seed(&targets[agent], seed, plan.checks))
            }
        };
        {
            let second = usize::try_from(started.elapsed().as_secs()).unwrap_or(usize::MAX);
            let mut counts = throughput.lock().unwrap_or_else(|p| p.into_inner());
            if counts.len() <= second {
                counts.resize(second.saturating_add(1), 0);
            }
            counts[second] += 1;
        }
        let found = run.failures.len() as u64;
        let verdicts: Vec<(String, bool)> = run
            .verdicts
            .iter()
            .map(|(n, v)| (n.clone(), v.is_ok()))
            .collect();
        summaries[agent]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .add(
                run.record
                    .as_ref()
                    .map_or(Duration::ZERO, |r| r.virtual_time),
                run.record.as_ref().map_or(0, |r| {
                    r.events
                        .iter()
                        .filter(|e| matches!(e.event, LiveEvent::Reconnecting { .. }))
                        .count() as u64
                }),
                &verdicts,
                &run.reached,
                run.failures,
            );
        progress(Progress {
            done: finished.fetch_add(1, Ordering::Relaxed) + 1,
            // A range that only a time budget ends has no useful total.
            total: (total < 1 << 40).then_some(total),
            failures: failed.fetch_add(found, Ordering::Relaxed) + found,
        });
    };
    let jobs = plan.jobs.max(1);
    if agents > 0 {
        pool(total, jobs, &stop, &work);
    }
    let order: Vec<Vec<String>> = targets
        .iter()
        .map(|t| {
            invariants::builtin()
                .iter()
                .chain(&t.invariants)
                .map(|i| i.name().to_string())
                .collect()
        })
        .collect();
    let summaries: Vec<AgentSummary> = summaries
        .into_iter()
        .zip(&order)
        .map(|(summary, order)| {
            let mut summary = summary.into_inner().unwrap_or_else(|p| p.into_inner());
            summary.finish(order);
            summary
        })
        .collect();
    Summary {
        agents: summaries,
        wall_time: started.elapsed(),
        seeds: plan.seeds.clone(),
        shard: plan.shard,
        jobs,
        stopped_by_budget: out_of_time.load(Ordering::Relaxed),
        throughput: throughput.into_inner().unwrap_or_else(|p| p.into_inner()),
        kept_cases_run: plan.kept.len() as u64,
        corpus_errors: Vec::new(),
        kept: Vec::new(),
        not_kept: Vec::new(),
    }
}

/// How many jobs "all cores" means here.
pub fn all_cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// A duration as the summary prints it (`1h02m`, `12.500s`).
pub(crate) fn human(d: Duration) -> String {
    let secs = d.as_secs();
    if secs >= 3600 {
        format!("{}h{:02}m", secs / 3600, (secs % 3600) / 60)
    } else if secs >= 60 {
        format!("{}m{:02}s", secs / 60, secs % 60)
    } else {
        format_time(d)
    }
}
