//! A model that records its calls on a tape, or answers them from one.

use std::fmt;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;

use super::canonical::canonical_json;
use super::entry::{LLM_CALL, Tape, TapeEntry};
use crate::llm::{BaseLlm, LlmError, LlmRequest, LlmResponse};

/// A [`BaseLlm`] that records its calls to a [`Tape`] or answers them from
/// one.
///
/// ```
/// use std::sync::Arc;
/// use livesim::llm::{BaseLlm, LlmRequest, LlmResponse, MockLlm};
/// use livesim::tape::{MemoryTape, TapedLlm};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let tape = Arc::new(MemoryTape::new());
/// let live = TapedLlm::recording(MockLlm::script([LlmResponse::from_text("Paris")]), tape.clone());
/// live.generate(LlmRequest::from_text("Capital of France?")).await.unwrap();
///
/// let offline = TapedLlm::replaying("gemini-2.5-flash", tape);
/// let reply = offline.generate(LlmRequest::from_text("Capital of France?")).await.unwrap();
/// assert_eq!(reply.text(), "Paris");
/// # });
/// ```
pub struct TapedLlm {
    model_id: String,
    inner: Option<Arc<dyn BaseLlm>>,
    tape: Arc<dyn Tape>,
}

impl fmt::Debug for TapedLlm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TapedLlm")
            .field("model_id", &self.model_id)
            .field("recording", &self.inner.is_some())
            .finish()
    }
}

impl TapedLlm {
    /// Passes every call through to `inner` and records it on `tape`.
    pub fn recording<L, T>(inner: L, tape: Arc<T>) -> Self
    where
        L: BaseLlm + 'static,
        T: Tape + 'static,
    {
        TapedLlm {
            model_id: inner.model_id().to_string(),
            inner: Some(Arc::new(inner)),
            tape,
        }
    }

    /// Answers every call from `tape`; needs no model and no credential.
    pub fn replaying<T: Tape + 'static>(model_id: impl Into<String>, tape: Arc<T>) -> Self {
        TapedLlm {
            model_id: model_id.into(),
            inner: None,
            tape,
        }
    }
}

impl BaseLlm for TapedLlm {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn generate(&self, request: LlmRequest) -> BoxFuture<'_, Result<LlmResponse, LlmError>> {
        async move {
            let input = serde_json::to_value(&request)
                .map_err(|e| LlmError::Config(format!("request is not JSON: {e}")))?;
            match &self.inner {
                Some(inner) => {
                    let outcome = inner.generate(request).await;
                    let entry = match &outcome {
                        Ok(response) => TapeEntry::ok(LLM_CALL, input, to_json(response)),
                        Err(error) => TapeEntry::failed(LLM_CALL, input, to_json(error)),
                    };
                    self.tape
                        .record(entry)
                        .map_err(|e| LlmError::Config(format!("could not record the call: {e}")))?;
                    outcome
                }
                None => replay(&*self.tape, &input),
            }
        }
        .boxed()
    }
}

fn to_json<T: serde::Serialize>(value: &T) -> serde_json::Value {
    serde_json::to_value(value).unwrap_or(serde_json::Value::Null)
}

fn replay(tape: &dyn Tape, input: &serde_json::Value) -> Result<LlmResponse, LlmError> {
    let canonical = canonical_json(input);
    let entry = tape.next(LLM_CALL, &canonical).ok_or_else(|| {
        LlmError::Config(format!(
            "the tape holds no (more) recorded model calls for this request: {canonical}"
        ))
    })?;
    match (entry.output, entry.error) {
        (_, Some(error)) => Err(serde_json::from_value(error.clone())
            .unwrap_or_else(|_| LlmError::Refused(format!("recorded failure: {error}")))),
        (Some(output), None) => serde_json::from_value(output).map_err(|e| {
            LlmError::Config(format!(
                "the tape's recorded response for this request is not a response ({e}): {canonical}"
            ))
        }),
        (None, None) => Err(LlmError::Config(format!(
            "the tape's entry for this request has neither an output nor an error: {canonical}"
        ))),
    }
}
