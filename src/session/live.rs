//! The fluent session API: `Live::builder()…connect()`.

use std::time::Duration;

use serde_json::Value;

use super::builder::LiveSessionBuilder;
use super::config::Modality;
use super::error::SessionError;
use super::events::LiveEvent;
use super::extractors::Extractor;
use super::handle::LiveHandle;
use super::phases::Phases;
use super::temporal::TemporalPattern;
use crate::clock::IntoSharedClock;
use crate::compose::tools::ToolComposite;
use crate::flow::{CompiledConversation, Enforcement, FlowSpec};
use crate::state::State;
use crate::transport::Transport;

/// Entry point of the fluent API.
pub struct Live;

impl Live {
    /// A session builder.
    ///
    /// ```
    /// use livesim::prelude::*;
    /// use serde_json::json;
    ///
    /// let builder = Live::builder()
    ///     .instruction("You are a weather assistant.")
    ///     .tools(T::simple("get_weather", "Weather for a city", |args| async move {
    ///         Ok(json!({ "city": args["city"], "sky": "sunny" }))
    ///     }));
    /// assert_eq!(builder.setup_message()["setup"]["tools"][0]["functionDeclarations"][0]["name"], "get_weather");
    /// ```
    pub fn builder() -> LiveBuilder {
        LiveBuilder {
            inner: LiveSessionBuilder::new(),
        }
    }
}

/// A Live session being configured, fluently.
///
/// **Which builder?** Start here: `LiveBuilder` (from [`Live::builder()`])
/// is the fluent builder with the short names, and it is what the test kit
/// ([`ScriptedServer::play`](crate::testing::ScriptedServer::play)) and
/// [`Soak`](crate::soak::Soak) take. [`LiveSessionBuilder`] is the
/// lower-level builder it wraps, with the wire-level knobs (any
/// [`Modality`], raw `setup` fields, the signal interval); reach it with
/// [`into_session_builder`](Self::into_session_builder) when you need one.
#[derive(Clone, Default)]
pub struct LiveBuilder {
    pub(crate) inner: LiveSessionBuilder,
}

impl LiveBuilder {
    /// The system instruction.
    pub fn instruction(mut self, instruction: impl Into<String>) -> Self {
        self.inner = self.inner.system_instruction(instruction);
        self
    }

