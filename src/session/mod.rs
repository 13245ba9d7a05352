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
mod route;
mod telemetry;
mod temporal;
mod wire_lane;

pub use builder::LiveSessionBuilder;
pub use bus::{EventCallback, EventStream};
pub use config::{DEFAULT_MODEL, Modality, WatchCallback};
pub use error::SessionError;
pub use events::{Lane, LiveEvent, ToolCall};
pub use extract::{Extract, RecordBuilder, RecordExtractor};
pub use extractors::{Extracted, Extractor, Speaker, Transcript, TranscriptLine, TurnContext};
pub use handle::LiveHandle;
pub(crate) use inbound::{FrameEvents, FrameFacts};
pub use live::{Live, LiveBuilder};
pub use phases::{PhaseMachine, PhaseTransition, Phases};
pub use temporal::{PatternWatch, TemporalPattern};
