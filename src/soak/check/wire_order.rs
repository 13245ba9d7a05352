//! The `wire-order` invariant: the stored log is what the frames the
//! script actually sent imply, in wire order.
//!
//! The expected log is worked out from the frames that reached the
//! session, through the reference model of aggregation ([`super::model`],
//! which shares no code with the session's decoder or aggregator), and
//! the session's placement rule:
//!
//! * `connected` first;
//! * the server's stored events in frame order, and within a frame in
//!   aggregation order;
//! * right after a `tool_call` event, for each of its calls in order: the
//!   refusal (`tool_denied`) if the flow refused it (the journal says
//!   which), then its answer. Every call is answered unless the script
//!   cancelled it, its connection ended first, or its id came before on
//!   the same connection (the first call wins): an answer missing where
//!   the script and the tool runs say one is owed fails the check (a call
//!   with no id is neither run nor answered: no answer could name it). What an
//!   answer says is `answered-once`'s business; where it stands is this
//!   one's;
//! * right after a `turn_complete`, the extractions of that turn, if any;
//! * between two connections, the session's move (`reconnecting`,
//!   `resumption_failed`, `resumed`): after every frame of the old one,
//!   before any of the new one; a move after `goAway` may start earlier,
//!   anywhere after the `go_away` (the old connection goes on until the
//!   new one is set up); reconnect attempts that never reached a new
//!   connection stand at the end;
//! * `disconnected` last; after a frame that holds an in-band `error` and
//!   nothing else, a fatal one (no close code, class `fatal`), and no frame
//!   read after that one.
//!
//! Each connection's frames are aggregated afresh (the session drops
//! pending text when a connection ends), except across a `goAway` move,
//! where the session carries its aggregation on.
//!
//! Anything else in the log (a warning, say, which is a notice and never
//! stored) is a mismatch.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::{Arc, LazyLock};

use memchr::memmem::Finder;

use serde_json::Value;

use crate::session::LiveEvent;
use crate::soak::check::calls_by_connection::{self, CallKey};
use crate::soak::check::model::{Expected, FrameModel, Model};
use crate::soak::check::telemetry::LAG;
use crate::soak::run::record::RunRecord;

/// What the log must hold at one place.
#[derive(Debug, PartialEq)]
enum Slot {
    /// `connected`, with the id the first `setupComplete` carried.
    Connected(Option<String>),
    /// A server event, as the model predicts it.
    Server(Expected),
    /// The refusal of this call.
    Denial(String),
    /// The answer to this call; `owed`: it must be there.
    Answer { id: String, owed: bool },
    /// `disconnected`; `fatal`: the one the server's in-band error ends
    /// the session with.
    Disconnected { fatal: bool },
    /// Any number of `extracted` events (the turn's extractions).
    Extractions,
    /// The session's move to its next connection: the log's `n`-th move
    /// (0-based) stands here, unless a `goAway` move stood earlier.
    Moved(usize),
    /// Reconnect attempts that reached no new connection, if any.
    Attempts,
}

impl Slot {
    /// Whether `event` is what this slot holds (slots that hold a run of
    /// events or none are handled where they are met).
    fn is(&self, event: &LiveEvent) -> bool {
        match (self, event) {
            (Slot::Connected(id), LiveEvent::Connected { session_id }) => id == session_id,
            (Slot::Disconnected { fatal: false }, LiveEvent::Disconnected { .. }) => true,
            (
                Slot::Disconnected { fatal: true },
                LiveEvent::Disconnected {
                    code: None,
                    class: Some(class),
                    ..
                },
            ) => class == "fatal",
            (Slot::Server(expected), event) => expected.is(event),
            (Slot::Denial(id), LiveEvent::ToolDenied { id: denied, .. }) => id == denied,
            _ => false,
        }
    }
}

