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
//! without a handle starts the script over as a fresh session.

mod actions;
mod client;
mod connections;
mod handshake;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{Notify, mpsc};
use tokio::time::Instant;

use super::script::{Action, Call, ScriptedServer};
use crate::transport::{CloseFrame, Frame, Transport};
use handshake::{Expect, Opened};

/// A broken script expectation: what the client did, and where in which
/// script.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("script {script:?}, {at}: {problem}")]
pub struct ReplayError {
    /// The script's name.
    pub script: String,
    /// Where the script was: `action #3 (call get_weather as call-1)`,
    /// `the handshake`, or `after the last action`.
    pub at: String,
    /// What the client did that the script did not allow.
    pub problem: String,
}

/// What the player and the test share: progress, what the client sent,
/// and errors.
#[derive(Default)]
pub(crate) struct Progress {
    state: Mutex<Recorded>,
    pub released: Notify,
    pub changed: Notify,
}

impl Progress {
    /// The progress of a play for a real server (`livesim serve`):
    /// released from the start, keeping no copy of what the client sends
    /// (a client may send a lot; the report needs none of it), and leaving
    /// what it says about the client to the server's own redacted log.
    #[cfg(feature = "serve")]
    pub fn for_server() -> Self {
        let progress = Progress::default();
        progress.update(|s| {
            s.released = true;
            s.serving = true;
        });
        progress
    }
}

#[derive(Default)]
pub(crate) struct Recorded {
    pub released: bool,
    pub actions_done: bool,
    /// Where the script is: `the handshake`, `action #3 (…)`, `after the
    /// last action` (what a report says when the client leaves early).
    pub at: At,
    /// The script ended the session's last connection itself (a `close`,
    /// `abort` or `reject_setup` action that no `reconnect` follows): it
    /// played as written even though actions may follow.
    pub ended_by_script: bool,
    pub finished: bool,
    /// Every frame the session read, in the order it read them (on an
    /// in-memory connection; empty otherwise).
    pub received: Vec<Frame>,
    /// When the session read each of `received` (virtual time in a
    /// simulation).
    pub received_at: Vec<Duration>,
    /// Each in-memory connection's frames, sent and read.
    pub links: Vec<LinkCount>,
    /// Every frame the client sent (unless `serving`).
    pub inbound: Vec<Vec<u8>>,
    /// When each of `inbound` arrived (virtual time in a simulation).
    pub inbound_at: Vec<Duration>,
    /// The connection the player was playing when each of `inbound`
    /// arrived, by its number (a late frame from a connection the client
    /// left counts on the one being played; a connection the client went
    /// back to keeps its number).
    pub inbound_on: Vec<u32>,
    /// Set for a real server: `inbound` stays empty, and errors are not
    /// logged here (they may quote a client's credential; the server's log
    /// redacts them).
    pub serving: bool,
    pub issued: Vec<String>,
    pub answered: BTreeSet<String>,
    pub cancelled: BTreeSet<String>,
    /// Answers to calls the script had already cancelled, tolerated
    /// because the script allows answers to cross cancellations.
    pub late_answers: Vec<String>,
    /// How many `expect` actions the script has reached.
    pub expects_reached: usize,
    /// How many of the script's expected messages the client has sent
    /// (counted again from a resilient player's rollback).
    pub expected_seen: usize,
    /// Messages a transparent resumption owes the server before anything
    /// new.
    pub replays_owed: usize,
    /// How many times a resilient player went back in the script (to a
    /// resumed handle's point, to the start for a fresh session, or to
    /// the connection a client never finished leaving): what the server
    /// had received past that point is forgotten.
    pub rollbacks: u32,
    /// Content a resilient player let go: it reached a connection the
    /// session had moved from (late, behind a network), so the resumed
    /// session never got it.
    pub content_dropped: u32,
    /// The index of the last `close` or `abort` action performed: the
    /// connection it ended is over.
    pub last_close: Option<usize>,
    /// Calls issued on a connection that has since been left: nobody can
    /// answer them any more.
    pub abandoned: BTreeSet<String>,
    /// The connection (1-based) each call was last issued on.
    pub issued_on: BTreeMap<String, u32>,
    /// A resilient player's calls, kept across its restarts: how each of
    /// the script's call ids was last issued.
    pub issues: BTreeMap<String, Issue>,
    /// Connections the server's host accepted (on a simulated network,
    /// before their upgrade and setup).
    #[cfg(feature = "network")]
    pub accepted: u32,
    /// Connections whose setup the player answered with `setupComplete`.
    pub connections: u32,
    pub errors: Vec<ReplayError>,
}

impl Progress {
    pub fn lock(&self) -> MutexGuard<'_, Recorded> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn update(&self, f: impl FnOnce(&mut Recorded)) {
        f(&mut self.lock());
        self.changed.notify_waiters();
    }

    /// Every call the script issued that was neither answered, cancelled
    /// nor left behind on an earlier connection.
    pub fn unanswered(&self) -> Vec<String> {
        let state = self.lock();
        let issued: BTreeSet<&String> = state.issued.iter().collect();
        issued
            .into_iter()
            .filter(|id| {
                !state.answered.contains(*id)
                    && !state.cancelled.contains(*id)
                    && !state.abandoned.contains(*id)
            })
            .cloned()
            .collect()
    }
}

