//! The soak engine, and the API a Rust user soaks their own agent with.
//!
//! A soak runs seeds against one agent or several. Each (agent, seed) is
//! one session in its own [`Simulation`](crate::executor::Simulation):
//! the seed's faults, the generated script, the session, the liveness
//! phase, then every invariant and every "sometimes" goal over the run's
//! record. Runs go to a pool of OS threads (the sessions themselves stay
//! single-threaded, each inside its simulation), and results are merged in
//! (agent, seed) order, so a summary is the same for the same seeds
//! whatever the number of jobs, apart from wall time.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::agent::{Agent, RunContext};
use super::faults::{FaultKind, Faults};
use super::generate::{Repertoire, generate};
use super::invariants::{self, Invariant, WIRE_ORDER_CHECKED_BY_DEFAULT};
use super::record::RunRecord;
use super::report::{AgentSummary, Failure, Summary};
use super::run;
use super::sometimes::{self, Reach, Sometimes};
use crate::executor::{FailureKind, Seed, SeedPlan, Simulation, TestId, format_time};
use crate::flow::FlowSpec;
use crate::session::LiveBuilder;
use crate::state::State;
use crate::testing::ScriptedServer;

type BuilderFn = dyn Fn(&RunContext) -> LiveBuilder + Send + Sync;
type ScriptFn = dyn Fn(Seed, &Faults) -> ScriptedServer + Send + Sync;
type ReplayFn = dyn Fn(Seed) -> String + Send + Sync;

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
    pub replay: Arc<ReplayFn>,
}

impl Target {
    fn faults(&self, seed: Seed) -> Faults {
        Faults::draw(seed).tuned(&self.tuning)
    }

    fn script(&self, seed: Seed, faults: &Faults) -> ScriptedServer {
        match &self.script {
            Some(script) => script(seed, faults),
            None => generate(&self.name, &self.repertoire, seed, faults),
        }
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
        Reach {
            tools: !config.tools.is_empty(),
            governed: config.governance.is_some(),
            escalates: config.governance.as_ref().is_some_and(|g| {
                g.spec.steps().iter().any(|s| !s.escalate().is_never())
            }),
            extractors: config.extractors.iter().map(|e| e.name().to_string()).collect(),
        }
    }
}

/// Which of the engine's own checks run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checks {
    /// Whether `wire-order` is checked.
    pub wire_order: bool,
    /// Every seed divisible by this runs twice and must leave the same
    /// trace (`determinism`); 0 turns the sample off.
    pub determinism_every: u64,
}

impl Default for Checks {
    fn default() -> Self {
        Checks {
            wire_order: WIRE_ORDER_CHECKED_BY_DEFAULT,
            determinism_every: 64,
        }
    }
}

/// Which of N shards to run: the seeds whose offset from the start of the
/// range, modulo `of`, is `index - 1`. Shards 1..=N of a range are
/// disjoint and together cover it.
///
/// ```
/// use livesim::soak::Shard;
///
/// let shard: Shard = "2/3".parse().unwrap();
/// assert_eq!(shard.seeds(10..20).collect::<Vec<_>>(), [11, 14, 17]);
/// assert!("4/3".parse::<Shard>().is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// This shard, from 1.
    pub index: u64,
    /// How many shards.
    pub of: u64,
}

impl Shard {
    /// All the seeds, as one shard.
    pub const WHOLE: Shard = Shard { index: 1, of: 1 };

    /// The seeds of `range` this shard takes, in order.
    pub fn seeds(self, range: Range<u64>) -> impl Iterator<Item = u64> {
        let first = range.start.saturating_add(self.index - 1);
        (first..range.end).step_by(self.of as usize)
    }

    /// How many seeds of `range` this shard takes.
    pub fn count(self, range: &Range<u64>) -> u64 {
        let len = range.end.saturating_sub(range.start);
        let skip = self.index - 1;
        if len <= skip {
            0
        } else {
            (len - skip).div_ceil(self.of)
        }
    }
}

impl std::str::FromStr for Shard {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || format!("`{s}` is not a shard: write K/N with 1 ≤ K ≤ N, such as 2/8");
        let (k, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, of) = (
            k.trim().parse::<u64>().map_err(|_| bad())?,
            n.trim().parse::<u64>().map_err(|_| bad())?,
        );
        if index == 0 || of == 0 || index > of || of > u64::from(u32::MAX) {
            return Err(bad());
        }
        Ok(Shard { index, of })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.of)
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

