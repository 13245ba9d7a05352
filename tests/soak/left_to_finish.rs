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
    let err = verdict(invariants::LIVENESS, &cut).unwrap_err();
    assert!(
        err.contains(&format!("({id}) started at t="))
            && err.ends_with(
                "though its call was not cancelled and the session did not end: a session \
                 lets its tools finish, those of a connection that ended too"
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
