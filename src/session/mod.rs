//! The Live session runtime: the system under test.
//!
//! A session connects to the Live service (or to a script), runs the user's
//! tools, aggregates streamed text, keeps state and a journal, and emits
//! [`LiveEvent`]s. Every inbound frame takes one path: the **wire** lane
//! decodes it, aggregates its text and routes each event to the lane that
//! handles it; the **fast** lane emits text, transcripts and media; the
//! **control** lane runs tool calls through the flow gate to the
//! dispatcher, answers them, and handles cancellations, interruptions,
//! turn boundaries, phases, temporal patterns and watchers; the
//! **telemetry** lane emits usage and go-away signals and writes the
//! session signals on its timer. The lanes run in one task as a
//! [`LaneSet`](crate::executor::LaneSet): each lane's events keep their
//! order, and how the lanes interleave is the seed's choice.
//!
//! # Delivered order and stored order
//!
//! Events are **delivered** ([`LiveHandle::events`], callbacks, the trace)
//! as the lanes emit them: each lane's own events in order, the lanes
//! interleaved by the seed (and, outside simulation, by timing).
//!
//! The **stored log** ([`LiveHandle::session_log`]) is the conversation's
//! history, the record a user persists and resumes from. It is in wire
//! order, identical for every seed and every frame spacing:
//!
//! * what it keeps: every event from the server that is not partial and
//!   carries no inline audio, video or image; and the session's own
//!   `connected`, tool responses and refusals, extractions and
//!   `disconnected`. Notices (warnings, phase changes, pattern matches)
//!   are delivered but not stored: when they fire depends on timers, and
//!   the state journal records what they reflect;
//! * the server's events stand in the order of their frames, and within a
//!   frame in the order aggregation produces them;
//! * `connected` stands first; a tool's response (or its refusal by flow
//!   governance) stands right after the `tool_call` event that carried the
//!   call, the calls of one message in the order the message lists them,
//!   however late or in whatever order the tools finish; an extraction
//!   stands right after the `turn_complete` of the turn it read, extractors
//!   in the order they were added; `disconnected` stands last, at the
//!   close that ended the connection.
//!
//! An event that stands before one already stored (a slow tool's response)
//! is inserted at its place, so a log read mid-session may later gain
//! entries before its end. A call still running when the connection ends
//! is never answered, so it has no response in the log.

mod aggregate;
mod builder;
mod bus;
mod config;
mod connect;
mod control;
mod dispatch;
mod error;
mod events;
mod extract;
mod extractors;
mod fast;
mod handle;
mod inbound;
mod live;
mod phases;
#[cfg(feature = "planted-bug")]
mod planted;
mod position;
mod reconnect;
mod redacted;
mod resumption;
mod route;
mod setup;
mod telemetry;
mod temporal;
mod wire_lane;

pub use builder::LiveSessionBuilder;
pub use bus::{EventCallback, EventStream};
pub use config::{DEFAULT_MODEL, Modality, WatchCallback};
pub(crate) use dispatch::human as human_duration;
pub use error::SessionError;
pub use events::{Lane, LiveEvent, ToolCall};
pub use extract::{Extract, RecordBuilder, RecordExtractor};
pub use extractors::{Extracted, Extractor, Speaker, Transcript, TranscriptLine, TurnContext};
pub use handle::LiveHandle;
pub use live::{Live, LiveBuilder};
pub use phases::{PhaseMachine, PhaseTransition, Phases};
#[cfg(feature = "planted-bug")]
#[doc(hidden)]
pub use planted::PlantedBug;
pub use resumption::Resumption;
pub use temporal::{PatternWatch, TemporalPattern};
