//! The Live session runtime: the system under test.
//!
//! A session connects to the Live service (or to a script), runs the user's
//! tools, aggregates streamed text, keeps state and a journal, and emits
//! [`LiveEvent`]s, with its three lanes (fast, control, telemetry)
//! interleaved by the seeded executor.

mod aggregate;
mod dispatch;
mod events;
mod phases;
mod temporal;

pub use events::{Lane, LiveEvent, ToolCall};
pub use phases::{PhaseMachine, PhaseTransition, Phases};
pub use temporal::{PatternWatch, TemporalPattern};
