//! What the player and the test share: the record of a play (where the
//! script is, what the client sent and when, calls issued and answered,
//! each connection's frames) and the errors it found.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::Notify;

use super::Issue;
use crate::testing::script::Action;
use crate::transport::Frame;

/// A broken script expectation: what the client did, and where in which
/// script.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("script {script:?}, {at}: {problem}")]
pub struct ReplayError {
    /// The script's name.
    pub script: String,
    /// Where the script was: `action #3 (call get_weather as call-1)`,
    /// `the handshake`, or `the end of the script`.
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
    /// Each of `inbound` as the player parsed it (JSON it kept), or `None`
    /// where it kept none (the setup, which it takes apart; bytes that
    /// are not JSON).
    pub inbound_parsed: Vec<Option<Value>>,
    /// When each of `inbound` arrived (virtual time in a simulation).
    pub inbound_at: Vec<Duration>,
    /// The connection each of `inbound` came on, by its number (a late
    /// frame from a connection the client left counts on that one; a
    /// connection the client went back to keeps its number).
    pub inbound_on: Vec<u32>,
    /// Set for a real server: `inbound` stays empty, and errors are not
    /// logged here (they may quote a client's credential; the server's log
    /// redacts them).
    pub serving: bool,
    pub issued: Vec<String>,
    pub answered: BTreeSet<String>,
    /// Answered calls whose latest response said `willContinue: true` (a
    /// NON_BLOCKING tool streaming results): more responses may follow,
    /// until one without it.
    pub continuing: BTreeSet<String>,
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
    /// Client messages of the kinds the script's `stream` names that the
    /// player took (on any connection, replays included).
    pub streamed: u64,
    /// How many times a resilient player went back in the script (to a
    /// resumed handle's point, to the start for a fresh session, or to
    /// the connection a client never finished leaving): what the server
    /// had received past that point is forgotten.
    pub rollbacks: u32,
    /// Content a resilient player let go: it reached a connection the
    /// session had moved from (late, behind a network), so the resumed
    /// session never got it.
    pub content_dropped: u32,
    /// The server closed the connection at a goAway's deadline (the
    /// `go_away_ms` action, 0-based) while the script still had actions
    /// and no `reconnect` to go to: where the script stood then.
    pub closed_at_go_away: Option<(usize, At)>,
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
    /// A fixed place: `the handshake`, `the end of the script`.
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
                Some(action) => describe(f, *index, action),
                None => write!(f, "action #{}", index + 1),
            },
        }
    }
}

/// Writes `action #N (what it does)`: the place a script stands, logged
/// at every action, so written without a copy.
fn describe(f: &mut std::fmt::Formatter<'_>, index: usize, action: &Action) -> std::fmt::Result {
    write!(f, "action #{} (", index + 1)?;
    match action {
        Action::Send(m) | Action::SendText(m) => {
            let key = m.as_object().and_then(|o| o.keys().next());
            write!(f, "send {}", key.map_or("", String::as_str))?;
        }
        Action::SendRaw(_) => f.write_str("send raw bytes")?,
        Action::Call(c) => write!(f, "call {} as {}", c.name, c.id)?,
        Action::CallMany(calls) => {
            f.write_str("call ")?;
            for (i, c) in calls.iter().enumerate() {
                let comma = if i == 0 { "" } else { ", " };
                write!(f, "{comma}{} as {}", c.name, c.id)?;
            }
        }
        Action::PauseMs(ms) => write!(f, "pause {ms}ms")?,
        Action::Expect(key) => write!(f, "expect {key}")?,
        Action::Close(c) => write!(f, "close {}", c.code)?,
        Action::RejectSetup(c) => write!(f, "reject setup with {}", c.code)?,
        Action::Abort => f.write_str("abort")?,
        Action::ResumptionUpdate(u) if u.resumable => f.write_str("resumption update")?,
        Action::ResumptionUpdate(_) => f.write_str("resumption update (not resumable)")?,
        Action::GoAwayMs(ms) => write!(f, "go away in {ms}ms")?,
        Action::Attach(members) => {
            f.write_str("attach ")?;
            for (i, key) in members.keys().enumerate() {
                let comma = if i == 0 { "" } else { ", " };
                write!(f, "{comma}{key}")?;
            }
            f.write_str(" to the next message")?;
        }
        Action::Reconnect(r) if r.handle.is_some() => f.write_str("reconnect, resuming")?,
        Action::Reconnect(_) => f.write_str("reconnect, fresh")?,
    }
    f.write_str(")")
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
