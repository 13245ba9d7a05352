//! Incidents to regression tests, through the `livesim` binary as an
//! on-call engineer runs it: `session scenario`, `flow replay`, `flow why`
//! and `flow ci`, from a governed session's journal to a scenario corpus.

mod booking;
mod cli;
mod corpus;
mod inputs;
mod properties;
mod replay;

// The governed booking session the guide walks through (docs/guide/
// governance.md, "Incidents to regression tests"); the tests record
// its journals the same way.
#[path = "../../examples/booking_session.rs"]
mod booking_session;
