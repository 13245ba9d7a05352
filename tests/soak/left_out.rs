//! What the server may say or leave out, and the session must pass on as
//! it came: a turn's end that says why it ended (`turnCompleteReason`,
//! an open set: a reason the protocol names or one it adds later), a turn
//! the model gave up on (its end and nothing else), a `goAway` with no
//! `timeLeft` (no time to lose: a session that resumes moves at once),
//! messages that say nothing (an empty `serverContent`, a `modelTurn`
//! with no parts: no event), and a
//! call with no `args` member (a function that takes none), which the
//! tool gets as `{}`. The soak sends both; a session that drops the
//! reason, or hands on a missing `args` as `null`, fails.

use livesim::session::LiveEvent;
use livesim::soak::{RunRecord, invariants};
use livesim::testing::Action;
use serde_json::{Value, json};

use super::{a_passing_run, verdict};

/// The first passing weather run, in seeds under 200, that `wanted` picks
/// (`what` says what that is).
fn a_run(what: &str, wanted: impl Fn(&RunRecord) -> bool) -> RunRecord {
    a_passing_run("weather", 200, what, wanted)
}

/// The reasons the session's turn ends carried, in order.
fn reasons(record: &RunRecord) -> Vec<String> {
    record
        .events
        .iter()
        .filter_map(|t| match &t.event {
            LiveEvent::TurnComplete { reason, .. } => reason.clone(),
            _ => None,
        })
        .collect()
}

/// The ids of the script's calls that came with no `args`.
fn bare_calls(record: &RunRecord) -> Vec<String> {
    record
        .script
        .actions()
        .iter()
        .filter_map(|a| match a {
            Action::Call(call) if call.args.is_null() => Some(call.id.clone()),
            _ => None,
        })
        .collect()
}

/// Every reason a turn's end gave reaches the session's `turn_complete`
/// as it came, and a session that dropped one fails `wire-order` (its own
/// model of the frames says what each event must carry).
#[test]
fn a_turn_end_that_loses_its_reason_is_caught() {
    let good = a_run("a turn's end with a reason", |r| !reasons(r).is_empty());
    let sent: Vec<String> = good
        .server_frames
        .iter()
        .filter_map(|f| {
            let text = f.payload().and_then(|p| std::str::from_utf8(p).ok())?;
            let message: Value = serde_json::from_str(text).ok()?;
            message
                .pointer("/serverContent/turnCompleteReason")
                .and_then(Value::as_str)
                .map(String::from)
        })
        .collect();
    assert!(!sent.is_empty());
    assert_eq!(reasons(&good), sent);
    assert_eq!(verdict(invariants::WIRE_ORDER, &good), Ok(()));

    // (Lost as a session loses it: in its events and its stored log.)
    let mut lost = good.clone();
    let events = lost.events.iter_mut().map(|t| &mut t.event);
    for event in events.chain(lost.session_log.iter_mut()) {
        if let LiveEvent::TurnComplete { reason, .. } = event {
            *reason = None;
        }
    }
    let err = verdict(invariants::WIRE_ORDER, &lost).unwrap_err();
    assert!(err.contains(&sent[0]), "{err}");
}

