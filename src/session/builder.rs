//! The lower-level session builder, [`LiveSessionBuilder`]: explicit
//! configuration, then a connection. The fluent [`Live::builder()`] is
//! made from it.
//!
//! [`Live::builder()`]: super::Live::builder

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::bus::EventCallback;
use super::config::{Governance, Modality, SessionConfig, WatchCallback};
use super::connect;
use super::error::SessionError;
use super::events::LiveEvent;
use super::extractors::Extractor;
use super::handle::LiveHandle;
use super::phases::Phases;
use super::resumption::Resumption;
use super::temporal::TemporalPattern;
use crate::clock::{IntoSharedClock, SharedClock};
use crate::compose::tools::ToolComposite;
use crate::flow::{CompiledConversation, Enforcement, FlowSpec};
use crate::state::State;
use crate::transport::connector::Connector;
#[cfg(feature = "websocket")]
use crate::transport::connector::WebSocketConnector;
#[cfg(feature = "websocket")]
use crate::transport::websocket::Endpoint;
use crate::transport::{ApiKey, Transport};

/// Configures and connects one Live session.
///
/// **Which builder?** This is the lower-level builder: every wire-level
/// knob (any [`Modality`], raw `setup` fields through
/// [`setup_field`](Self::setup_field), the signal interval). Most code
/// wants the fluent [`LiveBuilder`](super::LiveBuilder) from
/// [`Live::builder()`](super::Live::builder), which wraps this one and is
/// what the test kit and the soak take;
/// [`LiveBuilder::into_session_builder`](super::LiveBuilder::into_session_builder)
/// turns one into the other.
///
/// ```no_run
/// use livesim::session::LiveSessionBuilder;
/// # async fn demo(transport: impl livesim::transport::Transport) -> Result<(), livesim::session::SessionError> {
/// let handle = LiveSessionBuilder::new()
///     .model("gemini-live-2.5-flash-preview")
///     .system_instruction("You are terse.")
///     .connect_with_transport(transport)
///     .await?;
/// handle.send_text("Hello")?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct LiveSessionBuilder {
    pub(crate) config: SessionConfig,
    state: Option<State>,
    clock: Option<SharedClock>,
    #[cfg(feature = "websocket")]
    api_key: Option<ApiKey>,
    #[cfg(feature = "websocket")]
    base_url: Option<String>,
}

impl Default for LiveSessionBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl LiveSessionBuilder {
    /// A builder with the defaults: the default model, audio answers with
    /// transcriptions, no tools, a 15 s setup timeout, a 15 min budget.
    pub fn new() -> Self {
        LiveSessionBuilder {
            config: SessionConfig::new(),
            state: None,
            clock: None,
            #[cfg(feature = "websocket")]
            api_key: None,
            #[cfg(feature = "websocket")]
            base_url: None,
        }
    }

