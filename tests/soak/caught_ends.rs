//! The invariants catch these broken runs: how a session ends, hangs up,
//! answers (or fails to answer) its calls, reconnects and stores its log,
//! each a real passing run's record with one thing broken, for the failure
//! sites of `liveness`, `refused-never-runs`, `reconnect-ends` and
//! `stored-once` that no other test reached.

use std::time::Duration;

use livesim::Seed;
use livesim::session::LiveEvent;
use livesim::soak::{FaultKind, RunRecord, Soak, TimedEvent, invariants};
use serde_json::{Value, json};

use super::{a_passing_run, agent, verdict};

/// Whether the record's events hold a `resumed` (the session moved to
/// another connection at least once).
fn resumed(record: &RunRecord) -> bool {
    record
        .delivered()
        .any(|e| matches!(e, LiveEvent::Resumed { .. }))
}

/// A call of `record` the session answered over its one connection, once:
/// its tool run finished, the script issued its id once and got its
/// answer, and nothing cancelled it; as (tool, id).
fn answered_call(record: &RunRecord) -> Option<(String, String)> {
    if resumed(record) {
        return None;
    }
    record.executions.iter().find_map(|run| {
        let id = run.call_id.as_deref()?;
        let issued_once = record.calls.issued.iter().filter(|i| *i == id).count() == 1;
        let cancelled = record.calls.cancelled.contains(id)
            || record.delivered().any(
                |e| matches!(e, LiveEvent::ToolCancelled { ids } if ids.iter().any(|c| c == id)),
            );
        (run.finished.is_some()
            && run.dropped.is_none()
            && issued_once
            && record.calls.answered.contains(id)
            && !cancelled)
            .then(|| (run.tool.clone(), id.to_string()))
    })
}

/// A weather run that neither the script, the user nor the server ended
/// (its one `disconnected` is the soak's own, once it settled), in memory
/// (no network under it), with a call answered once on its one
/// connection.
fn lasting_weather_run() -> RunRecord {
    a_passing_run(
        "weather",
        200,
        "a session that lasted, in memory, with a call answered",
        |r| {
            !r.settling.ended
                && !r.settling.ended_by_script
                && r.settling.hung_up_at.is_none()
                && r.network.is_none()
                && r.replay_errors.is_empty()
                && answered_call(r).is_some()
        },
    )
}

/// A session that ended before the run settled though nobody closed its
/// connection (not the script, the server, the network or the user) fails
/// `liveness`, quoting its `disconnected` event.
#[test]
fn a_session_that_ends_on_its_own_is_caught() {
    let good = lasting_weather_run();
    assert_eq!(verdict(invariants::LIVENESS, &good), Ok(()));
    let mut ended = good.clone();
    ended.settling.ended = true;
    let err = verdict(invariants::LIVENESS, &ended).expect_err("liveness let it end");
    assert!(
        err.starts_with(
            "the session ended though the script never closed the connection: disconnected 1000"
        ),
        "{err}"
    );
}

/// A call whose answer never reached the script, in a session that lasted,
/// fails `liveness` once the run settled.
#[test]
fn a_call_left_unanswered_after_the_run_settled_is_caught() {
    let good = lasting_weather_run();
    assert_eq!(verdict(invariants::LIVENESS, &good), Ok(()));
    let (_, id) = answered_call(&good).expect("an answered call");
    let mut unanswered = good.clone();
    assert!(unanswered.calls.answered.remove(&id));
    assert_eq!(
        verdict(invariants::LIVENESS, &unanswered),
        Err(format!(
            "calls still unanswered after the run settled: [{id:?}]"
        ))
    );
}

/// A tool that finished on a connection the session kept, and whose call
/// the session never answered there, fails `liveness`, naming the call and
/// the connection.
#[test]
fn a_call_finished_but_never_answered_on_its_lasting_connection_is_caught() {
    let good = lasting_weather_run();
    assert_eq!(verdict(invariants::LIVENESS, &good), Ok(()));
    let (tool, id) = answered_call(&good).expect("an answered call");
    let mut silent = good.clone();
    let before = silent.events.len();
    silent
        .events
        .retain(|e| !matches!(&e.event, LiveEvent::ToolResponse { id: a, .. } if *a == id));
    assert!(silent.events.len() < before, "no tool_response for {id}");
    let err = verdict(invariants::LIVENESS, &silent).expect_err("liveness let it go");
    assert!(
        err.starts_with(&format!("{tool} ({id}) finished at t=")),
        "{err}"
    );
    // (Until the soak's own disconnect, long after the tool finished.)
    assert!(
        err.contains("on connection 1, which was still the session's (until t=")
            && err.ends_with(
                "and was never answered there: a call whose connection lasts is answered on it"
            ),
        "{err}"
    );
}

/// A `sim/resumable` run (hang-ups always on, in memory) whose user hung
/// up when no tool run was left to drop, and which passed.
fn hung_up_with_nothing_running() -> RunRecord {
    let soak = Soak::agent(&agent("resumable"))
        .fault(FaultKind::HangUp, 1.0)
        .fault(FaultKind::Network, 0.0)
        .check_determinism_every(0);
    (0..200)
        .map(|s| soak.run_seed(Seed::new(s)))
        .find_map(|run| {
            let record = run.record?;
            record.settling.hung_up_at?;
            let nothing_dropped = record.executions.iter().all(|e| e.dropped.is_none());
            (run.failures.is_empty() && nothing_dropped).then_some(record)
        })
        .expect("a resumable seed under 200 hangs up with no tool run to drop, and passes")
}

