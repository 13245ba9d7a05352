//! The soak: livesim explores an agent by itself.
//!
//! A soak runs thousands of seeded sessions against an agent. For each
//! seed it first draws the seed's **swarm** of conversation faults
//! ([`Faults`]: some seeds calm, some storms), then **generates** a
//! multi-turn conversation as an ordinary [`ScriptedServer`](crate::testing::ScriptedServer)
//! ([`generate`]), plays it against the agent's session inside the seed's
//! simulation, ends with a **liveness phase** (faults off: the session must
//! settle within a bound), and checks every **invariant** over the run's
//! [`RunRecord`] ([`invariants`]: refused tools never run, every call
//! answered exactly once, the journal replays clean, …, plus the agent's
//! own). **"Sometimes" goals** count the interesting states runs reached
//! and flag those none did. The [`Summary`] reports it all, each failure
//! with its seed, swarm, faults, invariant and the one line that replays
//! it.
//!
//! A failure is then **shrunk** ([`Soak::shrink`]: its script, faults,
//! swarm and seeded decisions cut down to what it needs, every candidate
//! re-run) and kept in the **seeds corpus** ([`CorpusEntry`]:
//! `seeds/<agent>/<seed>.json`), which every later test run replays.
//! Failures are **triaged** ([`Triage`]): seeds that fail the same way
//! (one [`Signature`]: the agent, the invariant and the shape of the
//! shrunk script) collapse to one entry, which a later soak compares with
//! its own (new, still failing, fixed).
//!
//! Agents come from folders ([`Agent`]: `sim/<name>/agent.json`, what
//! `livesim sim soak` runs) or from Rust ([`Soak::new`] over your own
//! `Live::builder()` and real tools).
//!
//! The folders follow the pipeline, in the order a run goes through it:
//!
//! | folder | stage |
//! |---|---|
//! | `agent/` | what is soaked: agents read from folders, simulated tools, the repertoire conversations are made of |
//! | `generate/` | what a run plays: the seed's faults, the generated script, arguments, connections |
//! | `run/` | one session in its simulation and its record; the engine that runs many |
//! | `check/` | invariants, goals, the determinism check, the summary |
//! | `keep/` | shrinking a failure and keeping it in the corpus |
//!
//! [`Soak`] (in `soak.rs`) is the one door to all of it, for the CLI and
//! for a Rust user alike; [`Case`] (in `case.rs`) is what a run is a
//! function of, passed from stage to stage.
//!
//! This layer knows every layer below it; nothing below knows it.

mod agent;
mod case;
mod check;
mod file_reader;
#[cfg(feature = "proptest")]
#[cfg_attr(docsrs, doc(cfg(feature = "proptest")))]
pub mod fuzz;
mod generate;
mod keep;
mod run;
#[allow(clippy::module_inception)]
mod soak;

pub use agent::repertoire::{Repertoire, ToolModel};
pub use agent::tools::{LATENCY_SPIKE, SimTool, TOOL_FAILURE, TOOL_LATENCY, render};
pub use agent::{
    AGENT_VERSION, Agent, AgentGoal, AgentInvariant, ExtractorSpec, FinalState, PhasePlan,
    PhaseRule, RunContext, Said, SimResolver, SimulatedUser, Sustained, USER_CALL, USER_MODEL,
};
pub use case::Case;
pub use check::budget::Budget;
pub use check::determinism::{Determinism, Divergence, SeedHash, check_determinism};
pub use check::distribution::Distribution;
pub use check::invariants;
pub use check::latency::{self, Measure, Sample};
pub use check::report::{AgentSummary, Failure, KEPT_PER_AGENT, Summary};
pub use check::signature::Signature;
pub use check::sometimes::{GOALS_JUDGED_FROM, Sometimes};
pub use check::triage::{Comparison, Status, Triage, TriageEntry};
pub use check::triage_file::TRIAGE_VERSION;
pub use file_reader::AgentFileError;
pub use generate::faults::{CloseKind, FaultKind, Faults, Weather};
pub use generate::hang_up::ends_in_hang_up;
pub use generate::script::generate;
pub use generate::steps::{Step, script as steps_script};
pub use generate::variant;
pub use keep::corpus::{CORPUS_VERSION, CorpusEntry, ShrinkNote, corpus_files};
pub use keep::import::{Imported, import_wire_log};
pub use keep::import_journal::{import_journal, is_journal};
pub use keep::kept::{KEEP_PER_INVARIANT, Keeping, Kept, Saved};
pub use keep::replay::CorpusReplay;
pub use keep::shrink::{
    DEFAULT_BUDGET, DEFAULT_RUNS, ShrinkBudget, ShrinkError, ShrinkProgress, Shrunk,
};
pub use run::engine::{Checks, SeedRun, all_cores};
pub use run::passk::{DEFAULT_K, PassK};
pub use run::plan::Progress;
pub use run::record::{
    Calls, ExecutionOutcome, Governance, RunRecord, Settling, TimedEvent, ToolExecution,
};
pub use run::resolving::{Resolution, ResolvedSlot};
pub use run::session::{LIVENESS_BOUND, SETTLE_WINDOW};
pub use run::shard::Shard;
pub use run::watching::{WatchCall, Watched};
pub use soak::{CASE_VARIABLE, Soak, soak_all, soak_corpus_first};