/// A call the script made with no arguments comes with no `args` member
/// on the wire; the session's `tool_call` carries `{}` for it, and one
/// that carried `null` fails `wire-order`.
#[test]
fn a_call_without_args_reaches_the_session_as_an_empty_object() {
    let good = a_run("a call without args", |r| !bare_calls(r).is_empty());
    let id = bare_calls(&good)[0].clone();
    let on_the_wire = good
        .server_frames
        .iter()
        .filter_map(|f| f.payload().and_then(|p| std::str::from_utf8(p).ok()))
        .find(|text| text.contains("toolCall") && text.contains(&format!("\"{id}\"")))
        .expect("the call's frame");
    let message: Value = serde_json::from_str(on_the_wire).unwrap();
    let call = message["toolCall"]["functionCalls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == json!(id))
        .unwrap();
    assert!(call.get("args").is_none(), "{on_the_wire}");
    let args_of = |record: &RunRecord| {
        record.events.iter().find_map(|t| match &t.event {
            LiveEvent::ToolCall { calls } => {
                calls.iter().find(|c| c.id == id).map(|c| c.args.clone())
            }
            _ => None,
        })
    };
    assert_eq!(args_of(&good), Some(json!({})));
    assert_eq!(verdict(invariants::WIRE_ORDER, &good), Ok(()));

    let mut null = good.clone();
    let events = null.events.iter_mut().map(|t| &mut t.event);
    for event in events.chain(null.session_log.iter_mut()) {
        if let LiveEvent::ToolCall { calls } = event {
            for call in calls.iter_mut().filter(|c| c.id == id) {
                call.args = Value::Null;
            }
        }
    }
    let err = verdict(invariants::WIRE_ORDER, &null).unwrap_err();
    assert!(err.contains(&id), "{err}");
}

/// Now and then the model gives up on a turn: the user spoke, and all
/// that comes is the turn's end with `MALFORMED_FUNCTION_CALL`. The
/// session ends the turn all the same (a `turn_complete` with that
/// reason, no text of the model's before it) and the run passes.
#[test]
fn a_turn_the_model_gave_up_on_ends_with_its_reason() {
    let good = a_run("a turn the model gave up on", |r| {
        reasons(r).iter().any(|r| r == "MALFORMED_FUNCTION_CALL")
    });
    let at = good
        .events
        .iter()
        .position(|t| {
            matches!(&t.event, LiveEvent::TurnComplete { reason: Some(r), .. }
                if r == "MALFORMED_FUNCTION_CALL")
        })
        .unwrap();
    // Nothing of the model's since the turn before ended.
    let since = good.events[..at]
        .iter()
        .rev()
        .take_while(|t| !matches!(t.event, LiveEvent::TurnComplete { .. }));
    for timed in since {
        assert!(
            !matches!(
                timed.event,
                LiveEvent::TextDelta { .. }
                    | LiveEvent::TextComplete { .. }
                    | LiveEvent::ToolCall { .. }
            ),
            "{:?}",
            timed.event
        );
    }
}

/// A `goAway` that says no `timeLeft` leaves no time: a session that
/// resumes, holding a handle, begins its move at once (within the lanes'
/// lag of 250 ms, either side: the move may be said first), the event
/// says no time left, and the run passes `reconnect-ends`. (A session
/// that ignored such a notice failed 1,857 sessions of 0..2000.)
#[test]
fn a_go_away_with_no_time_left_moves_at_once() {
    let lag = std::time::Duration::from_millis(250);
    let prompt = |r: &RunRecord| -> bool {
        let Some(notice) = r
            .events
            .iter()
            .find(|t| matches!(t.event, LiveEvent::GoAway { time_left: None }))
        else {
            return false;
        };
        r.events.iter().any(|t| {
            matches!(&t.event, LiveEvent::Reconnecting { cause, .. } if cause == "goAway")
                && t.at.abs_diff(notice.at) <= lag
        })
    };
    // A bare notice that came when the session held a handle to move with.
    let bare = |r: &RunRecord| {
        let notice = r
            .events
            .iter()
            .position(|t| matches!(t.event, LiveEvent::GoAway { time_left: None }));
        notice.is_some_and(|n| {
            r.events[..n]
                .iter()
                .any(|t| matches!(t.event, LiveEvent::ResumptionUpdate { resumable: true }))
        })
    };
    let good = a_passing_run("resumable", 200, "a bare goAway with a handle held", bare);
    assert!(prompt(&good), "the session did not move at once");
    assert_eq!(verdict(invariants::RECONNECT_ENDS, &good), Ok(()));
    let sent = good.server_frames.iter().any(|f| {
        f.payload()
            .is_some_and(|p| p == br#"{"goAway":{}}"#.as_slice())
    });
    assert!(sent, "no bare goAway on the wire");
}

/// Messages that say nothing (an empty `serverContent`, a `modelTurn`
/// with no parts) reach the session in the soak's conversations, make no
/// event, and the run holds `wire-order`; an event made of one (a content
/// event with no parts, in the stored log where the frame stands) fails.
#[test]
fn a_message_that_says_nothing_makes_no_event() {
    let says_nothing = |r: &RunRecord| {
        r.server_frames.iter().any(|f| {
            f.payload().is_some_and(|p| {
                p == br#"{"serverContent":{}}"#.as_slice()
                    || p == br#"{"serverContent":{"modelTurn":{"parts":[]}}}"#.as_slice()
            })
        })
    };
    let good = a_run("a message that says nothing", says_nothing);
    assert_eq!(verdict(invariants::WIRE_ORDER, &good), Ok(()));
    let mut made = good.clone();
    made.session_log.insert(
        1,
        LiveEvent::Content {
            parts: Vec::new(),
            interrupted: false,
        },
    );
    assert!(verdict(invariants::WIRE_ORDER, &made).is_err());
}

/// Over the simulated network, a move after a `goAway` that gives no time
/// left can fail (a partition loses its handshake): the session stays,
/// and the server ends the old connection at once, as it does when the
/// time it gave is up, so the session reconnects and the run passes. The
/// script's server waited for a deadline the notice never gave, and this
/// run (`resumable` seed 0xaa1, found by `sim soak --seeds 2000..10000`)
/// hung. Pinned: if the generator changes, the first assertion says the
/// seed no longer makes that run, and another must be found.
#[test]
fn a_failed_move_after_a_go_away_with_no_time_left_reconnects() {
    let soak = livesim::soak::Soak::agent(&super::agent("resumable")).check_determinism_every(0);
    let run = soak.run_seed(livesim::Seed::new(0xaa1));
    let record = run.record.as_ref().expect("a record");
    let notice = record
        .events
        .iter()
        .position(|t| matches!(t.event, LiveEvent::GoAway { time_left: None }));
    let failed = notice.is_some_and(|n| {
        record.events[n..].iter().any(|t| {
            matches!(&t.event, LiveEvent::Warning { message }
                if message.starts_with("moving to a new connection after goAway failed"))
        })
    });
    assert!(
        failed,
        "seed 0xaa1 no longer fails a move after a bare goAway"
    );
    assert!(run.failures.is_empty(), "{:?}", run.failures);
}