impl fmt::Display for Slot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Slot::Connected(None) => write!(f, "`connected` (no session id)"),
            Slot::Connected(Some(id)) => write!(f, "`connected` (session id {id:?})"),
            Slot::Disconnected { fatal: false } => write!(f, "`disconnected`"),
            Slot::Disconnected { fatal: true } => {
                write!(
                    f,
                    "a fatal `disconnected` (no close code: the server's error)"
                )
            }
            Slot::Server(expected) => write!(f, "{expected}"),
            Slot::Denial(id) => write!(f, "the refusal of {id}"),
            Slot::Answer { id, .. } => write!(f, "the answer to {id}"),
            Slot::Extractions => write!(f, "the turn's extractions"),
            Slot::Moved(n) => write!(f, "the move to connection #{}", n + 2),
            Slot::Attempts => write!(f, "reconnect attempts"),
        }
    }
}

/// Whether the session makes `event` itself when it changes connections.
fn is_move(event: &LiveEvent) -> bool {
    matches!(
        event,
        LiveEvent::Reconnecting { .. }
            | LiveEvent::Resumed { .. }
            | LiveEvent::ResumptionFailed { .. }
    )
}

/// A run of the session's connection events in the log: a move that
/// ends with `resumed`, or attempts that ended without one.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Move {
    /// Where it starts and ends (exclusive) in the log.
    start: usize,
    end: usize,
    /// Its last attempt was the make-before-break move a `goAway` asked
    /// for.
    go_away: bool,
    /// It reached a new connection (`resumed`).
    resumed: bool,
}

/// The moves in a stored log, in order.
fn moves(log: &[LiveEvent]) -> Vec<Move> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < log.len() {
        if !is_move(&log[at]) {
            at += 1;
            continue;
        }
        let start = at;
        while at < log.len() && is_move(&log[at]) {
            let resumed = matches!(log[at], LiveEvent::Resumed { .. });
            at += 1;
            if resumed {
                break;
            }
        }
        out.push(Move {
            start,
            end: at,
            // The attempt that got there was the `goAway` move itself (a
            // move that failed goes on as an ordinary reconnect).
            go_away: log[start..at]
                .iter()
                .rev()
                .find(|e| matches!(e, LiveEvent::Reconnecting { .. }))
                .is_some_and(
                    |e| matches!(e, LiveEvent::Reconnecting { cause, .. } if cause == "goAway"),
                ),
            resumed: matches!(log[at - 1], LiveEvent::Resumed { .. }),
        });
    }
    out
}

/// The frames that reached the session on one connection.
#[derive(Debug)]
pub(crate) struct Connection {
    /// What each yields, after the connection's handshake, as the
    /// reference model predicts it.
    pub frames: Vec<FrameModel>,
    /// The session aggregated them afresh: it dropped what the connection
    /// before left pending (it carries it on across a `goAway` move).
    pub afresh: bool,
}

/// What each delivered frame yields after its connection's handshake,
/// connection by connection: worked out once per run, for every check
/// that reads it.
pub(crate) fn connections(run: &RunRecord) -> &[Connection] {
    run.modelled.get_or_init(|| Arc::new(model(run)))
}

fn model(run: &RunRecord) -> Vec<Connection> {
    let go_away_moves: Vec<bool> = moves(&run.session_log)
        .iter()
        .filter(|m| m.resumed)
        .map(|m| m.go_away)
        .collect();
    let mut model = Model::default();
    let mut out = vec![Connection {
        frames: Vec::new(),
        afresh: true,
    }];
    for (i, frame) in run.frames_read().iter().enumerate() {
        if is_setup_complete(frame.payload().unwrap_or_default()) {
            if i > 0 {
                let afresh = !go_away_moves.get(out.len() - 1).copied().unwrap_or(false);
                if afresh {
                    model = Model::default();
                }
                out.push(Connection {
                    frames: Vec::new(),
                    afresh,
                });
            }
            continue;
        }
        if let Some(current) = out.last_mut() {
            current.frames.push(model.frame(frame));
        }
    }
    out
}

