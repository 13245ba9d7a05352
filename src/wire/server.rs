//! Server messages: everything the Live server sends in a frame.
//!
//! [`ServerMessage`] is one struct whose every top-level key is optional.
//! A frame is decoded once into it, so a frame that carries several
//! payloads (`serverContent` with `usageMetadata`, or keys from a newer
//! protocol) loses none of them; which key "wins" is never decided by
//! looking for a substring in the text.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::numbers::{flag, int64};
use super::open_enum::{VadSignalType, VoiceActivityType};
use super::server_content::ServerContent;
use super::tools::{ToolCall, ToolCallCancellation};
use super::usage::UsageMetadata;
use super::{Extra, duration};

/// One server → client message: every payload the frame carried.
///
/// ```
/// use livesim::wire::ServerMessage;
///
/// let frame = br#"{"serverContent":{"turnComplete":true},"usageMetadata":{"totalTokenCount":183},"newFeature":{"x":1}}"#;
/// let msg = ServerMessage::from_slice(frame).unwrap();
/// assert!(msg.server_content.as_ref().unwrap().turn_complete);
/// assert_eq!(msg.usage_metadata.as_ref().unwrap().total_token_count, Some(183));
/// assert_eq!(msg.payload_names(), ["serverContent", "usageMetadata"]);
/// assert_eq!(msg.extra["newFeature"]["x"], 1); // unknown keys are kept…
/// assert!(msg.to_json().contains(r#""newFeature":{"x":1}"#)); // …and sent back out
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerMessage {
    /// The server accepted `setup`.
    #[serde(
        default,
        alias = "setup_complete",
        skip_serializing_if = "Option::is_none"
    )]
    pub setup_complete: Option<SetupComplete>,
    /// Model output and turn boundaries.
    #[serde(
        default,
        alias = "server_content",
        skip_serializing_if = "Option::is_none"
    )]
    pub server_content: Option<ServerContent>,
    /// Functions to run.
    #[serde(default, alias = "tool_call", skip_serializing_if = "Option::is_none")]
    pub tool_call: Option<ToolCall>,
    /// Calls to abandon.
    #[serde(
        default,
        alias = "tool_call_cancellation",
        skip_serializing_if = "Option::is_none"
    )]
    pub tool_call_cancellation: Option<ToolCallCancellation>,
    /// The server will end the connection soon.
    #[serde(default, alias = "go_away", skip_serializing_if = "Option::is_none")]
    pub go_away: Option<GoAway>,
    /// A new resumption handle, or news that resuming is not possible now.
    #[serde(
        default,
        alias = "session_resumption_update",
        skip_serializing_if = "Option::is_none"
    )]
    pub session_resumption_update: Option<SessionResumptionUpdate>,
    /// Token counts; may come alone or beside any other payload.
    #[serde(
        default,
        alias = "usage_metadata",
        skip_serializing_if = "Option::is_none"
    )]
    pub usage_metadata: Option<UsageMetadata>,
    /// The server heard the user start or stop (newer servers).
    #[serde(
        default,
        alias = "voice_activity",
        skip_serializing_if = "Option::is_none"
    )]
    pub voice_activity: Option<VoiceActivity>,
    /// Start- or end-of-speech signal (newer servers).
    #[serde(
        default,
        alias = "voice_activity_detection_signal",
        skip_serializing_if = "Option::is_none"
    )]
    pub voice_activity_detection_signal: Option<VoiceActivityDetectionSignal>,
    /// Top-level keys this version does not know (`error`, new payloads),
    /// kept as sent: an unknown message is an event, not a decode failure.
    #[serde(flatten)]
    pub extra: Extra,
}

/// An in-band `error` object, which the Live API does not document but
/// which has been seen; see [`ServerMessage::in_band_error`].
#[derive(Clone, Debug, PartialEq)]
pub struct InBandError<'a> {
    /// `error.code`, when it is an integer.
    pub code: Option<i64>,
    /// `error.message`, or `error.status`, when present.
    pub message: Option<&'a str>,
    /// The whole `error` value.
    pub value: &'a Value,
}