/// Where the player is, for error messages.
/// Where a script is, described only when a report or a log asks (most
/// positions are passed and never told).
#[derive(Clone, Debug)]
pub(crate) enum At {
    /// A fixed place: `the handshake`, `after the last action`.
    Said(&'static str),
    /// A place described when the player got there.
    Told(String),
    /// Action `index` of these actions.
    Action(usize, Arc<Vec<Action>>),
}

impl Default for At {
    fn default() -> Self {
        At::Said("")
    }
}

impl std::fmt::Display for At {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            At::Said(place) => f.write_str(place),
            At::Told(place) => f.write_str(place),
            At::Action(index, actions) => match actions.get(*index) {
                Some(action) => f.write_str(&describe(*index, action)),
                None => write!(f, "action #{}", index + 1),
            },
        }
    }
}

fn describe(index: usize, action: &Action) -> String {
    let what = match action {
        Action::Send(m) | Action::SendText(m) => {
            let key = m
                .as_object()
                .and_then(|o| o.keys().next().cloned())
                .unwrap_or_default();
            format!("send {key}")
        }
        Action::SendRaw(_) => "send raw bytes".to_string(),
        Action::Call(c) => format!("call {} as {}", c.name, c.id),
        Action::CallMany(calls) => {
            let names: Vec<String> = calls
                .iter()
                .map(|c| format!("{} as {}", c.name, c.id))
                .collect();
            format!("call {}", names.join(", "))
        }
        Action::PauseMs(ms) => format!("pause {ms}ms"),
        Action::Expect(key) => format!("expect {key}"),
        Action::Close(c) => format!("close {}", c.code),
        Action::RejectSetup(c) => format!("reject setup with {}", c.code),
        Action::Abort => "abort".to_string(),
        Action::ResumptionUpdate(u) if u.resumable => "resumption update".to_string(),
        Action::ResumptionUpdate(_) => "resumption update (not resumable)".to_string(),
        Action::GoAwayMs(ms) => format!("go away in {ms}ms"),
        Action::Reconnect(r) if r.handle.is_some() => "reconnect, resuming".to_string(),
        Action::Reconnect(_) => "reconnect, fresh".to_string(),
    };
    format!("action #{} ({what})", index + 1)
}

/// What the player is waiting for, besides the next client frame.
enum Wait {
    Nothing,
    Release,
    Answers(Vec<String>),
    /// The `n`-th `expect` action's client message (0-based).
    Expected(usize),
    Until(Instant),
    /// After the last action, the transparent replay the client still
    /// owes, until this instant (it comes right after `setupComplete`).
    Replays(Instant),
    /// The client leaving: after the last action.
    Hangup,
}

/// How long the player waits, after its last action, for a transparent
/// replay the client still owes.
const REPLAY_GRACE: Duration = Duration::from_secs(1);

