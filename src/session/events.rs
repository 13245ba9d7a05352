//! What a session tells its user: [`LiveEvent`]s, the lane each belongs to,
//! and which of them the session's stored log keeps.
//!
//! Text and transcriptions stream as partial deltas and then arrive once in
//! full (see `aggregate.rs`). Everything else is a single event. Of what
//! the server sends, an event is **stored** in the session log if and only
//! if it is not partial and carries no inline audio, video or image: a
//! turn's text is kept once, and media stays out of the log. Of what the
//! session adds, `connected`, tool responses and refusals, extractions and
//! `disconnected` are stored; warnings, phase changes and pattern matches
//! are **notices**, delivered and never stored (the state journal records
//! what they reflect).

use crate::wire::JsonPath;
use std::fmt;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::clock::Timestamp;

mod shown;

/// One tool call the model made.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolCall {
    /// The call's id, echoed in its response.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments (`{}` when the model sent none).
    pub args: Value,
}

/// The lane an event is handled and emitted on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Lane {
    /// Text, transcripts and media: sync callbacks, no waiting.
    Fast,
    /// Tool calls, cancellations, interruptions, turn boundaries, phases,
    /// patterns, watchers: everything that decides.
    Control,
    /// Usage, go-away and resumption signals.
    Telemetry,
}

impl Lane {
    /// The lane's name, as in traces and logs.
    pub fn name(self) -> &'static str {
        match self {
            Lane::Fast => "fast",
            Lane::Control => "control",
            Lane::Telemetry => "telemetry",
        }
    }
}

