//! The script player: the scripted server's side of a session.
//!
//! It runs as its own task on the server end of one [`Transport`] (an
//! in-memory pair for tests, a real WebSocket for `livesim serve`) or of
//! several, one after another, when the script spans connections: it
//! expects `setup`, answers `setupComplete`, waits to be released, then
//! performs the script's actions in order while checking everything the
//! client sends. It is strict, like the real service: a client message the
//! script does not expect, an answer to a call it never made (or made on
//! another connection), a second answer to one call, a response that is
//! not an object, a setup that resumes the wrong handle: each is an error
//! naming the script, the action and the offending message, and the
//! connection is closed as the real server would close it (1007 or 1008).
//!
//! **Connections.** A `reconnect` action ends the current connection (the
//! script's own close, or the client leaving it; the client may open the
//! next one first) and checks the next one's setup against the handle the
//! script names. A handle resumed without transparent resumption holds
//! nothing the old connection received after it was issued: content the
//! script expects after the `reconnect` that arrived there (sent while a
//! move was pending) is reported lost. A *resilient* player (the one
//! behind a simulated network, where connections die where no script says
//! so) also takes connections the script does not plan: a setup that
//! resumes a handle the server still knows rolls the script back to the
//! point that handle was issued (the server's state then), one with a
//! handle it does not know is answered `1008 session not found`, and one
//! without a handle starts the script over as a fresh session. When the
//! client gives up a connection it was moving to (its `setupComplete` was
//! lost on the way) while the one it was leaving is still open, the client
//! is still there: the player goes back to it, to where the script stood
//! on it, and still ends it when its `goAway` deadline passes.
//!
//! This file holds the player and its main loop; `handshake.rs` takes a
//! connection's setup, `actions.rs` performs one action, `waiting.rs`
//! waits between them, `client.rs` checks each client frame,
//! `connections.rs` moves between connections, and `progress.rs` is the
//! record the player and the test share.

mod actions;
mod client;
mod connections;
mod handshake;
mod progress;
mod setup;
mod waiting;

pub use progress::ReplayError;
pub(crate) use progress::{At, LinkCount, Progress};
// What `livesim serve` reports from, and what a play's client frames are
// read back from.
pub(crate) use progress::Recorded;
use waiting::{REPLAY_GRACE, Wait, answers, next_connection, next_frame, sleep_until};

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::script::{Action, ScriptedServer};
use crate::transport::{CloseFrame, Frame, Transport};
use handshake::{Expect, Opened};

/// How a wait or an action ended.
enum Flow {
    /// Go on with the next action.
    Go,
    /// Go on from this action (0-based): an unplanned connection resumed
    /// the session at the point its handle was issued, or started over.
    From(usize),
    /// The play is over.
    Stop,
}

/// Plays `script` on the server end `io`, recording into `progress`.
pub(crate) async fn play<T: Transport>(script: ScriptedServer, io: T, progress: Arc<Progress>) {
    Player::new(script, Conn::Owned(io), None, progress, false)
        .run()
        .await;
}

/// [`play`] on a borrowed transport, which the caller keeps: `livesim
/// serve` finishes the closing handshake after the script ends.
#[cfg(feature = "serve")]
pub(crate) async fn play_on<T: Transport>(
    script: ScriptedServer,
    io: &mut T,
    progress: Arc<Progress>,
) {
    Player::new(script, Conn::Borrowed(io), None, progress, false)
        .run()
        .await;
}

/// Plays `script` across the connections that arrive on `incoming`, one
/// script position for all of them. `resilient`: connections may also
/// die and come back where the script does not say (see the module docs).
pub(crate) async fn play_connections<T: Transport>(
    script: ScriptedServer,
    mut incoming: mpsc::UnboundedReceiver<T>,
    progress: Arc<Progress>,
    resilient: bool,
) {
    let Some(first) = incoming.recv().await else {
        progress.update(|s| s.finished = true);
        return;
    };
    if resilient {
        // A player starting again (its host restarted) knows nothing the
        // last one was told or did: to a client, a rollback to the start.
        // Nobody can answer the calls the last one left open (it numbered
        // its connections from 1, as this one will, so `open` cannot tell
        // they are from an earlier connection).
        progress.update(|s| {
            let open: Vec<String> = s
                .issued_on
                .keys()
                .filter(|id| !s.answered.contains(*id))
                .cloned()
                .collect();
            s.abandoned.extend(open);
            s.rollbacks += 1;
            s.actions_done = false;
            s.finished = false;
            s.ended_by_script = false;
        });
    }
    Player::new(
        script,
        Conn::Owned(first),
        Some(incoming),
        progress,
        resilient,
    )
    .run()
    .await;
}

