//! The API a Rust user soaks their own agent with: [`Soak`], and
//! [`soak_all`] for several agents at once (what `livesim sim soak` runs).

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use crate::executor::{Seed, SeedPlan, TestId, Trace};
use crate::flow::FlowSpec;
use crate::session::LiveBuilder;
use crate::soak::agent::Agent;
use crate::soak::agent::repertoire::Repertoire;
use crate::soak::case::Case;
use crate::soak::check::invariants::Invariant;
use crate::soak::check::report::Summary;
use crate::soak::check::sometimes::Sometimes;
use crate::soak::generate::faults::{FaultKind, Faults};
use crate::soak::keep::corpus::CorpusEntry;
use crate::soak::keep::shrink::{ShrinkError, ShrinkProgress, Shrunk};
use crate::soak::run::engine::{
    Checks, Plan, Progress, SeedRun, Shard, Target, all_cores, run_case, run_plan, run_seed,
};
use crate::soak::run::record::RunRecord;
use crate::soak::run::session::{LIVENESS_BOUND, liveness_bound};
use crate::testing::ScriptedServer;

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
            liveness_bound: LIVENESS_BOUND,
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
            liveness_bound: liveness_bound(
                agent
                    .tools
                    .iter()
                    .map(|t| *t.latency.end())
                    .max()
                    .unwrap_or_default(),
            ),
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

    /// What the generated user and model say (the tools stay as they are).
    pub fn lines<U, M>(mut self, user: U, model: M) -> Self
    where
        U: IntoIterator,
        U::Item: Into<String>,
        M: IntoIterator,
        M::Item: Into<String>,
    {
        self.target.repertoire.user_lines = user.into_iter().map(Into::into).collect();
        self.target.repertoire.model_lines = model.into_iter().map(Into::into).collect();
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

    /// How long the session may take to settle once the faults stop
    /// (default [`LIVENESS_BOUND`], 60 s of virtual time; for an agent
    /// read from a folder, at least twenty times its slowest tool).
    pub fn liveness_bound(mut self, bound: Duration) -> Self {
        self.target.liveness_bound = bound;
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

    /// What seed `seed` plays: its swarm, faults and generated script.
    pub fn case(&self, seed: Seed) -> Case {
        self.target.case(seed)
    }

    /// Runs `case` (a seed's own, a shrunk one, a corpus entry's) and
    /// returns everything about it, as [`run_seed`](Self::run_seed) does.
    pub fn run_case(&self, case: &Case) -> SeedRun {
        run_case(&self.target, case, self.checks, None)
    }

    /// Replays a corpus entry: its case, with every invariant checked and
    /// determinism too (the case runs twice). It passes when
    /// `failures` is empty.
    pub fn replay(&self, entry: &CorpusEntry) -> SeedRun {
        let checks = Checks {
            determinism_every: 1,
        };
        run_case(&self.target, &entry.case, checks, None)
    }

    /// Shrinks `case`, which breaks `invariant`, to a small case that
    /// breaks it too, within `budget` of wall time (see the
    /// [shrinking stages](crate::soak::Shrunk)); `progress` hears of each
    /// stage.
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
        budget: Duration,
        progress: &(dyn Fn(&ShrinkProgress) + Sync),
    ) -> Result<Shrunk, ShrinkError> {
        crate::soak::keep::shrink::shrink(&self.target, case, invariant, budget, progress)
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
