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
//!   moves, make-before-break). In memory, about one move in six is refused
//!   (1011 or 1013 on the new connection's setup): the session stays on the old
//!   connection and sends there what it held for the move, until the old
//!   connection ends at the notice's deadline and the session reconnects,
//!   its first try already spent on the move (one time in four, that
//!   reconnect is refused in passing on every attempt left but the
//!   last). With `typing` on, the user
//!   types (or speaks) as the `goAway` comes, and the session must hold it
//!   for the move and send it where the move leaves it (after a refused
//!   move, only for a session that replays). A `goAway` that comes before
//!   the server gave any handle ends the conversation one time in two: the
//!   session has nothing to resume, stays, and ends with the connection
//!   when the server closes it (1000) at the notice's deadline. About one
//!   turn's end in ten, on a connection that had no notice yet, brings a
//!   `goAway` between turns (2 to 60 s left), and so does about one fresh
//!   start in ten, before anything else: a session whose handle came
//!   after the turn moves at once with it; one that holds none since its
//!   last turn, or none at all since a fresh start, waits and moves with
//!   the handle the server gives within 200 ms (with `typing` on, the user
//!   of a session that does not replay may type as it moves);
//! * `reconnect`: at a turn's end or while a call runs, a close (1011 or
//!   1000) or an abrupt drop, then the next connection must resume the
//!   latest handle; one time in five the handle has gone stale: that setup
//!   is refused with 1008 "session not found", and the connection after it
//!   must open a fresh session. Otherwise, about one time in seven, the
//!   setup is refused in passing (1011) and the session must resume the
//!   same handle on its next attempt; one such time in four it is refused
//!   on every attempt the policy allows but the last, which a session
//!   that miscounts its attempts does not reach. A short pause follows, so a transparent
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
use crate::testing::{Action, CloseAction, Reconnect, ResumptionUpdate};

/// How often a turn's end brings a new handle.
const HANDLE_AFTER_TURN: f64 = 0.7;

/// How often a resume finds its handle stale.
const STALE_HANDLE: f64 = 0.2;

/// How often a resume's setup is refused for a passing fault (1011), the
/// handle still good: the session must try the same handle again.
const SETUP_REFUSED: f64 = 0.15;

/// How often a `goAway` move's new connection is refused, for a policy
/// that tries more than once (the move was the first try).
const MOVE_REFUSED: f64 = 1.0 / 6.0;

/// How often a resume refused in passing is refused again and again, up
/// to the last attempt the policy allows: a session that miscounts its
/// attempts (carries some over from an earlier reconnect or a refused
/// move) gives up before that last attempt, which only a run that spends
/// the whole budget shows.
const WHOLE_BUDGET: f64 = 0.25;

/// How a move is refused: a passing fault, the handle still good.
const MOVE_REFUSALS: [(u16, &str); 2] = [
    (1011, "Internal error encountered."),
    (1013, "The service is currently unavailable."),
];

/// How long a connection whose move was refused while calls ran may
/// linger before its `goAway` deadline ends it (ms), when the agent's
/// slowest tool takes less.
const LINGER_MS: u64 = 600;

/// How often a turn's end brings a `goAway` before the next turn, on a
/// connection that had no notice yet (with `go-away` on, for a session
/// that has had a handle).
const BETWEEN_TURNS: f64 = 0.1;

/// How long a `goAway` between turns leaves the connection (ms): at least
/// long enough that the handle the server gives after it (within 200 ms)
/// surely comes before half of it.
const BETWEEN_TURNS_LEFT_MS: std::ops::RangeInclusive<u64> = 2_000..=60_000;