/// What a call action waits for: the answers of the calls that wait.
fn answers(calls: &[Call]) -> Wait {
    Wait::Answers(
        calls
            .iter()
            .filter(|c| c.wait)
            .map(|c| c.id.clone())
            .collect(),
    )
}

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
    /// How many of them the client has sent.
    expected_seen: usize,
    /// How many `expect` actions the script has reached.
    expects_reached: usize,
    /// The current connection's number (1-based).
    connection: u32,
    /// The next action to perform (0-based).
    next: usize,
    go_away_deadline: Option<Instant>,
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
        self.move_to(At::Said("after the last action"));
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

    fn satisfied(&self, wait: &Wait) -> bool {
        let state = self.progress.lock();
        match wait {
            Wait::Nothing => true,
            Wait::Release => state.released,
            Wait::Answers(ids) => ids.iter().all(|id| {
                state.answered.contains(id)
                    || state.cancelled.contains(id)
                    || state.abandoned.contains(id)
            }),
            Wait::Expected(n) => self.expected_seen > *n,
            Wait::Replays(_) => self.replay.is_empty(),
            Wait::Until(_) | Wait::Hangup => false,
        }
    }

    /// Waits for what the last action needs, handling client frames and
    /// connections meanwhile.
    async fn wait_for(&mut self, wait: &mut Wait) -> Flow {
        let progress = self.progress.clone();
        loop {
            // Registered before the check, so a release that lands in
            // between still wakes us.
            let released = progress.released.notified();
            tokio::pin!(released);
            released.as_mut().enable();
            self.publish_expects();
            if self.satisfied(wait) {
                return Flow::Go;
            }
            let deadline = match wait {
                Wait::Until(at) => Some(*at),
                Wait::Replays(at) => {
                    // Past the grace, the script ends and says what is
                    // missing.
                    if Instant::now() >= *at {
                        return Flow::Go;
                    }
                    Some(*at)
                }
                _ => None,
            };
            let releasing = matches!(wait, Wait::Release);
            let taking = self.incoming.is_some() && self.pending.is_none();
            let event = tokio::select! {
                biased;
                frame = next_frame(self.current.as_mut().map(Conn::io)) => Event::Current(frame),
                frame = next_frame(self.leaving.as_mut().map(|(_, io)| io)) => Event::Leaving(frame),
                conn = next_connection(self.incoming.as_mut()), if taking => Event::Connection(conn),
                _ = &mut released, if releasing => continue,
                _ = sleep_until(deadline) => { *wait = Wait::Nothing; continue; }
                _ = sleep_until(self.go_away_deadline) => Event::GoAwayDeadline,
            };
            match event {
                Event::Current(Some(frame)) => {
                    let on = self.connection;
                    if self.client_frame(frame, on).await.is_err() {
                        return Flow::Stop;
                    }
                }
                Event::Current(None) => {
                    self.current = None;
                    // The script moves to the next connection itself:
                    // nothing more can happen on this one.
                    if self.reconnect_next() {
                        return Flow::Go;
                    }
                    if matches!(wait, Wait::Hangup) && !self.resilient {
                        return Flow::Stop;
                    }
                    // The client left the new connection: it may still be
                    // on the one it was leaving (the new one's setupComplete
                    // was lost on the way).
                    if self.resilient
                        && let Some(from) = self.restore_leaving(true)
                    {
                        return Flow::From(from);
                    }
                    return self.connection_lost().await;
                }
                Event::Leaving(Some(frame)) => {
                    let on = self.leaving.as_ref().map_or(0, |(n, _)| *n);
                    if self.client_frame(frame, on).await.is_err() {
                        return Flow::Stop;
                    }
                }
                Event::Leaving(None) => {
                    self.leaving = None;
                    self.saved = None;
                }
                Event::Connection(None) => self.incoming = None,
                Event::Connection(Some(conn)) if self.resilient => {
                    // The client is moving (or gave the current connection
                    // up without the server knowing): the new one takes
                    // over once set up.
                    let number = self.connection;
                    if let Some(Conn::Owned(old)) = self.current.take() {
                        self.leaving = Some((number, old));
                        self.save(self.next);
                    }
                    self.open(conn);
                    self.move_to(At::Told(format!(
                        "connection #{}'s handshake",
                        self.connection
                    )));
                    match self.handshake(Expect::Resilient, None).await {
                        Ok(Opened::Resumed(from)) => return Flow::From(from),
                        Ok(Opened::Accepted) => return Flow::Go,
                        // Lost on the way or refused: the client may still
                        // be on the connection it had.
                        Ok(Opened::Died | Opened::Rejected) => {
                            self.restore_leaving(false);
                        }
                        Err(()) => return Flow::Stop,
                    }
                }
                Event::Connection(Some(conn)) => self.pending = Some(conn),
                Event::GoAwayDeadline => {
                    self.go_away_deadline = None;
                    self.close_current(1000, "The goAway deadline has passed.")
                        .await;
                    if self.reconnect_next() {
                        return Flow::Go;
                    }
                    return self.connection_lost().await;
                }
            }
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

/// What woke the player.
enum Event<T> {
    Current(Option<Frame>),
    Leaving(Option<Frame>),
    Connection(Option<T>),
    GoAwayDeadline,
}

/// The next frame on `io` (`None` once it has ended); pending forever
/// without a connection.
async fn next_frame<T: Transport>(io: Option<&mut T>) -> Option<Frame> {
    let Some(io) = io else {
        return std::future::pending().await;
    };
    match io.recv().await {
        Some(Ok(Frame::Close(_))) | None | Some(Err(_)) => None,
        Some(Ok(frame)) => Some(frame),
    }
}

/// The next connection to arrive; pending forever without a source.
async fn next_connection<T>(incoming: Option<&mut mpsc::UnboundedReceiver<T>>) -> Option<T> {
    match incoming {
        Some(incoming) => incoming.recv().await,
        None => std::future::pending().await,
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

impl<T: Transport> Player<'_, T> {
    /// Keeps a copy of a client frame for the test, unless told not to.
    fn keep_inbound(&self, bytes: &[u8]) {
        let on = self.connection;
        self.progress.update(|s| {
            if !s.serving {
                s.inbound.push(bytes.to_vec());
                s.inbound_at.push(crate::executor::now());
                s.inbound_on.push(on);
            }
        });
    }
}

/// One in-memory connection's frames: those the player sent over it,
/// those the session read, and whether the session has left it.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct LinkCount {
    pub sent: u64,
    pub received: u64,
    /// The session dropped its end: what it had not read is lost (it
    /// moved to a new connection first), not on its way.
    pub left: bool,
}

impl Recorded {
    /// Every action performed and every frame handed to the session, but
    /// those on a connection the session left before reading them (an
    /// in-memory connection counts its frames; a player on other
    /// connections is drained once its actions are done).
    pub fn drained(&self) -> bool {
        self.actions_done
            && self
                .links
                .iter()
                .all(|link| link.left || link.received >= link.sent)
    }
}
