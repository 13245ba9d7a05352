//! Models called out of band: the [`BaseLlm`] interface, its request and
//! response types, and [`MockLlm`], a scripted model that stays honest.
//!
//! A Live session talks to its model over the Live wire protocol; some
//! components also call a model directly (an LLM extractor after each turn,
//! a background agent). They see the model only through [`BaseLlm`], so a
//! test can hand them a [`MockLlm`] or a taped model
//! ([`TapedLlm`](crate::tape::TapedLlm)) instead of a network service.

mod extractor;
mod mock;
mod request;

use std::fmt;

use futures::future::BoxFuture;

pub use extractor::LlmExtractor;
pub use mock::MockLlm;
pub use request::{LlmContent, LlmRequest, LlmResponse};

/// Why a model call failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", content = "message", rename_all = "snake_case")]
pub enum LlmError {
    /// The model is not set up to answer this: a scripted model out of
    /// replies, a tape with no recording of the request, a missing key.
    #[error("model configuration: {0}")]
    Config(String),
    /// The service refused the request (bad argument, safety block, quota).
    #[error("model refused the request: {0}")]
    Refused(String),
    /// The call did not get through (network, timeout).
    #[error("model unreachable: {0}")]
    Transport(String),
}

/// A model that answers requests.
///
/// ```
/// use livesim::llm::{BaseLlm, LlmRequest, LlmResponse, MockLlm};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let model = MockLlm::script([LlmResponse::from_text("Paris")]);
/// let reply = model.generate(LlmRequest::from_text("Capital of France?")).await.unwrap();
/// assert_eq!(reply.text(), "Paris");
/// # });
/// ```
pub trait BaseLlm: Send + Sync + fmt::Debug {
    /// The model's id, e.g. `gemini-2.5-flash`.
    fn model_id(&self) -> &str;

    /// Answers one request.
    fn generate(&self, request: LlmRequest) -> BoxFuture<'_, Result<LlmResponse, LlmError>>;
}

impl<L: BaseLlm + ?Sized> BaseLlm for std::sync::Arc<L> {
    fn model_id(&self) -> &str {
        (**self).model_id()
    }

    fn generate(&self, request: LlmRequest) -> BoxFuture<'_, Result<LlmResponse, LlmError>> {
        (**self).generate(request)
    }
}

/// A shared model: an `Arc` of any [`BaseLlm`], concrete or `dyn`. What
/// [`LlmExtractor::new`] takes, so a model chosen at run time (recording
/// or replaying, say) fits as well as a concrete one.
pub trait IntoLlm {
    /// The model as a shared trait object.
    fn into_llm(self) -> std::sync::Arc<dyn BaseLlm>;
}

impl<L: BaseLlm + 'static> IntoLlm for std::sync::Arc<L> {
    fn into_llm(self) -> std::sync::Arc<dyn BaseLlm> {
        self
    }
}

impl IntoLlm for std::sync::Arc<dyn BaseLlm> {
    fn into_llm(self) -> std::sync::Arc<dyn BaseLlm> {
        self
    }
}