/// How often a `goAway` that comes before any handle (it can only in a
/// session's first turns) ends the conversation with its connection.
const UNHELD_ENDS: f64 = 0.5;

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
    /// Attempts per reconnect: the most a reconnect may be refused in
    /// passing is one fewer (with one, never).
    attempts: u32,
    draw: Stream,
    /// Whether a resume's setup is refused in passing: a stream of its own,
    /// so the other draws stay what they were before it joined.
    refusals: Stream,
    /// Whether what the user sends while the session reconnects is a
    /// chunk of audio (the microphone streams on) rather than a line.
    spoken: Stream,
    /// Whether a `goAway` move is refused, how, and what the user types
    /// while the session moves: a stream of its own, so the other draws
    /// stay what they were before refused moves joined.
    moves: Stream,
    /// Whether a refusal in passing spends the whole budget: a stream of
    /// its own, so the other draws stay what they were before it joined.
    budget: Stream,
    /// Whether a `goAway` before the first handle ends the conversation
    /// (and how long the connection lasts): a stream of its own, so the
    /// other draws stay what they were before it joined.
    unheld: Stream,
    /// Whether a turn's end brings a `goAway` before the next turn, and
    /// its time: a stream of its own, so the other draws stay what they
    /// were before it joined.
    between: Stream,
    /// The session held a handle when the `goAway` came: what the user
    /// types from then on waits for the move.
    held_at_go_away: bool,
    /// Whether the server may refuse a move: for a policy that tries more
    /// than once (the move was the first try), and in memory only. Over
    /// the simulated network the session also reconnects where the script
    /// does not say (a connection the network killed), and a refusal meant
    /// for the move could meet that connection instead; and the server
    /// ends a connection at its `goAway` deadline, which could cut short
    /// what the script plays on it after the refusal.
    refuses_moves: bool,
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
    pub fn new(seed: Seed, policy: &Resumption, networked: bool) -> Self {
        Connections {
            seed,
            transparent: policy.is_transparent(),
            attempts: policy.max_attempts(),
            draw: Stream::new(seed, "soak/script/connections"),
            refusals: Stream::new(seed, "soak/script/connections/refused"),
            spoken: Stream::new(seed, "soak/script/connections/spoken"),
            moves: Stream::new(seed, "soak/script/connections/moves"),
            budget: Stream::new(seed, "soak/script/connections/budget"),
            unheld: Stream::new(seed, "soak/script/connections/unheld"),
            between: Stream::new(seed, "soak/script/connections/between"),
            held_at_go_away: false,
            refuses_moves: policy.max_attempts() > 1 && !networked,
            handles: 0,
            latest: None,
            moving: false,
            first_call: 0,
            restarted_ids: false,
        }
    }

    /// How many times in a row a resume is refused in passing: `usually`,
    /// or (one time in four) on every attempt the policy leaves but the
    /// last, `spent` of them already spent (the move that was refused).
    fn refused_in_passing(&mut self, spent: u32, usually: u32) -> u32 {
        let left = self.attempts.saturating_sub(spent + 1);
        if self.budget.chance(WHOLE_BUDGET) {
            left
        } else {
            usually.min(left)
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
            let refused = connections.moves.chance(MOVE_REFUSED) && connections.refuses_moves;
            let handle = self.new_handle();
            self.push(Action::Reconnect(Reconnect {
                handle: Some(handle.clone()),
            }));
            if refused {
                self.move_refused(handle, None);
            } else {
                // On the new connection, right after the handle it resumes:
                // nothing to lose, replayed or not.
                self.typed_while_moving(false);
            }
            self.reconnected();
            return;
        }
        if connections.draw.chance(HANDLE_AFTER_TURN) {
            self.new_handle();
        }
        if self.goes_away_between_turns() {
            self.go_away_between_turns();
            return;
        }
        if self.fires(FaultKind::Reconnect) {
            self.end_connection();
        }
    }

    /// Whether the session's latest handle came after the last content it
    /// was sent (a model turn, an output transcription, a tool call) and
    /// since its last fresh start: resuming it loses nothing, and a
    /// `goAway` between turns moves at once with it.
    fn handle_is_fresh(&self) -> bool {
        let content = |m: &serde_json::Value| -> bool {
            [
                "/serverContent/modelTurn",
                "/serverContent/outputTranscription",
                "/toolCall",
            ]
            .iter()
            .any(|at| m.pointer(at).is_some_and(|v| !v.is_null()))
        };
        for action in self.actions.iter().rev() {
            match action {
                Action::ResumptionUpdate(ResumptionUpdate {
                    handle: Some(_),
                    resumable: true,
                    ..
                }) => return true,
                Action::Call(_)
                | Action::CallMany(_)
                | Action::Reconnect(Reconnect { handle: None }) => {
                    return false;
                }
                Action::Send(message) if content(message) => return false,
                _ => {}
            }
        }
        false
    }

    /// Whether the turn that just ended brings a `goAway` before the next
    /// (see [`BETWEEN_TURNS`]).
    fn goes_away_between_turns(&mut self) -> bool {
        let on = self.faults.is_on(FaultKind::GoAway) && !self.went_away;
        self.connections.as_mut().is_some_and(|c| {
            // Drawn whatever the rest says, so the stream's draws stay put.
            let draw = c.between.chance(BETWEEN_TURNS);
            draw && on && c.handles > 0
        })
    }

    /// A `goAway` between turns. With a handle that came after the last
    /// content ([`handle_is_fresh`](Self::handle_is_fresh)), the session
    /// moves at once, resuming it; holding none since then (a stale one,
    /// or none since a fresh start), it waits for the next, which the
    /// server gives a moment later, and moves with that.
    fn go_away_between_turns(&mut self) {
        let fresh = self.handle_is_fresh();
        let Some(connections) = &mut self.connections else {
            return;
        };
        self.went_away = true;
        let left = connections.between.range(BETWEEN_TURNS_LEFT_MS);
        let wait = connections.between.range(0..=200);
        let latest = connections.latest.clone().filter(|_| fresh);
        let left = crate::wire::format_duration(std::time::Duration::from_millis(left));
        self.send(serde_json::json!({ "goAway": { "timeLeft": left } }));
        let handle = match latest {
            Some(handle) => handle,
            None => {
                if wait > 0 {
                    self.push(Action::PauseMs(wait));
                }
                self.new_handle()
            }
        };
        let moved = self.moved_at_once(handle, None);
        // The user types as the session moves: a session that does not
        // replay must hold it for the new connection.
        if moved && self.resumes_opaquely() && self.fires(FaultKind::Typing) {
            self.user_types();
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

    /// Whether a `goAway` coming now, before the server gave any handle,
    /// ends the conversation: about one time in two that it can. The
    /// session has nothing to resume; it stays until the server ends the
    /// connection at the notice's deadline, and ends with it.
    pub(super) fn ends_before_any_handle(&mut self) -> bool {
        self.connections
            .as_mut()
            .is_some_and(|c| c.handles == 0 && c.unheld.chance(UNHELD_ENDS))
    }

    /// The server ends the connection at the deadline of a notice with
    /// `time_left_ms` (or a little before: a close 1000), and with it the
    /// conversation: the script ends here, whatever the turn would have
    /// said after.
    pub(super) fn last_connection_ends(&mut self, time_left_ms: u64) {
        if let Some(connections) = &mut self.connections {
            let lasts = connections.unheld.range(time_left_ms / 2..=time_left_ms);
            self.push(Action::PauseMs(lasts));
        }
        self.push(ending(CloseKind::Normal));
        self.over_at = Some(self.actions_len());
    }

    /// Whether the session resumes without replaying what the server had
    /// not consumed.
    pub(super) fn resumes_opaquely(&self) -> bool {
        self.connections.as_ref().is_some_and(|c| !c.transparent)
    }

    /// The session moves to a new connection now, resuming `handle` (a
    /// `goAway` that leaves no time to finish the turn, or came while
    /// calls run: then `mid_call` holds the notice's time left, in ms).
    /// `false` when the server refused the move (the session stayed until
    /// its connection ended, then reconnected).
    pub(super) fn moved_at_once(&mut self, handle: String, mid_call: Option<u64>) -> bool {
        let refused = self.connections.as_mut().is_some_and(|c| {
            c.held_at_go_away = true;
            c.moves.chance(MOVE_REFUSED) && c.refuses_moves
        });
        self.push(Action::Reconnect(Reconnect {
            handle: Some(handle.clone()),
        }));
        if refused {
            self.move_refused(handle, mid_call);
        } else if let Some(connections) = &mut self.connections {
            let ms = connections.draw.range(RESUMED_PAUSE_MS);
            self.push(Action::PauseMs(ms));
        }
        self.reconnected();
        !refused
    }

    /// The session is moving after a `goAway`: it holds what the user
    /// types from now on for the new connection, if it has a handle to
    /// move with.
    pub(super) fn moving_after_go_away(&mut self) {
        if let Some(connections) = &mut self.connections {
            connections.moving = true;
            connections.held_at_go_away = connections.latest.is_some();
        }
    }

    /// The server refuses the move's new connection (a passing fault): the
    /// session stays on the old one, and what it held for the move goes
    /// there. The old connection ends at the notice's deadline (a close
    /// 1000); the session reconnects, resuming `handle`. With calls
    /// running (`mid_call`: the notice's time left, in ms), it lingers a
    /// while first, so some finish on the old connection, whose calls the
    /// session still answers.
    fn move_refused(&mut self, handle: String, mid_call: Option<u64>) {
        let Some(connections) = &mut self.connections else {
            return;
        };
        let (code, reason) = *connections
            .moves
            .pick(&MOVE_REFUSALS)
            .unwrap_or(&MOVE_REFUSALS[0]);
        self.push(Action::RejectSetup(CloseAction {
            code,
            reason: reason.to_string(),
        }));
        self.typed_while_moving(true);
        if let Some(time_left) = mid_call {
            // Up to the slowest tool's longest run: some calls finish
            // there. But never past the notice's deadline, which the real
            // service keeps whatever runs: the session moves within half
            // the time left, so the other half is what remains.
            let slowest = self.repertoire.tools.iter().map(|t| *t.latency.end()).max();
            let most = slowest
                .map_or(LINGER_MS, |d| d.as_millis() as u64)
                .max(LINGER_MS)
                .min(time_left / 2);
            if let Some(connections) = &mut self.connections {
                let ms = connections.moves.range(0..=most);
                self.push(Action::PauseMs(ms));
            }
        }
        // The notice's time is up (the script, not the player, ends it).
        self.push(ending(CloseKind::Normal));
        self.push(Action::Reconnect(Reconnect {
            handle: Some(handle.clone()),
        }));
        // The move was the reconnect's first try.
        let times = self
            .connections
            .as_mut()
            .map_or(0, |c| c.refused_in_passing(1, 0));
        self.refuse_in_passing(&handle, times);
        if let Some(connections) = &mut self.connections {
            let ms = connections.moves.range(RESUMED_PAUSE_MS);
            self.push(Action::PauseMs(ms));
        }
    }

    /// The resume of `handle` just asked for is refused in passing
    /// `times` times in a row, the session trying again after each.
    fn refuse_in_passing(&mut self, handle: &str, times: u32) {
        for _ in 0..times {
            if let Action::Close(close) = ending(CloseKind::Internal) {
                self.push(Action::RejectSetup(close));
            }
            self.push(Action::Reconnect(Reconnect {
                handle: Some(handle.to_string()),
            }));
        }
    }

    /// What the user sent as the `goAway` came, which the session held for
    /// its move (`typing` on, and the session holding a handle to move
    /// with): none to two messages, one in four a chunk of audio, the
    /// script waiting for them where the move leaves the session. After a
    /// refused move (`stayed`), only for a session that replays: one that
    /// does not would lose them when it resumes the handle the move was
    /// for, which came before them.
    fn typed_while_moving(&mut self, stayed: bool) {
        let typing = self.faults.is_on(FaultKind::Typing);
        let Some(connections) = &mut self.connections else {
            return;
        };
        if !typing || !connections.held_at_go_away || (stayed && !connections.transparent) {
            return;
        }
        let messages = connections.moves.below(3);
        for _ in 0..messages {
            let spoken = self
                .connections
                .as_mut()
                .is_some_and(|c| c.moves.chance(0.25));
            self.user_sends(spoken);
        }
    }

    /// What the user sends while the session is away from the server: a
    /// chunk of audio when `spoken` (the microphone streams on), else a
    /// line.
    fn user_sends(&mut self, spoken: bool) {
        if spoken {
            self.push(Action::Expect("realtimeInput.audio".to_string()));
        } else {
            self.user_types();
        }
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
        let refused =
            connections.refusals.chance(SETUP_REFUSED) && !stale && connections.attempts > 1;
        // Without a handle a session does not reconnect: the server gives
        // one first.
        let handle = self.held_handle();
        self.push(ending(end));
        self.push(Action::Reconnect(Reconnect {
            handle: Some(handle.clone()),
        }));
        if refused {
            // A passing fault: the handle is still good, and the session
            // retries it after its backoff (as often as it takes).
            let times = self
                .connections
                .as_mut()
                .map_or(1, |c| c.refused_in_passing(0, 1));
            self.refuse_in_passing(&handle, times);
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
                self.user_sends(spoken);
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
        // A fresh session may get its notice before anything else: it
        // holds no handle yet, and waits for the first.
        if stale && self.goes_away_between_turns() {
            self.go_away_between_turns();
        }
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