/// The `sessionId` the first `setupComplete` that reached the session
/// carried, if any: what its `connected` event must say.
fn first_session_id(run: &RunRecord) -> Option<String> {
    let first = run
        .frames_read()
        .iter()
        .filter_map(|frame| frame.payload())
        .find(|bytes| is_setup_complete(bytes))?;
    let message: Value = serde_json::from_slice(first).ok()?;
    message
        .get("setupComplete")?
        .get("sessionId")?
        .as_str()
        .map(String::from)
}

/// Whether a frame is a `setupComplete`: the start of a connection.
pub(crate) fn is_setup_complete(bytes: &[u8]) -> bool {
    // Most frames are not: look for the key before parsing.
    mentions(bytes, &SETUP_COMPLETE)
        && serde_json::from_slice::<Value>(bytes)
            .is_ok_and(|m| m.get("setupComplete").is_some_and(|v| !v.is_null()))
}

/// A word the checks look for in every frame, its searcher built once.
pub(crate) type Word = LazyLock<Finder<'static>>;

pub(crate) static SETUP_COMPLETE: Word = LazyLock::new(|| Finder::new(b"setupComplete"));
pub(crate) static TOOL_CALL: Word = LazyLock::new(|| Finder::new(b"toolCall"));
pub(crate) static RESUMPTION_UPDATE: Word =
    LazyLock::new(|| Finder::new(b"sessionResumptionUpdate"));

/// Whether `bytes` hold `word` anywhere.
pub(crate) fn mentions(bytes: &[u8], word: &Word) -> bool {
    word.find(bytes).is_some()
}

/// What the fast lane must deliver for these frames, in order.
pub(crate) fn fast_lane<'a>(frames: impl IntoIterator<Item = &'a FrameModel>) -> Vec<&'a Expected> {
    frames
        .into_iter()
        .flat_map(|f| &f.events)
        .filter(|e| e.fast())
        .collect()
}

fn expected(run: &RunRecord) -> Vec<Slot> {
    // The flow's refusals, from the journal (which `journal-replays-clean`
    // checks against the spec), each on its connection.
    let refused = calls_by_connection::journaled_refusals(run);
    // When the session's last connection ended, if it did before the soak
    // hung up: at the first move after the last `resumed` (attempts that
    // never reached a new connection), or else at `disconnected`.
    let ended_at = run
        .settling
        .ended
        .then(|| last_connection_end(run))
        .flatten();
    let mut slots = vec![Slot::Connected(first_session_id(run))];
    for (n, connection) in connections(run).iter().enumerate() {
        if n > 0 {
            slots.push(Slot::Moved(n - 1));
        }
        // Ids belong to their connection: the first call with an id wins.
        let mut seen: BTreeSet<String> = BTreeSet::new();
        for event in connection.frames.iter().flat_map(|f| &f.events) {
            if !event.stored() {
                continue;
            }
            let calls: Vec<String> = match &event {
                Expected::Calls(calls) => calls.iter().map(|(id, _, _)| id.clone()).collect(),
                _ => Vec::new(),
            };
            let turn_ended = matches!(event, Expected::TurnEnd { .. });
            slots.push(Slot::Server(event.clone()));
            for id in calls {
                // A call with no id is not run (no answer could be matched
                // to it): nothing of it follows; the first call with an id
                // wins.
                if id.is_empty() || !seen.insert(id.clone()) {
                    continue;
                }
                let call = (n + 1, id);
                let denied = refused.contains_key(&call);
                if denied {
                    slots.push(Slot::Denial(call.1.clone()));
                }
                let owed = owed(run, &call, denied, ended_at);
                slots.push(Slot::Answer { id: call.1, owed });
            }
            if turn_ended {
                slots.push(Slot::Extractions);
            }
        }
    }
    slots.push(Slot::Attempts);
    slots.push(Slot::Disconnected {
        fatal: server_gave_up(run),
    });
    slots
}

/// Whether a frame that reached the session was an in-band error and
/// nothing else: the server giving up, which ends the session.
pub(crate) fn server_gave_up(run: &RunRecord) -> bool {
    connections(run)
        .iter()
        .flat_map(|c| &c.frames)
        .any(|f| f.ends_session)
}