/// After the user hangs up, a session that never says it ended (no
/// `disconnected` event) fails `liveness`, naming the hang-up.
#[test]
fn a_session_that_never_says_it_ended_after_the_user_hung_up_is_caught() {
    let good = hung_up_with_nothing_running();
    assert_eq!(verdict(invariants::LIVENESS, &good), Ok(()));
    let mut silent = good.clone();
    silent
        .events
        .retain(|e| !matches!(e.event, LiveEvent::Disconnected { .. }));
    assert!(silent.events.len() < good.events.len(), "no disconnected");
    let err = verdict(invariants::LIVENESS, &silent).expect_err("liveness let it go");
    assert!(err.starts_with("the user hung up at t="), "{err}");
    assert!(
        err.ends_with("and the session never said it ended (no disconnected event)"),
        "{err}"
    );
}

/// A call the flow refused, answered with the refusal's reason, in a
/// payment run that kept its one connection and passed; as (tool, id).
fn refused_call() -> (RunRecord, String, String) {
    let refusal = |r: &RunRecord| {
        r.delivered().find_map(|e| match e {
            LiveEvent::ToolDenied { id, name, .. } => Some((name.clone(), id.clone())),
            _ => None,
        })
    };
    let good = a_passing_run(
        "payment",
        200,
        "a refused call on a connection that lasted",
        |r| {
            refusal(r).is_some_and(|(_, id)| {
                !r.settling.ended
                    && !resumed(r)
                    && r.calls.issued.iter().filter(|i| **i == id).count() == 1
                    && !r.calls.cancelled.contains(&id)
                    && !r.calls.abandoned.contains(&id)
            })
        },
    );
    let (tool, id) = refusal(&good).expect("a refusal");
    (good, tool, id)
}

/// A refused call the session never answered (not even with the refusal),
/// on the connection the script still held, fails `refused-never-runs`.
#[test]
fn a_refused_call_never_answered_is_caught() {
    let (good, tool, id) = refused_call();
    assert_eq!(verdict(invariants::REFUSED_NEVER_RUNS, &good), Ok(()));
    let mut silent = good.clone();
    let mut removed = 0;
    for message in &mut silent.sent {
        if let Some(responses) = message
            .pointer_mut("/toolResponse/functionResponses")
            .and_then(Value::as_array_mut)
        {
            let before = responses.len();
            responses.retain(|r| r["id"] != json!(id));
            removed += before - responses.len();
        }
    }
    assert_eq!(removed, 1, "the refusal of {id} was answered once");
    assert_eq!(
        verdict(invariants::REFUSED_NEVER_RUNS, &silent),
        Err(format!("{tool} ({id}) was refused and never answered"))
    );
}

/// A support run (resumable, in memory) that reconnected and resumed, and
/// passed; without a `goAway`, so no move is owed that later attempts
/// could be taken for.
fn reconnected_support_run() -> RunRecord {
    a_passing_run(
        "support",
        200,
        "a reconnect that resumed, without a goAway",
        |r| {
            resumed(r)
                && !r.settling.ended
                && !r.delivered().any(|e| matches!(e, LiveEvent::GoAway { .. }))
        },
    )
}

/// A session that goes on reconnecting past the attempts its policy
/// allows (attempts counting up by one, each after the longest backoff,
/// before the soak disconnects it) fails `reconnect-ends`, naming the
/// attempt and the policy's number.
#[test]
fn a_session_that_reconnects_past_its_policy_is_caught() {
    let good = reconnected_support_run();
    assert_eq!(verdict(invariants::RECONNECT_ENDS, &good), Ok(()));
    let most = good.resumption.max_attempts();
    let (_, longest) = good.resumption.backoff_bounds();
    let gap = longest + Duration::from_secs(1);
    let mut went_on = good.clone();
    // The soak's own disconnect, once the run settled, comes last: the
    // attempts go before it, and it after them.
    let mut end = went_on.events.pop().expect("events");
    assert!(
        matches!(end.event, LiveEvent::Disconnected { .. }),
        "{}",
        end.event
    );
    let from = end.at;
    for attempt in 1..=most + 1 {
        went_on.events.push(TimedEvent {
            at: from + gap * attempt,
            event: LiveEvent::Reconnecting {
                attempt,
                cause: "closed with 1011 (retryable)".to_string(),
            },
        });
    }
    end.at = from + gap * (most + 2);
    went_on.events.push(end);
    let err = verdict(invariants::RECONNECT_ENDS, &went_on).expect_err("reconnect-ends let it go");
    assert!(
        err.starts_with(&format!("reconnect attempt {} at t=", most + 1))
            && err.ends_with(&format!(", past the policy's {most}")),
        "{err}"
    );
}

/// A session that said `connected` twice and stored it twice (the stored
/// log the same as the events, kind by kind) fails `stored-once`.
#[test]
fn a_stored_log_holding_connected_twice_is_caught() {
    let good = lasting_weather_run();
    assert_eq!(verdict(invariants::STORED_ONCE, &good), Ok(()));
    let mut twice = good.clone();
    let stored = twice
        .session_log
        .iter()
        .position(|e| matches!(e, LiveEvent::Connected { .. }))
        .expect("a stored connected");
    let again = twice.session_log[stored].clone();
    twice.session_log.insert(stored + 1, again);
    let delivered = twice
        .events
        .iter()
        .position(|e| matches!(e.event, LiveEvent::Connected { .. }))
        .expect("a delivered connected");
    let again = twice.events[delivered].clone();
    twice.events.insert(delivered + 1, again);
    assert_eq!(
        verdict(invariants::STORED_ONCE, &twice),
        Err("the stored log holds `connected` 2 times".to_string())
    );
}
