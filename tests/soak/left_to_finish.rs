//! A session that lives lets its tools finish, a connection's that ended
//! too: a tool run dropped unfinished while the session went on, with its
//! call neither cancelled nor answered, fails `liveness`; dropped as the
//! session ended, it does not.

use std::time::Duration;

use livesim::Seed;
use livesim::session::LiveEvent;
use livesim::soak::{ExecutionOutcome, RunRecord, Soak, TimedEvent, invariants};

use super::{agent, verdict};

/// A passing weather run, and a tool run in it that finished well before
/// the session ended.
fn finished_run() -> (RunRecord, usize) {
    let soak = Soak::agent(&agent("weather")).check_determinism_every(0);
    (0..40)
        .find_map(|s| {
            let run = soak.run_seed(Seed::new(s));
            let record = run.record.filter(|_| run.failures.is_empty())?;
            let ended = record
                .events
                .iter()
                .find(|e| matches!(e.event, LiveEvent::Disconnected { .. }))?
                .at;
            let i = record.executions.iter().position(|x| {
                x.call_id.is_some()
                    && x.finished
                        .is_some_and(|f| f + Duration::from_secs(1) < ended)
            })?;
            Some((record, i))
        })
        .expect("a weather seed under 40 runs a tool well before its end")
}

#[test]
fn a_tool_dropped_while_the_session_lives_is_caught() {
    let (good, i) = finished_run();
    assert_eq!(verdict(invariants::LIVENESS, &good), Ok(()));
    let mut cut = good.clone();
    let run = &mut cut.executions[i];
    let id = run.call_id.clone().unwrap();
    run.dropped = run.finished.take();
    run.outcome = ExecutionOutcome::Unfinished;
    cut.calls.answered.remove(&id);
    cut.calls.cancelled.remove(&id);
    cut.events.retain(
        |e| !matches!(&e.event, LiveEvent::ToolResponse { id: answered, .. } if *answered == id),
    );
    let err = verdict(invariants::LIVENESS, &cut).unwrap_err();
    assert!(
        err.contains(&format!("({id}) started at t="))
            && err.ends_with(
                "though its call was not cancelled or answered on that connection and the \
                 session did not end: a session lets its tools finish, those of a connection \
                 that ended too"
            ),
        "{err}"
    );
    // Dropped as the session ended: no failure of this kind.
    let dropped = cut.executions[i].dropped.unwrap();
    let mut ended = cut.clone();
    ended.events.push(TimedEvent {
        at: dropped,
        event: LiveEvent::Disconnected {
            code: Some(1000),
            reason: "disconnected by the client".to_string(),
            class: None,
        },
    });
    let verdict = verdict(invariants::LIVENESS, &ended);
    assert!(
        verdict
            .as_ref()
            .err()
            .is_none_or(|e| !e.contains("a session lets its tools finish")),
        "{verdict:?}"
    );
}

/// Call ids belong to their connection: a cancellation on the connection
/// before names another call with the same id. A passing run of a
/// resuming agent where a tool run on a later connection was dropped by
/// its own connection's cancellation fails `liveness` once that
/// cancellation is moved to the connection before (as when a session
/// lets a new connection's cancellation of `call-1` stop the old
/// connection's `call-1`).
#[test]
fn only_a_cancellation_on_its_own_connection_excuses_a_dropped_run() {
    let connection_at = |record: &RunRecord, at: Duration| {
        1 + record
            .events
            .iter()
            .take_while(|e| e.at <= at)
            .filter(|e| matches!(e.event, LiveEvent::Resumed { .. }))
            .count()
    };
    let found = ["support", "resumable", "pharmacy"]
        .iter()
        .find_map(|name| {
            let soak = Soak::agent(&agent(name)).check_determinism_every(0);
            (0..200).find_map(|s| {
                let run = soak.run_seed(Seed::new(s));
                let record = run.record.filter(|_| run.failures.is_empty())?;
                record.executions.iter().find_map(|x| {
                    let (id, dropped) = (x.call_id.clone()?, x.dropped?);
                    let on = connection_at(&record, x.started);
                    // Where its connection began, and its own cancellation.
                    let began = record.events.iter().position(|e| {
                        matches!(e.event, LiveEvent::Resumed { .. })
                            && connection_at(&record, e.at) == on
                            && on > 1
                    })?;
                    let cancelled = record.events.iter().position(|e| {
                    e.at <= dropped
                        && e.at >= x.started
                        && matches!(&e.event, LiveEvent::ToolCancelled { ids } if ids.contains(&id))
                })?;
                    Some((record.clone(), id, began, cancelled))
                })
            })
        });
    let (good, id, began, cancelled) =
        found.expect("a resuming run with a later connection's tool run stopped by a cancellation");
    assert_eq!(verdict(invariants::LIVENESS, &good), Ok(()));
    let mut moved = good.clone();
    let mut cancellation = moved.events.remove(cancelled);
    cancellation.at = moved.events[began].at;
    moved.events.insert(began, cancellation);
    let err = verdict(invariants::LIVENESS, &moved).unwrap_err();
    assert!(
        err.contains(&format!("({id}) started at t=")) && err.contains("on that connection"),
        "{err}"
    );
}

/// A run that timed out is dropped inside its task, and the session's
/// error answer follows a moment later (the control lane may yield in
/// between): that answer excuses the drop. Any other answer after the
/// drop does not, and neither does a timeout's error long after it.
#[test]
fn a_timeout_answered_just_after_its_drop_is_no_failure() {
    let (good, i) = finished_run();
    let mut timed_out = good.clone();
    let run = &mut timed_out.executions[i];
    let id = run.call_id.clone().unwrap();
    let dropped = run.finished.take().unwrap();
    run.dropped = Some(dropped);
    run.outcome = ExecutionOutcome::Unfinished;
    let tool = run.tool.clone();
    let answer_at = |record: &mut RunRecord, after: Duration, error: &str| {
        for e in &mut record.events {
            if let LiveEvent::ToolResponse {
                id: answered,
                response,
                ..
            } = &mut e.event
                && *answered == id
            {
                e.at = dropped + after;
                *response = serde_json::json!({ "error": error });
            }
        }
        record.events.sort_by_key(|e| e.at);
    };
    let timeout = format!("{tool} timed out after 10s");
    let mut soon = timed_out.clone();
    answer_at(&mut soon, Duration::from_millis(2), &timeout);
    assert_eq!(verdict(invariants::LIVENESS, &soon), Ok(()));
    let mut other = timed_out.clone();
    answer_at(&mut other, Duration::from_millis(2), "the city is unknown");
    let err = verdict(invariants::LIVENESS, &other).unwrap_err();
    assert!(err.contains(&format!("({id}) started at t=")), "{err}");
    let mut late = timed_out;
    answer_at(&mut late, Duration::from_secs(1), &timeout);
    let err = verdict(invariants::LIVENESS, &late).unwrap_err();
    assert!(err.contains(&format!("({id}) started at t=")), "{err}");
}
