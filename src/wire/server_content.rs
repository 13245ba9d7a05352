//! `serverContent`: the model's output and the turn's boundaries.
//!
//! Several fields often share one frame (text with `turnComplete`,
//! `interrupted` with `turnComplete`, audio with its transcript), so every
//! field is decoded independently; nothing here decides what they mean
//! together.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Extra;
use super::content::Content;
use super::numbers::flag;
use super::open_enum::{TurnCompleteReason, UrlRetrievalStatus};

/// `serverContent`. Absent flags are false.
///
/// ```
/// use livesim::wire::ServerMessage;
///
/// let frame = br#"{"serverContent":{"modelTurn":{"parts":[{"text":"lo!"}]},"turnComplete":true}}"#;
/// let content = ServerMessage::from_slice(frame).unwrap().server_content.unwrap();
/// assert_eq!(content.model_turn.unwrap().text(), "lo!"); // text in the closing frame is kept
/// assert!(content.turn_complete);
/// assert!(!content.interrupted);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerContent {
    /// Incremental model output (a delta, not the whole turn so far).
    #[serde(default, alias = "model_turn", skip_serializing_if = "Option::is_none")]
    pub model_turn: Option<Content>,
    /// The model is done until new client input.
    #[serde(
        default,
        alias = "turn_complete",
        deserialize_with = "flag::deserialize",
        skip_serializing_if = "flag::is_false"
    )]
    pub turn_complete: bool,
    /// Client activity cut the generation off: drop buffered output.
    #[serde(
        default,
        deserialize_with = "flag::deserialize",
        skip_serializing_if = "flag::is_false"
    )]
    pub interrupted: bool,
    /// Generation finished (before `turnComplete`; not sent when interrupted).
    #[serde(
        default,
        alias = "generation_complete",
        deserialize_with = "flag::deserialize",
        skip_serializing_if = "flag::is_false"
    )]
    pub generation_complete: bool,
    /// Transcript of the user's audio; not ordered against `modelTurn`.
    #[serde(
        default,
        alias = "input_transcription",
        skip_serializing_if = "Option::is_none"
    )]
    pub input_transcription: Option<Transcription>,
    /// Low-latency partial transcript of the user's audio (newer servers).
    #[serde(
        default,
        alias = "interim_input_transcription",
        skip_serializing_if = "Option::is_none"
    )]
    pub interim_input_transcription: Option<Transcription>,
    /// Transcript of the model's audio.
    #[serde(
        default,
        alias = "output_transcription",
        skip_serializing_if = "Option::is_none"
    )]
    pub output_transcription: Option<Transcription>,
    /// Search grounding for this output.
    #[serde(
        default,
        alias = "grounding_metadata",
        skip_serializing_if = "Option::is_none"
    )]
    pub grounding_metadata: Option<GroundingMetadata>,
    /// What the URL-context tool fetched.
    #[serde(
        default,
        alias = "url_context_metadata",
        skip_serializing_if = "Option::is_none"
    )]
    pub url_context_metadata: Option<UrlContextMetadata>,
    /// Why the turn ended; an open set.
    #[serde(
        default,
        alias = "turn_complete_reason",
        skip_serializing_if = "Option::is_none"
    )]
    pub turn_complete_reason: Option<TurnCompleteReason>,
    /// The model waits for the user to go on.
    #[serde(
        default,
        alias = "waiting_for_input",
        deserialize_with = "flag::deserialize",
        skip_serializing_if = "flag::is_false"
    )]
    pub waiting_for_input: bool,
    /// Keys this version does not know, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A transcript chunk.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Transcription {
    /// The text of this chunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The last chunk of this transcript (not always sent).
    #[serde(
        default,
        deserialize_with = "flag::deserialize",
        skip_serializing_if = "flag::is_false"
    )]
    pub finished: bool,
    /// Keys this version does not know, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `groundingMetadata`: the top level is typed; chunks and supports are
/// kept as JSON (their shapes vary by tool and version).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroundingMetadata {
    /// Queries the model searched for.
    #[serde(
        default,
        alias = "web_search_queries",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub web_search_queries: Vec<String>,
    /// Sources.
    #[serde(
        default,
        alias = "grounding_chunks",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub grounding_chunks: Vec<Value>,
    /// Which output spans which sources support.
    #[serde(
        default,
        alias = "grounding_supports",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub grounding_supports: Vec<Value>,
    /// The search suggestion to display.
    #[serde(
        default,
        alias = "search_entry_point",
        skip_serializing_if = "Option::is_none"
    )]
    pub search_entry_point: Option<SearchEntryPoint>,
    /// Keys this version does not know, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `searchEntryPoint`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchEntryPoint {
    /// HTML to show with the answer.
    #[serde(
        default,
        alias = "rendered_content",
        skip_serializing_if = "Option::is_none"
    )]
    pub rendered_content: Option<String>,
    /// Keys this version does not know, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `urlContextMetadata`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UrlContextMetadata {
    /// One entry per URL.
    #[serde(default, alias = "url_metadata", skip_serializing_if = "Vec::is_empty")]
    pub url_metadata: Vec<UrlMetadata>,
    /// Keys this version does not know, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One URL the URL-context tool tried.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UrlMetadata {
    /// The URL.
    #[serde(
        default,
        alias = "retrieved_url",
        skip_serializing_if = "Option::is_none"
    )]
    pub retrieved_url: Option<String>,
    /// Whether it was fetched.
    #[serde(
        default,
        alias = "url_retrieval_status",
        skip_serializing_if = "Option::is_none"
    )]
    pub url_retrieval_status: Option<UrlRetrievalStatus>,
    /// Keys this version does not know, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}