/// Runs one seed of `target`.
pub(crate) fn run_seed(target: &Target, seed: Seed, checks: Checks) -> SeedRun {
    let faults = target.faults(seed);
    let script = target.script(seed, &faults);
    let simulate = || {
        let simulation = Simulation::new(seed);
        let swarm = simulation.swarm_options().clone();
        let (target, faults, script) = (target.clone(), faults.clone(), script.clone());
        let outcome = simulation.run(move || async move {
            run::play(&target, seed, faults, swarm, script).await
        });
        (simulation, outcome)
    };
    let (simulation, outcome) = simulate();
    let failure = |invariant: &str, message: String| Failure {
        agent: target.name.clone(),
        seed,
        swarm: simulation.swarm_options().clone(),
        faults: faults.clone(),
        invariant: invariant.to_string(),
        message,
        script: script.clone(),
        replay: (target.replay)(seed),
    };
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
                failures: vec![failure(invariant, message)],
            };
        }
    };
    let mut verdicts = Vec::new();
    if let Some(error) = record.connect_error.clone() {
        verdicts.push((invariants::SETUP.to_string(), Err(error)));
    } else {
        for invariant in invariants::builtin(checks.wire_order)
            .iter()
            .chain(&target.invariants)
        {
            verdicts.push((invariant.name().to_string(), invariant.check(&record)));
        }
    }
    if checks.determinism_every > 0 && seed.value().is_multiple_of(checks.determinism_every) {
        let verdict = match simulate().1 {
            Ok(again) => match record.trace.first_divergence(&again.trace) {
                None => Ok(()),
                Some(divergence) => Err(format!("two runs of the seed differ: {divergence}")),
            },
            Err(broken) => Err(format!(
                "the first run finished, the second did not: {}",
                broken.summary()
            )),
        };
        verdicts.push((invariants::DETERMINISM.to_string(), verdict));
    }
    let failures = verdicts
        .iter()
        .filter_map(|(name, verdict)| verdict.as_ref().err().map(|m| failure(name, m.clone())))
        .collect();
    let reached = target
        .sometimes
        .iter()
        .filter(|goal| goal.reached(&record))
        .map(|goal| goal.name().to_string())
        .collect();
    record.script = script;
    SeedRun {
        record: Some(record),
        verdicts,
        reached,
        failures,
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
}

/// What one run adds to its agent's summary.
struct Done {
    index: u64,
    virtual_time: Duration,
    verdicts: Vec<(String, bool)>,
    reached: Vec<String>,
    failures: Vec<Failure>,
}

