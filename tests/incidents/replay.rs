//! What a replay reports when the spec and the recording disagree, and
//! where `replay_to` stops.

use livesim::flow::{Conversation, Flow, FlowSpec, Guard};
use livesim::simulation::{Scenario, Step};
use serde_json::{Value, json};

use crate::cli::{arg, livesim, scratch};

fn verify_then_pay() -> FlowSpec {
    Flow::new()
        .step("verify")
        .allow(["verify_identity"])
        .done(Guard::called_ok("verify_identity"))
        .step("pay")
        .after("verify")
        .allow(["take_payment"])
        .done(Guard::called_ok("take_payment"))
        .build()
        .unwrap()
}

fn scenario(steps: Value) -> Scenario {
    Scenario::from_json(
        &json!({"name": "recorded", "steps": steps}).to_string(),
        "recorded.scenario.json",
    )
    .unwrap()
}

#[test]
fn a_call_the_recording_refused_and_the_spec_admits_diverges() {
    // Recorded under a stricter flow: the early payment was refused.
    let recorded = scenario(json!([
        {"expect_denied": "verify_identity"},
        "turn", {"expect_active": ["verify"]}
    ]));
    let report = recorded.replay(&verify_then_pay());
    assert_eq!((report.decisions, report.diverged), (2, 1));
    let (line, diverged) = report.divergences().next().unwrap();
    assert_eq!(line.index, 0);
    assert_eq!(diverged.recorded, "refused");
    assert_eq!(diverged.spec, "admits it");
    assert_eq!(
        diverged.why,
        "verify_identity is allowed by the active step [verify]"
    );
}

#[test]
fn results_of_calls_the_spec_refuses_are_shown_but_not_fed_to_the_flow() {
    // Recorded under Observe or a looser spec: the payment ran first.
    let recorded = scenario(json!([
        {"expect_allowed": "take_payment"},
        {"tool_result": {"tool": "take_payment", "ok": true}},
        {"tool_ok": "verify_identity"},
        {"expect_active": ["pay"]},
        {"expect_allowed": "take_payment"},
        {"tool_result": {"tool": "take_payment", "ok": true}},
        "turn", {"expect_active": []}
    ]));
    let report = recorded.replay(&verify_then_pay());
    let text = report.to_string();
    assert!(
        text.contains(
            "  steps[1] take_payment: ok (not fed to the flow: the spec refused this call)\n"
        ),
        "{text}"
    );
    // Only the early payment diverges: the flow saw no payment before the
    // second one, so everything after it agrees with the recording.
    assert_eq!(report.diverged, 1, "{text}");
    assert_eq!(report.turns.len(), 3, "turn 0, then two boundaries");
    assert_eq!(report.turns[1].active, ["pay"]);
    assert!(
        text.ends_with("DIVERGED at 1 of 5 recorded decisions"),
        "{text}"
    );
}

/// A recording whose first call was lost (a journal cut at its start):
/// the result the spec cannot follow is a divergence, and counts as a
/// decision too, so no report diverges at more decisions than it compared.
#[test]
fn a_result_the_spec_cannot_follow_counts_among_the_decisions() {
    let recorded = scenario(json!([
        {"tool_result": {"tool": "verify_identity", "ok": true}},
        "turn", {"expect_active": ["pay"]},
        {"expect_allowed": "take_payment"}
    ]));
    let report = recorded.replay(&verify_then_pay());
    let text = report.to_string();
    assert_eq!((report.decisions, report.diverged), (3, 3), "{text}");
    assert!(text.contains("the spec cannot apply it"), "{text}");
    assert!(
        text.ends_with("DIVERGED at 3 of 3 recorded decisions"),
        "{text}"
    );
}

#[test]
fn escalations_are_noted_on_the_step_that_caused_them() {
    let convo = Conversation::new()
        .stage("collect")
        .allow(["lookup"])
        .slot("name")
        .escalate_after_interruptions(2)
        .compile()
        .unwrap();
    let recorded = scenario(json!([
        "interrupt", "interrupt", {"expect_denied": "lookup"}
    ]));
    let report = recorded.replay(&convo);
    assert!(report.clean(), "{report}");
    assert_eq!(
        report.turns[0].lines[1].note,
        "interrupted; stage collect escalated after 2 interruptions"
    );
}

