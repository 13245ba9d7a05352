//! The replay transport: a script served over an in-memory connection
//! (or, for a script that spans connections, a connector that opens one
//! in-memory connection per reconnect), and the control a test holds over
//! it.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::Value;
use tokio::sync::mpsc;

use super::player::{self, Progress, ReplayError};
use super::script::ScriptedServer;
use crate::executor;
use crate::transport::connector::{BoxedTransport, Connector};
use crate::transport::memory::{Link, MemoryTransport, pair, pair_with};
use crate::transport::{CloseFrame, Frame, Transport, TransportError};

/// The session's end of a scripted connection. Give it to
/// `connect_with_transport`; nothing past the handshake flows until the
/// test calls [`ReplayControl::release`].
pub struct ReplayTransport {
    connection: ReplayConnection,
    server: Option<(ScriptedServer, ServerEnd)>,
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
        let progress = Arc::new(Progress::default());
        let (connection, server) = ReplayConnection::open(pair(), &progress);
        let control = ReplayControl {
            progress,
            script: self.name.clone(),
        };
        let transport = ReplayTransport {
            connection,
            server: Some((self, server)),
        };
        (transport, control)
    }
}

impl ReplayTransport {
    /// Starts the script's player the first time the session uses the
    /// connection (inside its runtime).
    fn start(&mut self) {
        if let Some((script, server)) = self.server.take() {
            let name = ["script:", script.name.as_str()].concat();
            let progress = self.connection.progress.clone();
            executor::spawn(name, player::play(script, server, progress));
        }
    }
}

/// Opens the session's connections to a script that spans several: each
/// `connect` is a new in-memory connection to the same script, which
/// goes on where it was. Give it to `connect_with_connector`; nothing past
/// the first handshake flows until the test calls
/// [`ReplayControl::release`].
#[derive(Clone)]
pub struct ScriptConnector {
    state: Arc<Mutex<Connecting>>,
}

struct Connecting {
    /// The script, until the first connection starts its player.
    script: Option<ScriptedServer>,
    incoming: Option<mpsc::UnboundedReceiver<ServerEnd>>,
    to_player: mpsc::UnboundedSender<ServerEnd>,
    opened: u32,
    progress: Arc<Progress>,
}

impl ScriptedServer {
    /// The script as a connector and its control, for a session that
    /// reconnects (see [`Action::Reconnect`](super::Action::Reconnect)).
    pub fn into_connector(self) -> (ScriptConnector, ReplayControl) {
        let progress = Arc::new(Progress::default());
        let control = ReplayControl {
            progress: progress.clone(),
            script: self.name.clone(),
        };
        let (to_player, incoming) = mpsc::unbounded_channel();
        let state = Connecting {
            script: Some(self),
            incoming: Some(incoming),
            to_player,
            opened: 0,
            progress,
        };
        (
            ScriptConnector {
                state: Arc::new(Mutex::new(state)),
            },
            control,
        )
    }
}

impl Connector for ScriptConnector {
    fn connect(&self) -> BoxFuture<'_, Result<BoxedTransport, TransportError>> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.opened += 1;
        // Each connection draws its latencies from its own stream; the
        // first is labelled as a single-connection script's is.
        let label = match state.opened {
            1 => Link::default().label,
            n => format!("memory#{n}"),
        };
        let ends = pair_with(Link {
            label,
            ..Link::default()
        });
        let (connection, server) = ReplayConnection::open(ends, &state.progress);
        if let (Some(script), Some(incoming)) = (state.script.take(), state.incoming.take()) {
            let name = ["script:", script.name.as_str()].concat();
            let play = player::play_connections(script, incoming, state.progress.clone(), false);
            executor::spawn(name, play);
        }
        // The player is gone only once the script has ended: the new
        // connection then finds no server, as after a real server's exit.
        let _ = state.to_player.send(server);
        futures::future::ready(Ok(Box::new(connection) as BoxedTransport)).boxed()
    }
}

/// The session's end of one scripted connection: keeps the frames it
/// hands over, so a run knows what the session read and when everything
/// sent to it was delivered.
struct ReplayConnection {
    client: MemoryTransport,
    progress: Arc<Progress>,
    /// This connection's place in the progress's links.
    link: usize,
}

