//! A scripted model that stays honest.
//!
//! [`MockLlm::script`] holds a list of replies and picks the next one by
//! counting the model turns already in the request, as a real model sees
//! nothing but the request. So a loop that drops a message or puts two in
//! the wrong order gets the wrong reply, and its test fails.

use futures::FutureExt;
use futures::future::BoxFuture;

use super::{BaseLlm, LlmError, LlmRequest, LlmResponse};

/// A model that answers from a script.
///
/// ```
/// use livesim::llm::{BaseLlm, LlmRequest, LlmResponse, MockLlm};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let model = MockLlm::script([LlmResponse::from_text("one"), LlmResponse::from_text("two")]);
/// let first = LlmRequest::from_text("hi");
/// assert_eq!(model.generate(first.clone()).await.unwrap().text(), "one");
/// // The second reply needs the first in the conversation.
/// let second = first.with_model_turn("one").with_user_turn("and?");
/// assert_eq!(model.generate(second).await.unwrap().text(), "two");
/// # });
/// ```
#[derive(Clone, Debug)]
pub struct MockLlm {
    model_id: String,
    replies: Vec<Result<LlmResponse, LlmError>>,
}

impl MockLlm {
    /// A model that gives `replies[n]` to a request holding `n` model turns.
    pub fn script(replies: impl IntoIterator<Item = LlmResponse>) -> Self {
        MockLlm {
            model_id: "mock".to_string(),
            replies: replies.into_iter().map(Ok).collect(),
        }
    }

    /// A script whose replies may be failures.
    pub fn script_results(
        replies: impl IntoIterator<Item = Result<LlmResponse, LlmError>>,
    ) -> Self {
        MockLlm {
            model_id: "mock".to_string(),
            replies: replies.into_iter().collect(),
        }
    }

    /// Names the model (default `mock`).
    pub fn with_model_id(mut self, id: impl Into<String>) -> Self {
        self.model_id = id.into();
        self
    }
}

impl BaseLlm for MockLlm {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn generate(&self, request: LlmRequest) -> BoxFuture<'_, Result<LlmResponse, LlmError>> {
        let turn = request.model_turns();
        let reply = self.replies.get(turn).cloned().unwrap_or_else(|| {
            Err(LlmError::Config(format!(
                "reply {}: the script holds {} replies (the request already has {turn} model turns)",
                turn + 1,
                self.replies.len()
            )))
        });
        async move { reply }.boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_dropped_message_gets_the_wrong_reply() {
        let model = MockLlm::script([LlmResponse::from_text("one"), LlmResponse::from_text("two")]);
        // A loop that forgot to append the model's first answer asks again
        // with zero model turns and gets "one" instead of "two".
        let forgetful = LlmRequest::from_text("hi").with_user_turn("and?");
        assert_eq!(model.generate(forgetful).await.unwrap().text(), "one");
    }

    #[tokio::test]
    async fn running_out_of_script_is_a_config_error() {
        let model = MockLlm::script([LlmResponse::from_text("only")]);
        let request = LlmRequest::from_text("a")
            .with_model_turn("only")
            .with_user_turn("b");
        let err = model.generate(request).await.unwrap_err();
        assert_eq!(
            err,
            LlmError::Config(
                "reply 2: the script holds 1 replies (the request already has 1 model turns)"
                    .into()
            )
        );
    }
}
