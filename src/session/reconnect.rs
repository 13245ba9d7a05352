//! Moving the session to a new connection: after a connection ended
//! without being asked to (backoff, attempts), or after `goAway`
//! (make-before-break). The policy is in [`resumption`](super::resumption);
//! this is the wire lane's side of it, which owns the connection: the
//! handle it keeps, the messages it queues and replays, and the events
//! that say what happened (at the place in the stored log where the move
//! began: after every frame of the old connection, before any of the new).

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::Value;
use tokio::time::Instant;

use super::config::SessionConfig;
use super::connect::{Opened, open, redactor};
use super::error::SessionError;
use super::events::{Lane, LiveEvent};
use super::extractors::Speaker;
use super::handle::Command;
use super::position::Position;
use super::resumption::Handle;
use super::route::Routed;
use super::wire_lane::{End, WireLane, is_content, stale_answer, user_text};
use crate::executor;
use crate::transport::connector::Connector;
use crate::transport::{CloseFrame, Frame, Transport};
use crate::wire::{CloseClass, Closed, ServerMessage};

/// What the wire lane keeps to move to a new connection.
pub(crate) struct Link {
    /// How to open a connection; `None`: never reconnected.
    pub connector: Option<Arc<dyn Connector>>,
    pub config: Arc<SessionConfig>,
    /// The latest resumable handle (a secret).
    pub handle: Option<Handle>,
    /// The current connection's number (1-based).
    pub connection: u32,
    /// The first frame number of the current connection, shared with the
    /// control lane: a call from an earlier frame belongs to a connection
    /// that has ended, and is not answered.
    pub from: Arc<AtomicU64>,
    /// Content to send once the new connection is set up.
    pub queued: Vec<Value>,
    /// Transparent resumption: content sent and not yet consumed by the
    /// server, by index (1-based, content messages only).
    pub unconsumed: VecDeque<(u64, Value)>,
    pub sent: u64,
    /// A model turn is in progress (a `goAway` move waits for its end).
    pub turn_open: bool,
    /// A handle came since the last turn began: resuming it loses nothing
    /// of that turn (a `goAway` move waits for one, as the server sends
    /// it right after `turnComplete`).
    pub handle_fresh: bool,
    /// After `goAway`: when the move starts at the latest.
    pub move_by: Option<Instant>,
    /// The new connection being opened after `goAway`, and where its
    /// events stand.
    pub switching: Option<BoxFuture<'static, Result<Opened, SessionError>>>,
    /// Attempts the reconnect under way has made already: a `goAway` move
    /// that failed was one (the session stayed on the old connection), and
    /// the reconnect goes on from there when that connection ends.
    pub attempts_made: u32,
    pub switch_at: Option<Position>,
    /// Calls the server made and the session has not answered (a planted
    /// bug's trigger; test builds only).
    #[cfg(feature = "planted-bug")]
    pub planted_unanswered: std::collections::BTreeSet<String>,
}

impl Link {
    pub fn new(
        connector: Option<Arc<dyn Connector>>,
        config: Arc<SessionConfig>,
        from: Arc<AtomicU64>,
    ) -> Self {
        Link {
            connector,
            config,
            handle: None,
            connection: 1,
            from,
            queued: Vec::new(),
            unconsumed: VecDeque::new(),
            sent: 0,
            turn_open: false,
            handle_fresh: false,
            move_by: None,
            switching: None,
            attempts_made: 0,
            switch_at: None,
            #[cfg(feature = "planted-bug")]
            planted_unanswered: std::collections::BTreeSet::new(),
        }
    }

    /// The server refused the handle: a fresh session starts with none,
    /// and a `goAway` move waits for its first one.
    fn forget_handle(&mut self) {
        self.handle = None;
        #[cfg(feature = "planted-bug")]
        if self
            .config
            .planted(super::PlantedBug::FreshStartKeepsStaleHandle)
        {
            return;
        }
        self.handle_fresh = false;
    }

    /// Whether the session moves to new connections.
    fn reconnects(&self) -> bool {
        self.connector.is_some() && self.config.resumption.is_on()
    }

    /// Whether the session is moving after `goAway` (content waits for
    /// the new connection).
    pub fn moving(&self) -> bool {
        self.switching.is_some() || (self.move_by.is_some() && self.handle.is_some())
    }

