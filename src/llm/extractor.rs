//! The LLM extractor: after each turn, asks a model to read the recent
//! transcript and writes its answer to state.

use std::fmt::Write as _;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::Value;

use super::{BaseLlm, IntoLlm, LlmRequest};
use crate::session::{Extracted, Extractor, TurnContext};

/// Reads the last `window` transcript lines with a model after each turn
/// and writes the answer to state under the extractor's name: parsed JSON
/// when the answer is JSON (a fenced ```json block included), the text
/// otherwise.
///
/// ```
/// use std::sync::Arc;
/// use livesim::llm::{LlmExtractor, LlmResponse, MockLlm};
///
/// let model = Arc::new(MockLlm::script([LlmResponse::from_text(r#"{"party_size": 4}"#)]));
/// let extractor = LlmExtractor::new("booking", model, "Extract the party size as JSON.", 10);
/// # let _ = extractor;
/// ```
pub struct LlmExtractor {
    name: String,
    llm: Arc<dyn BaseLlm>,
    prompt: String,
    window: usize,
}

impl LlmExtractor {
    /// An extractor named `name` (its state key) asking `llm` with
    /// `prompt` as the system instruction about the last `window` lines of
    /// the transcript (0: all of it).
    ///
    /// `llm` is an `Arc` of a concrete model or an `Arc<dyn BaseLlm>`
    /// (see [`IntoLlm`]), so the model can be chosen at run time, e.g.
    /// a tape recording a real model or replaying it:
    ///
    /// ```
    /// use std::sync::Arc;
    /// use livesim::llm::{BaseLlm, LlmExtractor, LlmResponse, MockLlm};
    /// use livesim::tape::{MemoryTape, TapedLlm};
    ///
    /// let tape = Arc::new(MemoryTape::new());
    /// let record = std::env::var_os("RECORD").is_some();
    /// let model: Arc<dyn BaseLlm> = if record {
    ///     Arc::new(TapedLlm::recording(MockLlm::script([LlmResponse::from_text("4")]), tape))
    /// } else {
    ///     Arc::new(TapedLlm::replaying("gemini-2.5-flash", tape))
    /// };
    /// let extractor = LlmExtractor::new("party_size", model, "How many people?", 1);
    /// # let _ = extractor;
    /// ```
    pub fn new(
        name: impl Into<String>,
        llm: impl IntoLlm,
        prompt: impl Into<String>,
        window: usize,
    ) -> Self {
        LlmExtractor {
            name: name.into(),
            llm: llm.into_llm(),
            prompt: prompt.into(),
            window,
        }
    }

    /// The request the extractor sends for a transcript.
    pub fn request(&self, turn: &TurnContext) -> LlmRequest {
        let mut transcript = String::new();
        for line in turn.transcript.last(self.window) {
            let _ = writeln!(transcript, "{}: {}", line.speaker, line.text);
        }
        LlmRequest::from_text(format!("Transcript:\n{transcript}"))
            .with_system_instruction(self.prompt.clone())
    }
}

impl Extractor for LlmExtractor {
    fn name(&self) -> &str {
        &self.name
    }

    fn extract(&self, turn: TurnContext) -> BoxFuture<'static, Result<Extracted, String>> {
        let request = self.request(&turn);
        let (llm, name) = (self.llm.clone(), self.name.clone());
        async move {
            let reply = llm.generate(request).await.map_err(|e| e.to_string())?;
            Ok(vec![(name, answer(&reply.text()))])
        }
        .boxed()
    }
}

/// The answer as JSON if it is JSON (bare or in a ```json fence), else as
/// text.
fn answer(text: &str) -> Value {
    let trimmed = text.trim();
    let unfenced = trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|rest| rest.strip_suffix("```"))
        .unwrap_or(trimmed)
        .trim();
    serde_json::from_str(unfenced).unwrap_or_else(|_| Value::String(trimmed.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_json_when_they_can_be() {
        assert_eq!(answer(r#" {"a": 1} "#), serde_json::json!({ "a": 1 }));
        assert_eq!(answer("```json\n[1, 2]\n```"), serde_json::json!([1, 2]));
        assert_eq!(answer("four people"), serde_json::json!("four people"));
    }
}