    /// The model.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.inner = self.inner.model(model);
        self
    }

    /// Text answers instead of audio.
    pub fn text_only(mut self) -> Self {
        self.inner = self.inner.modality(Modality::Text);
        self
    }

    /// Adds tools; call it as often as you like.
    pub fn tools(mut self, tools: impl Into<ToolComposite>) -> Self {
        self.inner = self.inner.tools(tools);
        self
    }

    /// The session's state.
    pub fn state(mut self, state: State) -> Self {
        self.inner = self.inner.state(state);
        self
    }

    /// The clock, set on the session's state before it starts.
    pub fn clock(mut self, clock: impl IntoSharedClock) -> Self {
        self.inner = self.inner.clock(clock);
        self
    }

    /// Governs tool calls with `flow`, enforcing it: a call no active step
    /// allows never runs and is answered `{"error": reason}`.
    pub fn govern(self, flow: FlowSpec) -> Self {
        self.govern_with(flow, Enforcement::Enforce)
    }

    /// Governs tool calls with `flow` in the given mode (`Observe` admits
    /// every call and records what `Enforce` would have refused).
    pub fn govern_with(mut self, flow: FlowSpec, enforcement: Enforcement) -> Self {
        self.inner = self.inner.govern(flow, enforcement);
        self
    }

    /// Governs tool calls with a compiled conversation, enforcing it.
    pub fn converse(self, conversation: &CompiledConversation) -> Self {
        self.converse_with(conversation, Enforcement::Enforce)
    }

    /// Governs tool calls with a compiled conversation in the given mode.
    pub fn converse_with(
        mut self,
        conversation: &CompiledConversation,
        enforcement: Enforcement,
    ) -> Self {
        self.inner = self.inner.converse(conversation, enforcement);
        self
    }

    /// Runs `extractor` (an [`LlmExtractor`](crate::llm::LlmExtractor), a
    /// record from [`Extract`](super::Extract), or your own) after every
    /// turn, writing what it finds to state.
    pub fn extract(mut self, extractor: impl Extractor + 'static) -> Self {
        self.inner = self.inner.extractor(extractor);
        self
    }

    /// The phase machine.
    pub fn phases(mut self, phases: Phases) -> Self {
        self.inner = self.inner.phases(phases);
        self
    }

    /// Adds a temporal pattern.
    pub fn temporal(mut self, pattern: TemporalPattern) -> Self {
        self.inner = self.inner.temporal(pattern);
        self
    }

    /// Runs `callback` on the control lane when `key` changes.
    pub fn watch(
        mut self,
        key: impl Into<String>,
        callback: impl Fn(&str, Option<&Value>, &Value, &State) + Send + Sync + 'static,
    ) -> Self {
        self.inner = self.inner.watch(key, callback);
        self
    }

    /// Runs `callback` on every event.
    pub fn on_event(mut self, callback: impl Fn(&LiveEvent) + Send + Sync + 'static) -> Self {
        self.inner = self.inner.on_event(callback);
        self
    }

    /// Runs `callback` with each segment's full text (not thoughts).
    pub fn on_text(self, callback: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.on_event(move |event| {
            if let LiveEvent::TextComplete {
                text,
                thought: false,
                ..
            } = event
            {
                callback(text);
            }
        })
    }

    /// Runs `callback` at the end of every model turn.
    pub fn on_turn_complete(self, callback: impl Fn() + Send + Sync + 'static) -> Self {
        self.on_event(move |event| {
            if matches!(event, LiveEvent::TurnComplete { .. }) {
                callback();
            }
        })
    }

    /// How long connecting may take: opening the connection, sending
    /// `setup` and waiting for `setupComplete`, all of it (15 s unless
    /// set). Each reconnect attempt gets as long.
    pub fn setup_timeout(mut self, timeout: Duration) -> Self {
        self.inner = self.inner.setup_timeout(timeout);
        self
    }

    /// The session's time budget.
    pub fn session_budget(mut self, budget: Duration) -> Self {
        self.inner = self.inner.session_budget(budget);
        self
    }

    /// The `setup` message this builder will send.
    pub fn setup_message(&self) -> Value {
        self.inner.setup_message()
    }

    /// The lower-level builder this one wraps.
    pub fn into_session_builder(self) -> LiveSessionBuilder {
        self.inner
    }

    /// The API key for [`connect`](Self::connect) (default: the
    /// `GEMINI_API_KEY` or `GOOGLE_API_KEY` environment variable).
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.inner = self.inner.api_key(key);
        self
    }

    #[cfg(feature = "websocket")]
    #[cfg_attr(docsrs, doc(cfg(feature = "websocket")))]
    /// Where [`connect`](Self::connect) goes instead of Google AI.
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.inner = self.inner.base_url(url);
        self
    }

    #[cfg(feature = "websocket")]
    #[cfg_attr(docsrs, doc(cfg(feature = "websocket")))]
    /// Connects to the Live service over a WebSocket.
    pub async fn connect(self) -> Result<LiveHandle, SessionError> {
        self.inner.connect().await
    }

    /// Reconnection with resumption (off by default); see
    /// [`Resumption`](super::Resumption).
    pub fn resumption(mut self, policy: super::Resumption) -> Self {
        self.inner = self.inner.resumption(policy);
        self
    }

    /// Connects with `connector`, which opens every connection of the
    /// session (the first, and with resumption on, each later one).
    pub async fn connect_with_connector(
        self,
        connector: impl crate::transport::connector::Connector,
    ) -> Result<LiveHandle, SessionError> {
        self.inner.connect_with_connector(connector).await
    }

    /// Connects over `transport` (never reconnected).
    pub async fn connect_with_transport<T: Transport>(
        self,
        transport: T,
    ) -> Result<LiveHandle, SessionError> {
        self.inner.connect_with_transport(transport).await
    }
}
