//! The generator's connections, for a session that resumes: the
//! resumption handles the server gives it, the connections that end under
//! it, and the moves it makes.
//!
//! A resuming session gets what the service gives: a resumable handle
//! after most turns (`sessionResumptionUpdate`, with
//! `lastConsumedClientMessageIndex` when the session resumes
//! transparently; under `handle-lag` that index lags one or two messages
//! behind what the server received, as a handle issued before the server
//! processed them does), and sometimes, while a call runs, news that it cannot
//! resume right now. Its connections end as the service ends them:
//!
//! * `go-away`: the turn goes on after the `goAway`, a fresh handle follows
//!   its end, and the next connection must resume that handle (the session
//!   moves, make-before-break);
//! * `reconnect`: at a turn's end or while a call runs, a close (1011 or
//!   1000) or an abrupt drop, then the next connection must resume the
//!   latest handle; one time in five the handle has gone stale: that setup
//!   is refused with 1008 "session not found", and the connection after it
//!   must open a fresh session. Otherwise, about one time in seven, the
//!   setup is refused in passing (1011) and the session must resume the
//!   same handle on its next attempt. A short pause follows, so a transparent
//!   session's replay is in before anything else happens.
//!
//! A session that resumes without replaying (not transparent) loses what
//! it sent after the handle it resumes: the server's state is the
//! handle's. So its connections end, and its moves begin, right after a
//! fresh handle (the server gives one first): the one message that can
//! still reach the old connection after it is one the session should have
//! held for the next (typed after a `goAway`), which the player reports
//! lost.
//!
//! Calls issued on a connection belong to it: the script never waits for
//! an answer across a connection's end, and under `id-restart` a new
//! connection may number its calls from `call-1` again.
//!
//! Handles are distinctive strings (`handle-<seed>-<n>-<hex>`), so the
//! soak's `handle-secret` invariant can look for them anywhere. Every draw
//! comes from the seed's stream `soak/script/connections`, which only a
//! resuming session's generator reads: other agents' conversations are
//! what they were before resumption joined the soak.

use crate::executor::{Seed, Stream};
use crate::session::Resumption;
use crate::soak::generate::faults::{CloseKind, FaultKind};
use crate::soak::generate::script::{Generator, ending};
use crate::testing::{Action, Reconnect, ResumptionUpdate};

/// How often a turn's end brings a new handle.
const HANDLE_AFTER_TURN: f64 = 0.7;

/// How often a resume finds its handle stale.
const STALE_HANDLE: f64 = 0.2;

/// How often a resume's setup is refused for a passing fault (1011), the
/// handle still good: the session must try the same handle again.
const SETUP_REFUSED: f64 = 0.15;

/// How often a call the connection ends under is preceded by news that
/// the session cannot resume while it runs.
const NOT_RESUMABLE: f64 = 0.5;

/// The pause after a connection ended and the next took over (ms): longer
/// than an in-memory frame's latency and the swarm's delivery jitter
/// together, twice over (a setupComplete, then the replay it starts).
const RESUMED_PAUSE_MS: std::ops::RangeInclusive<u64> = 100..=250;

/// What the generator keeps about a resuming session's connections.
pub(super) struct Connections {
    seed: Seed,
    transparent: bool,
    /// Whether the policy makes more than one attempt per reconnect: a
    /// setup refused in passing needs a second.
    retries: bool,
    draw: Stream,
    /// Whether a resume's setup is refused in passing: a stream of its own,
    /// so the other draws stay what they were before it joined.
    refusals: Stream,
    /// Whether what the user sends while the session reconnects is a
    /// chunk of audio (the microphone streams on) rather than a line.
    spoken: Stream,
    /// Handles issued so far.
    handles: u32,
    /// The latest resumable handle the session holds.
    latest: Option<String>,
    /// A `goAway` came: the session moves after the turn.
    pub moving: bool,
    /// Where the current connection's call ids start in the generator's
    /// list of issued ids.
    pub first_call: usize,
    /// Whether the current connection numbers its calls from `call-1`
    /// again (`id-restart`).
    pub restarted_ids: bool,
}

impl Connections {
    pub fn new(seed: Seed, policy: &Resumption) -> Self {
        Connections {
            seed,
            transparent: policy.is_transparent(),
            retries: policy.max_attempts() > 1,
            draw: Stream::new(seed, "soak/script/connections"),
            refusals: Stream::new(seed, "soak/script/connections/refused"),
            spoken: Stream::new(seed, "soak/script/connections/spoken"),
            handles: 0,
            latest: None,
            moving: false,
            first_call: 0,
            restarted_ids: false,
        }
    }
}

