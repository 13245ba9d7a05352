//! What goes into a model call and what comes out.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One turn of a conversation: who spoke and what.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LlmContent {
    /// `user` or `model`.
    pub role: String,
    /// The parts, in the Gemini `Part` JSON shape (`{"text": "…"}`, …).
    pub parts: Vec<Value>,
}

impl LlmContent {
    /// A turn holding one text part.
    pub fn text(role: impl Into<String>, text: impl Into<String>) -> Self {
        LlmContent {
            role: role.into(),
            parts: vec![serde_json::json!({ "text": text.into() })],
        }
    }

    /// The turn's text parts, concatenated.
    pub fn joined_text(&self) -> String {
        self.parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect()
    }
}

/// A request to a model: an optional system instruction and the
/// conversation so far.
///
/// ```
/// use livesim::llm::LlmRequest;
///
/// let request = LlmRequest::from_text("Capital of France?")
///     .with_model_turn("Paris.")
///     .with_user_turn("And of Italy?");
/// assert_eq!(request.model_turns(), 1);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LlmRequest {
    /// The system instruction, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_instruction: Option<String>,
    /// The conversation, oldest turn first.
    pub contents: Vec<LlmContent>,
    /// Generation settings in the Gemini `generationConfig` shape.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<Value>,
}

impl LlmRequest {
    /// A request with one user turn.
    pub fn from_text(text: impl Into<String>) -> Self {
        LlmRequest {
            contents: vec![LlmContent::text("user", text)],
            ..Self::default()
        }
    }

    /// Sets the system instruction.
    pub fn with_system_instruction(mut self, instruction: impl Into<String>) -> Self {
        self.system_instruction = Some(instruction.into());
        self
    }

    /// Appends a user turn.
    pub fn with_user_turn(mut self, text: impl Into<String>) -> Self {
        self.contents.push(LlmContent::text("user", text));
        self
    }

    /// Appends a model turn.
    pub fn with_model_turn(mut self, text: impl Into<String>) -> Self {
        self.contents.push(LlmContent::text("model", text));
        self
    }

    /// How many model turns the conversation already holds.
    pub fn model_turns(&self) -> usize {
        self.contents.iter().filter(|c| c.role == "model").count()
    }
}

/// A model's answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LlmResponse {
    /// The answer, as a model turn.
    pub content: LlmContent,
}

impl LlmResponse {
    /// An answer holding one text part.
    pub fn from_text(text: impl Into<String>) -> Self {
        LlmResponse {
            content: LlmContent::text("model", text),
        }
    }

    /// The answer's text parts, concatenated.
    pub fn text(&self) -> String {
        self.content.joined_text()
    }
}
