//! The user hanging up while calls run, or while the session reconnects
//! after the script ended its connection (the `hang-up` fault): the soak
//! ends the session at once, the session says it ended, stops its tools
//! and opens no connection after, and `liveness` catches a tool that
//! finishes afterwards, a session that never says it ended, or one that
//! goes on reconnecting.

use std::time::Duration;

use livesim::Seed;
use livesim::session::LiveEvent;
use livesim::soak::{ExecutionOutcome, RunRecord, Soak, ends_in_hang_up, invariants};
use serde_json::json;

use super::{agent, verdict};

/// A payment run whose user hung up while a tool ran, and which passed;
/// with the index of a run that was going when the user hung up.
fn hung_up_run() -> (RunRecord, usize) {
    let soak = Soak::agent(&agent("payment")).check_determinism_every(0);
    (0..400)
        .map(|s| soak.run_seed(Seed::new(s)))
        .find_map(|run| {
            let record = run.record?;
            let at = record.settling.hung_up_at?;
            let running = record
                .executions
                .iter()
                .position(|e| e.started <= at && e.finished.is_none())?;
            assert!(
                run.failures.is_empty(),
                "seed {}: {:?}",
                record.seed,
                run.failures
            );
            Some((record, running))
        })
        .expect("a payment seed under 400 hangs up while a tool runs")
}

fn disconnected_at(record: &RunRecord) -> Duration {
    record
        .events
        .iter()
        .find(|e| matches!(e.event, LiveEvent::Disconnected { .. }))
        .map(|e| e.at)
        .expect("the session said it ended")
}

/// A run hangs up exactly when its script ends on calls it does not wait
/// for with `hang-up` on; the session then ends at once (its last event
/// `disconnected`, before any tool it was running could finish), the tool
/// never finishes, and no check asks for the answers.
#[test]
fn a_user_who_hangs_up_mid_call_ends_the_session_and_its_tools() {
    let (record, running) = hung_up_run();
    assert!(ends_in_hang_up(&record.faults, record.script.actions()));
    let hung_up = record.settling.hung_up_at.unwrap();
    let ended = disconnected_at(&record);
    assert!(
        ended >= hung_up,
        "ended {ended:?} before the hang-up {hung_up:?}"
    );
    assert_eq!(
        record.delivered().last().map(LiveEvent::kind),
        Some("disconnected")
    );
    let tool = &record.executions[running];
    assert_eq!(tool.outcome, ExecutionOutcome::Unfinished, "{tool:?}");
    assert!(
        record
            .executions
            .iter()
            .all(|e| e.finished.is_none_or(|f| f <= ended))
    );
    // Every call of the last message was left unanswered or answered
    // before the end; none is owed.
    for name in [
        invariants::LIVENESS,
        invariants::ANSWERED_ONCE,
        invariants::WIRE_ORDER,
    ] {
        assert_eq!(verdict(name, &record), Ok(()), "{name}");
    }
}

/// A tool that finishes after the session said it ended breaks
/// `liveness`, naming the tool and both times.
#[test]
fn a_tool_that_outlives_the_hang_up_is_caught() {
    let (mut record, running) = hung_up_run();
    let ended = disconnected_at(&record);
    let tool = &mut record.executions[running];
    tool.finished = Some(ended + Duration::from_millis(400));
    tool.outcome = ExecutionOutcome::Ok(json!({"charged": true}));
    let name = tool.tool.clone();
    let err = verdict(invariants::LIVENESS, &record).unwrap_err();
    assert!(
        err.contains(&name) && err.contains("a session that ends stops its tools"),
        "{err}"
    );
}

/// After the user hangs up, the session must say it ended.
#[test]
fn a_session_that_never_says_it_ended_after_the_hang_up_is_caught() {
    let (mut record, _) = hung_up_run();
    record
        .events
        .retain(|e| !matches!(e.event, LiveEvent::Disconnected { .. }));
    // (Said as the hang-up left unsaid, or as the tool the session
    // stopped, which only a session that ended may do.)
    let err = verdict(invariants::LIVENESS, &record).unwrap_err();
    assert!(
        (err.contains("the user hung up") && err.contains("never said it ended"))
            || (err.contains("was dropped unfinished") && err.contains("the session did not end")),
        "{err}"
    );
}

/// A `sim/resumable` run (hang-ups and closes always on, in memory) whose
/// script ended its connection and whose user hung up once the session
/// said it was reconnecting, and which passed.
fn hung_up_while_reconnecting() -> RunRecord {
    let soak = Soak::agent(&agent("resumable"))
        .fault(livesim::soak::FaultKind::HangUp, 1.0)
        .fault(livesim::soak::FaultKind::Network, 0.0)
        .check_determinism_every(0);
    (0..200)
        .map(|s| soak.run_seed(Seed::new(s)))
        .find_map(|run| {
            let record = run.record?;
            let at = record.settling.hung_up_at?;
            let latest = record.events.iter().filter(|e| e.at <= at).rfind(|e| {
                matches!(
                    e.event,
                    LiveEvent::Reconnecting { .. } | LiveEvent::Resumed { .. }
                )
            })?;
            if !matches!(latest.event, LiveEvent::Reconnecting { .. }) {
                return None;
            }
            assert!(
                run.failures.is_empty(),
                "seed {}: {:?}",
                record.seed,
                run.failures
            );
            Some(record)
        })
        .expect("a resumable seed under 200 hangs up while it reconnects")
}

/// A session the user hangs up on while it reconnects stops there: it
/// says it ended, and opens no connection after (no setup reaches the
/// server, no `reconnecting` or `resumed` follows). The same record with
/// one more attempt a second later fails `liveness`.
#[test]
fn a_user_who_hangs_up_while_the_session_reconnects_stops_it() {
    let record = hung_up_while_reconnecting();
    let at = record.settling.hung_up_at.expect("a hang-up");
    let ended = disconnected_at(&record);
    assert!(ended >= at && ended <= at + Duration::from_millis(250));
    let setups_after = (0..record.sent.len())
        .filter(|&i| record.sent[i].get("setup").is_some() && record.sent_at[i] > at)
        .count();
    assert_eq!(setups_after, 0, "a connection opened after the hang-up");
    assert_eq!(verdict("liveness", &record), Ok(()));

    let mut went_on = record.clone();
    went_on.events.push(livesim::soak::TimedEvent {
        at: ended + Duration::from_secs(1),
        event: LiveEvent::Reconnecting {
            attempt: 2,
            cause: "closed with 1000 (retryable)".to_string(),
        },
    });
    let err = verdict("liveness", &went_on).unwrap_err();
    assert!(err.contains("went on reconnecting"), "{err}");
}