    /// Whether a response standing at `at` answers a call of the current
    /// connection.
    pub fn is_current(&self, at: Position) -> bool {
        at.frame() >= self.from.load(Ordering::Relaxed)
    }

    /// A content message went out on the current connection.
    pub fn sent_content(&mut self, message: &Value) {
        self.sent += 1;
        if self.config.resumption.is_transparent() {
            self.unconsumed.push_back((self.sent, message.clone()));
        }
    }

    /// What the session keeps from a server message: a usable handle,
    /// the consumed index, a `goAway`, the turn in progress.
    pub fn server_message(&mut self, message: &ServerMessage) {
        if let Some(update) = &message.session_resumption_update {
            if let Some(handle) = update.usable_handle() {
                self.handle = Some(Handle::new(handle));
                self.handle_fresh = true;
            }
            if let Some(consumed) = update.last_consumed_client_message_index {
                let consumed = u64::try_from(consumed).unwrap_or(0);
                while self.unconsumed.front().is_some_and(|(i, _)| *i <= consumed) {
                    self.unconsumed.pop_front();
                }
            }
        }
        if message.tool_call.is_some()
            || message
                .server_content
                .as_ref()
                .is_some_and(|c| c.model_turn.is_some() || c.output_transcription.is_some())
        {
            self.turn_open = true;
            self.handle_fresh = false;
        }
        #[cfg(feature = "planted-bug")]
        let short_ignored = self.config.planted(super::PlantedBug::ShortGoAwayIgnored)
            && message
                .go_away
                .as_ref()
                .is_some_and(|g| g.time_left.unwrap_or(Duration::ZERO) < Duration::from_secs(1));
        #[cfg(not(feature = "planted-bug"))]
        let short_ignored = false;
        if let Some(go_away) = &message.go_away
            && self.reconnects()
            && self.switching.is_none()
            && !short_ignored
        {
            // Half the time left to finish the turn and get its handle;
            // the other half to move.
            let left = go_away.time_left.unwrap_or(Duration::ZERO);
            self.move_by = Some(crate::clock::deadline_in(left / 2));
        }
        self.move_if_ready();
    }

    /// A turn ended.
    pub fn turn_ended(&mut self) {
        self.turn_open = false;
        self.move_if_ready();
    }

    /// A pending `goAway` move starts now when no turn is in progress and
    /// the latest handle covers the last one.
    fn move_if_ready(&mut self) {
        if self.move_by.is_some() && !self.turn_open && self.handle_fresh {
            self.move_by = Some(Instant::now());
        }
    }

    /// The setup for the next connection, with the current handle.
    fn setup(&self) -> String {
        self.config.setup_text(self.handle.as_ref())
    }
}

/// The wait before reconnect attempt `attempt`, its jitter from the
/// seed's stream `session/reconnect`.
fn backoff(config: &SessionConfig, attempt: u32) -> Duration {
    let jitter = executor::draw("session/reconnect", |s| s.unit()).unwrap_or(0.5);
    config.resumption.delay(attempt, jitter)
}

impl WireLane {
    fn route(&self, event: LiveEvent, at: Position) {
        self.lanes.send(Lane::Control, Routed::Event(event, at));
    }

    /// After `goAway`: opens the next connection with the current handle,
    /// while the old one goes on. Without a handle there is nothing to
    /// resume: the session waits for the old connection to end.
    pub(super) fn start_move(&mut self) {
        self.link.move_by = None;
        let Some(connector) = self.link.connector.clone() else {
            return;
        };
        if self.link.handle.is_none() {
            self.warn(
                "goAway, and no resumption handle yet: the session stays until the server ends the connection"
                    .to_string(),
            );
            return;
        }
        self.frames += 1;
        let at = Position::wire(self.frames, 0);
        self.route(
            LiveEvent::Reconnecting {
                attempt: self.link.attempts_made + 1,
                cause: "goAway".to_string(),
            },
            at,
        );
        self.link.switch_at = Some(Position::wire(self.frames, 1));
        let (setup, timeout) = (self.link.setup(), self.link.config.setup_timeout);
        let redactor = redactor(&self.link.config);
        self.link.switching =
            Some(async move { open(connector.as_ref(), setup, timeout, redactor).await }.boxed());
    }

