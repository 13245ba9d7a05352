//! The handle a connected session is driven through.

use serde_json::{Value, json};
use std::sync::{Arc, Mutex, OnceLock};
use tokio::sync::{mpsc, oneshot, watch};

use super::bus::{EventBus, EventStream};
use super::config::SessionConfig;
use super::error::SessionError;
use super::events::LiveEvent;
use crate::state::State;

/// What the handle and the control lane ask of the wire lane.
#[derive(Debug)]
pub(crate) enum Command {
    /// Send this client message (one top-level key) as a text frame.
    Send(Value),
    /// Send this tool response, for the call whose response stands at
    /// `at`, on the connection that issued the call (or not at all).
    Answer {
        message: Value,
        at: super::position::Position,
    },
    /// Close the connection (1000) and end the session.
    Disconnect(oneshot::Sender<()>),
}

/// A connected Live session.
///
/// Cloning shares the session. Subscribe with [`events`](LiveHandle::events)
/// before you expect anything: a stream sees events from the moment it is
/// made.
#[derive(Clone)]
pub struct LiveHandle {
    inner: Arc<Inner>,
}

struct Inner {
    bus: Arc<EventBus>,
    state: State,
    commands: mpsc::UnboundedSender<Command>,
    /// What the setup was written from; the `Value` is built when asked.
    config: Arc<SessionConfig>,
    setup: OnceLock<Value>,
    ended: watch::Receiver<bool>,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl std::fmt::Debug for LiveHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveHandle")
            .field("connected", &self.is_connected())
            .finish_non_exhaustive()
    }
}

impl LiveHandle {
    pub(crate) fn new(
        bus: Arc<EventBus>,
        state: State,
        commands: mpsc::UnboundedSender<Command>,
        config: Arc<SessionConfig>,
        ended: watch::Receiver<bool>,
        task: tokio::task::JoinHandle<()>,
    ) -> Self {
        LiveHandle {
            inner: Arc::new(Inner {
                bus,
                state,
                commands,
                config,
                setup: OnceLock::new(),
                ended,
                task: Mutex::new(Some(task)),
            }),
        }
    }

    /// A stream of every event from now on, as delivered: each lane's
    /// events in order, the lanes interleaved by the seed.
    pub fn events(&self) -> EventStream {
        self.inner.bus.subscribe()
    }

    /// The session's state.
    pub fn state(&self) -> State {
        self.inner.state.clone()
    }

    /// The `setup` message the session opened with.
    pub fn setup(&self) -> &Value {
        let inner = &*self.inner;
        inner.setup.get_or_init(|| inner.config.setup_message())
    }

    /// The session's stored log so far, in wire order: the same for every
    /// seed and every frame spacing. It keeps the server's events that are
    /// not partial and carry no inline audio, video or image, and the
    /// session's own `connected`, tool responses and refusals, extractions
    /// and `disconnected`, each where the rule in the [module
    /// docs](crate::session#delivered-order-and-stored-order) puts it.
    /// [`events`](Self::events) gives the delivered order instead.
    pub fn session_log(&self) -> Vec<LiveEvent> {
        self.inner.bus.log()
    }

    /// Whether the session is still running.
    pub fn is_connected(&self) -> bool {
        !*self.inner.ended.borrow()
    }

    /// Sends a raw client message (a JSON object with one top-level key:
    /// `clientContent`, `realtimeInput` or `toolResponse`).
    pub fn send_message(&self, message: Value) -> Result<(), SessionError> {
        if !self.is_connected() {
            return Err(SessionError::Closed);
        }
        self.inner
            .commands
            .send(Command::Send(message))
            .map_err(|_| SessionError::Closed)
    }

    /// Sends a user turn of text and asks the model to answer
    /// (`clientContent` with `turnComplete: true`).
    pub fn send_text(&self, text: impl Into<String>) -> Result<(), SessionError> {
        self.send_client_content(
            vec![json!({ "role": "user", "parts": [{ "text": text.into() }] })],
            true,
        )
    }

    /// Sends ordered conversation turns (`clientContent`), e.g. history
    /// with `turn_complete: false`.
    pub fn send_client_content(
        &self,
        turns: Vec<Value>,
        turn_complete: bool,
    ) -> Result<(), SessionError> {
        self.send_message(json!({
            "clientContent": { "turns": turns, "turnComplete": turn_complete }
        }))
    }

    /// Streams text as realtime input (`realtimeInput.text`).
    pub fn send_realtime_text(&self, text: impl Into<String>) -> Result<(), SessionError> {
        self.send_message(json!({ "realtimeInput": { "text": text.into() } }))
    }

    /// Streams a chunk of 16-bit little-endian mono PCM at 16 kHz
    /// (`realtimeInput.audio`).
    pub fn send_audio(&self, pcm: &[u8]) -> Result<(), SessionError> {
        use base64::Engine as _;
        let data = base64::engine::general_purpose::STANDARD.encode(pcm);
        self.send_message(json!({
            "realtimeInput": { "audio": { "mimeType": "audio/pcm;rate=16000", "data": data } }
        }))
    }

    /// Waits until the session has ended, for whatever reason.
    pub async fn closed(&self) {
        let mut ended = self.inner.ended.clone();
        // An error means the session task is gone: it has ended too.
        let _ = ended.wait_for(|ended| *ended).await;
    }

    /// Closes the connection and waits for the session to end. Pending
    /// model text is dropped; running tools are aborted.
    pub async fn disconnect(&self) {
        let (ack, acked) = oneshot::channel();
        if self.inner.commands.send(Command::Disconnect(ack)).is_ok() {
            let _ = acked.await;
        }
        self.closed().await;
        let task = self
            .inner
            .task
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(task) = task {
            let _ = task.await;
        }
    }
}
