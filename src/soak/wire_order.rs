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
//! * `disconnected` last.
//!
//! Anything else in the log (a warning, say, which is a notice and never
//! stored) is a mismatch.

use std::collections::BTreeMap;

use serde_json::Value;

use super::record::RunRecord;
use crate::clock::Timestamp;
use crate::session::{FrameEvents, FrameFacts, Lane, LiveEvent};

/// What the log must hold at one place.
#[derive(Debug, PartialEq)]
enum Slot {
    /// This event.
    Event(LiveEvent),
    /// Any number of `extracted` events (the turn's extractions).
    Extractions,
}

/// What each delivered frame yields, after the handshake.
pub(crate) fn frame_facts(run: &RunRecord) -> Vec<FrameFacts> {
    let mut events = FrameEvents::default();
    run.server_frames
        .iter()
        .enumerate()
        .filter(|(i, frame)| !(*i == 0 && is_setup_complete(frame.payload().unwrap_or_default())))
        .map(|(_, frame)| events.push(frame))
        .collect()
}

fn is_setup_complete(bytes: &[u8]) -> bool {
    serde_json::from_slice::<Value>(bytes).is_ok_and(|m| m.get("setupComplete").is_some())
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
    for event in frame_facts(run).into_iter().flat_map(|f| f.events) {
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
    let mut at = 0;
    for slot in expected {
        match slot {
            Slot::Extractions => {
                while log.get(at).is_some_and(|e| e.kind() == "extracted") {
                    at += 1;
                }
            }
            Slot::Event(wanted) => match log.get(at) {
                Some(found) if same(found, wanted) => at += 1,
                Some(found) => {
                    return Err(format!(
                        "stored event #{at} is `{found}`, but the frames put `{wanted}` there"
                    ));
                }
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