    /// Make-before-break: the new connection is set up; answers still
    /// due on the old one go there, then it is closed with 1000 and the
    /// session goes on on the new one.
    pub(super) async fn switch_to(&mut self, opened: Opened) -> Option<End> {
        self.link.attempts_made = 0;
        // From here on the control lane answers no call of the old one.
        self.link.from.store(self.frames + 1, Ordering::Relaxed);
        let mut waiting = Vec::new();
        while let Ok(command) = self.commands.try_recv() {
            waiting.push(command);
        }
        let mut old = std::mem::replace(&mut self.transport, opened.transport);
        let mut later = Vec::new();
        for command in waiting {
            match command {
                // Sent (and emitted) before the switch: the old
                // connection's own calls.
                Command::Answer { message, .. } => {
                    let _ = old.send(Frame::Text(crate::wire::to_json(&message))).await;
                }
                other => later.push(other),
            }
        }
        let close = CloseFrame::new(1000, "moved to a new connection after goAway");
        let _ = old.close(Some(close)).await;
        drop(old);
        let at = self
            .link
            .switch_at
            .take()
            .unwrap_or(Position::wire(self.frames, 1));
        if let Some(end) = self.resumed(opened.early, at, false).await {
            return Some(end);
        }
        for command in later {
            if let Some(end) = self.command(Some(command)).await {
                return Some(end);
            }
        }
        None
    }

    /// The session is on a new connection: says so, replays what the
    /// server had not consumed (transparent), sends what was queued, and
    /// handles the frames that came with `setupComplete`.
    async fn resumed(&mut self, early: Vec<Frame>, at: Position, fresh: bool) -> Option<End> {
        self.link.connection += 1;
        self.link.turn_open = false;
        self.lanes.telemetry.send(Routed::NewConnection).ok();
        self.route(
            LiveEvent::Resumed {
                connection: self.link.connection,
                fresh,
            },
            at,
        );
        let replay: Vec<Value> = if fresh {
            // A fresh session never saw them: nothing to replay into it,
            // and it counts its messages from 1 again.
            self.link.unconsumed.clear();
            self.link.sent = 0;
            let dropped = std::mem::take(&mut self.link.queued).len();
            if dropped > 0 {
                self.warn(format!(
                    "{dropped} client message(s) waiting for the resumed session are not sent: the server started a fresh session, which has none of their context"
                ));
            }
            Vec::new()
        } else {
            self.link
                .unconsumed
                .iter()
                .map(|(_, m)| m.clone())
                .collect()
        };
        #[cfg(feature = "planted-bug")]
        let replay: Vec<Value> = if self
            .link
            .config
            .planted(super::PlantedBug::AudioNotReplayed)
        {
            replay
                .into_iter()
                .filter(|m| m.pointer("/realtimeInput/audio").is_none())
                .collect()
        } else {
            replay
        };
        for message in replay {
            if let Err(e) = self
                .transport
                .send(Frame::Text(crate::wire::to_json(&message)))
                .await
            {
                return Some(End::Lost(
                    e.as_closed(),
                    super::wire_lane::lost(&e, "send failed"),
                ));
            }
        }
        for message in std::mem::take(&mut self.link.queued) {
            if is_content(&message) {
                self.link.sent_content(&message);
            }
            if let Err(e) = self
                .transport
                .send(Frame::Text(crate::wire::to_json(&message)))
                .await
            {
                return Some(End::Lost(
                    e.as_closed(),
                    super::wire_lane::lost(&e, "send failed"),
                ));
            }
        }
        self.early = early;
        None
    }

