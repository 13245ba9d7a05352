//! The invariants that read the stored log, the fast lane, the extractor's
//! questions and the journal catch these broken runs: each test takes a
//! real passing run, breaks the one thing a failure site guards (a site
//! no other test reached), and names the invariant and its message.

use livesim::flow::{Enforcement, keys};
use livesim::session::LiveEvent;
use livesim::soak::{RunRecord, invariants};
use serde_json::{Value, json};

use super::{a_passing_run, verdict};

/// Whether the session makes `event` itself when it changes connections.
fn is_move(event: &LiveEvent) -> bool {
    matches!(
        event,
        LiveEvent::Reconnecting { .. }
            | LiveEvent::ResumptionFailed { .. }
            | LiveEvent::Resumed { .. }
    )
}

/// Where the log's first move to a new connection stands: its first
/// `reconnecting`, and just past the `resumed` that ends it.
fn first_move(log: &[LiveEvent]) -> Option<(usize, usize)> {
    let start = log.iter().position(is_move)?;
    let resumed = start
        + log[start..]
            .iter()
            .position(|e| matches!(e, LiveEvent::Resumed { .. }))?;
    log[start..resumed]
        .iter()
        .all(is_move)
        .then_some((start, resumed + 1))
}

/// Whether the log has a `goAway`, or a move one asked for, before `end`.
fn go_away_before(log: &[LiveEvent], end: usize) -> bool {
    log[..end].iter().any(|e| match e {
        LiveEvent::GoAway { .. } => true,
        LiveEvent::Reconnecting { cause, .. } => cause == "goAway",
        _ => false,
    })
}

/// A passing resumable run whose first move to a new connection was its
/// own (no `goAway` asked for it, so it stands after every event of the
/// old connection), with an event of the new connection right after it;
/// and where that move starts and ends in the stored log.
fn a_run_that_moved() -> (RunRecord, usize, usize) {
    let record = a_passing_run(
        "resumable",
        100,
        "a reconnect no goAway asked for, followed by the new connection's events",
        |r| {
            first_move(&r.session_log).is_some_and(|(_, end)| {
                !go_away_before(&r.session_log, end)
                    && r.session_log.get(end).is_some_and(|e| !is_move(e))
            })
        },
    );
    let (start, end) = first_move(&record.session_log).expect("the run was picked for its move");
    (record, start, end)
}

/// A stored log that leaves out a reconnect, going straight on with the
/// new connection's events, fails `wire-order` where the move should stand.
#[test]
fn a_stored_log_that_skips_a_reconnect_is_caught() {
    let (good, start, end) = a_run_that_moved();
    assert_eq!(verdict(invariants::WIRE_ORDER, &good), Ok(()));
    let mut skipped = good.clone();
    skipped.session_log.drain(start..end);
    let err = verdict(invariants::WIRE_ORDER, &skipped).unwrap_err();
    assert!(
        err.starts_with(&format!(
            "stored event #{start} is `{}`, but the frames put ",
            good.session_log[end]
        )),
        "{err}"
    );
    assert!(
        err.ends_with("the move to connection #2 (`reconnecting` … `resumed`) there"),
        "{err}"
    );
}

/// A stored log cut just before a reconnect fails `wire-order`: the frames
/// still owe the move to the second connection.
#[test]
fn a_stored_log_cut_before_a_reconnect_is_caught() {
    let (good, start, _) = a_run_that_moved();
    assert_eq!(verdict(invariants::WIRE_ORDER, &good), Ok(()));
    let mut cut = good.clone();
    cut.session_log.truncate(start);
    assert_eq!(
        verdict(invariants::WIRE_ORDER, &cut),
        Err(format!(
            "the stored log ends after {start} events, but the frames put the move to \
             connection #2 next"
        ))
    );
}

/// A stored log cut just before the answer to a call the script never
/// cancelled, on a connection that stayed up, fails `wire-order`.
#[test]
fn a_stored_log_cut_before_an_owed_answer_is_caught() {
    // The first answer in the log, and where it stands.
    let first_answer = |r: &RunRecord| {
        r.session_log.iter().enumerate().find_map(|(i, e)| match e {
            LiveEvent::ToolResponse { id, .. } => Some((i, id.clone())),
            _ => None,
        })
    };
    let good = a_passing_run(
        "weather",
        100,
        "an answer to a call it did not cancel, on its one connection, which stayed up",
        |r| {
            !r.settling.ended
                && !r.session_log.iter().any(is_move)
                && first_answer(r).is_some_and(|(_, id)| {
                    !r.calls.cancelled.contains(&id) && !r.calls.abandoned.contains(&id)
                })
        },
    );
    assert_eq!(verdict(invariants::WIRE_ORDER, &good), Ok(()));
    let (at, id) = first_answer(&good).expect("the run was picked for its answer");
    let mut cut = good.clone();
    cut.session_log.truncate(at);
    let err = verdict(invariants::WIRE_ORDER, &cut).unwrap_err();
    assert!(
        err.starts_with(&format!(
            "the stored log ends after {at} events, but {id} is owed an answer there"
        )),
        "{err}"
    );
}