impl Generator<'_> {
    /// What follows a turn's end for a session that resumes: the move a
    /// `goAway` asked for, or a handle, then perhaps the connection's end.
    pub(super) fn after_turn(&mut self) {
        let Some(connections) = &mut self.connections else {
            return;
        };
        if connections.moving {
            let handle = self.new_handle();
            self.push(Action::Reconnect(Reconnect {
                handle: Some(handle),
            }));
            self.reconnected();
            return;
        }
        if connections.draw.chance(HANDLE_AFTER_TURN) {
            self.new_handle();
        }
        if self.fires(FaultKind::Reconnect) {
            self.end_connection();
        }
    }

    /// Whether the connection ends while the call about to be made runs.
    pub(super) fn cuts_mid_call(&mut self) -> bool {
        self.connections.is_some() && self.fires(FaultKind::Reconnect)
    }

    /// The connection ends while `tool`'s call runs (or about when it
    /// finishes), and the session resumes.
    pub(super) fn cut_mid_call(&mut self, tool: &str) {
        let latency = self.latency_of(tool);
        let Some(connections) = &mut self.connections else {
            return;
        };
        // Without a replay, a handle that does not cover the call's turn
        // would lose it: such a session's connection ends after a fresh
        // handle instead (`end_connection`).
        if connections.draw.chance(NOT_RESUMABLE) && connections.transparent {
            self.push(Action::ResumptionUpdate(ResumptionUpdate {
                handle: None,
                resumable: false,
                transparent: false,
                behind: 0,
            }));
        }
        let Some(connections) = &mut self.connections else {
            return;
        };
        let hi = latency.end().as_millis() as u64;
        let ms = connections.draw.range(0..=hi);
        if ms > 0 {
            self.push(Action::PauseMs(ms));
        }
        self.end_connection();
    }

    /// The handle the session resumes when its connection ends now: the
    /// one it holds, or a fresh one when it holds none or does not replay
    /// (the server gives it first).
    pub(super) fn held_handle(&mut self) -> String {
        let held = self
            .connections
            .as_ref()
            .filter(|c| c.transparent)
            .and_then(|c| c.latest.clone());
        match held {
            Some(handle) => handle,
            None => self.new_handle(),
        }
    }

    /// Whether the session resumes without replaying what the server had
    /// not consumed.
    pub(super) fn resumes_opaquely(&self) -> bool {
        self.connections.as_ref().is_some_and(|c| !c.transparent)
    }

    /// The session moves to a new connection now, resuming `handle` (a
    /// `goAway` that leaves no time to finish the turn).
    pub(super) fn moved_at_once(&mut self, handle: String) {
        self.push(Action::Reconnect(Reconnect {
            handle: Some(handle),
        }));
        if let Some(connections) = &mut self.connections {
            let ms = connections.draw.range(RESUMED_PAUSE_MS);
            self.push(Action::PauseMs(ms));
        }
        self.reconnected();
    }

    /// A resumable handle from the server (a distinctive string), which the
    /// session keeps as its latest.
    fn new_handle(&mut self) -> String {
        let Some(connections) = &mut self.connections else {
            return String::new();
        };
        connections.handles += 1;
        let handle = format!(
            "handle-{}-{}-{:08x}",
            connections.seed,
            connections.handles,
            connections.draw.next_u64() & 0xffff_ffff
        );
        connections.latest = Some(handle.clone());
        let transparent = connections.transparent;
        let behind = if transparent && self.fires(FaultKind::HandleLag) {
            self.fault_stream(FaultKind::HandleLag).range(1..=2) as usize
        } else {
            0
        };
        self.push(Action::ResumptionUpdate(ResumptionUpdate {
            handle: Some(handle.clone()),
            resumable: true,
            transparent,
            behind,
        }));
        handle
    }

    /// The connection ends (a close or an abrupt drop) and the next one
    /// resumes the latest handle, or finds it stale and starts fresh.
    fn end_connection(&mut self) {
        let Some(connections) = &mut self.connections else {
            return;
        };
        let end = match connections.draw.below(10) {
            0..=3 => CloseKind::Internal,
            4..=6 => CloseKind::Abort,
            _ => CloseKind::Normal,
        };
        let stale = connections.draw.chance(STALE_HANDLE);
        // (drawn whatever the policy, so a seed's other draws stay put)
        let refused = connections.refusals.chance(SETUP_REFUSED) && !stale && connections.retries;
        // Without a handle a session does not reconnect: the server gives
        // one first.
        let handle = self.held_handle();
        self.push(ending(end));
        self.push(Action::Reconnect(Reconnect {
            handle: Some(handle.clone()),
        }));
        if refused {
            // A passing fault: the handle is still good, and the session
            // retries it after its backoff.
            if let Action::Close(close) = ending(CloseKind::Internal) {
                self.push(Action::RejectSetup(close));
            }
            self.push(Action::Reconnect(Reconnect {
                handle: Some(handle),
            }));
        }
        // The user may type while the session is between connections: the
        // session queues it and sends it once it is back (not into a
        // fresh session, which would drop it: not with a stale handle).
        // Sometimes two or three messages: a queue that keeps only one,
        // or sends one twice, shows only with more than one in it. One in
        // four is a chunk of audio: the microphone streams on while the
        // connection is down, and the session queues audio as it queues
        // text.
        if !stale && self.fires(FaultKind::Typing) {
            let messages = 1 + self.fault_stream(FaultKind::Typing).below(3);
            for _ in 0..messages {
                let spoken = self
                    .connections
                    .as_mut()
                    .is_some_and(|c| c.spoken.chance(0.25));
                if spoken {
                    self.push(Action::Expect("realtimeInput.audio".to_string()));
                } else {
                    self.user_types();
                }
            }
        }
        if stale {
            if let Action::Close(close) = ending(CloseKind::SessionNotFound) {
                self.push(Action::RejectSetup(close));
            }
            self.push(Action::Reconnect(Reconnect { handle: None }));
            if let Some(connections) = &mut self.connections {
                connections.latest = None;
            }
        }
        // The session replays what the server had not consumed as soon as
        // it is back; a `goAway` move right after could overtake it: the
        // player reads each connection on its own, so it takes content
        // arriving on a connection the client has left for a lost
        // message. The conversation goes on once the replay is in.
        if let Some(connections) = &mut self.connections {
            let ms = connections.draw.range(RESUMED_PAUSE_MS);
            self.push(Action::PauseMs(ms));
        }
        self.reconnected();
    }

    /// A new connection: its calls start here, and it may get a `goAway`
    /// of its own.
    fn reconnected(&mut self) {
        let first = self.issued.len();
        let restart = self.connections.is_some() && self.fires(FaultKind::IdRestart);
        if let Some(connections) = &mut self.connections {
            connections.moving = false;
            connections.first_call = first;
            connections.restarted_ids = restart;
        }
        self.went_away = false;
    }
}