/// The connection being played on: owned, or borrowed from `serve`.
enum Conn<'a, T> {
    #[cfg_attr(not(feature = "serve"), allow(dead_code))]
    Borrowed(&'a mut T),
    Owned(T),
}

impl<T> Conn<'_, T> {
    fn io(&mut self) -> &mut T {
        match self {
            Conn::Borrowed(io) => io,
            Conn::Owned(io) => io,
        }
    }
}

/// A resumable handle the script issued, and the session as it stood
/// then (where a resilient player rolls back to).
struct Issued {
    handle: String,
    /// The `resumption_update` action that issued it (0-based).
    action: usize,
    expected_seen: usize,
    expects_reached: usize,
    consumed: usize,
    transparent: bool,
}

struct Player<'a, T: Transport> {
    name: String,
    actions: Arc<Vec<Action>>,
    /// The connection the script plays on; `None` once it has ended.
    current: Option<Conn<'a, T>>,
    /// A connection the client is leaving (it opened the next one first):
    /// read until it closes.
    leaving: Option<(u32, T)>,
    /// A connection the client opened before the script reached the
    /// `reconnect` that takes it.
    pending: Option<T>,
    incoming: Option<mpsc::UnboundedReceiver<T>>,
    progress: Arc<Progress>,
    at: At,
    lenient: bool,
    /// Answers may cross the script's cancellations (see
    /// `ScriptedServer::answers_may_cross_cancellations`).
    crossing: bool,
    /// What every `setupComplete` carries as `sessionId`.
    session_id: Option<String>,
    resilient: bool,
    uses_resumption: bool,
    /// The script resumes transparently: consumed messages are kept, to
    /// check their replays.
    transparent: bool,
    /// The keys the script's `expect` actions wait for, in order.
    expects: Vec<String>,
    /// The kinds of client message the script takes whenever they come
    /// (camelCase; empty: none, every message is checked strictly).
    stream: Vec<String>,
    /// How many of them the client has sent.
    expected_seen: usize,
    /// How many `expect` actions the script has reached.
    expects_reached: usize,
    /// The current connection's number (1-based).
    connection: u32,
    /// The next action to perform (0-based).
    next: usize,
    go_away_deadline: Option<Instant>,
    /// The `go_away_ms` action (0-based) that set the deadline.
    go_away_action: usize,
    /// Members an `attach` action gave for the next message sent.
    attach: Option<serde_json::Map<String, Value>>,
    /// Resumable handles issued in this session, oldest first.
    handles: Vec<Issued>,
    /// Content messages (`clientContent`, `realtimeInput`) the session
    /// has consumed, counted for `lastConsumedClientMessageIndex`; their
    /// text is kept only when the script resumes transparently.
    consumed: Vec<Consumed>,
    /// The latest `lastConsumedClientMessageIndex` sent: a later one never
    /// reports less.
    reported: usize,
    /// After a transparent resumption: what the old connection received
    /// past the consumed point, which the client must replay first, in
    /// order, once each.
    replay: std::collections::VecDeque<Value>,
    /// Whether replayed messages count toward `expect`s again (after a
    /// rollback they do; after a scripted reconnect they were matched).
    replay_rematches: bool,
    /// The session as it stood on the connection being left, to go back
    /// to if the client never completes its move.
    saved: Option<Saved>,
    /// The id the wire knows each of the script's call ids by now (see
    /// `named_for_the_wire`).
    wire_ids: BTreeMap<String, String>,
}

