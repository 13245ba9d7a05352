//! The model an agent file's extractor asks in a soak: its tape's answer,
//! given after a latency the seed draws (stream `soak/extractor/<name>`),
//! as a model called over the network takes its time.
//!
//! Without the wait every extraction would end before the next turn does,
//! and none would ever wait in the session's queue behind another: the
//! queue, and what it does with turns that end while an extraction runs,
//! would go untested.

use std::ops::RangeInclusive;
use std::time::Duration;

use futures::future::BoxFuture;

use crate::executor;
use crate::llm::{BaseLlm, LlmError, LlmRequest, LlmResponse};
use crate::soak::agent::tools::TOOL_LATENCY;

/// A model that answers as `inner` does, after a drawn latency.
#[derive(Debug)]
pub(crate) struct Pondering<M> {
    inner: M,
    latency: RangeInclusive<Duration>,
    /// The stream the latency is drawn from.
    stream: String,
}

impl<M> Pondering<M> {
    /// `inner`, answering extractor `name`'s questions within `latency`.
    pub(crate) fn new(inner: M, name: &str, latency: RangeInclusive<Duration>) -> Self {
        Pondering {
            inner,
            latency,
            stream: format!("soak/extractor/{name}"),
        }
    }
}

impl<M: BaseLlm> BaseLlm for Pondering<M> {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }

    fn generate(&self, request: LlmRequest) -> BoxFuture<'_, Result<LlmResponse, LlmError>> {
        Box::pin(async move {
            let lo = self.latency.start().as_millis() as u64;
            let hi = self.latency.end().as_millis() as u64;
            let drawn = executor::draw(&self.stream, |s| s.range(lo..=hi)).unwrap_or(lo);
            // A draw a shrinker may calm, as a tool's latency.
            let ms = if executor::decide(TOOL_LATENCY, drawn > lo) {
                drawn
            } else {
                lo
            };
            tokio::time::sleep(Duration::from_millis(ms)).await;
            self.inner.generate(request).await
        })
    }
}