/// Where, in the delivered events, an answer's text chunk follows another
/// of the same answer (no full text between them): the second one.
fn a_second_answer_chunk(record: &RunRecord) -> Option<usize> {
    // The thought flag of the chunks pending since the last full text.
    let mut pending = None;
    for (i, timed) in record.events.iter().enumerate() {
        match timed.event {
            LiveEvent::TextDelta { thought, .. } => {
                if pending == Some(false) && !thought {
                    return Some(i);
                }
                pending = Some(thought);
            }
            LiveEvent::TextComplete { .. } => pending = None,
            _ => {}
        }
    }
    None
}

/// A thought chunk delivered in the middle of an answer's chunks, with no
/// full text between them, fails `aggregation`.
#[test]
fn a_thought_chunk_inside_an_answer_is_caught() {
    let good = a_passing_run(
        "weather",
        100,
        "two chunks of one answer on its one connection",
        |r| !r.session_log.iter().any(is_move) && a_second_answer_chunk(r).is_some(),
    );
    assert_eq!(verdict(invariants::AGGREGATION, &good), Ok(()));
    let at = a_second_answer_chunk(&good).expect("the run was picked for its chunks");
    let mut switched = good.clone();
    let LiveEvent::TextDelta { thought, .. } = &mut switched.events[at].event else {
        unreachable!("the run was picked for a text chunk there");
    };
    *thought = true;
    let chunk = switched.events[at].event.to_string();
    let err = verdict(invariants::AGGREGATION, &switched).unwrap_err();
    assert_eq!(
        err,
        format!(
            "a text chunk switched between thought and answer without a full event in \
             between: {chunk}"
        )
    );
}

/// How many frames said the model was interrupted, and how many of those
/// did not also end the turn, read from the frames themselves.
fn interrupting_frames(record: &RunRecord) -> (usize, usize) {
    let mut all = 0;
    let mut alone = 0;
    for frame in &record.server_frames {
        let message: Value =
            serde_json::from_slice(frame.payload().unwrap_or_default()).unwrap_or_default();
        let content = &message["serverContent"];
        if content["interrupted"] == true {
            all += 1;
            if content["turnComplete"] != true {
                alone += 1;
            }
        }
    }
    (all, alone)
}

/// A session that kept quiet about interruptions the server sent mid-turn
/// (no bare `interrupted`, no interrupted flush) fails `aggregation`.
#[test]
fn a_session_silent_about_interruptions_is_caught() {
    let good = a_passing_run(
        "weather",
        100,
        "a frame that interrupts the model mid-turn, on its one connection",
        |r| !r.session_log.iter().any(is_move) && interrupting_frames(r).1 > 0,
    );
    assert_eq!(verdict(invariants::AGGREGATION, &good), Ok(()));
    let (all, alone) = interrupting_frames(&good);
    let mut silent = good.clone();
    silent
        .events
        .retain(|e| !matches!(e.event, LiveEvent::Interrupted));
    for timed in &mut silent.events {
        if let LiveEvent::TextComplete { interrupted, .. } = &mut timed.event {
            *interrupted = false;
        }
    }
    let err = verdict(invariants::AGGREGATION, &silent).unwrap_err();
    assert_eq!(
        err,
        format!(
            "{all} frames reported an interruption ({alone} without the turn's end), but the \
             session emitted 0 interrupted flushes and 0 bare interruptions"
        )
    );
}

/// An extractor asked about a transcript without its `Transcript:` header
/// fails `extractor-input`.
#[test]
fn an_extractor_question_without_its_header_is_caught() {
    let asked = "soak:extractor_asked";
    let good = a_passing_run("support", 50, "a question to its extractor", |r| {
        r.journal.iter().any(|m| m.key == asked)
    });
    assert_eq!(verdict(invariants::EXTRACTOR_INPUT, &good), Ok(()));
    let first = good
        .journal
        .iter()
        .position(|m| m.key == asked)
        .expect("the run was picked for its question");
    // The question is the request the extractor's model got, as JSON.
    let mut request: Value = serde_json::from_str(
        good.journal[first]
            .value
            .as_str()
            .expect("a question is noted as a string"),
    )
    .expect("a question is a JSON request");
    let text = request
        .pointer_mut("/contents/0/parts/0/text")
        .expect("a request holds its question's text");
    let body = text
        .as_str()
        .and_then(|t| t.strip_prefix("Transcript:\n"))
        .expect("the real question starts with its header")
        .to_string();
    *text = json!(body);
    let mut headless = good.clone();
    headless.journal[first].value = json!(request.to_string());
    let err = verdict(invariants::EXTRACTOR_INPUT, &headless).unwrap_err();
    assert_eq!(
        err,
        format!("the extractor's question at turn 1 does not start with `Transcript:`: {body:?}")
    );
}

