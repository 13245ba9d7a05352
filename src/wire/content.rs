//! Content and its parts: what the model says and what the user sends as
//! turns.
//!
//! A [`Part`] is discriminated by which key it holds (`text`,
//! `inlineData`, `executableCode`, …). It is a struct with every key
//! optional rather than an enum, so a part with a key this version does not
//! know still decodes, keeps that key in `extra`, and encodes back intact.

use base64::Engine as _;
use base64::engine::general_purpose::{
    STANDARD, STANDARD_PAD_INDIFFERENT, URL_SAFE_PAD_INDIFFERENT,
};
use serde::{Deserialize, Serialize};

use super::Extra;
use super::numbers::flag;
use super::open_enum::{Language, Outcome};
use super::tools::{FunctionCall, FunctionResponse};

/// A turn's content: an optional role and its parts.
///
/// ```
/// use livesim::wire::{Content, Part};
///
/// let turn = Content::user("What is my name?");
/// assert_eq!(turn.text(), "What is my name?");
/// assert_eq!(
///     serde_json::to_value(&turn).unwrap(),
///     serde_json::json!({"role": "user", "parts": [{"text": "What is my name?"}]}),
/// );
/// let reply = Content::from_parts(vec![Part::text("Ada"), Part::thought("they said it")]);
/// assert_eq!(reply.text(), "Ada"); // thoughts are not the answer
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Content {
    /// `user` or `model` in turns; usually absent in `modelTurn`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// The parts, in order. Absent and `[]` both decode to empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<Part>,
    /// Keys this version does not know, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

impl Content {
    /// Content with these parts and no role.
    pub fn from_parts(parts: Vec<Part>) -> Self {
        Content {
            parts,
            ..Content::default()
        }
    }

    /// A user turn holding one text part.
    pub fn user(text: impl Into<String>) -> Self {
        Content {
            role: Some("user".into()),
            parts: vec![Part::text(text)],
            extra: Extra::new(),
        }
    }

    /// A model turn holding one text part.
    pub fn model(text: impl Into<String>) -> Self {
        Content {
            role: Some("model".into()),
            parts: vec![Part::text(text)],
            extra: Extra::new(),
        }
    }

    /// The text of every part that is text and not a thought, concatenated.
    pub fn text(&self) -> String {
        self.parts
            .iter()
            .filter(|p| !p.thought)
            .filter_map(|p| p.text.as_deref())
            .collect()
    }
}

/// One part of a [`Content`]; exactly one kind key is normally present.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Part {
    /// Text (an answer, or reasoning when `thought` is set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Marks the text as the model's reasoning: not an answer, not for speech.
    #[serde(
        default,
        deserialize_with = "flag::deserialize",
        skip_serializing_if = "flag::is_false"
    )]
    pub thought: bool,
    /// An opaque signature over the model's reasoning (base64).
    #[serde(
        default,
        alias = "thought_signature",
        skip_serializing_if = "Option::is_none"
    )]
    pub thought_signature: Option<String>,
    /// Inline bytes such as an audio chunk.
    #[serde(
        default,
        alias = "inline_data",
        skip_serializing_if = "Option::is_none"
    )]
    pub inline_data: Option<Blob>,
    /// A reference to a stored file.
    #[serde(default, alias = "file_data", skip_serializing_if = "Option::is_none")]
    pub file_data: Option<FileData>,
    /// A function call (the Live API sends these in `toolCall` instead).
    #[serde(
        default,
        alias = "function_call",
        skip_serializing_if = "Option::is_none"
    )]
    pub function_call: Option<FunctionCall>,
    /// A function response inside content.
    #[serde(
        default,
        alias = "function_response",
        skip_serializing_if = "Option::is_none"
    )]
    pub function_response: Option<FunctionResponse>,
    /// Code the model wrote for the code-execution tool.
    #[serde(
        default,
        alias = "executable_code",
        skip_serializing_if = "Option::is_none"
    )]
    pub executable_code: Option<ExecutableCode>,
    /// What running that code produced.
    #[serde(
        default,
        alias = "code_execution_result",
        skip_serializing_if = "Option::is_none"
    )]
    pub code_execution_result: Option<CodeExecutionResult>,
    /// Keys this version does not know (e.g. `videoMetadata`), kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Which kind of part this is, by the key it holds; see [`Part::kind`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PartKind<'a> {
    /// Answer text.
    Text(&'a str),
    /// Reasoning text.
    Thought(&'a str),
    /// Inline bytes.
    InlineData(&'a Blob),
    /// A stored file.
    FileData(&'a FileData),
    /// A function call.
    FunctionCall(&'a FunctionCall),
    /// A function response.
    FunctionResponse(&'a FunctionResponse),
    /// Code to execute.
    ExecutableCode(&'a ExecutableCode),
    /// The result of executed code.
    CodeExecutionResult(&'a CodeExecutionResult),
    /// Only keys this version does not know (their names, sorted).
    Unknown(&'a Extra),
    /// No key at all: `{}`.
    Empty,
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Part {
            text: Some(text.into()),
            ..Part::default()
        }
    }

    /// A reasoning part (`thought: true`).
    pub fn thought(text: impl Into<String>) -> Self {
        Part {
            text: Some(text.into()),
            thought: true,
            ..Part::default()
        }
    }

    /// An inline-data part holding `bytes`, base64-encoded.
    pub fn inline(mime_type: impl Into<String>, bytes: &[u8]) -> Self {
        Part {
            inline_data: Some(Blob::from_bytes(mime_type, bytes)),
            ..Part::default()
        }
    }

    /// The part's kind, by the first kind key present (in the order of
    /// [`PartKind`]); `thoughtSignature` alone is not a kind.
    pub fn kind(&self) -> PartKind<'_> {
        if let Some(text) = &self.text {
            return if self.thought {
                PartKind::Thought(text)
            } else {
                PartKind::Text(text)
            };
        }
        if let Some(b) = &self.inline_data {
            return PartKind::InlineData(b);
        }
        if let Some(f) = &self.file_data {
            return PartKind::FileData(f);
        }
        if let Some(c) = &self.function_call {
            return PartKind::FunctionCall(c);
        }
        if let Some(r) = &self.function_response {
            return PartKind::FunctionResponse(r);
        }
        if let Some(c) = &self.executable_code {
            return PartKind::ExecutableCode(c);
        }
        if let Some(r) = &self.code_execution_result {
            return PartKind::CodeExecutionResult(r);
        }
        if self.extra.is_empty() {
            PartKind::Empty
        } else {
            PartKind::Unknown(&self.extra)
        }
    }
}

/// Inline bytes with their MIME type; `data` stays base64 as it arrived.
///
/// The bytes are decoded only when asked for, so an invalid payload does
/// not cost the rest of the frame (its `turnComplete`, its transcript): the
/// frame decodes, and [`Blob::bytes`] reports the bad payload.
///
/// ```
/// use livesim::wire::Blob;
///
/// let chunk = Blob::from_bytes("audio/pcm;rate=24000", &[1, 2, 3]); // 3 bytes: not sample-aligned
/// assert_eq!(chunk.data, "AQID");
/// assert_eq!(chunk.bytes().unwrap(), vec![1, 2, 3]);
/// assert!(Blob { data: "%%%".into(), ..chunk }.bytes().is_err());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Blob {
    /// e.g. `audio/pcm;rate=16000`.
    #[serde(default, alias = "mime_type", skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Standard base64 with padding; empty means no bytes.
    #[serde(default)]
    pub data: String,
    /// Keys this version does not know, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A blob's `data` is not base64.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("inline data ({mime_type}, {len} base64 characters) is not valid base64: {problem}")]
pub struct Base64Error {
    mime_type: String,
    len: usize,
    problem: String,
}

impl Blob {
    /// A blob holding `bytes`, encoded as standard padded base64.
    pub fn from_bytes(mime_type: impl Into<String>, bytes: &[u8]) -> Self {
        Blob {
            mime_type: Some(mime_type.into()),
            data: STANDARD.encode(bytes),
            extra: Extra::new(),
        }
    }

    /// The decoded bytes. Padding is optional and the URL-safe alphabet is
    /// accepted too, as protobuf's JSON parsers do; anything else is an error
    /// that names the MIME type and the problem (never the payload).
    pub fn bytes(&self) -> Result<Vec<u8>, Base64Error> {
        STANDARD_PAD_INDIFFERENT
            .decode(&self.data)
            .or_else(|standard| {
                if self.data.contains(['-', '_']) {
                    URL_SAFE_PAD_INDIFFERENT.decode(&self.data)
                } else {
                    Err(standard)
                }
                .map_err(|e| Base64Error {
                    mime_type: self
                        .mime_type
                        .clone()
                        .unwrap_or_else(|| "no MIME type".into()),
                    len: self.data.len(),
                    problem: e.to_string(),
                })
            })
    }
}

/// A reference to a file stored with the service.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileData {
    /// The file's MIME type.
    #[serde(default, alias = "mime_type", skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Where the file is.
    #[serde(default, alias = "file_uri", skip_serializing_if = "Option::is_none")]
    pub file_uri: Option<String>,
    /// Keys this version does not know, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Code the model generated for the code-execution tool.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecutableCode {
    /// The language, e.g. `PYTHON`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<Language>,
    /// The source code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// Keys this version does not know, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The result of running an [`ExecutableCode`] part.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CodeExecutionResult {
    /// How the run ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    /// Its standard output, or the error on failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// Keys this version does not know, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}