/// The script player's end of one scripted connection: counts the frames
/// sent over it, so a frame the session never read on a connection it
/// left is known to be lost, not still on its way.
pub(crate) struct ServerEnd {
    io: MemoryTransport,
    progress: Arc<Progress>,
    link: usize,
}

impl ReplayConnection {
    /// A new scripted connection over `(client, server)`: the session's end
    /// and the player's.
    fn open(
        (client, server): (MemoryTransport, MemoryTransport),
        progress: &Arc<Progress>,
    ) -> (ReplayConnection, ServerEnd) {
        let mut link = 0;
        progress.update(|s| {
            link = s.links.len();
            s.links.push(player::LinkCount::default());
        });
        let session = ReplayConnection {
            client,
            progress: progress.clone(),
            link,
        };
        let player = ServerEnd {
            io: server,
            progress: progress.clone(),
            link,
        };
        (session, player)
    }
}

impl Transport for ReplayConnection {
    fn send(&mut self, frame: Frame) -> BoxFuture<'_, Result<(), TransportError>> {
        self.client.send(frame)
    }

    fn recv(&mut self) -> BoxFuture<'_, Option<Result<Frame, TransportError>>> {
        async move {
            // The in-memory end's own future, not its boxed one: one
            // allocation per frame fewer.
            let frame = self.client.recv_next().await;
            if let Some(Ok(f)) = &frame
                && !f.is_close()
            {
                let link = self.link;
                self.progress.update(|s| {
                    s.links[link].received += 1;
                    s.received.push(f.clone());
                    s.received_at.push(crate::executor::now());
                });
            }
            frame
        }
        .boxed()
    }

    fn close(&mut self, close: Option<CloseFrame>) -> BoxFuture<'_, Result<(), TransportError>> {
        self.client.close(close)
    }
}

impl Drop for ReplayConnection {
    /// The session left this connection: what it never read is lost.
    fn drop(&mut self) {
        let link = self.link;
        self.progress.update(|s| s.links[link].left = true);
    }
}

impl Transport for ServerEnd {
    fn send(&mut self, frame: Frame) -> BoxFuture<'_, Result<(), TransportError>> {
        if !frame.is_close() {
            let link = self.link;
            self.progress.update(|s| s.links[link].sent += 1);
        }
        self.io.send(frame)
    }

    fn recv(&mut self) -> BoxFuture<'_, Option<Result<Frame, TransportError>>> {
        self.io.recv()
    }

    fn close(&mut self, close: Option<CloseFrame>) -> BoxFuture<'_, Result<(), TransportError>> {
        self.io.close(close)
    }
}

impl Transport for ReplayTransport {
    fn send(&mut self, frame: Frame) -> BoxFuture<'_, Result<(), TransportError>> {
        self.start();
        self.connection.send(frame)
    }

    fn recv(&mut self) -> BoxFuture<'_, Option<Result<Frame, TransportError>>> {
        self.start();
        self.connection.recv()
    }

    fn close(&mut self, close: Option<CloseFrame>) -> BoxFuture<'_, Result<(), TransportError>> {
        self.connection.close(close)
    }
}

