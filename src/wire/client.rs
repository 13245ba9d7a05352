//! Client messages: what a session sends (`setup`, `clientContent`,
//! `realtimeInput`, `toolResponse`).
//!
//! [`ClientMessage`] is a struct with every top-level key optional, like
//! [`ServerMessage`](super::ServerMessage): our client sets exactly one,
//! and a fake server decoding what a client sent can see (and reject) a
//! frame that holds none, several, or keys it does not know.

use serde::{Deserialize, Serialize};

use super::content::{Blob, Content};
use super::setup::Setup;
use super::tools::{FunctionResponse, ToolResponse};
use super::{Extra, Object};

/// One client → server message.
///
/// ```
/// use livesim::wire::ClientMessage;
///
/// let hello = ClientMessage::text_turn("Hello");
/// assert_eq!(
///     hello.to_json(),
///     r#"{"clientContent":{"turns":[{"role":"user","parts":[{"text":"Hello"}]}],"turnComplete":true}}"#
/// );
/// // The server side accepts snake_case too.
/// let same = ClientMessage::from_slice(
///     br#"{"client_content":{"turns":[{"role":"user","parts":[{"text":"Hello"}]}],"turn_complete":true}}"#,
/// ).unwrap();
/// assert_eq!(same, hello);
/// assert_eq!(same.payload_names(), ["clientContent"]);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientMessage {
    /// The first message of a connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<Setup>,
    /// Ordered conversation turns.
    #[serde(
        default,
        alias = "client_content",
        skip_serializing_if = "Option::is_none"
    )]
    pub client_content: Option<ClientContent>,
    /// Streaming input: audio, video, text, activity markers.
    #[serde(
        default,
        alias = "realtime_input",
        skip_serializing_if = "Option::is_none"
    )]
    pub realtime_input: Option<RealtimeInput>,
    /// Answers to function calls.
    #[serde(
        default,
        alias = "tool_response",
        skip_serializing_if = "Option::is_none"
    )]
    pub tool_response: Option<ToolResponse>,
    /// Top-level keys this version does not know, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

impl ClientMessage {
    /// A `setup` message.
    pub fn setup(setup: Setup) -> Self {
        ClientMessage {
            setup: Some(setup),
            ..ClientMessage::default()
        }
    }

    /// A `clientContent` message.
    pub fn client_content(content: ClientContent) -> Self {
        ClientMessage {
            client_content: Some(content),
            ..ClientMessage::default()
        }
    }

    /// A `clientContent` message holding one user text turn, `turnComplete: true`.
    pub fn text_turn(text: impl Into<String>) -> Self {
        Self::client_content(ClientContent {
            turns: vec![Content::user(text)],
            turn_complete: Some(true),
            extra: Extra::new(),
        })
    }

    /// A `realtimeInput` message.
    pub fn realtime_input(input: RealtimeInput) -> Self {
        ClientMessage {
            realtime_input: Some(input),
            ..ClientMessage::default()
        }
    }

    /// A `toolResponse` message answering calls.
    pub fn tool_response(responses: Vec<FunctionResponse>) -> Self {
        ClientMessage {
            tool_response: Some(ToolResponse {
                function_responses: responses,
                extra: Extra::new(),
            }),
            ..ClientMessage::default()
        }
    }

    /// The canonical (camelCase) names of the known top-level keys
    /// present; exactly one in a well-formed message.
    pub fn payload_names(&self) -> Vec<&'static str> {
        let mut names = Vec::new();
        if self.setup.is_some() {
            names.push("setup");
        }
        if self.client_content.is_some() {
            names.push("clientContent");
        }
        if self.realtime_input.is_some() {
            names.push("realtimeInput");
        }
        if self.tool_response.is_some() {
            names.push("toolResponse");
        }
        names
    }
}

/// `clientContent`: turns appended to the conversation in order.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientContent {
    /// `user` and `model` turns.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turns: Vec<Content>,
    /// `true` starts generation; false or absent waits for more content.
    #[serde(
        default,
        alias = "turn_complete",
        skip_serializing_if = "Option::is_none"
    )]
    pub turn_complete: Option<bool>,
    /// Keys this version does not know, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `realtimeInput`: one streaming input per message (as the SDKs send it).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RealtimeInput {
    /// 16-bit little-endian PCM, rate in the MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audio: Option<Blob>,
    /// Video frames (e.g. JPEG).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub video: Option<Blob>,
    /// Realtime text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The user started (client-side activity detection only); `{}`.
    #[serde(
        default,
        alias = "activity_start",
        skip_serializing_if = "Option::is_none"
    )]
    pub activity_start: Option<Object>,
    /// The user stopped (client-side activity detection only); `{}`.
    #[serde(
        default,
        alias = "activity_end",
        skip_serializing_if = "Option::is_none"
    )]
    pub activity_end: Option<Object>,
    /// The microphone stopped; the server flushes buffered audio.
    #[serde(
        default,
        alias = "audio_stream_end",
        skip_serializing_if = "Option::is_none"
    )]
    pub audio_stream_end: Option<bool>,
    /// Deprecated list form of media input.
    #[serde(default, alias = "media_chunks", skip_serializing_if = "Vec::is_empty")]
    pub media_chunks: Vec<Blob>,
    /// Keys this version does not know, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

impl RealtimeInput {
    /// One audio chunk.
    pub fn audio(blob: Blob) -> Self {
        RealtimeInput {
            audio: Some(blob),
            ..RealtimeInput::default()
        }
    }

    /// Realtime text.
    pub fn text(text: impl Into<String>) -> Self {
        RealtimeInput {
            text: Some(text.into()),
            ..RealtimeInput::default()
        }
    }
}
