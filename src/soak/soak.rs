//! The API a Rust user soaks their own agent with: [`Soak`], and
//! [`soak_all`] for several agents at once (what `livesim sim soak` runs).

use std::collections::BTreeSet;
use std::ops::{Range, RangeInclusive};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use std::io::Write as _;

use crate::executor::regressions::Use;
use crate::executor::{Seed, SeedPlan, Swarm, TestId, Trace};
use crate::flow::FlowSpec;
use crate::session::LiveBuilder;
use crate::soak::agent::final_state::FinalState;
use crate::soak::agent::repertoire::Repertoire;
use crate::soak::agent::simulated_user::SimulatedUser;
use crate::soak::agent::{Agent, Sustained};
use crate::soak::case::Case;
use crate::soak::check::budget::Budget;
use crate::soak::check::extractions;
use crate::soak::check::invariants::{
    EXTRACTOR_EVERY_TURN, Invariant, PATTERNS_FOLLOW_SPEC, PHASES_FOLLOW_SPEC, SETUP_AS_DECLARED,
    SPEC_AS_WRITTEN,
};
use crate::soak::check::report::Summary;
use crate::soak::check::setup::DeclaredSetup;
use crate::soak::check::sometimes::Sometimes;
use crate::soak::generate::faults::{FaultKind, Faults};
use crate::soak::generate::steps::{Step, script as steps_script};
use crate::soak::keep::corpus::CorpusEntry;
use crate::soak::keep::kept::{KEEP_PER_INVARIANT, Keeping};
use crate::soak::keep::replay::{CorpusReplay, kept_cases};
use crate::soak::keep::shrink::{DEFAULT_BUDGET, DEFAULT_RUNS, ShrinkBudget};
use crate::soak::keep::shrink::{ShrinkError, ShrinkProgress, Shrunk};
use crate::soak::run::engine::{
    Checks, Replay, SeedRun, Target, all_cores, run_case, run_seed, simulate,
};
use crate::soak::run::plan::{KeptCase, Plan, Progress, run_plan};
use crate::soak::run::record::RunRecord;
use crate::soak::run::session::{LIVENESS_BOUND, liveness_bound};
use crate::soak::run::shard::Shard;
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
    keep: KeepChoice,
    stop_at_first_failure: bool,
    hang: Duration,
}

/// What the builder said about keeping failures (the environment may
/// still turn it down: see [`Soak::corpus`]).
#[derive(Clone, Debug)]
struct KeepChoice {
    on: bool,
    corpus: Option<PathBuf>,
    shrink_budget: Duration,
    shrink_runs: u64,
    per_invariant: usize,
    pages: Option<PathBuf>,
}

impl Default for KeepChoice {
    fn default() -> Self {
        KeepChoice {
            on: true,
            corpus: None,
            shrink_budget: DEFAULT_BUDGET,
            shrink_runs: DEFAULT_RUNS,
            per_invariant: KEEP_PER_INVARIANT,
            pages: None,
        }
    }
}

/// The environment variable that replays one kept case.
pub const CASE_VARIABLE: &str = "LIVESIM_CASE";