#[test]
fn replay_to_stops_at_the_turn_boundary_asked_for() {
    let recorded = scenario(json!([
        {"tool_ok": "verify_identity"},
        {"expect_allowed": "take_payment"},
        {"tool_result": {"tool": "take_payment", "ok": false}},
        "turn"
    ]));
    assert_eq!(recorded.turns(), 2);
    let spec = verify_then_pay();
    let at = |turn| recorded.replay_to(&spec, turn).unwrap();
    assert_eq!(at(0).explain().turns, 0);
    assert!(!at(0).explain_tool("take_payment").admitted);
    assert_eq!(at(1).explain().active[0].id, "pay");
    assert_eq!(at(1).monitor().tally("take_payment").calls, 0);
    assert_eq!(at(2).monitor().tally("take_payment").failed, 1);
    let beyond = recorded.replay_to(&spec, 3).unwrap_err();
    assert_eq!((beyond.asked, beyond.turns), (3, 2));
}

#[test]
fn a_scenario_that_holds_replays_clean_and_every_step_is_listed() {
    let recorded = scenario(json!([
        {"expect_denied": "take_payment"},
        {"tool_ok": "verify_identity"},
        {"expect_active": ["pay"]},
        {"set": {"key": "amount", "value": 10}},
        {"tool_failed": "take_payment"}
    ]));
    let report = recorded.replay(&verify_then_pay());
    assert!(report.clean());
    let indices: Vec<usize> = report
        .turns
        .iter()
        .flat_map(|turn| turn.lines.iter().map(|line| line.index))
        .collect();
    // steps[1] (tool_ok) is a call and its result in turn 0.
    assert_eq!(indices, [0, 1, 1, 2, 3, 4]);
    assert_eq!(report.turns[1].lines[1].note, "set amount = 10");
    assert_eq!(
        report.turns[1].lines[2].step,
        Step::ToolFailed("take_payment".into())
    );
    assert_eq!(
        report.to_string().lines().last(),
        Some("CLEAN: the spec reproduces all 3 recorded decisions")
    );
}

#[test]
fn the_json_report_is_the_library_report() {
    let dir = scratch("replay-json");
    let journal = dir.join("paid.journal.jsonl");
    let spec = dir.join("pay.spec.json");
    verify_then_pay().write(&spec).unwrap();
    let lines = [
        json!({"seq": 1, "key": "flow:tool_denied", "value": {"tool": "take_payment", "id": "c1", "reason": "r"}, "timestamp": 0}),
        json!({"seq": 2, "key": "flow:active", "value": ["verify"], "timestamp": 1}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&journal, text).unwrap();
    let out = livesim(&[
        "flow",
        "replay",
        &arg(&spec),
        "--journal",
        &arg(&journal),
        "--format",
        "json",
    ])
    .expect(0);
    let printed: Value = serde_json::from_str(&out.stdout).unwrap();
    let journal = livesim::simulation::JournalFile::read(&journal).unwrap();
    let expected = journal.scenario("paid").unwrap().replay(&verify_then_pay());
    assert_eq!(printed, serde_json::to_value(&expected).unwrap());
    assert_eq!(printed["scenario"], "paid");
    assert_eq!(printed["diverged"], 0);
}

#[test]
fn a_long_value_is_shortened_in_the_note_and_kept_whole_in_the_step() {
    let long = "x".repeat(300);
    let recorded = scenario(json!([{"set": {"key": "transcript", "value": long}}]));
    let report = recorded.replay(&verify_then_pay());
    let line = &report.turns[0].lines[0];
    assert_eq!(
        line.note,
        format!("set transcript = \"{}… (302 characters)", "x".repeat(119))
    );
    assert_eq!(
        line.step,
        Step::Set {
            key: "transcript".into(),
            value: json!(long)
        }
    );
}