impl ReplayControl {
    /// A control over a play whose player runs elsewhere (on a simulated
    /// network's server host) and shares `progress`.
    #[cfg(feature = "network")]
    pub(crate) fn following(progress: Arc<Progress>, script: String) -> Self {
        ReplayControl { progress, script }
    }

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
        self.sent_timed()
            .into_iter()
            .map(|(message, ..)| message)
            .collect()
    }

    /// [`sent`](Self::sent), and for each when it arrived (virtual time in
    /// a simulation) and which connection it came on.
    pub(crate) fn sent_timed(&self) -> Vec<(Value, Duration, u32)> {
        let progress = self.progress.lock();
        let parsed = progress.inbound_parsed.clone();
        timed_messages(&progress, parsed)
    }

    /// [`sent_timed`](Self::sent_timed), the messages the player parsed
    /// moved out rather than copied: for the soak's record once the play
    /// is over, when nothing reads them here any more.
    #[cfg(feature = "simulation")]
    pub(crate) fn take_sent_timed(&self) -> Vec<(Value, Duration, u32)> {
        let mut progress = self.progress.lock();
        let parsed = std::mem::take(&mut progress.inbound_parsed);
        timed_messages(&progress, parsed)
    }

    /// What the session did that the script did not allow.
    pub fn errors(&self) -> Vec<ReplayError> {
        self.progress.lock().errors.clone()
    }

    /// Calls the script issued that were neither answered nor cancelled.
    pub fn unanswered_calls(&self) -> Vec<String> {
        self.progress.unanswered()
    }

    /// How many connections the script accepted (answered with
    /// `setupComplete`).
    pub fn connections(&self) -> u32 {
        self.progress.lock().connections
    }

    /// Calls issued on a connection the session has since left, which no
    /// one can answer any more.
    pub fn abandoned_calls(&self) -> Vec<String> {
        self.progress.lock().abandoned.iter().cloned().collect()
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

    /// The index of the last `close` or `abort` action the script has
    /// performed: a test that plays a user typing while the session
    /// reconnects types once that connection is over.
    pub fn last_close(&self) -> Option<usize> {
        self.progress.lock().last_close
    }

    /// How many `expect` actions the script has reached: a test that
    /// plays the user sends its message once the script waits for it.
    pub fn expects_reached(&self) -> usize {
        self.progress.lock().expects_reached
    }

    /// How many client messages of the kinds the script's
    /// [`stream`](ScriptedServer::streams) names it took.
    pub fn streamed(&self) -> u64 {
        self.progress.lock().streamed
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
        self.progress.lock().received.clone()
    }

    /// [`delivered_frames`](Self::delivered_frames) and when the session
    /// read each (virtual time in a simulation), moved out rather than
    /// copied: for the soak's record once the play is over, when nothing
    /// reads them here any more.
    #[cfg(feature = "simulation")]
    pub(crate) fn take_delivered(&self) -> (Vec<Frame>, Vec<Duration>) {
        let mut progress = self.progress.lock();
        (
            std::mem::take(&mut progress.received),
            std::mem::take(&mut progress.received_at),
        )
    }

    /// Whether the script ended the session's last connection itself (a
    /// close, an abort or a setup rejection that no `reconnect` follows).
    pub fn ended_by_script(&self) -> bool {
        self.progress.lock().ended_by_script
    }

    /// Whether the player has stopped: the script ended the connection,
    /// the client hung up, or the client broke the script.
    pub fn is_finished(&self) -> bool {
        self.progress.lock().finished
    }

    /// Whether every action was performed (its frames may still be on
    /// their way).
    #[cfg(feature = "simulation")]
    pub(crate) fn actions_done(&self) -> bool {
        self.progress.lock().actions_done
    }

    /// Whether every action was performed and every frame delivered.
    pub fn is_drained(&self) -> bool {
        self.progress.lock().drained()
    }

    /// The script's name.
    pub fn script(&self) -> &str {
        &self.script
    }

    /// The expected message the script waits for now, when nothing owed
    /// by a transparent resumption comes first: how many times the server
    /// has forgotten or let go of what the client said (rollbacks of a
    /// resilient player, content it dropped), and the message's number
    /// among the script's `expect`s (from 0).
    #[cfg(feature = "simulation")]
    pub(crate) fn waiting_for(&self) -> Option<(u32, usize)> {
        let state = self.progress.lock();
        let waits = !state.finished
            && state.expects_reached > state.expected_seen
            && state.replays_owed == 0;
        waits.then_some((state.rollbacks + state.content_dropped, state.expected_seen))
    }

    pub(crate) fn progress(&self) -> &Arc<Progress> {
        &self.progress
    }
}

/// Each client frame kept in `progress` as JSON (`parsed` where the player
/// kept its parse, parsed here otherwise; frames that are not JSON left
/// out), with when it arrived and on which connection.
fn timed_messages(
    progress: &player::Recorded,
    mut parsed: Vec<Option<Value>>,
) -> Vec<(Value, Duration, u32)> {
    parsed.resize(progress.inbound.len(), None);
    parsed
        .into_iter()
        .enumerate()
        .filter_map(|(i, parsed)| {
            let message = match parsed {
                Some(parsed) => parsed,
                None => serde_json::from_slice(&progress.inbound[i]).ok()?,
            };
            Some((message, progress.inbound_at[i], progress.inbound_on[i]))
        })
        .collect()
}
