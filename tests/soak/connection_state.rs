//! The keys a resuming session writes about its connections follow its
//! events (`telemetry`): `session:connection` and `session:resumed` at
//! each `resumed`, `failed` at each `resumption_failed`, the attempt at
//! each `reconnecting`.

use livesim::Seed;
use livesim::session::LiveEvent;
use livesim::soak::{RunRecord, Soak, invariants};
use serde_json::json;

use super::{agent, verdict};

/// A passing `sim/pharmacy` run that started a fresh session.
fn fresh_run() -> RunRecord {
    let soak = Soak::agent(&agent("pharmacy")).check_determinism_every(0);
    (0..100)
        .find_map(|s| {
            let run = soak.run_seed(Seed::new(s));
            let record = run.record.filter(|_| run.failures.is_empty())?;
            let fresh = record
                .delivered()
                .any(|e| matches!(e, LiveEvent::Resumed { fresh: true, .. }));
            fresh.then_some(record)
        })
        .expect("a pharmacy seed under 100 that starts a fresh session")
}

/// A session that writes `resumed` for a fresh session, or leaves a new
/// connection's number unwritten, fails `telemetry`, which names the
/// first write that parts from what the events call for.
#[test]
fn the_connection_keys_follow_the_events() {
    let good = fresh_run();
    assert_eq!(verdict(invariants::TELEMETRY, &good), Ok(()));

    let fresh = good
        .journal
        .iter()
        .position(|m| m.key == "session:resumed" && m.value == json!("fresh"))
        .expect("the journal says the session started fresh");
    let mut said_resumed = good.clone();
    said_resumed.journal[fresh].value = json!("resumed");
    let err = verdict(invariants::TELEMETRY, &said_resumed).unwrap_err();
    assert!(
        err.contains(
            "is session:resumed = \"resumed\", but the events call for session:resumed = \"fresh\""
        ),
        "{err}"
    );

    let mut unwritten = good.clone();
    let connection = unwritten
        .journal
        .iter()
        .position(|m| m.key == "session:connection")
        .unwrap();
    unwritten.journal.remove(connection);
    let err = verdict(invariants::TELEMETRY, &unwritten).unwrap_err();
    assert!(
        err.contains("but the events call for session:connection = 2")
            && err.ends_with("the state does not follow the session's connections"),
        "{err}"
    );
}
