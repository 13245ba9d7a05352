//! What the session does with each failure fixture: a clear error or
//! event, nothing lost that should be kept, and nothing hangs (every test
//! runs under the simulated runtime, whose watchdog reports a hang as a
//! deadlock or a time limit).

use std::time::Duration;

use livesim::Seed;
use livesim::executor::Simulation;
use livesim::prelude::*;
use livesim::testing::fixtures;
use livesim::testing::{ScriptedRun, ScriptedServer};
use serde_json::json;

fn simulate<T: 'static>(test: impl std::future::Future<Output = T> + 'static) -> T {
    Simulation::new(Seed::new(7))
        .time_limit(Duration::from_secs(120))
        .run(|| test)
        .expect("the run finishes")
        .value
}

async fn play(script: ScriptedServer) -> ScriptedRun {
    script
        .play(Live::builder().tools(T::simple("lookup", "", |_| async { Ok(json!({})) })))
        .await
        .unwrap()
}

fn disconnected(run: &ScriptedRun) -> (Option<u16>, String, Option<String>) {
    run.events()
        .iter()
        .find_map(|e| match e {
            LiveEvent::Disconnected {
                code,
                reason,
                class,
            } => Some((*code, reason.clone(), class.clone())),
            _ => None,
        })
        .expect("the session reports how it ended")
}

#[test]
fn setup_rejected_is_a_setup_error_with_its_class() {
    let error = simulate(async {
        fixtures::setup_rejected()
            .play(Live::builder())
            .await
            .err()
            .unwrap()
            .to_string()
    });
    assert_eq!(
        error,
        "script \"setup-rejected-1007\": the session did not connect: setup rejected: the server closed with 1007 (fatal): API key not valid. Please pass a valid API key."
    );
}

#[test]
fn each_close_class_ends_the_session_with_its_class() {
    let cases = [
        (
            fixtures::closes_invalid_argument(),
            1007,
            "fatal",
            "Request contains an invalid argument.",
        ),
        (
            fixtures::closes_policy_violation(),
            1008,
            "fatal",
            "Requested entity was not found.",
        ),
        (
            fixtures::closes_session_not_found(),
            1008,
            "resume rejected",
            "BidiGenerateContent session not found",
        ),
        (
            fixtures::closes_internal_error(),
            1011,
            "retryable",
            "Internal error encountered.",
        ),
    ];
    for (script, code, class, reason) in cases {
        let name = script.name().to_string();
        let run = simulate(play(script));
        assert_eq!(
            disconnected(&run),
            (Some(code), reason.to_string(), Some(class.to_string())),
            "{name}"
        );
        assert!(!run.handle().is_connected(), "{name}");
        // Text pending at the close was dropped, never emitted in full.
        assert!(!run.events().iter().any(|e| matches!(e, LiveEvent::TextComplete { text, .. } if text == "Hel" || text == "Let me check")), "{name}");
    }
}

#[test]
fn an_abrupt_drop_is_a_retryable_1006() {
    let run = simulate(play(fixtures::drops_abruptly()));
    let (code, reason, class) = disconnected(&run);
    assert_eq!(code, Some(1006));
    assert_eq!(class.as_deref(), Some("retryable"));
    assert!(reason.contains("without a close frame"), "{reason}");
}

#[test]
fn a_go_away_warns_then_the_server_closes_on_time() {
    let (run, ended_at) = simulate(async {
        let started = livesim::executor::now();
        let run = play(fixtures::goes_away(Duration::from_secs(2))).await;
        (run, livesim::executor::now() - started)
    });
    assert!(run.events().iter().any(
        |e| matches!(e, LiveEvent::GoAway { time_left: Some(d) } if *d == Duration::from_secs(2))
    ));
    assert_eq!(disconnected(&run).0, Some(1000));
    assert!(
        ended_at >= Duration::from_secs(2),
        "the close came after the time left"
    );
}

#[test]
fn duplicate_call_ids_are_answered_once() {
    let run = simulate(play(fixtures::duplicate_call_ids("lookup")));
    assert_eq!(run.tool_responses().len(), 1);
    assert_eq!(run.tool_responses()[0]["id"], "dup-1");
    let warnings = run
        .events()
        .iter()
        .filter(|e| matches!(e, LiveEvent::Warning { .. }))
        .count();
    assert_eq!(warnings, 2);
}

#[test]
fn unknown_messages_are_events_and_the_session_goes_on() {
    let run = simulate(play(fixtures::unknown_messages()));
    let unknown: Vec<_> = run
        .events()
        .iter()
        .filter_map(|e| match e {
            LiveEvent::Unknown { message } => Some(message.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(unknown[0], json!({ "newFeature": { "x": 1 } }));
    assert_eq!(
        unknown[1]["voiceActivity"]["voiceActivityType"],
        "ACTIVITY_START"
    );
    assert!(
        run.events()
            .iter()
            .any(|e| matches!(e, LiveEvent::TextComplete { text, .. } if text == "Still fine."))
    );
    assert!(run.handle().is_connected());
}

#[test]
fn malformed_frames_are_warnings_and_the_session_recovers() {
    let run = simulate(play(fixtures::malformed_frames()));
    let warnings: Vec<String> = run
        .events()
        .iter()
        .filter_map(|e| match e {
            LiveEvent::Warning { message } => Some(message.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(warnings.len(), 3, "{warnings:#?}");
    assert!(
        warnings[0].contains("frame #1") && warnings[0].contains("not UTF-8"),
        "{}",
        warnings[0]
    );
    assert!(
        warnings[1].contains("frame #2") && warnings[1].contains("not a valid"),
        "{}",
        warnings[1]
    );
    assert!(warnings[2].contains("frame #3"), "{}", warnings[2]);
    assert!(
        run.events()
            .iter()
            .any(|e| matches!(e, LiveEvent::TextComplete { text, .. } if text == "Recovered."))
    );
}

#[test]
fn text_that_arrives_with_turn_complete_is_kept() {
    let run = simulate(play(fixtures::text_with_turn_complete()));
    assert_eq!(run.model_text(), "Hello, world.");
    let log = run.handle().session_log();
    let full: Vec<&LiveEvent> = log
        .iter()
        .filter(|e| matches!(e, LiveEvent::TextComplete { .. }))
        .collect();
    assert_eq!(full.len(), 1);
    assert!(matches!(full[0], LiveEvent::TextComplete { text, .. } if text == "Hello, world."));
}

/// Scripts are data: every fixture survives JSON unchanged.
#[test]
fn fixtures_round_trip_through_json() {
    for script in fixtures::all() {
        let text = serde_json::to_string(&script.to_json()).unwrap();
        let back = ScriptedServer::from_json_str(&text, script.name()).unwrap();
        assert_eq!(back, script, "{}", script.name());
    }
}