    /// The model (`models/` is added when missing).
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.config.model = model.into();
        self
    }

    /// The system instruction.
    pub fn system_instruction(mut self, instruction: impl Into<String>) -> Self {
        self.config.instruction = Some(instruction.into());
        self
    }

    /// Audio or text answers.
    pub fn modality(mut self, modality: Modality) -> Self {
        self.config.modality = modality;
        self
    }

    /// Adds tools.
    pub fn tools(mut self, tools: impl Into<ToolComposite>) -> Self {
        self.config.tools = std::mem::take(&mut self.config.tools).with(tools);
        self
    }

    /// The session's state (a fresh one by default).
    pub fn state(mut self, state: State) -> Self {
        self.state = Some(state);
        self
    }

    /// The clock, set on the session's state before it starts.
    pub fn clock(mut self, clock: impl IntoSharedClock) -> Self {
        self.clock = Some(clock.into_shared_clock());
        self
    }

    /// How long connecting may take: opening the connection, sending
    /// `setup` and waiting for `setupComplete`, all of it (15 s unless
    /// set). Each reconnect attempt gets as long.
    pub fn setup_timeout(mut self, timeout: Duration) -> Self {
        self.config.setup_timeout = timeout;
        self
    }

    /// The session's time budget (`session:remaining_budget_ms`).
    pub fn session_budget(mut self, budget: Duration) -> Self {
        self.config.budget = budget;
        self
    }

    /// How often the telemetry lane writes session signals (500 ms).
    pub fn signal_interval(mut self, interval: Duration) -> Self {
        self.config.signal_interval = interval;
        self
    }

    /// The phase machine.
    pub fn phases(mut self, phases: Phases) -> Self {
        self.config.phases = Some(phases);
        self
    }

    /// Adds a temporal pattern.
    pub fn temporal(mut self, pattern: TemporalPattern) -> Self {
        self.config.patterns.push(pattern);
        self
    }

    /// Runs `callback` on the control lane when `key` changes.
    pub fn watch(
        mut self,
        key: impl Into<String>,
        callback: impl Fn(&str, Option<&Value>, &Value, &State) + Send + Sync + 'static,
    ) -> Self {
        let callback: WatchCallback = Arc::new(callback);
        self.config.watchers.push((key.into(), callback));
        self
    }

    /// Runs `callback` on every event, on the lane that emits it.
    pub fn on_event(mut self, callback: impl Fn(&LiveEvent) + Send + Sync + 'static) -> Self {
        let callback: EventCallback = Arc::new(callback);
        self.config.callbacks.push(callback);
        self
    }

    /// Governs tool calls with `flow`: a call no active step allows is
    /// refused (Enforce) or admitted and recorded (Observe), and every
    /// decision is journaled under `flow:*`.
    pub fn govern(mut self, flow: FlowSpec, enforcement: Enforcement) -> Self {
        self.config.governance = Some(Governance {
            spec: Arc::new(flow),
            enforcement,
            conversation: None,
        });
        self
    }

    /// Governs tool calls with a compiled conversation (its stages, slots,
    /// commit guards and escalation), and runs its slot resolvers.
    pub fn converse(
        mut self,
        conversation: &CompiledConversation,
        enforcement: Enforcement,
    ) -> Self {
        self.config.governance = Some(Governance {
            spec: Arc::new(conversation.as_ref().clone()),
            enforcement,
            conversation: Some(Arc::new(conversation.clone())),
        });
        self
    }

    /// Runs `extractor` after every turn and writes what it returns to
    /// state.
    pub fn extractor(mut self, extractor: impl Extractor + 'static) -> Self {
        self.config.extractors.push(Arc::new(extractor));
        self
    }

    /// Adds a field to the `setup` message as is (for settings the builder
    /// has no method for, e.g. `realtimeInputConfig`). A key the builder
    /// writes itself is replaced by the value given: `generationConfig`,
    /// say, to choose a voice (then it must say `responseModalities` too).
    pub fn setup_field(mut self, key: impl Into<String>, value: Value) -> Self {
        self.config.extra_setup.insert(key.into(), value);
        self
    }

    /// The `setup` message this builder will send.
    pub fn setup_message(&self) -> Value {
        self.config.setup_message()
    }

    /// The state given with [`state`](Self::state), if any.
    #[cfg(feature = "simulation")]
    pub(crate) fn state_ref(&self) -> Option<&State> {
        self.state.as_ref()
    }

    /// Turns on the planted bug: a governance gate that admits a refused
    /// call under one interleaving. Exists only in builds with the
    /// `planted-bug` feature, which only livesim's own test of the soak
    /// uses.
    #[cfg(feature = "planted-bug")]
    #[doc(hidden)]
    pub fn planted_bug(self) -> Self {
        self.plant(super::PlantedBug::RefusedCallRuns)
    }

    /// Plants `bug` in the session (see [`PlantedBug`](super::PlantedBug)).
    /// Exists only in builds with the `planted-bug` feature.
    #[cfg(feature = "planted-bug")]
    #[doc(hidden)]
    pub fn plant(mut self, bug: super::PlantedBug) -> Self {
        self.config.planted = Some(bug);
        self
    }

    fn session_state(&self) -> State {
        let state = self.state.clone().unwrap_or_default();
        if let Some(clock) = &self.clock {
            state.set_clock(clock.clone());
        }
        state
    }

    /// The API key for [`connect`](Self::connect) (default: the
    /// `GEMINI_API_KEY` or `GOOGLE_API_KEY` environment variable). It is
    /// sent as the `x-goog-api-key` header and never written anywhere.
    /// Whatever the server sends is scrubbed of it (a server may echo it
    /// in an error), with [`connect`](Self::connect) and
    /// [`connect_with_transport`](Self::connect_with_transport) alike.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        let key = ApiKey::new(key);
        self.config.redactor.add_secret(&key);
        #[cfg(feature = "websocket")]
        {
            self.api_key = Some(key);
        }
        self
    }

    #[cfg(feature = "websocket")]
    #[cfg_attr(docsrs, doc(cfg(feature = "websocket")))]
    /// Where [`connect`](Self::connect) goes instead of the Google AI
    /// endpoint, e.g. `ws://127.0.0.1:9000` for `livesim serve`.
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = Some(url.into());
        self
    }

    #[cfg(feature = "websocket")]
    #[cfg_attr(docsrs, doc(cfg(feature = "websocket")))]
    /// Connects to the Live service over a WebSocket (Google AI, or the
    /// [`base_url`](Self::base_url)). With [`resumption`](Self::resumption)
    /// on, it reconnects to the same endpoint as the policy says; without,
    /// a session the server closes ends.
    pub async fn connect(mut self) -> Result<LiveHandle, SessionError> {
        let key = match self.api_key.clone() {
            Some(key) => key,
            None => key_from_env(|name| std::env::var(name).ok()).ok_or_else(|| {
                SessionError::Config(
                    "no API key: call .api_key(…) or set GEMINI_API_KEY".to_string(),
                )
            })?,
        };
        self.config.redactor.add_secret(&key);
        let mut endpoint = Endpoint::google_ai(key);
        if let Some(base) = &self.base_url {
            endpoint = endpoint.base_url(base.clone());
        }
        self.connect_with_connector(WebSocketConnector::new(endpoint))
            .await
    }

    /// Connects over `transport`: sends setup, waits for `setupComplete`,
    /// starts the lanes. The transport is never reconnected: when it
    /// closes, the session ends (with [`resumption`](Self::resumption)
    /// on, the setup still asks for handles).
    pub async fn connect_with_transport<T: Transport>(
        self,
        transport: T,
    ) -> Result<LiveHandle, SessionError> {
        let state = self.session_state();
        connect::connect(self.config, state, Box::new(transport), None).await
    }

    /// Connects with `connector`, which opens the first connection and,
    /// with [`resumption`](Self::resumption) on, every later one: after
    /// `goAway`, or when a connection ends without being asked to (see
    /// [`Resumption`] for the policy).
    pub async fn connect_with_connector(
        self,
        connector: impl Connector,
    ) -> Result<LiveHandle, SessionError> {
        let state = self.session_state();
        connect::connect_first(self.config, state, Arc::new(connector)).await
    }

    /// Reconnection with resumption (off by default): the setup asks for
    /// handles, and the session moves to new connections as `policy`
    /// says. Takes effect with [`connect`](Self::connect) and
    /// [`connect_with_connector`](Self::connect_with_connector).
    pub fn resumption(mut self, policy: Resumption) -> Self {
        self.config.resumption = policy;
        self
    }
}