impl Soak {
    /// Soaks the sessions `builder` makes (called once per seed: make a
    /// fresh session each time, its `State` included). Conversations are
    /// generated from the tools the builder declares.
    pub fn new(
        name: impl Into<String>,
        builder: impl Fn() -> LiveBuilder + Send + Sync + 'static,
    ) -> Soak {
        let name = name.into();
        let made = builder();
        let mut repertoire = Repertoire::from_setup(&made.setup_message());
        // The whole policy, not only what the setup message shows: the
        // generator plans no more failed attempts than it allows.
        repertoire.resumption = made.inner.config.resumption.clone();
        Soak::with_target(Target {
            name,
            builder: Arc::new(move |_ctx| builder()),
            repertoire,
            script: None,
            tuning: Vec::new(),
            spec: None,
            invariants: Vec::new(),
            sometimes: Vec::new(),
            // Without `test(…)`, the command that is running now.
            replay: Replay {
                seed: Arc::new(|seed| format!("LIVESIM_SEED={seed} {}", this_command())),
                case: Arc::new(|path| {
                    format!("{CASE_VARIABLE}={} {}", path.display(), this_command())
                }),
            },
            liveness_bound: LIVENESS_BOUND,
            calibration: Some(Arc::new(OnceLock::new())),
            declared_latency: BTreeSet::new(),
            allowed_panics: BTreeSet::new(),
            explore: true,
            simulated_user: None,
            tape_extractor: false,
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
                .chain(agent.budgets.iter().map(Budget::invariant))
                .chain(agent.final_state.iter().map(|goal| {
                    let goal = goal.clone();
                    Invariant::new(goal.name(), move |run| goal.check(run))
                }))
                .chain(agent.phases.iter().map(|plan| {
                    let plan = plan.clone();
                    Invariant::new(PHASES_FOLLOW_SPEC, move |run| plan.check(run))
                }))
                .chain((!agent.temporal.is_empty()).then(|| {
                    let patterns = agent.temporal.clone();
                    Invariant::new(PATTERNS_FOLLOW_SPEC, move |run| {
                        Sustained::check(&patterns, run)
                    })
                }))
                .chain(
                    agent
                        .extractor
                        .as_ref()
                        .map(|_| Invariant::new(EXTRACTOR_EVERY_TURN, extractions::every_turn)),
                )
                .chain({
                    let declared = DeclaredSetup::of(agent);
                    [Invariant::new(SETUP_AS_DECLARED, move |run| {
                        declared.check(run)
                    })]
                })
                .chain(agent.spec_as_written.clone().map(|written| {
                    Invariant::new(SPEC_AS_WRITTEN, move |run| match &run.governance {
                        Some(governance) => written.check(&governance.spec),
                        None => Err("the agent's spec file governs no session".to_string()),
                    })
                }))
                .collect(),
            sometimes: agent
                .sometimes
                .iter()
                .map(|goal| {
                    let reached = goal.clone();
                    Sometimes::new(goal.name(), move |run| reached.reached(run))
                })
                .collect(),
            replay: Replay {
                seed: Arc::new(move |seed| format!("livesim sim run {dir} --seed {seed}")),
                case: Arc::new(|path| format!("livesim sim replay {}", path.display())),
            },
            liveness_bound: liveness_bound(
                agent
                    .tools
                    .iter()
                    .map(|t| *t.latency.end())
                    .max()
                    .unwrap_or_default(),
            ),
            // An agent file declares every tool's latency.
            calibration: None,
            declared_latency: BTreeSet::new(),
            allowed_panics: BTreeSet::new(),
            explore: true,
            simulated_user: agent.simulated_user.clone().map(Arc::new),
            tape_extractor: agent.extractor.is_some(),
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
            keep: KeepChoice::default(),
            stop_at_first_failure: false,
            hang: crate::executor::hang_bound(),
        }
    }

    /// The agent's name.
    pub fn name(&self) -> &str {
        &self.target.name
    }

    /// The invariants checked after every run besides the built-in ones
    /// (`invariants::builtin`): the agent's own, its budgets and final
    /// state, and what its file declares (phases, patterns, its spec, its
    /// extractor). Each checks any `RunRecord`, one of this soak's or one
    /// edited by hand.
    ///
    /// ```
    /// use livesim::soak::{Agent, Soak};
    ///
    /// let soak = Soak::agent(&Agent::load("sim/payment")?);
    /// let names: Vec<&str> = soak.invariants().iter().map(|i| i.name()).collect();
    /// assert!(names.contains(&"before(verify_identity, take_payment)"));
    /// assert!(names.contains(&"spec-as-written"));
    /// assert!(names.contains(&"setup-as-declared"));
    /// # Ok::<(), livesim::soak::AgentFileError>(())
    /// ```
    pub fn invariants(&self) -> &[Invariant] {
        &self.target.invariants
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

    /// Adds a latency budget, checked after every run like an invariant
    /// (named by [`Budget::name`]): a run over it fails with the measured
    /// value, the bound and the replay line.
    ///
    /// ```
    /// use std::time::Duration;
    /// use livesim::soak::{Agent, Budget, Soak};
    ///
    /// let agent = Agent::load("sim/weather").unwrap();
    /// let summary = Soak::agent(&agent)
    ///     .seeds(10)
    ///     .budget(Budget::tool_round_trip(Duration::from_millis(1)))
    ///     .keep(false)
    ///     .try_run()
    ///     .expect_err("tools take longer than 1 ms");
    /// let failure = summary.failures().next().unwrap();
    /// assert_eq!(failure.invariant, "budget(tool-round-trip <= 0.001s)");
    /// assert!(failure.message.contains("over the budget of 0.001s"), "{}", failure.message);
    /// ```
    pub fn budget(mut self, budget: Budget) -> Self {
        self.target.invariants.push(budget.invariant());
        self
    }

    /// Plays the user with a model, from its tape: at each point the
    /// conversation waits for the user's words, they say what the tape
    /// recorded for that seed and conversation (a line of the repertoire
    /// when it holds none). See [`SimulatedUser`].
    pub fn simulated_user(mut self, user: SimulatedUser) -> Self {
        self.target.simulated_user = Some(Arc::new(user));
        self
    }

    /// Adds a final-state goal: what the state must be once each run has
    /// settled, checked like an invariant (named by [`FinalState::name`]).
    pub fn final_state(mut self, goal: FinalState) -> Self {
        let name = goal.name();
        self.target
            .invariants
            .push(Invariant::new(name, move |run| goal.check(run)));
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
    /// The tools' latencies are taken as given (calibration measures
    /// none of them).
    pub fn repertoire(mut self, repertoire: Repertoire) -> Self {
        self.target
            .declared_latency
            .extend(repertoire.tools.iter().map(|t| t.name.clone()));
        self.target.repertoire = repertoire;
        self
    }

    /// Declares how long `tool` takes, so the faults that race it
    /// (cancellations, goAways, dropped connections mid-call) are drawn
    /// around that time. Without it, the soak measures each of the
    /// builder's tools in a few runs of its own before the first seed
    /// (see [`tool_latencies`](Self::tool_latencies)).
    ///
    /// ```
    /// use std::time::Duration;
    /// use livesim::prelude::*;
    /// use livesim::soak::Soak;
    ///
    /// let soak = Soak::new("slow", || {
    ///     Live::builder().tools(T::simple("lookup", "Looks it up", |_| async {
    ///         Ok(serde_json::json!({}))
    ///     }))
    /// })
    /// .tool_latency("lookup", Duration::from_millis(100)..=Duration::from_millis(300));
    /// assert_eq!(
    ///     soak.tool_latencies(),
    ///     [("lookup".to_string(), Duration::from_millis(100)..=Duration::from_millis(300))]
    /// );
    /// ```
    pub fn tool_latency(mut self, tool: &str, latency: RangeInclusive<Duration>) -> Self {
        if let Some(model) = self
            .target
            .repertoire
            .tools
            .iter_mut()
            .find(|t| t.name == tool)
        {
            model.latency = latency;
        }
        self.target.declared_latency.insert(tool.to_string());
        self
    }

    /// Lets `tool` panic: its panic is answered as an error, as always,
    /// and not reported as `panic` (which every other tool's panic is,
    /// naming the tool, the call and where it panicked).
    pub fn allow_panic(mut self, tool: &str) -> Self {
        self.target.allowed_panics.insert(tool.to_string());
        self
    }

    /// How long one run may take in wall time before it is reported as a
    /// `hang` (default [`DEFAULT_HANG`](crate::executor::DEFAULT_HANG), or
    /// `LIVESIM_HANG`). A task that never yields (a busy loop with no
    /// `.await`, in a tool or the session) holds the thread its run plays
    /// on, and nothing inside the simulation can end it: the soak reports
    /// the run with its replay line and its last trace entries, gives its
    /// thread up, and goes on with the other seeds.
    ///
    /// ```
    /// use std::time::Duration;
    /// use livesim::prelude::*;
    /// use livesim::soak::{Soak, invariants};
    ///
    /// let summary = Soak::new("spinner", || {
    ///     Live::builder().tools(T::simple("spin", "Spins", |_| async {
    ///         // A busy loop with no .await, for a second of wall time.
    ///         # #[allow(clippy::disallowed_methods)]
    ///         let until = std::time::Instant::now() + Duration::from_secs(1);
    ///         # #[allow(clippy::disallowed_methods)]
    ///         while std::time::Instant::now() < until {}
    ///         Ok(serde_json::json!({}))
    ///     }))
    /// })
    /// .script(|_, _| livesim::testing::ScriptedServer::new().calls("spin", serde_json::json!({})).says("Done."))
    /// .hang_after(Duration::from_millis(200))
    /// .seeds(1)
    /// .keep(false)
    /// .try_run()
    /// .unwrap_err();
    /// assert_eq!(summary.failures().next().unwrap().invariant, invariants::HANG);
    /// ```
    pub fn hang_after(mut self, bound: Duration) -> Self {
        self.hang = bound;
        self
    }

    /// Whether the soak explores variants of the runs that found
    /// something new (on by default): a run with an event order no run had
    /// before, or one that reached a rarely reached goal, earns variants
    /// of its seed (the same conversation, faults and scheduling
    /// perturbed), up to one for every four fresh seeds. Each variant is
    /// a seed of its own (see [`variant`](crate::soak::variant)) and
    /// replays like any other. A soak of one seed never explores.
    ///
    /// ```
    /// use livesim::prelude::*;
    /// use livesim::soak::Soak;
    ///
    /// let soak = || Soak::new("echo", || {
    ///     Live::builder().tools(T::simple("echo", "Says it back", |args| async move { Ok(args) }))
    /// })
    /// .seeds(40)
    /// .keep(false);
    /// let fresh = soak().explore(false).run();
    /// assert_eq!(fresh.sessions(), 40);
    /// let exploring = soak().run();
    /// assert!(exploring.sessions() > 40);
    /// assert_eq!(exploring.sessions(), 40 + exploring.explored());
    /// ```
    pub fn explore(mut self, on: bool) -> Self {
        self.target.explore = on;
        self
    }

    /// Each tool's latency as conversations are drawn with it: declared,
    /// or measured (the builder's tools, each called a few times under
    /// fixed seeds before the first seed runs; the same every time).
    pub fn tool_latencies(&self) -> Vec<(String, RangeInclusive<Duration>)> {
        self.target
            .repertoire()
            .tools
            .iter()
            .map(|t| (t.name.clone(), t.latency.clone()))
            .collect()
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

    /// Fault kinds on in every seed that is not calm, at these rates (in
    /// place of any tuning the agent had).
    pub fn faults(mut self, tuning: &[(FaultKind, f64)]) -> Self {
        self.target.tuning = tuning.to_vec();
        self
    }

    /// One more fault kind's rate, on top of the agent's own tuning (0
    /// turns the kind off). Each kind draws from streams of its own, so a
    /// kind turned off leaves every other draw of a seed as it was.
    ///
    /// ```
    /// use livesim::soak::{Agent, FaultKind, Soak};
    ///
    /// let agent = Agent::load("sim/resumable").unwrap();
    /// // Its seeds as they were before `id-restart` joined.
    /// let soak = Soak::agent(&agent).fault(FaultKind::IdRestart, 0.0);
    /// # let _ = soak;
    /// ```
    pub fn fault(mut self, kind: FaultKind, rate: f64) -> Self {
        match self.target.tuning.iter_mut().find(|(k, _)| *k == kind) {
            Some(entry) => entry.1 = rate,
            None => self.target.tuning.push((kind, rate)),
        }
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

    /// Starts no new run once a run has failed (runs already going
    /// finish): for a test that wants the first failure fast.
    pub fn stop_at_first_failure(mut self) -> Self {
        self.stop_at_first_failure = true;
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

    /// Runs about one run in `every` twice and compares the traces (0:
    /// never; 1: every run). Which runs is a hash of the agent and the
    /// seed ([`Checks::samples`]), so every shard checks its share.
    pub fn check_determinism_every(mut self, every: u64) -> Self {
        self.checks.determinism_every = every;
        self
    }

    /// Names the test this soak runs in, so a failure prints the exact
    /// `cargo test` line that replays it (use [`test_id!`](crate::test_id)).
    pub fn test(mut self, test: TestId) -> Self {
        let case = test.clone();
        self.target.replay = Replay {
            seed: Arc::new(move |seed| test.replay_command(seed)),
            case: Arc::new(move |path| case.replay_case_command(path)),
        };
        self
    }

    /// Says how a failure is replayed: `replay(seed)` is the line printed.
    pub fn replay_line(mut self, replay: impl Fn(Seed) -> String + Send + Sync + 'static) -> Self {
        self.target.replay.seed = Arc::new(replay);
        self
    }

    /// Says how a kept case (a corpus file) is replayed: `replay(path)`
    /// is the line printed for it.
    pub fn replay_case_line(
        mut self,
        replay: impl Fn(&Path) -> String + Send + Sync + 'static,
    ) -> Self {
        self.target.replay.case = Arc::new(replay);
        self
    }

    /// The line that replays the kept case in `file`.
    pub fn replay_case_command(&self, file: &Path) -> String {
        (self.target.replay.case)(file)
    }

    /// Keeps failures in corpus folder `dir` (`dir/<agent>/<seed>.json`)
    /// instead of the crate's `seeds/`.
    ///
    /// By default a soak keeps what it finds: each failure (at most
    /// [`KEEP_PER_INVARIANT`] per invariant, the lowest seeds) is shrunk
    /// (at most [`DEFAULT_RUNS`] candidate runs each, and
    /// [`DEFAULT_BUDGET`] of wall time), saved as a corpus
    /// entry in the `seeds/` folder of the crate the test runs in
    /// (`CARGO_MANIFEST_DIR`), and drawn as a timeline page under the
    /// target directory; every entry of the agent's folder runs first on
    /// the next run, before the seeds. `LIVESIM_REGRESSIONS=read` (CI)
    /// runs the kept cases but writes nothing; `LIVESIM_REGRESSIONS=off`
    /// does neither; `LIVESIM_REGRESSIONS_DIR=dir` puts the corpus in
    /// `dir/seeds`.
    pub fn corpus(mut self, dir: impl Into<PathBuf>) -> Self {
        self.keep.corpus = Some(dir.into());
        self
    }

    /// Whether failures are kept at all (default: yes, see
    /// [`corpus`](Self::corpus)); `false` shrinks, saves, draws and
    /// replays nothing.
    pub fn keep(mut self, on: bool) -> Self {
        self.keep.on = on;
        self
    }

    /// The most wall time shrinking one failure may take (default
    /// [`DEFAULT_BUDGET`]): an outer cap, the budget is
    /// [`shrink_runs`](Self::shrink_runs); zero keeps failures as found.
    pub fn shrink_time(mut self, budget: Duration) -> Self {
        self.keep.shrink_budget = budget;
        self
    }

    /// The most candidate runs shrinking one failure makes (default
    /// [`DEFAULT_RUNS`]): what makes a kept case the same on any machine;
    /// zero keeps failures as found.
    pub fn shrink_runs(mut self, runs: u64) -> Self {
        self.keep.shrink_runs = runs;
        self
    }

    /// Keeps at most `n` failures per invariant, the lowest seeds
    /// (default [`KEEP_PER_INVARIANT`]; 0: every one).
    pub fn keep_limit(mut self, n: usize) -> Self {
        self.keep.per_invariant = n;
        self
    }

    /// Writes each kept failure's timeline page to folder `dir`
    /// (`<agent>-<seed>.html`) instead of under the target directory.
    pub fn pages(mut self, dir: impl Into<PathBuf>) -> Self {
        self.keep.pages = Some(dir.into());
        self
    }

    /// The corpus folder this soak keeps failures in and runs first: the
    /// builder's, else `LIVESIM_REGRESSIONS_DIR/seeds`, else the
    /// `seeds/` of the crate being tested (`CARGO_MANIFEST_DIR`), else
    /// `seeds/` here.
    pub fn corpus_dir(&self) -> PathBuf {
        if let Some(dir) = &self.keep.corpus {
            return dir.clone();
        }
        let env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        match (env("LIVESIM_REGRESSIONS_DIR"), env("CARGO_MANIFEST_DIR")) {
            (Some(dir), _) => PathBuf::from(dir).join("seeds"),
            (None, Some(crate_dir)) => PathBuf::from(crate_dir).join("seeds"),
            (None, None) => PathBuf::from("seeds"),
        }
    }

    /// How this soak keeps failures, as the builder and the environment
    /// say (`None`: not at all).
    pub fn keeping(&self) -> Result<Option<Keeping>, String> {
        let use_ = Use::from_env()?;
        if !self.keep.on || use_ == Use::Off {
            return Ok(None);
        }
        let pages = self.keep.pages.clone().unwrap_or_else(|| {
            crate::timeline::target_dir()
                .join("livesim")
                .join("soak")
                .join(crate::timeline::path_component(&self.target.name))
        });
        Ok(Some(Keeping {
            corpus: Some(self.corpus_dir()),
            write: use_ == Use::ReadWrite,
            shrink_budget: self.keep.shrink_budget,
            shrink_runs: self.keep.shrink_runs,
            per_invariant: self.keep.per_invariant,
            pages: Some(pages),
        }))
    }

    /// Replays every kept case of this soak's agent (its folder of the
    /// [corpus](Self::corpus_dir), `<corpus>/<agent>/`), each checked as
    /// a replay is (every invariant, and determinism); panics naming each
    /// entry that fails and each file that cannot be read. The one line
    /// a test needs to keep its corpus passing.
    ///
    /// ```no_run
    /// # use livesim::prelude::*;
    /// # use livesim::soak::Soak;
    /// # fn cart() -> LiveBuilder { Live::builder() }
    /// #[test]
    /// fn every_kept_case_passes() {
    ///     Soak::new("cart", cart).replay_corpus();
    /// }
    /// ```
    #[track_caller]
    pub fn replay_corpus(&self) -> CorpusReplay {
        self.replay_corpus_in(self.corpus_dir())
    }

    /// [`replay_corpus`](Self::replay_corpus) over folder `dir`: the
    /// agent's folder of a corpus (`seeds/cart`), or a corpus whose
    /// `<agent>/` folder holds the entries (`seeds`).
    #[track_caller]
    pub fn replay_corpus_in(&self, dir: impl AsRef<Path>) -> CorpusReplay {
        let replay = self.try_replay_corpus(dir);
        if !replay.passed() {
            panic!("\n{replay}");
        }
        replay
    }

    /// Replays a corpus folder as [`replay_corpus_in`](Self::replay_corpus_in)
    /// does, and returns what happened instead of panicking.
    pub fn try_replay_corpus(&self, dir: impl AsRef<Path>) -> CorpusReplay {
        super::keep::replay::replay(self, dir.as_ref())
    }

    /// Runs one seed and returns everything about it (the record, each
    /// verdict, the goals reached, the failures).
    pub fn run_seed(&self, seed: Seed) -> SeedRun {
        run_seed(&self.target, seed, self.checks)
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
    pub fn run_steps(&self, seed: Seed, steps: &[Step]) -> SeedRun {
        let case = Case {
            seed,
            swarm: Swarm::draw(seed),
            faults: self.target.faults(seed),
            script: steps_script(steps, &self.target.repertoire, seed),
            decisions: None,
        };
        run_case(&self.target, &case, self.checks, None)
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
            Err(summary) => panic!("\n{summary}"),
        }
    }

    /// Runs the seeds and keeps the failures as [`run`](Self::run) does;
    /// the summary is `Err` if any invariant broke. With `LIVESIM_CASE`
    /// set to a corpus file, runs that kept case alone.
    #[track_caller]
    pub fn try_run(self) -> Result<Summary, Box<Summary>> {
        let keeping = self.keeping().unwrap_or_else(|e| panic!("livesim: {e}"));
        let case_file = std::env::var_os(CASE_VARIABLE).filter(|v| !v.is_empty());
        let (kept, errors, seeds) = match &case_file {
            Some(file) => {
                let file = PathBuf::from(file);
                let entry = super::keep::replay::load_for(&self, &file)
                    .unwrap_or_else(|e| panic!("livesim: {CASE_VARIABLE}={e}"));
                let seed = entry.case.seed.value();
                let kept = KeptCase {
                    target: 0,
                    replay: self.replay_case_command(&file),
                    case: entry.case,
                };
                (vec![kept], Vec::new(), seed..seed)
            }
            None => {
                let seeds = match SeedPlan::from_env(self.seeds.clone()) {
                    Ok(SeedPlan::One(seed)) => seed.value()..seed.value().saturating_add(1),
                    Ok(SeedPlan::Range(range)) => range,
                    Err(e) => panic!("livesim: {e}"),
                };
                // A replay of one seed runs that seed alone.
                let (kept, errors) = match &keeping {
                    Some(keeping) if seeds.end - seeds.start > 1 => {
                        kept_cases(&self, keeping.corpus.as_deref())
                    }
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
                    eprintln!("livesim: {line}")
                });
            }
            return Err(Box::new(summary));
        }
        let _ = writeln!(std::io::stderr().lock(), "{}", summary.line());
        Ok(summary)
    }
}

/// The command this process runs, as a replay line repeats it.
fn this_command() -> String {
    let command: Vec<String> = std::env::args().collect();
    command.join(" ")
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
            kept: &[],
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