/// The frames the session read after an in-band error that ended it (the
/// error's number among the frames that reached the session, counting
/// from 1 at the first `setupComplete`, and how many came after), if it
/// read any.
fn read_after_error(run: &RunRecord) -> Option<(usize, usize)> {
    let connections = connections(run);
    // Each connection after the first began with a `setupComplete`, which
    // its frames leave out.
    let mut index = 0;
    for (n, connection) in connections.iter().enumerate() {
        index += 1;
        if let Some(at) = connection.frames.iter().position(|f| f.ends_session) {
            let later: usize = connections[n + 1..]
                .iter()
                .map(|c| c.frames.len() + 1)
                .sum();
            let after = connection.frames.len() - at - 1 + later;
            return (after > 0).then_some((index + at + 1, after));
        }
        index += connection.frames.len();
    }
    None
}

/// When the last connection ended, read from the session's events: the
/// first `reconnecting` or `resumption_failed` after the last `resumed`
/// (the attempts that followed never reached a connection), or else the
/// `disconnected`. A tool that finished after this had no connection to
/// answer on, whatever happened to the session afterwards.
fn last_connection_end(run: &RunRecord) -> Option<std::time::Duration> {
    let after_last_resume = run
        .events
        .iter()
        .rposition(|e| matches!(e.event, LiveEvent::Resumed { .. }))
        .map_or(0, |n| n + 1);
    run.events[after_last_resume..]
        .iter()
        .find(|e| {
            matches!(
                e.event,
                LiveEvent::Reconnecting { .. }
                    | LiveEvent::ResumptionFailed { .. }
                    | LiveEvent::Disconnected { .. }
            )
        })
        .map(|e| e.at)
}

/// Whether `call` is owed an answer: the script did not cancel it, its
/// connection is the last (a connection left behind leaves its calls
/// unanswered, call ids belonging to their connection) and did not end
/// under it (ended for good before its tool finished and the session
/// took its outcome in), so the session had its outcome while the call
/// was still its own to answer.
fn owed(
    run: &RunRecord,
    call: &CallKey,
    refused: bool,
    ended_at: Option<std::time::Duration>,
) -> bool {
    let (connection, id) = (call.0, call.1.as_str());
    if connection < calls_by_connection::server_calls(run).connections {
        return false;
    }
    // The script's view of an id is its last issue's, which is this one.
    if run.calls.cancelled.contains(id) || run.calls.abandoned.contains(id) {
        return false;
    }
    let Some(ended) = ended_at else {
        return true;
    };
    // A refused call is answered at once, with its refusal; a tool's
    // answer is owed if it finished in time to be taken in before the end
    // (within `LAG`, its outcome may still be on its way to the control
    // lane when the end comes: the user hanging up races it). A call whose
    // tool never started had its connection end first (the close came
    // with the call, before the session dispatched it).
    let mut runs = calls_by_connection::runs_of(run, call).peekable();
    if runs.peek().is_none() {
        return refused;
    }
    runs.any(|e| e.finished.is_some_and(|at| at + LAG <= ended))
}

/// Checks the run's stored log against the frames it got.
pub(crate) fn check(run: &RunRecord) -> Result<(), String> {
    if let Some((at, after)) = read_after_error(run) {
        return Err(format!(
            "server frame #{at} (counting from the first setupComplete) holds an in-band \
             error and nothing else, which ends the session, yet the session read {after} \
             more frame(s) after it"
        ));
    }
    compare(&expected(run), &run.session_log)
}

