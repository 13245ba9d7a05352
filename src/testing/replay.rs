//! The replay transport: a script served over an in-memory connection,
//! and the control a test holds over it.

use std::collections::BTreeSet;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::Value;

use super::player::{self, Progress, ReplayError};
use super::script::ScriptedServer;
use crate::executor;
use crate::transport::memory::{MemoryTransport, pair};
use crate::transport::{CloseFrame, Frame, Transport, TransportError};

/// The session's end of a scripted connection. Give it to
/// `connect_with_transport`; nothing past the handshake flows until the
/// test calls [`ReplayControl::release`].
pub struct ReplayTransport {
    client: MemoryTransport,
    server: Option<(ScriptedServer, MemoryTransport)>,
    progress: Arc<Progress>,
}

/// The test's hold on a scripted connection.
#[derive(Clone)]
pub struct ReplayControl {
    progress: Arc<Progress>,
    script: String,
}

impl ScriptedServer {
    /// The script as a transport and its control, for a test that drives
    /// the connection at its own pace.
    pub fn into_transport(self) -> (ReplayTransport, ReplayControl) {
        let (client, server) = pair();
        let progress = Arc::new(Progress::default());
        let control = ReplayControl {
            progress: progress.clone(),
            script: self.name.clone(),
        };
        let transport = ReplayTransport {
            client,
            server: Some((self, server)),
            progress,
        };
        (transport, control)
    }
}

impl ReplayTransport {
    /// Starts the script's player the first time the session uses the
    /// connection (inside its runtime).
    fn start(&mut self) {
        if let Some((script, server)) = self.server.take() {
            let name = format!("script:{}", script.name);
            executor::spawn(name, player::play(script, server, self.progress.clone()));
        }
    }
}

impl Transport for ReplayTransport {
    fn send(&mut self, frame: Frame) -> BoxFuture<'_, Result<(), TransportError>> {
        self.start();
        self.client.send(frame)
    }

    fn recv(&mut self) -> BoxFuture<'_, Option<Result<Frame, TransportError>>> {
        self.start();
        async move {
            let frame = self.client.recv().await;
            if let Some(Ok(f)) = &frame
                && !f.is_close()
            {
                self.progress.update(|s| s.frames_delivered += 1);
            }
            frame
        }
        .boxed()
    }

    fn close(&mut self, close: Option<CloseFrame>) -> BoxFuture<'_, Result<(), TransportError>> {
        self.client.close(close)
    }
}

impl ReplayControl {
    /// Lets the script's frames flow.
    pub fn release(&self) {
        self.progress.update(|s| s.released = true);
        self.progress.released.notify_waiters();
    }

    /// Waits until every action was performed and every frame handed to
    /// the session, or the script ended (closed, aborted, failed).
    pub async fn drained(&self) {
        self.wait_until(|control| {
            let state = control.progress.lock();
            state.drained() || state.finished
        })
        .await;
    }

    /// Every frame the session sent, as raw bytes: setup, tool responses…
    pub fn outbound_frames(&self) -> Vec<Vec<u8>> {
        self.progress.lock().inbound.clone()
    }

    /// Every message the session sent, parsed as JSON (unparseable frames
    /// are left out; `outbound_frames` has them).
    pub fn sent(&self) -> Vec<Value> {
        self.outbound_frames()
            .iter()
            .filter_map(|bytes| serde_json::from_slice(bytes).ok())
            .collect()
    }

    /// What the session did that the script did not allow.
    pub fn errors(&self) -> Vec<ReplayError> {
        self.progress.lock().errors.clone()
    }

    /// Calls the script issued that were neither answered nor cancelled.
    pub fn unanswered_calls(&self) -> Vec<String> {
        self.progress.unanswered()
    }

    /// Every call id the script issued, in order (a repeated id appears
    /// each time it was issued).
    pub fn issued_calls(&self) -> Vec<String> {
        self.progress.lock().issued.clone()
    }

    /// The call ids the session answered.
    pub fn answered_calls(&self) -> BTreeSet<String> {
        self.progress.lock().answered.clone()
    }

    /// The call ids the script cancelled.
    pub fn cancelled_calls(&self) -> BTreeSet<String> {
        self.progress.lock().cancelled.clone()
    }

    /// Answers to calls the script had already cancelled, when the script
    /// [allows answers to cross cancellations](ScriptedServer::answers_may_cross_cancellations).
    pub fn late_answers(&self) -> Vec<String> {
        self.progress.lock().late_answers.clone()
    }

    /// How many `expect` actions the script has reached: a test that
    /// plays the user sends its message once the script waits for it.
    pub fn expects_reached(&self) -> usize {
        self.progress.lock().expects_reached
    }

    /// Waits until `ready` holds, checking it again after every change in
    /// the script's progress.
    pub async fn wait_until(&self, ready: impl Fn(&ReplayControl) -> bool) {
        loop {
            // Registered before the check, so a change in between still
            // wakes us.
            let changed = self.progress.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if ready(self) {
                return;
            }
            changed.await;
        }
    }

    /// Every frame the script sent (`setupComplete` first) that was handed
    /// to the session, in order.
    pub fn delivered_frames(&self) -> Vec<Frame> {
        let state = self.progress.lock();
        let delivered = usize::try_from(state.frames_delivered).unwrap_or(usize::MAX);
        state.sent.iter().take(delivered).cloned().collect()
    }

    /// Whether the script ended the connection itself (a close, an abort
    /// or a setup rejection).
    pub fn ended_by_script(&self) -> bool {
        self.progress.lock().ended_by_script
    }

    /// Whether the player has stopped: the script ended the connection,
    /// the client hung up, or the client broke the script.
    pub fn is_finished(&self) -> bool {
        self.progress.lock().finished
    }

    /// Whether every action was performed and every frame delivered.
    pub fn is_drained(&self) -> bool {
        self.progress.lock().drained()
    }

    /// The script's name.
    pub fn script(&self) -> &str {
        &self.script
    }

    pub(crate) fn progress(&self) -> &Arc<Progress> {
        &self.progress
    }
}
