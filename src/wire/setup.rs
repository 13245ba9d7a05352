//! `setup`: the first client message of every connection, and its config.
//!
//! Only documented fields are typed; anything else a caller adds goes in
//! an `extra` map and is sent as given. The real server closes with 1007
//! on a field it does not know, so nothing here is sent unless set.

use serde::{Deserialize, Serialize};

use super::content::Content;
use super::numbers::{int32, int64};
use super::open_enum::{
    ActivityHandling, EndSensitivity, MediaResolution, Modality, StartSensitivity, TurnCoverage,
};
use super::tools::Tool;
use super::{Extra, Object};

/// `setup`: the model and the session's configuration, fixed for the
/// connection.
///
/// ```
/// use livesim::wire::{ClientMessage, Modality, Setup};
///
/// let mut setup = Setup::new("models/gemini-live-2.5-flash-preview");
/// setup.generation_config.get_or_insert_default().response_modalities = vec![Modality::Text];
/// let json = ClientMessage::setup(setup).to_json();
/// assert_eq!(
///     json,
///     r#"{"setup":{"model":"models/gemini-live-2.5-flash-preview","generationConfig":{"responseModalities":["TEXT"]}}}"#
/// );
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Setup {
    /// `models/<id>` on Google AI; the full resource name on Vertex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Sampling, modality, speech and thinking settings.
    #[serde(
        default,
        alias = "generation_config",
        skip_serializing_if = "Option::is_none"
    )]
    pub generation_config: Option<GenerationConfig>,
    /// The system prompt, as text parts.
    #[serde(
        default,
        alias = "system_instruction",
        skip_serializing_if = "Option::is_none"
    )]
    pub system_instruction: Option<Content>,
    /// Functions and built-in tools.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<Tool>,
    /// Voice activity detection and turn handling.
    #[serde(
        default,
        alias = "realtime_input_config",
        skip_serializing_if = "Option::is_none"
    )]
    pub realtime_input_config: Option<RealtimeInputConfig>,
    /// Present: the server sends resumption handles; with a handle: resume.
    #[serde(
        default,
        alias = "session_resumption",
        skip_serializing_if = "Option::is_none"
    )]
    pub session_resumption: Option<SessionResumption>,
    /// Context compression, which lifts the session length caps.
    #[serde(
        default,
        alias = "context_window_compression",
        skip_serializing_if = "Option::is_none"
    )]
    pub context_window_compression: Option<ContextWindowCompression>,
    /// Present (even `{}`): transcribe the user's audio.
    #[serde(
        default,
        alias = "input_audio_transcription",
        skip_serializing_if = "Option::is_none"
    )]
    pub input_audio_transcription: Option<Object>,
    /// Present (even `{}`): transcribe the model's audio.
    #[serde(
        default,
        alias = "output_audio_transcription",
        skip_serializing_if = "Option::is_none"
    )]
    pub output_audio_transcription: Option<Object>,
    /// Proactive audio (v1alpha only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proactivity: Option<Proactivity>,
    /// How initial history is given (newer models).
    #[serde(
        default,
        alias = "history_config",
        skip_serializing_if = "Option::is_none"
    )]
    pub history_config: Option<HistoryConfig>,
    /// Keys this version does not know, sent as given.
    #[serde(flatten)]
    pub extra: Extra,
}

impl Setup {
    /// A setup for `model` with nothing else configured.
    pub fn new(model: impl Into<String>) -> Self {
        Setup {
            model: Some(model.into()),
            ..Setup::default()
        }
    }
}

