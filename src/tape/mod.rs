//! Tapes: record a model's or a resolver's answers once, replay them with
//! no network.
//!
//! Replaying a Live session's wire log covers what came over the socket,
//! but a session can also call out of band: an LLM extractor, a resolver
//! behind a slot, a background agent. A [`Tape`] records each such call's
//! input and output, then answers from the recording:
//!
//! * [`TapedLlm`] wraps any [`BaseLlm`](crate::llm::BaseLlm): `recording`
//!   passes calls through and records them, `replaying` needs no model and
//!   no credential;
//! * [`taped_resolver`] wraps a resolver's fetch the same way.
//!
//! Calls are matched on their kind ([`LLM_CALL`], [`USER_CALL`], or
//! `resolver:<name>`; a tape file holding another kind is refused) and
//! their input as [`canonical_json`]. The same input recorded twice replays
//! its two outputs in recording order; a recorded failure replays as a
//! failure; a replay that finds nothing for an input fails loudly, quoting
//! it, and never calls out.
//!
//! Tapes are kept in memory ([`MemoryTape`]) or in a JSONL file, a
//! versioned header line then one [`TapeEntry`] per line ([`FileTape`]),
//! which a test checks in beside itself. A file a crash left with a torn
//! last line (and perhaps garbage after it) still opens: its complete
//! entries replay and the damage is reported ([`TornEntry`]). An unknown
//! key in an entry is an error naming the key that was meant.

mod canonical;
mod entry;
mod file;
mod memory;
mod resolver;
mod taped_llm;

pub use canonical::canonical_json;
#[cfg(feature = "simulation")]
pub(crate) use entry::model_output_problem;
pub use entry::{LLM_CALL, Tape, TapeEntry, TapeError, USER_CALL};
pub use file::{FileTape, TAPE_KIND, TAPE_VERSION, TornEntry};
pub use memory::MemoryTape;
pub use resolver::{TapeMode, taped_resolver};
pub use taped_llm::TapedLlm;