/// How a resilient player last issued one of the script's call ids.
pub(crate) struct Issue {
    /// The connection (numbered by setups answered) it was issued on.
    pub connection: u32,
    /// The id the wire knows it by.
    pub wire: String,
    /// How many connections have issued it.
    pub times: u32,
}

/// A content message the server received, and how many of the script's
/// expected messages it had seen before it: where a resumption whose
/// handle leaves the message out goes back to.
#[derive(Clone)]
struct Consumed {
    message: Value,
    expected_before: usize,
}

/// Where the script and its checks stood on a connection being left.
struct Saved {
    next: usize,
    expected_seen: usize,
    expects_reached: usize,
    consumed: Vec<Consumed>,
    replay: std::collections::VecDeque<Value>,
    replay_rematches: bool,
    go_away_deadline: Option<Instant>,
}

impl<'a, T: Transport> Player<'a, T> {
    fn new(
        script: ScriptedServer,
        first: Conn<'a, T>,
        incoming: Option<mpsc::UnboundedReceiver<T>>,
        progress: Arc<Progress>,
        resilient: bool,
    ) -> Self {
        Player {
            name: script.name.clone(),
            uses_resumption: script.uses_resumption(),
            transparent: script
                .actions
                .iter()
                .any(|a| matches!(a, Action::ResumptionUpdate(u) if u.transparent)),
            expects: script
                .actions
                .iter()
                .filter_map(|a| match a {
                    Action::Expect(key) => Some(crate::wire::camel_case(key)),
                    _ => None,
                })
                .collect(),
            stream: script
                .stream
                .iter()
                .map(|k| crate::wire::camel_case(k))
                .collect(),
            actions: script.actions,
            current: Some(first),
            leaving: None,
            pending: None,
            incoming,
            progress,
            at: At::default(),
            lenient: script.lenient,
            crossing: script.crossing,
            session_id: script.session_id,
            resilient,
            expected_seen: 0,
            expects_reached: 0,
            connection: 1,
            next: 0,
            go_away_deadline: None,
            go_away_action: 0,
            attach: None,
            handles: Vec::new(),
            consumed: Vec::new(),
            reported: 0,
            replay: Default::default(),
            replay_rematches: false,
            saved: None,
            wire_ids: BTreeMap::new(),
        }
    }

    async fn run(mut self) {
        self.move_to(At::Said("the handshake"));
        let rejection = self.rejection_at(0);
        self.next = match self.handshake(Expect::First, rejection).await {
            Ok(Opened::Accepted) => 0,
            Ok(Opened::Resumed(from)) => from,
            Ok(Opened::Rejected) if self.reconnect_at(1) => 1,
            // A resilient player refused a handle it does not know (it
            // restarted): the client comes back.
            Ok(Opened::Rejected | Opened::Died) if self.resilient => {
                match self.connection_lost().await {
                    Flow::From(from) => from,
                    Flow::Go => 0,
                    Flow::Stop => {
                        self.progress.update(|s| s.finished = true);
                        return;
                    }
                }
            }
            _ => {
                self.progress.update(|s| s.finished = true);
                return;
            }
        };
        let mut wait = if self.next == 0 {
            self.move_to(At::Said("before the first action"));
            Wait::Release
        } else {
            Wait::Nothing
        };
        loop {
            match self.wait_for(&mut wait).await {
                Flow::Go => {}
                Flow::From(from) => {
                    self.rolled_back(from);
                    wait = Wait::Nothing;
                    continue;
                }
                Flow::Stop => break,
            }
            // The actions are shared: performing one borrows it from this
            // handle rather than copying it.
            let actions = Arc::clone(&self.actions);
            let Some(action) = actions.get(self.next) else {
                if matches!(wait, Wait::Hangup) {
                    break;
                }
                if !self.replay.is_empty() && !matches!(wait, Wait::Replays(_)) {
                    // The replay may still be on its way.
                    wait = Wait::Replays(Instant::now() + REPLAY_GRACE);
                    continue;
                }
                self.finish_actions();
                wait = Wait::Hangup;
                continue;
            };
            let index = self.next;
            self.next += 1;
            self.move_to(At::Action(index, Arc::clone(&actions)));
            match self.perform(index, action).await {
                Ok(w) => wait = w,
                Err(Flow::From(from)) => {
                    self.rolled_back(from);
                    wait = Wait::Nothing;
                }
                Err(_) => break,
            }
        }
        self.progress.update(|s| s.finished = true);
    }