/// A flow that only observes, yet refused a call (a `flow:tool_denied`
/// where it admitted the call and noted that Enforce would refuse it, the
/// tool never run), fails `decisions-follow-spec`.
#[test]
fn a_refusal_by_a_flow_that_only_observes_is_caught() {
    // The first call admitted with a note that Enforce would refuse it,
    // whose id no other call of the journal has.
    let would_deny = |r: &RunRecord| {
        let calls = |id: &Value| {
            r.journal
                .iter()
                .filter(|m| m.key == keys::TOOL_CALL && m.value["id"] == *id)
                .count()
        };
        r.journal.windows(2).position(|pair| {
            pair[0].key == keys::TOOL_CALL
                && pair[1].key == keys::TOOL_WOULD_DENY
                && pair[1].value["id"] == pair[0].value["id"]
                && calls(&pair[0].value["id"]) == 1
        })
    };
    let good = a_passing_run(
        "refunds",
        50,
        "a call its flow would refuse under Enforce",
        |r| would_deny(r).is_some(),
    );
    let governance = good.governance.as_ref().expect("refunds has a flow");
    assert_eq!(governance.enforcement, Enforcement::Observe);
    assert_eq!(verdict(invariants::DECISIONS_FOLLOW_SPEC, &good), Ok(()));
    let at = would_deny(&good).expect("the run was picked for that call");
    let entry = &good.journal[at];
    let seq = entry.seq;
    let tool = entry.value["tool"].as_str().expect("a call names its tool");
    let id = entry.value["id"].as_str().expect("a call has its id");
    let reason = good.journal[at + 1].value["reason"].clone();
    let mut refused = good.clone();
    refused.journal[at].key = keys::TOOL_DENIED.to_string();
    refused.journal[at].value = json!({"tool": tool, "id": id, "reason": reason});
    refused.journal.remove(at + 1);
    // A refused call never runs, so it has no result either.
    refused.journal.retain(|m| {
        !((m.key == keys::TOOL_RESULT || m.key == keys::TOOL_CANCELLED) && m.value["id"] == id)
    });
    refused
        .executions
        .retain(|e| e.call_id.as_deref() != Some(id));
    assert_eq!(
        verdict(invariants::DECISIONS_FOLLOW_SPEC, &refused),
        Err(format!(
            "journal entry {seq} refused {tool} ({id}), but the flow only observes"
        ))
    );
}

/// A tool's result journaled with an `ok` that is not a boolean fails
/// `decisions-follow-spec`, before the flow's rules are even read.
#[test]
fn a_journaled_result_without_a_boolean_ok_is_caught() {
    let good = a_passing_run("payment", 50, "a journaled tool result", |r| {
        r.journal.iter().any(|m| m.key == keys::TOOL_RESULT)
    });
    assert_eq!(verdict(invariants::DECISIONS_FOLLOW_SPEC, &good), Ok(()));
    let at = good
        .journal
        .iter()
        .position(|m| m.key == keys::TOOL_RESULT)
        .expect("the run was picked for its result");
    let mut stringly = good.clone();
    let ok = stringly.journal[at].value["ok"].to_string();
    stringly.journal[at].value["ok"] = json!(ok);
    let err = verdict(invariants::DECISIONS_FOLLOW_SPEC, &stringly).unwrap_err();
    assert_eq!(
        err,
        format!(
            "journal entry {} (flow:tool_result) has no boolean \"ok\": {}",
            good.journal[at].seq, stringly.journal[at].value
        )
    );
}

/// A function response sent without its call's id fails `answered-once`.
#[test]
fn an_answer_without_its_id_is_caught() {
    let responses = "/toolResponse/functionResponses/0";
    let good = a_passing_run("payment", 50, "an answer to a call", |r| {
        r.sent.iter().any(|m| m.pointer(responses).is_some())
    });
    assert_eq!(verdict(invariants::ANSWERED_ONCE, &good), Ok(()));
    let mut anonymous = good.clone();
    let response = anonymous
        .sent
        .iter_mut()
        .find_map(|m| m.pointer_mut(responses))
        .expect("the run was picked for its answer");
    response
        .as_object_mut()
        .expect("a function response is an object")
        .remove("id")
        .expect("the real answer had its id");
    let response = response.clone();
    assert_eq!(
        verdict(invariants::ANSWERED_ONCE, &anonymous),
        Err(format!("a function response has no id: {response}"))
    );
}
