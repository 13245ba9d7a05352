//! The `wire-order` invariant: the stored log is what the frames the
//! script actually sent imply, in wire order.
//!
//! The expected log is worked out from the frames that reached the
//! session, through the session's own pure aggregation (decode, then
//! aggregate, as the wire lane does), and the session's placement rule:
//!
//! * `connected` first;
//! * the server's stored events in frame order, and within a frame in
//!   aggregation order;
//! * right after a `tool_call` event, for each of its calls in order: the
//!   refusal (`tool_denied`) if the flow refused it, then its response if
//!   the session answered it (taken from the log: what they say is other
//!   invariants' business; where they stand is this one's);
//! * right after a `turn_complete`, the extractions of that turn, if any;
//! * between two connections, the session's move (`reconnecting`,
//!   `resumption_failed`, `resumed`): after every frame of the old one,
//!   before any of the new one; a move after `goAway` may start earlier,
//!   anywhere after the `go_away` (the old connection goes on until the
//!   new one is set up); reconnect attempts that never reached a new
//!   connection stand at the end;
//! * `disconnected` last.
//!
//! Each connection's frames are aggregated afresh (the session drops
//! pending text when a connection ends), except across a `goAway` move,
//! where the session carries its aggregation on.
//!
//! Anything else in the log (a warning, say, which is a notice and never
//! stored) is a mismatch.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::clock::Timestamp;
use crate::session::{FrameEvents, FrameFacts, Lane, LiveEvent};
use crate::soak::run::record::RunRecord;

/// What the log must hold at one place.
#[derive(Debug, PartialEq)]
enum Slot {
    /// This event.
    Event(LiveEvent),
    /// Any number of `extracted` events (the turn's extractions).
    Extractions,
    /// The session's move to its next connection: the log's `n`-th move
    /// (0-based) stands here, unless a `goAway` move stood earlier.
    Moved(usize),
    /// Reconnect attempts that reached no new connection, if any.
    Attempts,
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
    /// It began with the `goAway` that asked for it.
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
            go_away: matches!(&log[start], LiveEvent::Reconnecting { cause, .. } if cause == "goAway"),
            resumed: matches!(log[at - 1], LiveEvent::Resumed { .. }),
        });
    }
    out
}

/// The frames that reached the session on one connection.
pub(crate) struct Connection {
    /// What each yields, after the connection's handshake.
    pub frames: Vec<FrameFacts>,
    /// The session aggregated them afresh: it dropped what the connection
    /// before left pending (it carries it on across a `goAway` move).
    pub afresh: bool,
}

/// What each delivered frame yields after its connection's handshake,
/// connection by connection.
pub(crate) fn connections(run: &RunRecord) -> Vec<Connection> {
    let go_away_moves: Vec<bool> = moves(&run.session_log)
        .iter()
        .filter(|m| m.resumed)
        .map(|m| m.go_away)
        .collect();
    let mut events = FrameEvents::default();
    let mut out = vec![Connection {
        frames: Vec::new(),
        afresh: true,
    }];
    for (i, frame) in run.server_frames.iter().enumerate() {
        if is_setup_complete(frame.payload().unwrap_or_default()) {
            if i > 0 {
                let afresh = !go_away_moves.get(out.len() - 1).copied().unwrap_or(false);
                if afresh {
                    events = FrameEvents::default();
                }
                out.push(Connection {
                    frames: Vec::new(),
                    afresh,
                });
            }
            continue;
        }
        if let Some(current) = out.last_mut() {
            current.frames.push(events.push(frame));
        }
    }
    out
}

/// Whether a frame is a `setupComplete`: the start of a connection.
pub(crate) fn is_setup_complete(bytes: &[u8]) -> bool {
    // Most frames are not: look for the key before parsing.
    mentions(bytes, b"setupComplete")
        && serde_json::from_slice::<Value>(bytes).is_ok_and(|m| m.get("setupComplete").is_some())
}

/// Whether `bytes` hold `word` anywhere.
pub(crate) fn mentions(bytes: &[u8], word: &[u8]) -> bool {
    bytes.windows(word.len()).any(|w| w == word)
}