fn compare(expected: &[Slot], log: &[LiveEvent]) -> Result<(), String> {
    let moves = moves(log);
    let moved = |n: usize| moves.iter().filter(|m| m.resumed).nth(n).copied();
    let mut at = 0;
    // The moves that reached a connection, taken so far.
    let mut taken = 0;
    // A `go_away` came on this connection: its move may stand from here.
    let mut may_move = false;
    let unexpected = |at: usize, wanted: &str| {
        format!(
            "stored event #{at} is `{}`, but the frames put {wanted} there",
            log[at]
        )
    };
    for slot in expected {
        // A move after `goAway` (or a move that failed) stands wherever
        // it started, after the `go_away`.
        while may_move
            && !matches!(slot, Slot::Moved(_) | Slot::Attempts)
            && let Some(early) = moves.iter().find(|m| m.start == at && m.go_away)
        {
            at = early.end;
            if early.resumed {
                taken += 1;
                may_move = false;
            }
        }
        match slot {
            Slot::Extractions => {
                while log.get(at).is_some_and(|e| e.kind() == "extracted") {
                    at += 1;
                }
            }
            Slot::Moved(n) if *n < taken => {}
            Slot::Moved(n) => match (moved(*n), log.get(at)) {
                (Some(next), _) if next.start == at => {
                    at = next.end;
                    taken += 1;
                    may_move = false;
                }
                (_, Some(_)) => {
                    return Err(unexpected(
                        at,
                        &format!(
                            "the move to connection #{} (`reconnecting` … `resumed`)",
                            n + 2
                        ),
                    ));
                }
                (_, None) => {
                    return Err(format!(
                        "the stored log ends after {at} events, but the frames put the move to \
                         connection #{} next",
                        n + 2
                    ));
                }
            },
            Slot::Attempts => {
                while let Some(attempts) = moves.iter().find(|m| m.start == at && !m.resumed) {
                    at = attempts.end;
                }
            }
            Slot::Answer { id, owed } => match log.get(at) {
                Some(LiveEvent::ToolResponse { id: answered, .. }) if answered == id => at += 1,
                _ if !owed => {}
                Some(_) => {
                    return Err(unexpected(
                        at,
                        &format!("the answer to {id} (owed: not cancelled, its connection up)"),
                    ));
                }
                None => {
                    return Err(format!(
                        "the stored log ends after {at} events, but {id} is owed an answer there \
                         (the script did not cancel it and its connection stayed up)"
                    ));
                }
            },
            wanted => match log.get(at) {
                Some(found) if wanted.is(found) => {
                    may_move |= found.kind() == "go_away";
                    at += 1;
                }
                Some(_) => return Err(unexpected(at, &wanted.to_string())),
                None => {
                    return Err(format!(
                        "the stored log ends after {at} events, but the frames put {wanted} next"
                    ));
                }
            },
        }
    }
    match log.get(at) {
        Some(extra) => Err(format!(
            "stored event #{at} is `{extra}`, which nothing in the frames or the session's rule \
             puts there"
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(t: &str) -> LiveEvent {
        LiveEvent::TextComplete {
            text: t.into(),
            thought: false,
            interrupted: false,
        }
    }

    fn turn() -> LiveEvent {
        LiveEvent::TurnComplete {
            interrupted: false,
            reason: None,
        }
    }

    #[test]
    fn extractions_may_follow_a_turn_and_nothing_else_may_be_extra() {
        let expected = [
            Slot::Server(Expected::Whole {
                stream: crate::soak::check::model::Stream::Text { thought: false },
                text: "Hi".into(),
                interrupted: false,
            }),
            Slot::Server(Expected::TurnEnd {
                interrupted: false,
                reason: None,
            }),
            Slot::Extractions,
        ];
        assert_eq!(compare(&expected, &[text("Hi"), turn()]), Ok(()));
        let warning = LiveEvent::Warning {
            message: "late cancellation".into(),
        };
        let err = compare(&expected, &[text("Hi"), warning.clone(), turn()]).unwrap_err();
        assert!(err.starts_with("stored event #1 is `warning"), "{err}");
        assert!(err.ends_with("the turn's end there"), "{err}");
        let err = compare(&expected, &[text("Hi"), turn(), warning]).unwrap_err();
        assert!(err.contains("nothing in the frames"), "{err}");
        let swapped = compare(&expected, &[turn(), text("Hi")]).unwrap_err();
        assert!(
            swapped.starts_with("stored event #0 is `turn_complete`"),
            "{swapped}"
        );
    }
}