impl ServerMessage {
    /// The canonical names of the known payloads present, in declaration order.
    pub fn payload_names(&self) -> Vec<&'static str> {
        self.payloads()
            .into_iter()
            .filter_map(|(name, here)| here.then_some(name))
            .collect()
    }

    /// Whether the frame held no known payload (only unknown keys, or none).
    pub fn has_no_known_payload(&self) -> bool {
        // Asked of every frame the session reads: no list is built.
        !self.payloads().iter().any(|(_, here)| *here)
    }

    /// Each known payload's canonical name, and whether it is present.
    fn payloads(&self) -> [(&'static str, bool); 9] {
        [
            ("setupComplete", self.setup_complete.is_some()),
            ("serverContent", self.server_content.is_some()),
            ("toolCall", self.tool_call.is_some()),
            (
                "toolCallCancellation",
                self.tool_call_cancellation.is_some(),
            ),
            ("goAway", self.go_away.is_some()),
            (
                "sessionResumptionUpdate",
                self.session_resumption_update.is_some(),
            ),
            ("usageMetadata", self.usage_metadata.is_some()),
            ("voiceActivity", self.voice_activity.is_some()),
            (
                "voiceActivityDetectionSignal",
                self.voice_activity_detection_signal.is_some(),
            ),
        ]
    }

    /// The frame's `error` key, if it has one. A frame with an `error` and
    /// no known payload is best treated as fatal by the session.
    pub fn in_band_error(&self) -> Option<InBandError<'_>> {
        let value = self.extra.get("error")?;
        let field = |name: &str| value.get(name);
        Some(InBandError {
            code: field("code").and_then(Value::as_i64),
            message: field("message")
                .or_else(|| field("status"))
                .and_then(Value::as_str),
            value,
        })
    }
}

/// `setupComplete`; usually `{}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SetupComplete {
    /// A session id (mostly on Vertex).
    #[serde(default, alias = "session_id", skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Keys this version does not know, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `goAway`: reconnect before `timeLeft` runs out.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GoAway {
    /// Time until the server ends the connection (`"50s"`, `"0.250s"`);
    /// `None` when absent.
    #[serde(
        default,
        alias = "time_left",
        with = "duration::field",
        skip_serializing_if = "Option::is_none"
    )]
    pub time_left: Option<Duration>,
    /// Keys this version does not know, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `sessionResumptionUpdate`. `newHandle` is a secret: recordings replace it.
///
/// ```
/// use livesim::wire::ServerMessage;
///
/// let update = |json: &str| ServerMessage::from_slice(json.as_bytes()).unwrap()
///     .session_resumption_update.unwrap();
/// assert_eq!(update(r#"{"sessionResumptionUpdate":{"newHandle":"h2","resumable":true}}"#).usable_handle(), Some("h2"));
/// // Neither an absent nor an empty handle may overwrite a stored one.
/// assert_eq!(update(r#"{"sessionResumptionUpdate":{"resumable":true}}"#).usable_handle(), None);
/// assert_eq!(update(r#"{"sessionResumptionUpdate":{"newHandle":"","resumable":false}}"#).usable_handle(), None);
/// let vertex = update(r#"{"sessionResumptionUpdate":{"lastConsumedClientMessageIndex":"42"}}"#);
/// assert_eq!(vertex.last_consumed_client_message_index, Some(42));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionResumptionUpdate {
    /// A handle to resume from; absent or empty when not resumable.
    #[serde(default, alias = "new_handle", skip_serializing_if = "Option::is_none")]
    pub new_handle: Option<String>,
    /// Whether the session can be resumed from this point. Absent is false.
    #[serde(
        default,
        deserialize_with = "flag::deserialize",
        skip_serializing_if = "flag::is_false"
    )]
    pub resumable: bool,
    /// Index of the last client message the server consumed (transparent
    /// mode, Vertex); an int64 on the wire, sent as a string.
    #[serde(
        default,
        alias = "last_consumed_client_message_index",
        with = "int64",
        skip_serializing_if = "Option::is_none"
    )]
    pub last_consumed_client_message_index: Option<i64>,
    /// Keys this version does not know, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

impl SessionResumptionUpdate {
    /// The handle worth storing: present, non-empty and resumable.
    pub fn usable_handle(&self) -> Option<&str> {
        self.new_handle
            .as_deref()
            .filter(|h| self.resumable && !h.is_empty())
    }
}

/// `voiceActivity`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VoiceActivity {
    /// Start or end of the user's activity.
    #[serde(
        default,
        alias = "voice_activity_type",
        skip_serializing_if = "Option::is_none"
    )]
    pub voice_activity_type: Option<VoiceActivityType>,
    /// Keys this version does not know, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `voiceActivityDetectionSignal`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VoiceActivityDetectionSignal {
    /// Start or end of speech.
    #[serde(
        default,
        alias = "vad_signal_type",
        skip_serializing_if = "Option::is_none"
    )]
    pub vad_signal_type: Option<VadSignalType>,
    /// Keys this version does not know, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}
