//! Check: what a run's record must hold and what it reached. The
//! [`invariants`] (reading the frames as the protocol reads them,
//! [`frames_read`]; with those of connections in [`reconnects`], of
//! refusals in [`refusals`], the stored log's order in [`wire_order`] and
//! the session's clock signals in [`telemetry`], what extractors were given
//! in [`extractions`] (where what the user typed stands in
//! [`typed_lines`]), the flow's decisions against a model of its rules in
//! [`flow_model`], the phases a session moved through in [`phases`], its temporal patterns
//! in [`temporal`]), the "sometimes" goals
//! ([`sometimes`]), the determinism check across runs ([`determinism`]),
//! the [`report`] a soak ends with, and the [`triage`] of its failures by
//! [`signature`], against the last soak's (its file in [`triage_file`],
//! what it tells in [`triage_report`]).

pub(crate) mod aggregation;
pub(crate) mod answers;
pub mod budget;
pub(crate) mod calls_by_connection;
pub(crate) mod client_messages;
pub(crate) mod connection_state;
pub(crate) mod determinism;
mod digest;
pub mod distribution;
pub(crate) mod excerpt;
pub(crate) mod extractions;
pub(crate) mod flow_model;
pub(crate) mod frames_read;
pub(crate) mod go_away;
pub(crate) mod handle_secret;
pub mod invariants;
pub(crate) mod journal;
pub(crate) mod json;
pub mod latency;
pub(crate) mod liveness;
pub(crate) mod model;
pub(crate) mod move_moment;
pub(crate) mod phases;
pub(crate) mod reconnect_ends;
pub(crate) mod reconnects;
pub(crate) mod refusals;
pub(crate) mod remaining_budget;
pub(crate) mod report;
pub(crate) mod resolvers;
pub(crate) mod results_journaled;
pub(crate) mod setup;
pub(crate) mod signals;
pub(crate) mod signature;
pub(crate) mod sometimes;
pub(crate) mod spec_as_written;
pub(crate) mod state_model;
pub(crate) mod stored_once;
pub(crate) mod telemetry;
pub(crate) mod temporal;
pub(crate) mod tick_keys;
pub(crate) mod triage;
pub(crate) mod triage_file;
pub(crate) mod triage_report;
pub(crate) mod typed_lines;
pub(crate) mod watchers;
pub(crate) mod wire_order;
