//! The API a Rust user soaks their own agent with: [`Soak`], and
//! [`soak_all`] for several agents at once (what `livesim sim soak` runs).
//!
//! A `Soak` is built in steps, each file one part of it: this one makes
//! it (from a builder function or an agent file); `settings.rs` says what
//! each run checks and how many run; `keeping.rs` what becomes of the
//! failures; `running.rs` runs the seeds; `mistakes.rs` refuses, before
//! a run, settings that cannot be what was meant.

mod keeping;
mod mistakes;
mod running;
mod settings;

pub use running::{soak_all, soak_corpus_first};

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::executor::{SeedPlan, TestId};
use crate::session::LiveBuilder;
use crate::soak::agent::repertoire::Repertoire;
use crate::soak::agent::{Agent, Sustained};
use crate::soak::check::budget::Budget;
use crate::soak::check::extractions;
use crate::soak::check::invariants::{
    EXTRACTOR_EVERY_TURN, Invariant, PATTERNS_FOLLOW_SPEC, PHASES_FOLLOW_SPEC, SETUP_AS_DECLARED,
    SPEC_AS_WRITTEN,
};
use crate::soak::check::setup::DeclaredSetup;
use crate::soak::check::sometimes::Sometimes;
use crate::soak::keep::kept::KEEP_PER_INVARIANT;
use crate::soak::keep::shrink::{DEFAULT_BUDGET, DEFAULT_RUNS};
use crate::soak::run::engine::{Checks, Replay, Target, all_cores};
use crate::soak::run::session::{LIVENESS_BOUND, SETTLE_WINDOW, liveness_bound};
use crate::soak::run::shard::Shard;

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
    /// The tools the settings name, each with the call that named it
    /// (`.tool_latency("lend_book", …)`): checked against the agent's
    /// before a run (see `mistakes.rs`).
    named_tools: Vec<(String, String)>,
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
            // Without `test(…)`, the test the harness runs on this thread
            // (its `cargo test` line), else the command running now.
            replay: match TestId::current() {
                Some(test) => replay_of(test),
                None => Replay {
                    seed: Arc::new(|seed| format!("LIVESIM_SEED={seed} {}", this_command())),
                    case: Arc::new(|path| {
                        format!("{CASE_VARIABLE}={} {}", path.display(), this_command())
                    }),
                },
            },
            liveness_bound: LIVENESS_BOUND,
            settle_window: SETTLE_WINDOW,
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
            // The slowest the agent can be: a tool's latency or the
            // extractor's, whose window below must fit in the bound.
            liveness_bound: liveness_bound(
                agent
                    .tools
                    .iter()
                    .map(|t| *t.latency.end())
                    .chain(agent.extractor.as_ref().map(|e| *e.latency.end()))
                    .max()
                    .unwrap_or_default(),
            ),
            // Each extraction ends in an event (its state write, or a
            // warning) within the model's latency: a quiet longer than that
            // has none running.
            settle_window: agent.extractor.as_ref().map_or(SETTLE_WINDOW, |e| {
                SETTLE_WINDOW.max(*e.latency.end() + Duration::from_millis(1))
            }),
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
            named_tools: Vec::new(),
        }
    }
}

/// The replay lines of a soak run in `test`: its `cargo test` lines.
fn replay_of(test: TestId) -> Replay {
    let case = test.clone();
    Replay {
        seed: Arc::new(move |seed| test.replay_command(seed)),
        case: Arc::new(move |path| case.replay_case_command(path)),
    }
}

/// The command this process runs, as a replay line repeats it.
fn this_command() -> String {
    let command: Vec<String> = std::env::args().collect();
    command.join(" ")
}
