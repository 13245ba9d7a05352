//! The Live wire protocol: frames, the JSON messages they carry, close
//! codes and secrets.
//!
//! This layer owns the vocabulary of the Gemini Live `BidiGenerateContent`
//! protocol and nothing about sessions or sockets:
//!
//! * [`Frame`]: text, binary or close, the unit every transport moves;
//! * [`ClientMessage`] (`setup`, `clientContent`, `realtimeInput`,
//!   `toolResponse`) and [`ServerMessage`] (`setupComplete`,
//!   `serverContent`, `toolCall`, `toolCallCancellation`, `goAway`,
//!   `sessionResumptionUpdate`, `usageMetadata`, voice activity): structs
//!   with every key optional, so a frame with several payloads decodes all
//!   of them and keys this version does not know are kept in `extra` and
//!   written back out;
//! * [`decode`] / [`ProtocolError`]: frame → message, never panicking;
//! * [`Closed`] / [`CloseClass`]: close codes classified for reconnecting;
//! * [`Secret`] / [`Redactor`]: keeping credentials out of text;
//! * [`printable_lines`]: text escaped and bounded for a terminal.
//!
//! On the wire, names are camelCase; snake_case is accepted on input, as
//! the server accepts it. int64 fields are strings (either form accepted),
//! durations are `"0.250s"` strings, and absent booleans are false.

mod client;
mod close;
mod codec;
mod content;
mod duration;
mod frame;
mod handles;
mod json_path;
pub(crate) mod numbers;
mod open_enum;
pub(crate) mod redact;
mod secret;
mod server;
mod server_content;
mod setup;
mod terminal;
mod tools;
mod usage;

use std::collections::BTreeMap;

use serde_json::Value;

/// Keys a message does not know, by name, with their values as sent.
pub type Extra = BTreeMap<String, Value>;

/// A JSON object, as used for `{}`-valued fields such as `activityStart`.
pub type Object = serde_json::Map<String, Value>;

pub use client::{ClientContent, ClientMessage, RealtimeInput};
pub use close::{CloseClass, Closed, classify, codes};
pub use codec::{Decoded, ProtocolError, decode, decode_bytes, to_json};
pub use content::{
    Base64Error, Blob, CodeExecutionResult, Content, ExecutableCode, FileData, Part, PartKind,
};
pub use duration::{DurationError, MAX_DURATION_SECONDS, format_duration, parse_duration};
pub(crate) use frame::truncate_at_char;
pub use frame::{CloseFrame, Frame, FrameKind, MAX_CLOSE_REASON};
pub(crate) use handles::handles_in_text;
pub(crate) use json_path::JsonPath;
pub use open_enum::{
    ActivityHandling, Behavior, EndSensitivity, Language, MediaResolution, Modality, Outcome,
    Scheduling, StartSensitivity, TurnCompleteReason, TurnCoverage, UrlRetrievalStatus,
    VadSignalType, VoiceActivityType,
};
pub use redact::{REDACTED, REDACTED_TOKEN, Redactor, clip, redact_url, scrub_builtin};
pub use secret::{Secret, known_secrets, remember};
#[cfg(feature = "simulation")]
pub(crate) use secret::{known_scrubbed, scrub_known};
pub use server::{
    GoAway, InBandError, ServerMessage, SessionResumptionUpdate, SetupComplete, VoiceActivity,
    VoiceActivityDetectionSignal,
};
pub use server_content::{
    GroundingMetadata, SearchEntryPoint, ServerContent, Transcription, UrlContextMetadata,
    UrlMetadata,
};
pub use setup::{
    AutomaticActivityDetection, ContextWindowCompression, GenerationConfig, HistoryConfig,
    PrebuiltVoiceConfig, Proactivity, RealtimeInputConfig, SessionResumption, Setup, SlidingWindow,
    SpeechConfig, ThinkingConfig, VoiceConfig,
};
pub use terminal::{Escape, MAX_PRINTED_LINE, acts_on_a_terminal, printable, printable_lines};
pub use tools::{
    FunctionCall, FunctionDeclaration, FunctionResponse, Tool, ToolCall, ToolCallCancellation,
    ToolResponse,
};
pub use usage::{ModalityTokenCount, UsageMetadata};

/// A message key as the Live API spells it: `client_content` becomes
/// `clientContent` (the API accepts snake_case keys too, and Google's
/// Python SDK sends them so); a camelCase key stays as it is.
pub(crate) fn camel_case(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    let mut upper = false;
    for c in key.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// A JSON object of `members`, in order, each value moved in.
///
/// `serde_json::json!` copies every value it interpolates through serde's
/// serializer (and, with `arbitrary_precision`, every number through its
/// text); on a path that builds a message per tool call, that copy costs
/// more than the rest of the message.
pub(crate) fn object<const N: usize>(members: [(&str, Value); N]) -> Value {
    Value::Object(
        members
            .into_iter()
            .map(|(key, value)| (key.to_string(), value))
            .collect(),
    )
}