impl fmt::Display for Lane {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Something that happened in a Live session.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum LiveEvent {
    /// The server accepted the setup.
    Connected {
        /// The server's session id, when it sent one.
        session_id: Option<String>,
    },
    /// A chunk of model text as it streams (partial).
    TextDelta {
        /// The chunk.
        text: String,
        /// Whether it is a thought.
        thought: bool,
    },
    /// The whole text of a segment, once it ends.
    TextComplete {
        /// The segment's text.
        text: String,
        /// Whether the segment was thoughts.
        thought: bool,
        /// Whether an interruption ended it.
        interrupted: bool,
    },
    /// A chunk of the transcript of what the user said (partial).
    InputTranscriptDelta {
        /// The chunk.
        text: String,
    },
    /// The whole transcript of an utterance of the user's.
    InputTranscript {
        /// The utterance.
        text: String,
    },
    /// A chunk of the transcript of the model's speech (partial).
    OutputTranscriptDelta {
        /// The chunk.
        text: String,
    },
    /// The whole transcript of the model's speech in a turn.
    OutputTranscript {
        /// The speech.
        text: String,
    },
    /// Inline media from the model (audio, usually).
    Media {
        /// The MIME type, e.g. `audio/pcm;rate=24000`.
        mime_type: String,
        /// The bytes, base64 as on the wire.
        data: String,
        /// When it arrived, by the session's clock.
        at: Timestamp,
        /// Whether its message reported an interruption.
        interrupted: bool,
    },
    /// Model parts that are neither text nor media (code, code results,
    /// parts this version does not know), kept as they came.
    Content {
        /// The parts, as JSON.
        parts: Vec<Value>,
        /// Whether its message reported an interruption.
        interrupted: bool,
    },
    /// The model called tools (all calls of one message).
    ToolCall {
        /// The calls.
        calls: Vec<ToolCall>,
    },
    /// The session answered a tool call.
    ToolResponse {
        /// The call's id.
        id: String,
        /// The tool's name.
        name: String,
        /// What was sent: the result object or `{"error": …}`.
        response: Value,
    },
    /// The server cancelled tool calls; they will not be answered.
    ToolCancelled {
        /// The ids cancelled.
        ids: Vec<String>,
    },
    /// The model's turn was interrupted (with no text pending).
    Interrupted,
    /// The model finished generating (it may still be speaking).
    GenerationComplete,
    /// The model's turn ended.
    TurnComplete {
        /// Whether the turn ended by interruption.
        interrupted: bool,
        /// The server's reason, when it gave one.
        reason: Option<String>,
    },
    /// Token usage the server reported.
    Usage {
        /// The `usageMetadata` object as it came.
        usage: Value,
    },
    /// The server will close the connection soon.
    GoAway {
        /// How long it said it has left.
        time_left: Option<Duration>,
    },
    /// The server reported whether the session can be resumed. The handle
    /// itself is a secret and never appears in an event.
    ResumptionUpdate {
        /// Whether a resumption handle is valid now.
        resumable: bool,
    },
    /// The phase machine moved.
    PhaseChanged {
        /// The phase left.
        from: String,
        /// The phase entered.
        to: String,
    },
    /// A temporal pattern fired.
    PatternMatched {
        /// The pattern's name.
        name: String,
    },
    /// Flow governance refused a tool call (it was answered with the
    /// reason as its error).
    ToolDenied {
        /// The call's id.
        id: String,
        /// The tool's name.
        name: String,
        /// Why.
        reason: String,
    },
    /// An extractor read the transcript at the end of a turn and wrote
    /// these values to state (only extractions that wrote something are
    /// emitted).
    Extracted {
        /// The extractor's name.
        extractor: String,
        /// The keys written and their values, in the order written.
        values: serde_json::Map<String, Value>,
    },
    /// Parts of a server message the session has no dedicated event for:
    /// unknown keys (an unknown message is an event, not an error),
    /// grounding and URL-context metadata, voice activity, and the like.
    Unknown {
        /// Those keys and their values, as they came.
        message: Value,
    },
    /// Something odd the session handled by a documented policy (a
    /// duplicate call id, a late cancellation, a server frame it could
    /// not read: ignored whole, or, when only some of its payloads are
    /// malformed, read without them, each named).
    Warning {
        /// What happened and what the session did.
        message: String,
    },
    /// The connection ended without being asked to, and the session is
    /// opening a new one (attempt `attempt` of this reconnect), or it is
    /// moving to a new one after `goAway`.
    Reconnecting {
        /// Which attempt (1-based); the counter resets after every
        /// `setupComplete`.
        attempt: u32,
        /// Why: the close (redacted), the transport error, or `goAway`.
        cause: String,
    },
    /// The session is on a new connection (its `setupComplete` came).
    Resumed {
        /// The connection's number in the session (the first is 1).
        connection: u32,
        /// `true` when the server had no session to resume (a fresh one
        /// started: what the server knew of the conversation is gone);
        /// `false` when it resumed with the session's handle.
        fresh: bool,
    },
    /// The server could not resume the session (`1008 session not
    /// found`): its handle is dropped, and a fresh session follows.
    ResumptionFailed {
        /// The server's reason (redacted).
        reason: String,
    },
    /// The connection ended.
    Disconnected {
        /// The close code, if a close frame came.
        code: Option<u16>,
        /// The close reason (redacted), or what ended the connection.
        reason: String,
        /// What the end means for reconnecting: `fatal`, `retryable` or
        /// `resume rejected`; `None` when this side hung up.
        class: Option<String>,
    },
}

impl LiveEvent {
    /// Whether the event is a streamed chunk that a later full event
    /// repeats.
    pub fn is_partial(&self) -> bool {
        matches!(
            self,
            LiveEvent::TextDelta { .. }
                | LiveEvent::InputTranscriptDelta { .. }
                | LiveEvent::OutputTranscriptDelta { .. }
        )
    }

    /// Whether the session's stored log keeps the event: not partial, no
    /// inline audio, video or image, and not a notice.
    pub fn is_stored(&self) -> bool {
        match self {
            LiveEvent::Media { mime_type, .. } => !is_live_media(mime_type),
            LiveEvent::Content { parts, .. } => !parts.iter().any(|part| {
                part.at("/inlineData/mimeType")
                    .and_then(Value::as_str)
                    .is_some_and(is_live_media)
            }),
            other => !other.is_partial() && !other.is_notice(),
        }
    }

    /// Whether the event is a notice: something the session tells its
    /// user as it happens (a warning, a phase change, a pattern match)
    /// that the stored log leaves out, because when it fires depends on
    /// timers and timing, and the state journal already records the state
    /// it reflects.
    pub fn is_notice(&self) -> bool {
        matches!(
            self,
            LiveEvent::Warning { .. }
                | LiveEvent::PhaseChanged { .. }
                | LiveEvent::PatternMatched { .. }
        )
    }