/// `generationConfig`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GenerationConfig {
    /// Exactly one of `TEXT` or `AUDIO` per session.
    #[serde(
        default,
        alias = "response_modalities",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub response_modalities: Vec<Modality>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Nucleus sampling mass.
    #[serde(default, alias = "top_p", skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// Top-k sampling.
    #[serde(
        default,
        alias = "top_k",
        with = "int32",
        skip_serializing_if = "Option::is_none"
    )]
    pub top_k: Option<i64>,
    /// Number of candidates.
    #[serde(
        default,
        alias = "candidate_count",
        with = "int32",
        skip_serializing_if = "Option::is_none"
    )]
    pub candidate_count: Option<i64>,
    /// Longest response, in tokens.
    #[serde(
        default,
        alias = "max_output_tokens",
        with = "int32",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_output_tokens: Option<i64>,
    /// Presence penalty.
    #[serde(
        default,
        alias = "presence_penalty",
        skip_serializing_if = "Option::is_none"
    )]
    pub presence_penalty: Option<f64>,
    /// Frequency penalty.
    #[serde(
        default,
        alias = "frequency_penalty",
        skip_serializing_if = "Option::is_none"
    )]
    pub frequency_penalty: Option<f64>,
    /// Voice and language of spoken output.
    #[serde(
        default,
        alias = "speech_config",
        skip_serializing_if = "Option::is_none"
    )]
    pub speech_config: Option<SpeechConfig>,
    /// Reasoning budget and whether thoughts are returned.
    #[serde(
        default,
        alias = "thinking_config",
        skip_serializing_if = "Option::is_none"
    )]
    pub thinking_config: Option<ThinkingConfig>,
    /// Resolution for media input.
    #[serde(
        default,
        alias = "media_resolution",
        skip_serializing_if = "Option::is_none"
    )]
    pub media_resolution: Option<MediaResolution>,
    /// Affective dialog (v1alpha only).
    #[serde(
        default,
        alias = "enable_affective_dialog",
        skip_serializing_if = "Option::is_none"
    )]
    pub enable_affective_dialog: Option<bool>,
    /// Keys this version does not know, sent as given.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `speechConfig`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SpeechConfig {
    /// Which voice speaks.
    #[serde(
        default,
        alias = "voice_config",
        skip_serializing_if = "Option::is_none"
    )]
    pub voice_config: Option<VoiceConfig>,
    /// BCP-47 language, e.g. `en-US`.
    #[serde(
        default,
        alias = "language_code",
        skip_serializing_if = "Option::is_none"
    )]
    pub language_code: Option<String>,
    /// Keys this version does not know, sent as given.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `voiceConfig`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VoiceConfig {
    /// A named prebuilt voice.
    #[serde(
        default,
        alias = "prebuilt_voice_config",
        skip_serializing_if = "Option::is_none"
    )]
    pub prebuilt_voice_config: Option<PrebuiltVoiceConfig>,
    /// Keys this version does not know, sent as given.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `prebuiltVoiceConfig`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PrebuiltVoiceConfig {
    /// e.g. `Kore`.
    #[serde(default, alias = "voice_name", skip_serializing_if = "Option::is_none")]
    pub voice_name: Option<String>,
    /// Keys this version does not know, sent as given.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `thinkingConfig`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThinkingConfig {
    /// Tokens the model may spend reasoning.
    #[serde(
        default,
        alias = "thinking_budget",
        with = "int32",
        skip_serializing_if = "Option::is_none"
    )]
    pub thinking_budget: Option<i64>,
    /// Whether thought parts are sent.
    #[serde(
        default,
        alias = "include_thoughts",
        skip_serializing_if = "Option::is_none"
    )]
    pub include_thoughts: Option<bool>,
    /// Keys this version does not know, sent as given.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `realtimeInputConfig`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RealtimeInputConfig {
    /// The server's voice activity detection.
    #[serde(
        default,
        alias = "automatic_activity_detection",
        skip_serializing_if = "Option::is_none"
    )]
    pub automatic_activity_detection: Option<AutomaticActivityDetection>,
    /// Whether user activity interrupts the model.
    #[serde(
        default,
        alias = "activity_handling",
        skip_serializing_if = "Option::is_none"
    )]
    pub activity_handling: Option<ActivityHandling>,
    /// Which input a user turn includes.
    #[serde(
        default,
        alias = "turn_coverage",
        skip_serializing_if = "Option::is_none"
    )]
    pub turn_coverage: Option<TurnCoverage>,
    /// Keys this version does not know, sent as given.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `automaticActivityDetection`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AutomaticActivityDetection {
    /// `true`: the client marks activity with `activityStart`/`activityEnd`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled: Option<bool>,
    /// How readily speech start is detected.
    #[serde(
        default,
        alias = "start_of_speech_sensitivity",
        skip_serializing_if = "Option::is_none"
    )]
    pub start_of_speech_sensitivity: Option<StartSensitivity>,
    /// How readily speech end is detected.
    #[serde(
        default,
        alias = "end_of_speech_sensitivity",
        skip_serializing_if = "Option::is_none"
    )]
    pub end_of_speech_sensitivity: Option<EndSensitivity>,
    /// Audio kept from before detected speech start, in ms.
    #[serde(
        default,
        alias = "prefix_padding_ms",
        with = "int32",
        skip_serializing_if = "Option::is_none"
    )]
    pub prefix_padding_ms: Option<i64>,
    /// Silence that ends speech, in ms.
    #[serde(
        default,
        alias = "silence_duration_ms",
        with = "int32",
        skip_serializing_if = "Option::is_none"
    )]
    pub silence_duration_ms: Option<i64>,
    /// Keys this version does not know, sent as given.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `sessionResumption`. Its `handle` is a secret: recordings replace it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionResumption {
    /// The handle to resume from; absent for a fresh session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handle: Option<String>,
    /// Vertex only: the server reports the last client message it consumed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transparent: Option<bool>,
    /// Keys this version does not know, sent as given.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `contextWindowCompression`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextWindowCompression {
    /// Context size (tokens) at which compression runs; an int64 on the wire.
    #[serde(
        default,
        alias = "trigger_tokens",
        with = "int64",
        skip_serializing_if = "Option::is_none"
    )]
    pub trigger_tokens: Option<i64>,
    /// Keep a sliding window of recent context.
    #[serde(
        default,
        alias = "sliding_window",
        skip_serializing_if = "Option::is_none"
    )]
    pub sliding_window: Option<SlidingWindow>,
    /// Keys this version does not know, sent as given.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `slidingWindow`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SlidingWindow {
    /// Tokens to keep; an int64 on the wire.
    #[serde(
        default,
        alias = "target_tokens",
        with = "int64",
        skip_serializing_if = "Option::is_none"
    )]
    pub target_tokens: Option<i64>,
    /// Keys this version does not know, sent as given.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `proactivity` (v1alpha).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Proactivity {
    /// The model may choose not to answer irrelevant audio.
    #[serde(
        default,
        alias = "proactive_audio",
        skip_serializing_if = "Option::is_none"
    )]
    pub proactive_audio: Option<bool>,
    /// Keys this version does not know, sent as given.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `historyConfig` (newer models).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryConfig {
    /// Initial history arrives as `clientContent` before realtime input.
    #[serde(
        default,
        alias = "initial_history_in_client_content",
        skip_serializing_if = "Option::is_none"
    )]
    pub initial_history_in_client_content: Option<bool>,
    /// Keys this version does not know, sent as given.
    #[serde(flatten)]
    pub extra: Extra,
}