/// Runs the plan; `progress` hears of every finished run.
pub(crate) fn run_plan(plan: &Plan<'_>, progress: &(dyn Fn(Progress) + Sync)) -> Summary {
    // The budget is wall-clock time by definition; it only decides which
    // seeds start, never what happens inside a run.
    #[allow(clippy::disallowed_methods)]
    let started = std::time::Instant::now();
    let agents = plan.targets.len() as u64;
    let per_agent = plan.shard.count(&plan.seeds);
    let total = per_agent.saturating_mul(agents);
    let next = AtomicU64::new(0);
    let finished = AtomicU64::new(0);
    let failed = AtomicU64::new(0);
    let out_of_time = AtomicBool::new(false);
    let results: Mutex<Vec<Done>> = Mutex::new(Vec::new());
    let reaches: Vec<Vec<Sometimes>> = plan
        .targets
        .iter()
        .map(|t| {
            let mut goals = sometimes::builtin(&t.reach());
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
    let work = || {
        loop {
            if plan.duration.is_some_and(|budget| started.elapsed() >= budget) {
                out_of_time.store(true, Ordering::Relaxed);
                return;
            }
            let index = next.fetch_add(1, Ordering::Relaxed);
            if index >= total || agents == 0 {
                return;
            }
            let target = &targets[(index % agents) as usize];
            let offset = index / agents;
            let seed = plan.seeds.start + (plan.shard.index - 1) + offset * plan.shard.of;
            let run = run_seed(target, Seed::new(seed), plan.checks);
            let done = Done {
                index,
                virtual_time: run.record.as_ref().map_or(Duration::ZERO, |r| r.virtual_time),
                verdicts: run.verdicts.iter().map(|(n, v)| (n.clone(), v.is_ok())).collect(),
                reached: run.reached,
                failures: run.failures,
            };
            let failures = failed.fetch_add(done.failures.len() as u64, Ordering::Relaxed)
                + done.failures.len() as u64;
            results.lock().unwrap_or_else(|p| p.into_inner()).push(done);
            let done = finished.fetch_add(1, Ordering::Relaxed) + 1;
            progress(Progress {
                done,
                // A range that only a time budget ends has no useful total.
                total: (total < 1 << 40).then_some(total),
                failures,
            });
        }
    };
    let jobs = plan.jobs.max(1);
    if jobs == 1 {
        work();
    } else {
        // OS threads outside the sessions: each run is a whole simulation
        // on one thread, and nothing is shared between runs but the queue
        // of seeds and the results.
        std::thread::scope(|scope| {
            for _ in 0..jobs {
                scope.spawn(&work);
            }
        });
    }
    let mut results = results.into_inner().unwrap_or_else(|p| p.into_inner());
    results.sort_by_key(|done| done.index);
    let mut summaries: Vec<AgentSummary> = targets
        .iter()
        .zip(&reaches)
        .map(|(t, goals)| AgentSummary::new(&t.name, goals.iter().map(|g| g.name())))
        .collect();
    for done in results {
        let summary = &mut summaries[(done.index % agents) as usize];
        summary.add(done.virtual_time, &done.verdicts, &done.reached, done.failures);
    }
    Summary {
        agents: summaries,
        wall_time: started.elapsed(),
        seeds: plan.seeds.clone(),
        shard: plan.shard,
        jobs,
        stopped_by_budget: out_of_time.load(Ordering::Relaxed),
    }
}

/// How many jobs "all cores" means here.
pub fn all_cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// Soaks a Rust user's own agent: seeded sessions of the builder it
/// makes, each with a generated conversation and the seed's faults, every
/// invariant checked after each.
///
/// ```no_run
/// use livesim::prelude::*;
/// use livesim::soak::Soak;
/// use serde_json::json;
///
/// Soak::new("weather", || {
///     Live::builder()
///         .instruction("You are a weather assistant.")
///         .tools(T::simple("get_weather", "Weather for a city", |args| async move {
///             Ok(json!({ "city": args["city"], "sky": "sunny" }))
///         }))
/// })
/// .invariant("always-sunny", |run| {
///     match run.responses().iter().find(|r| r["response"]["sky"] != "sunny") {
///         Some(r) => Err(format!("a cloudy answer: {r}")),
///         None => Ok(()),
///     }
/// })
/// .seeds(200) // LIVESIM_SEEDS / LIVESIM_SEED override
/// .run(); // panics with every failure, its seed and its replay line
/// ```
pub struct Soak {
    target: Target,
    seeds: SeedPlan,
    jobs: usize,
    shard: Shard,
    duration: Option<Duration>,
    checks: Checks,
}

impl Soak {
    /// Soaks the sessions `builder` makes (called once per seed: make a
    /// fresh session each time, its `State` included). Conversations are
    /// generated from the tools the builder declares.
    pub fn new(
        name: impl Into<String>,
        builder: impl Fn() -> LiveBuilder + Send + Sync + 'static,
    ) -> Soak {
        let name = name.into();
        let repertoire = Repertoire::from_setup(&builder().setup_message());
        Soak::with_target(Target {
            name,
            builder: Arc::new(move |_ctx| builder()),
            repertoire,
            script: None,
            tuning: Vec::new(),
            spec: None,
            invariants: Vec::new(),
            sometimes: Vec::new(),
            // Without `test(…)`, the command that is running now, seeded.
            replay: Arc::new(|seed| {
                let command: Vec<String> = std::env::args().collect();
                format!("LIVESIM_SEED={seed} {}", command.join(" "))
            }),
        })
    }

    /// Soaks an agent read from its folder (what `livesim sim soak` does).
    pub fn agent(agent: &Agent) -> Soak {
        let shared = Arc::new(agent.clone());
        let dir = agent.dir.display().to_string();
        let builder = shared.clone();
        Soak::with_target(Target {
            name: agent.name.clone(),
            builder: Arc::new(move |ctx| builder.builder(ctx)),
            repertoire: agent.repertoire.clone(),
            script: None,
            tuning: agent.faults.clone(),
            spec: None,
            invariants: agent
                .invariants
                .iter()
                .map(|inv| {
                    let check = inv.clone();
                    Invariant::new(inv.name(), move |run| check.check(run))
                })
                .collect(),
            sometimes: agent
                .sometimes
                .iter()
                .map(|goal| {
                    let reached = goal.clone();
                    Sometimes::new(goal.name(), move |run| reached.reached(run))
                })
                .collect(),
            replay: Arc::new(move |seed| format!("livesim sim run {dir} --seed {seed}")),
        })
    }

    fn with_target(target: Target) -> Soak {
        Soak {
            target,
            seeds: SeedPlan::Range(0..100),
            jobs: all_cores(),
            shard: Shard::WHOLE,
            duration: None,
            checks: Checks::default(),
        }
    }

    /// The agent's name.
    pub fn name(&self) -> &str {
        &self.target.name
    }

    /// Replays the journal of governed runs against `spec` instead of the
    /// spec the builder governs with (`journal-replays-clean`).
    pub fn spec(mut self, spec: impl AsRef<FlowSpec>) -> Self {
        self.target.spec = Some(Arc::new(spec.as_ref().clone()));
        self
    }

    /// Adds an invariant: `check` returns `Err(why)` when a run breaks it.
    pub fn invariant(
        mut self,
        name: impl Into<String>,
        check: impl Fn(&RunRecord) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.target.invariants.push(Invariant::new(name, check));
        self
    }

    /// Adds a "sometimes" goal: the summary counts the runs that reach it
    /// and flags it if none does.
    pub fn sometimes(
        mut self,
        name: impl Into<String>,
        reached: impl Fn(&RunRecord) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.target.sometimes.push(Sometimes::new(name, reached));
        self
    }

    /// Plays this script for each seed instead of a generated one.
    pub fn script(
        mut self,
        script: impl Fn(Seed, &Faults) -> ScriptedServer + Send + Sync + 'static,
    ) -> Self {
        self.target.script = Some(Arc::new(script));
        self
    }

    /// What generated conversations are made of (the tools keep coming
    /// from the builder unless `repertoire.tools` says otherwise).
    pub fn repertoire(mut self, repertoire: Repertoire) -> Self {
        self.target.repertoire = repertoire;
        self
    }

    /// Fault kinds on in every seed that is not calm, at these rates.
    pub fn faults(mut self, tuning: &[(FaultKind, f64)]) -> Self {
        self.target.tuning = tuning.to_vec();
        self
    }

    /// Runs seeds `0..n` unless `LIVESIM_SEED` or `LIVESIM_SEEDS` says
    /// otherwise (default: 100).
    pub fn seeds(mut self, n: u64) -> Self {
        self.seeds = SeedPlan::Range(0..n.max(1));
        self
    }

    /// Runs the seeds of `range` unless the environment says otherwise.
    pub fn seed_range(mut self, range: Range<u64>) -> Self {
        self.seeds = SeedPlan::Range(range);
        self
    }

    /// How many runs go at once (default: every core).
    pub fn jobs(mut self, jobs: usize) -> Self {
        self.jobs = jobs.max(1);
        self
    }

    /// Runs one shard of the seeds.
    pub fn shard(mut self, shard: Shard) -> Self {
        self.shard = shard;
        self
    }

    /// Starts no new run once this much wall time has passed.
    pub fn duration(mut self, budget: Duration) -> Self {
        self.duration = Some(budget);
        self
    }

    /// Checks `wire-order` too (or not).
    pub fn check_wire_order(mut self, on: bool) -> Self {
        self.checks.wire_order = on;
        self
    }

    /// Runs every seed divisible by `every` twice and compares the traces
    /// (0: never).
    pub fn check_determinism_every(mut self, every: u64) -> Self {
        self.checks.determinism_every = every;
        self
    }

    /// Names the test this soak runs in, so a failure prints the exact
    /// `cargo test` line that replays it (use [`test_id!`](crate::test_id)).
    pub fn test(mut self, test: TestId) -> Self {
        self.target.replay = Arc::new(move |seed| test.replay_command(seed));
        self
    }

    /// Says how a failure is replayed: `replay(seed)` is the line printed.
    pub fn replay_line(mut self, replay: impl Fn(Seed) -> String + Send + Sync + 'static) -> Self {
        self.target.replay = Arc::new(replay);
        self
    }

    /// Runs one seed and returns everything about it (the record, each
    /// verdict, the goals reached, the failures).
    pub fn run_seed(&self, seed: Seed) -> SeedRun {
        run_seed(&self.target, seed, self.checks)
    }

    /// The script and faults seed `seed` plays.
    pub fn script_for(&self, seed: Seed) -> (ScriptedServer, Faults) {
        let faults = self.target.faults(seed);
        (self.target.script(seed, &faults), faults)
    }


    /// Runs the seeds; panics with the summary, every failure and its
    /// replay line, if any invariant broke.
    pub fn run(self) -> Summary {
        match self.try_run() {
            Ok(summary) => summary,
            Err(summary) => panic!("\n{summary}"),
        }
    }

    /// Runs the seeds; the summary is `Err` if any invariant broke.
    pub fn try_run(self) -> Result<Summary, Box<Summary>> {
        let seeds = match SeedPlan::from_env(self.seeds.clone()) {
            Ok(SeedPlan::One(seed)) => seed.value()..seed.value().saturating_add(1),
            Ok(SeedPlan::Range(range)) => range,
            Err(e) => panic!("livesim: {e}"),
        };
        let summary = run_plan(
            &Plan {
                targets: std::slice::from_ref(&self.target),
                seeds,
                shard: self.shard,
                jobs: self.jobs,
                duration: self.duration,
                checks: self.checks,
            },
            &|_| {},
        );
        if summary.failures().next().is_some() {
            Err(Box::new(summary))
        } else {
            Ok(summary)
        }
    }
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
    let targets: Vec<Target> = soaks.iter().map(|s| s.target.clone()).collect();
    run_plan(
        &Plan {
            targets: &targets,
            seeds,
            shard,
            jobs,
            duration,
            checks,
        },
        progress,
    )
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
