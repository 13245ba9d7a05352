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
//!
//! Agents come from folders ([`Agent`]: `sim/<name>/agent.json`, what
//! `livesim sim soak` runs) or from Rust ([`Soak::new`] over your own
//! `Live::builder()` and real tools).
//!
//! This layer knows every layer below it; nothing below knows it.

mod agent;
mod agent_file;
mod args;
mod case;
mod check;
mod connections;
mod corpus;
mod corpus_decode;
mod engine;
mod faults;
mod file_reader;
mod generate;
pub mod invariants;
mod reconnects;
mod record;
mod repertoire;
mod report;
mod run;
mod shrink;
#[allow(clippy::module_inception)]
mod soak;
mod sometimes;
mod tools;
mod wire_order;

pub use agent::{AGENT_VERSION, Agent, AgentGoal, AgentInvariant, ExtractorSpec, RunContext};
pub use case::Case;
pub use check::{Determinism, Divergence, SeedHash, check_determinism};
pub use corpus::{CORPUS_VERSION, CorpusEntry, ShrinkNote, corpus_files};
pub use engine::{Checks, Progress, SeedRun, Shard, all_cores};
pub use faults::{CloseKind, FaultKind, Faults, Weather};
pub use file_reader::AgentFileError;
pub use generate::generate;
pub use record::{
    Calls, ExecutionOutcome, Governance, RunRecord, Settling, TimedEvent, ToolExecution,
};
pub use repertoire::{Repertoire, ToolModel};
pub use report::{AgentSummary, Failure, KEPT_PER_AGENT, Summary};
pub use run::{LIVENESS_BOUND, SETTLE_WINDOW};
pub use shrink::{DEFAULT_BUDGET, ShrinkError, ShrinkProgress, Shrunk};
pub use soak::{Soak, soak_all};
pub use sometimes::Sometimes;
pub use tools::{LATENCY_SPIKE, SimTool, TOOL_FAILURE, TOOL_LATENCY, render};
