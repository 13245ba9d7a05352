//! The offline test kit: test a Live session with no network, no
//! credential and no model.
//!
//! * [`ScriptedServer`] stands in for the Live server: a script of what the
//!   server sends (text, transcriptions, tool calls, interruptions, raw
//!   frames, closes), played against a fully configured session;
//! * [`ManualClock`] (in [`clock`](crate::clock))
//!   stands in for the system clock;
//! * tapes ([`MemoryTape`],
//!   [`FileTape`], [`TapedLlm`],
//!   [`taped_resolver`], all in
//!   [`tape`](crate::tape)) stand in for out-of-band model and resolver
//!   calls.
//!
//! The clocks and tapes are also named here (`livesim::testing::ManualClock`,
//! `livesim::testing::{MemoryTape, TapedLlm}`, …), the paths tests
//! written for the design this kit follows import them from.
//!
//! A passing test establishes what your application does with the scripted
//! inputs; it does not measure what a real model would say.

mod expects;
pub mod fixtures;
pub(crate) mod player;
mod replay;
mod replay_session;
mod run;
mod script;
mod stream;

pub use player::ReplayError;

// The names the documents this kit was designed from import from
// `testing`: the clocks and the tapes. Each is the one type defined in
// `clock` or `tape`, named here too so a test written from those
// documents compiles as written; livesim's own docs use the canonical
// paths.
#[doc(no_inline)]
pub use crate::clock::{Clock, ManualClock, SharedClock, SystemClock};
#[doc(no_inline)]
pub use crate::tape::{
    FileTape, LLM_CALL, MemoryTape, Tape, TapeEntry, TapeError, TapeMode, TapedLlm, canonical_json,
    taped_resolver,
};
pub use replay::{ReplayControl, ReplayTransport, ScriptConnector};
pub use replay_session::{ReplaySession, replay_session};
pub use run::{PlayError, ScriptedRun};
pub use script::{
    Action, Call, CloseAction, Reconnect, ResumptionUpdate, SCRIPT_VERSION, ScriptError,
    ScriptedServer,
};