    /// The connection ended without being asked to: reconnects as the
    /// policy says, or returns the event that ends the session.
    pub(super) async fn reconnect(
        &mut self,
        closed: Closed,
        ended: LiveEvent,
    ) -> Result<(), LiveEvent> {
        let Some(connector) = self
            .link
            .connector
            .clone()
            .filter(|_| self.link.reconnects())
        else {
            return Err(ended);
        };
        self.link.switching = None;
        self.link.move_by = None;
        // The end stands as a frame; the next connection's come after it.
        self.frames += 1;
        let frame = self.frames;
        self.link.from.store(frame + 1, Ordering::Relaxed);
        let mut index = 0;
        let mut next_at = || {
            index += 1;
            Position::wire(frame, index - 1)
        };
        match closed.class {
            CloseClass::Fatal => return Err(ended),
            CloseClass::ResumeRejected => {
                self.link.forget_handle();
                let reason = closed.reason.clone();
                self.route(LiveEvent::ResumptionFailed { reason }, next_at());
            }
            // Without a handle there is nothing to resume (ADK ends too).
            CloseClass::Retryable if self.link.handle.is_none() => return Err(ended),
            CloseClass::Retryable => {}
        }
        let config = self.link.config.clone();
        let attempts = config.resumption.max_attempts();
        let mut cause = closed.to_string();
        let mut attempt = std::mem::take(&mut self.link.attempts_made);
        loop {
            attempt += 1;
            if attempt > attempts {
                return Err(LiveEvent::Disconnected {
                    code: Some(closed.code),
                    reason: format!(
                        "gave up after {attempts} attempts to reconnect; the last: {cause}"
                    ),
                    class: Some(closed.class.to_string()),
                });
            }
            self.route(
                LiveEvent::Reconnecting {
                    attempt,
                    cause: cause.clone(),
                },
                next_at(),
            );
            let wait = tokio::time::sleep(backoff(&config, attempt));
            self.meanwhile(wait).await?;
            let fresh = self.link.handle.is_none();
            let opening = open(
                connector.as_ref(),
                self.link.setup(),
                config.setup_timeout,
                redactor(&config),
            );
            let opened = self.meanwhile(opening).await?;
            match opened {
                Ok(opened) => {
                    self.transport = opened.transport;
                    let at = next_at();
                    return match self.resumed(opened.early, at, fresh).await {
                        None => Ok(()),
                        Some(End::Final(event)) => Err(event),
                        // Lost again at once: the next loop of the lane
                        // sees the transport's end and reconnects.
                        Some(End::Lost(..)) => Ok(()),
                    };
                }
                Err(SessionError::SetupRejected {
                    code,
                    class,
                    reason,
                }) if class == CloseClass::ResumeRejected.to_string() && !fresh => {
                    self.link.forget_handle();
                    self.route(
                        LiveEvent::ResumptionFailed {
                            reason: reason.clone(),
                        },
                        next_at(),
                    );
                    cause = format!("setup rejected with {code}: {reason}");
                    // A fresh session is a new start, not a retry.
                    attempt = 0;
                }
                Err(SessionError::SetupRejected {
                    code,
                    class,
                    reason,
                }) if class != CloseClass::Retryable.to_string() => {
                    return Err(LiveEvent::Disconnected {
                        code: Some(code),
                        reason: format!("reconnecting: setup rejected: {reason}"),
                        class: Some(class),
                    });
                }
                Err(e) => cause = e.to_string(),
            }
        }
    }

    /// Awaits `work` while keeping the session's commands moving: content
    /// is queued for the next connection, answers of the old one are
    /// dropped, a disconnect ends everything (no further attempts).
    pub(super) async fn meanwhile<F: std::future::Future>(
        &mut self,
        work: F,
    ) -> Result<F::Output, LiveEvent> {
        tokio::pin!(work);
        loop {
            tokio::select! {
                biased;
                command = self.commands.recv() => match command {
                    Some(Command::Send(message)) => {
                        #[cfg(feature = "planted-bug")]
                        if is_content(&message)
                            && self
                                .link
                                .config
                                .planted(super::PlantedBug::TypedWhileReconnectingDropped)
                        {
                            continue;
                        }
                        if is_content(&message) {
                            // Content moved from the user's side now, as it
                            // does when typed on a connection: silence
                            // counts from here, not from when it is sent.
                            self.lanes.telemetry.send(Routed::Activity).ok();
                            self.transcript.push(Speaker::User, user_text(&message));
                        }
                        self.link.queued.push(message);
                    }
                    Some(Command::Answer { message, .. }) => self.warn(stale_answer(&message)),
                    Some(Command::Disconnect(ack)) => {
                        let _ = ack.send(());
                        return Err(LiveEvent::Disconnected {
                            code: Some(1000),
                            reason: "disconnected by the client while reconnecting".to_string(),
                            class: None,
                        });
                    }
                    None => {
                        return Err(LiveEvent::Disconnected {
                            code: None,
                            reason: "every handle was dropped".to_string(),
                            class: None,
                        });
                    }
                },
                done = &mut work => return Ok(done),
            }
        }
    }
}
