//! What each run of a soak checks, what it draws, and how many runs there are.

use std::ops::{Range, RangeInclusive};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::executor::{Seed, SeedPlan, TestId};
use crate::flow::FlowSpec;
use crate::soak::agent::final_state::FinalState;
use crate::soak::agent::repertoire::Repertoire;
use crate::soak::agent::simulated_user::SimulatedUser;
use crate::soak::check::budget::Budget;
use crate::soak::check::invariants::Invariant;
use crate::soak::check::sometimes::Sometimes;
use crate::soak::generate::faults::{FaultKind, Faults};
use crate::soak::run::record::RunRecord;
use crate::soak::run::shard::Shard;
use crate::testing::ScriptedServer;

use super::Soak;

impl Soak {
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

    /// Every name a run of this soak can fail under: the built-in
    /// invariants, its own ([`invariants`](Self::invariants)), then what
    /// ends a run before its checks (`panic`, `determinism`, `setup`,
    /// `hang`; `liveness` is among the built-in ones).
    ///
    /// ```
    /// use livesim::soak::{Agent, Soak};
    ///
    /// let soak = Soak::agent(&Agent::load("sim/payment")?);
    /// let names = soak.failure_names();
    /// assert!(names.iter().any(|n| n == "wire-order"));
    /// assert!(names.iter().any(|n| n == "at-most-once(take_payment)"));
    /// assert!(names.iter().any(|n| n == "panic"));
    /// # Ok::<(), livesim::soak::AgentFileError>(())
    /// ```
    pub fn failure_names(&self) -> Vec<String> {
        use crate::soak::check::invariants::{DETERMINISM, HANG, PANIC, SETUP};
        let mut names = self.target.check_names();
        names.extend([PANIC, DETERMINISM, SETUP, HANG].map(String::from));
        names
    }

    /// Replays the journal of governed runs against `spec` instead of the
    /// spec the builder governs with (`journal-replays-clean`).
    pub fn spec(mut self, spec: impl AsRef<FlowSpec>) -> Self {
        self.target.spec = Some(Arc::new(spec.as_ref().clone()));
        self
    }

    /// Adds an invariant: `check` returns `Err(why)` when a run breaks it.
    /// Its name is its own: the name of one of livesim's checks
    /// (`protocol`, `panic`, …) is refused when the soak runs, since its
    /// failures would read as that check's.
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
        if let Budget::ToolRoundTrip {
            tool: Some(tool), ..
        } = &budget
        {
            let by = format!("Budget::tool_round_trip_of({tool:?}, …)");
            self.named_tools.push((tool.clone(), by));
        }
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
    /// (see [`tool_latencies`](Self::tool_latencies)). A tool the agent
    /// does not declare is refused when the soak runs, with the nearest
    /// that it does.
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
        let by = format!(".tool_latency({tool:?}, …)");
        self.named_tools.push((tool.to_string(), by));
        self
    }

    /// Lets `tool` panic: its panic is answered as an error, as always,
    /// and not reported as `panic` (which every other tool's panic is,
    /// naming the tool, the call and where it panicked).
    pub fn allow_panic(mut self, tool: &str) -> Self {
        self.target.allowed_panics.insert(tool.to_string());
        let by = format!(".allow_panic({tool:?})");
        self.named_tools.push((tool.to_string(), by));
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
    /// (default [`LIVENESS_BOUND`](crate::soak::LIVENESS_BOUND), 60 s of virtual time; for an agent
    /// read from a folder, at least twenty times its slowest tool). A
    /// bound shorter than the [`SETTLE_WINDOW`](crate::soak::SETTLE_WINDOW)
    /// leaves no session the time to settle, and is refused when the soak
    /// runs.
    pub fn liveness_bound(mut self, bound: Duration) -> Self {
        self.target.liveness_bound = bound;
        self
    }

    /// Runs about one run in `every` twice and compares the traces (0:
    /// never; 1: every run). Which runs is a hash of the agent and the
    /// seed ([`Checks::samples`](crate::soak::Checks::samples)), so every shard checks its share.
    pub fn check_determinism_every(mut self, every: u64) -> Self {
        self.checks.determinism_every = every;
        self
    }

    /// Names the test this soak runs in, so a failure prints the exact
    /// `cargo test` line that replays it (use [`test_id!`](crate::test_id)).
    /// Without it, a soak made in a test that `cargo test` runs names
    /// that test itself (its harness thread and its binary say which);
    /// elsewhere (a `main`, a thread of its own, a binary's tests) the
    /// lines repeat the command running.
    pub fn test(mut self, test: TestId) -> Self {
        self.target.replay = super::replay_of(test);
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
}