    /// The script goes on from action `from` (0-based), after a rollback.
    fn rolled_back(&mut self, from: usize) {
        self.next = from;
        self.progress.update(|s| {
            s.actions_done = false;
            s.rollbacks += 1;
        });
    }

    /// The script's `reject_setup` at `index`, if there is one, and
    /// whether it ends the session (no `reconnect` follows it).
    fn rejection_at(&self, index: usize) -> Option<(super::script::CloseAction, bool)> {
        match self.actions.get(index) {
            Some(Action::RejectSetup(close)) => {
                Some((close.clone(), !self.reconnect_at(index + 1)))
            }
            _ => None,
        }
    }

    fn reconnect_at(&self, index: usize) -> bool {
        matches!(self.actions.get(index), Some(Action::Reconnect(_)))
    }

    fn finish_actions(&mut self) {
        self.move_to(At::Said("the end of the script"));
        if !self.replay.is_empty() {
            let problem = format!(
                "the script ended, and the client never replayed {} client message(s) the server had not consumed before connection #{} (transparent resumption)",
                self.replay.len(),
                self.connection
            );
            self.record(problem);
        }
        self.progress.update(|s| s.actions_done = true);
    }

    fn move_to(&mut self, at: At) {
        tracing::debug!(target: "livesim::testing", script = %self.name, "{at}");
        self.progress.update(|s| s.at = at.clone());
        self.at = at;
    }

    /// Publishes where the script's expected messages stand, when that
    /// changed (a user who follows the script reads it).
    fn publish_expects(&self) {
        let (reached, seen, owed) = (self.expects_reached, self.expected_seen, self.replay.len());
        let changed = {
            let state = self.progress.lock();
            (
                state.expects_reached,
                state.expected_seen,
                state.replays_owed,
            ) != (reached, seen, owed)
        };
        if changed {
            self.progress.update(|s| {
                s.expects_reached = reached;
                s.expected_seen = seen;
                s.replays_owed = owed;
            });
        }
    }

    /// Whether the next action to perform is a `reconnect` (the script
    /// plans the connection change itself).
    fn reconnect_next(&self) -> bool {
        self.reconnect_at(self.next)
    }

    fn record(&mut self, problem: String) {
        let error = ReplayError {
            script: self.name.clone(),
            at: self.at.to_string(),
            problem,
        };
        self.progress.update(|s| {
            if !s.serving {
                tracing::warn!(target: "livesim::testing", "{error}");
            }
            s.errors.push(error);
        });
    }

    async fn fail(&mut self, problem: String, code: u16, reason: &str) -> Result<(), ()> {
        self.record(problem);
        if let Some(conn) = self.current.as_mut() {
            let _ = conn.io().close(Some(CloseFrame::new(code, reason))).await;
        }
        Err(())
    }

    async fn send(&mut self, frame: Frame) -> Result<(), ()> {
        let Some(conn) = self.current.as_mut() else {
            return Err(());
        };
        conn.io().send(frame).await.map_err(|_| ())
    }
}

impl<T: Transport> Player<'_, T> {
    /// Keeps a copy of a client frame that came on connection `on` for
    /// the test, unless told not to; returns its place among the kept
    /// frames.
    fn keep_inbound(&self, bytes: &[u8], on: u32) -> usize {
        let mut index = 0;
        self.progress.update(|s| {
            if !s.serving {
                index = s.inbound.len();
                s.inbound.push(bytes.to_vec());
                s.inbound_parsed.push(None);
                s.inbound_at.push(crate::executor::now());
                s.inbound_on.push(on);
            }
        });
        index
    }

    /// Keeps the JSON the player parsed from kept frame `index`, so that
    /// reading what the client sent does not parse it again.
    fn keep_parsed(&self, index: usize, parsed: Value) {
        if let Some(slot) = self.progress.lock().inbound_parsed.get_mut(index) {
            *slot = Some(parsed);
        }
    }
}