/// What the fast lane must deliver for these frames, in order (media left
/// out: its timestamps are the session clock's).
pub(crate) fn fast_lane(frames: &[FrameFacts]) -> Vec<&LiveEvent> {
    frames
        .iter()
        .flat_map(|f| &f.events)
        .filter(|e| e.lane() == Lane::Fast && e.kind() != "media")
        .collect()
}

fn expected(run: &RunRecord) -> Vec<Slot> {
    let log = &run.session_log;
    let mut denials: BTreeMap<&str, &LiveEvent> = BTreeMap::new();
    let mut responses: BTreeMap<&str, &LiveEvent> = BTreeMap::new();
    for event in log {
        match event {
            LiveEvent::ToolDenied { id, .. } => {
                denials.entry(id.as_str()).or_insert(event);
            }
            LiveEvent::ToolResponse { id, .. } => {
                responses.entry(id.as_str()).or_insert(event);
            }
            _ => {}
        }
    }
    let connected = log
        .iter()
        .find(|e| e.kind() == "connected")
        .cloned()
        .unwrap_or(LiveEvent::Connected { session_id: None });
    let mut slots = vec![Slot::Event(connected)];
    for (n, connection) in connections(run).into_iter().enumerate() {
        if n > 0 {
            slots.push(Slot::Moved(n - 1));
        }
        for event in connection.frames.into_iter().flat_map(|f| f.events) {
            if !event.is_stored() {
                continue;
            }
            let calls = match &event {
                LiveEvent::ToolCall { calls } => calls.iter().map(|c| c.id.clone()).collect(),
                _ => Vec::new(),
            };
            let turn_ended = matches!(event, LiveEvent::TurnComplete { .. });
            slots.push(Slot::Event(event));
            for id in calls {
                if let Some(denial) = denials.remove(id.as_str()) {
                    slots.push(Slot::Event(denial.clone()));
                }
                if let Some(response) = responses.remove(id.as_str()) {
                    slots.push(Slot::Event(response.clone()));
                }
            }
            if turn_ended {
                slots.push(Slot::Extractions);
            }
        }
    }
    slots.push(Slot::Attempts);
    if let Some(disconnected) = log.iter().find(|e| e.kind() == "disconnected") {
        slots.push(Slot::Event(disconnected.clone()));
    }
    slots
}

/// Equal, except for the arrival time media carries.
fn same(a: &LiveEvent, b: &LiveEvent) -> bool {
    match (a, b) {
        (LiveEvent::Media { at: _, .. }, LiveEvent::Media { .. }) => {
            let stamp = |e: &LiveEvent| match e.clone() {
                LiveEvent::Media {
                    mime_type,
                    data,
                    interrupted,
                    ..
                } => LiveEvent::Media {
                    mime_type,
                    data,
                    at: Timestamp::EPOCH,
                    interrupted,
                },
                other => other,
            };
            stamp(a) == stamp(b)
        }
        _ => a == b,
    }
}

/// Checks the run's stored log against the frames it got.
pub(crate) fn check(run: &RunRecord) -> Result<(), String> {
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
            Slot::Event(wanted) => match log.get(at) {
                Some(found) if same(found, wanted) => {
                    may_move |= found.kind() == "go_away";
                    at += 1;
                }
                Some(_) => return Err(unexpected(at, &format!("`{wanted}`"))),
                None => {
                    return Err(format!(
                        "the stored log ends after {at} events, but the frames put `{wanted}` next"
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
            Slot::Event(text("Hi")),
            Slot::Event(turn()),
            Slot::Extractions,
        ];
        assert_eq!(compare(&expected, &[text("Hi"), turn()]), Ok(()));
        let warning = LiveEvent::Warning {
            message: "late cancellation".into(),
        };
        let err = compare(&expected, &[text("Hi"), warning.clone(), turn()]).unwrap_err();
        assert!(err.starts_with("stored event #1 is `warning"), "{err}");
        let err = compare(&expected, &[text("Hi"), turn(), warning]).unwrap_err();
        assert!(err.contains("nothing in the frames"), "{err}");
        let swapped = compare(&expected, &[turn(), text("Hi")]).unwrap_err();
        assert!(
            swapped.starts_with("stored event #0 is `turn_complete`"),
            "{swapped}"
        );
    }
}