/// The API key the environment gives (read through `var`): the first of
/// `GEMINI_API_KEY` and `GOOGLE_API_KEY` that is set and not empty, as
/// Google's SDKs look for it.
#[cfg(feature = "websocket")]
fn key_from_env(var: impl Fn(&str) -> Option<String>) -> Option<ApiKey> {
    ["GEMINI_API_KEY", "GOOGLE_API_KEY"]
        .iter()
        .find_map(|name| var(name).filter(|v| !v.is_empty()))
        .map(ApiKey::new)
}

#[cfg(all(test, feature = "websocket"))]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    /// The first key set and not empty wins: an empty `GEMINI_API_KEY`
    /// (a shell that exported it blank) gives way to `GOOGLE_API_KEY`.
    #[test]
    fn the_key_comes_from_the_first_variable_set_and_not_empty() {
        let key = |vars| key_from_env(env(vars)).map(|k| k.expose().to_string());
        assert_eq!(
            key(&[("GEMINI_API_KEY", "g1"), ("GOOGLE_API_KEY", "g2")]).as_deref(),
            Some("g1")
        );
        assert_eq!(
            key(&[("GEMINI_API_KEY", ""), ("GOOGLE_API_KEY", "g2")]).as_deref(),
            Some("g2")
        );
        assert_eq!(key(&[("GOOGLE_API_KEY", "g2")]).as_deref(), Some("g2"));
        assert_eq!(key(&[("GEMINI_API_KEY", ""), ("GOOGLE_API_KEY", "")]), None);
        assert_eq!(key(&[]), None);
    }
}