    /// The lane that handles and emits the event.
    pub fn lane(&self) -> Lane {
        match self {
            LiveEvent::TextDelta { .. }
            | LiveEvent::TextComplete { .. }
            | LiveEvent::InputTranscriptDelta { .. }
            | LiveEvent::InputTranscript { .. }
            | LiveEvent::OutputTranscriptDelta { .. }
            | LiveEvent::OutputTranscript { .. }
            | LiveEvent::Media { .. } => Lane::Fast,
            LiveEvent::Usage { .. }
            | LiveEvent::GoAway { .. }
            | LiveEvent::ResumptionUpdate { .. } => Lane::Telemetry,
            _ => Lane::Control,
        }
    }

    /// The event's kind, as its JSON `type` field names it.
    pub fn kind(&self) -> &'static str {
        match self {
            LiveEvent::Connected { .. } => "connected",
            LiveEvent::TextDelta { .. } => "text_delta",
            LiveEvent::TextComplete { .. } => "text_complete",
            LiveEvent::InputTranscriptDelta { .. } => "input_transcript_delta",
            LiveEvent::InputTranscript { .. } => "input_transcript",
            LiveEvent::OutputTranscriptDelta { .. } => "output_transcript_delta",
            LiveEvent::OutputTranscript { .. } => "output_transcript",
            LiveEvent::Media { .. } => "media",
            LiveEvent::Content { .. } => "content",
            LiveEvent::ToolCall { .. } => "tool_call",
            LiveEvent::ToolResponse { .. } => "tool_response",
            LiveEvent::ToolCancelled { .. } => "tool_cancelled",
            LiveEvent::Interrupted => "interrupted",
            LiveEvent::GenerationComplete => "generation_complete",
            LiveEvent::TurnComplete { .. } => "turn_complete",
            LiveEvent::Usage { .. } => "usage",
            LiveEvent::GoAway { .. } => "go_away",
            LiveEvent::ResumptionUpdate { .. } => "resumption_update",
            LiveEvent::PhaseChanged { .. } => "phase_changed",
            LiveEvent::PatternMatched { .. } => "pattern_matched",
            LiveEvent::ToolDenied { .. } => "tool_denied",
            LiveEvent::Extracted { .. } => "extracted",
            LiveEvent::Unknown { .. } => "unknown",
            LiveEvent::Warning { .. } => "warning",
            LiveEvent::Disconnected { .. } => "disconnected",
            LiveEvent::Reconnecting { .. } => "reconnecting",
            LiveEvent::Resumed { .. } => "resumed",
            LiveEvent::ResumptionFailed { .. } => "resumption_failed",
        }
    }
}

/// Whether a MIME type is live model media the stored log leaves out.
fn is_live_media(mime_type: &str) -> bool {
    ["audio/", "video/", "image/"]
        .iter()
        .any(|prefix| mime_type.starts_with(prefix))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_keeps_full_non_media_events() {
        let delta = LiveEvent::TextDelta {
            text: "Hel".into(),
            thought: false,
        };
        let full = LiveEvent::TextComplete {
            text: "Hello".into(),
            thought: false,
            interrupted: false,
        };
        let audio = LiveEvent::Media {
            mime_type: "audio/pcm;rate=24000".into(),
            data: "AAAA".into(),
            at: Timestamp::EPOCH,
            interrupted: false,
        };
        let pdf = LiveEvent::Media {
            mime_type: "application/pdf".into(),
            data: "AAAA".into(),
            at: Timestamp::EPOCH,
            interrupted: false,
        };
        assert!(!delta.is_stored() && delta.is_partial());
        assert!(full.is_stored());
        assert!(!audio.is_stored());
        assert!(pdf.is_stored());
        let warning = LiveEvent::Warning {
            message: "late cancellation".into(),
        };
        assert!(warning.is_notice() && !warning.is_stored());
        assert!(
            LiveEvent::Extracted {
                extractor: "booking".into(),
                values: serde_json::Map::new(),
            }
            .is_stored()
        );
        assert_eq!(audio.lane(), Lane::Fast);
        assert_eq!(LiveEvent::Interrupted.lane(), Lane::Control);
    }
}
