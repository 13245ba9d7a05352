//! The seed's governance example at the monitor level: a payment refused
//! before verification, admitted after it, and the journal each decision
//! produces.

use std::collections::BTreeMap;

use livesim::flow::{Enforcement, Flow, FlowEntry, FlowMonitor, FlowSpec, Guard, Verdict};
use serde_json::{Value, json};

pub fn verify_then_pay() -> FlowSpec {
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

/// The script of the seed: take_payment, verify_identity, take_payment, with
/// each admitted call completing ok before the next arrives.
#[test]
fn payment_is_refused_until_identity_is_verified() {
    let mut monitor = FlowMonitor::new(verify_then_pay(), Enforcement::Enforce);
    let state: BTreeMap<String, Value> = BTreeMap::new();
    let mut journal: Vec<(String, Value)> = Vec::new();
    let mut ran = Vec::new();

    for (tool, id) in [
        ("take_payment", "call-1"),
        ("verify_identity", "call-2"),
        ("take_payment", "call-3"),
    ] {
        let decision = monitor.gate(tool, id, &state).unwrap();
        journal.extend(decision.entries().iter().map(FlowEntry::to_pair));
        if decision.admitted() {
            ran.push(tool);
            let entries = monitor.record_result(id, true, &state).unwrap();
            journal.extend(entries.iter().map(FlowEntry::to_pair));
        } else {
            assert_eq!(
                decision.refusal().unwrap(),
                json!({"error": decision.reason().unwrap()})
            );
        }
    }
    journal.push(monitor.evaluate_turn(&state).entry().to_pair());

    assert_eq!(ran, ["verify_identity", "take_payment"]); // the early call never ran
    let reason = "take_payment is not allowed now: active steps are [verify], which allow \
                  [verify_identity]; take_payment is allowed only in step pay, which waits for [verify]";
    assert_eq!(
        journal,
        [
            (
                "flow:tool_denied".to_string(),
                json!({"tool": "take_payment", "id": "call-1", "reason": reason})
            ),
            (
                "flow:tool_call".to_string(),
                json!({"tool": "verify_identity", "id": "call-2"})
            ),
            (
                "flow:tool_result".to_string(),
                json!({"tool": "verify_identity", "id": "call-2", "ok": true})
            ),
            (
                "flow:tool_call".to_string(),
                json!({"tool": "take_payment", "id": "call-3"})
            ),
            (
                "flow:tool_result".to_string(),
                json!({"tool": "take_payment", "id": "call-3", "ok": true})
            ),
            ("flow:active".to_string(), json!([])),
        ]
    );
}

#[test]
fn a_failed_verification_does_not_open_payment() {
    let mut monitor = FlowMonitor::new(verify_then_pay(), Enforcement::Enforce);
    let state = BTreeMap::new();
    monitor.gate("verify_identity", "c1", &state).unwrap();
    monitor.record_result("c1", false, &state).unwrap();
    let decision = monitor.gate("take_payment", "c2", &state).unwrap();
    assert!(matches!(decision.verdict, Verdict::Denied { .. }));
    assert_eq!(monitor.evaluate_turn(&state).active, ["verify"]);
}

#[test]
fn a_running_call_does_not_complete_its_step() {
    let mut monitor = FlowMonitor::new(verify_then_pay(), Enforcement::Enforce);
    let state = BTreeMap::new();
    monitor.gate("verify_identity", "c1", &state).unwrap();
    assert_eq!(monitor.evaluate_turn(&state).active, ["verify"]);
    assert_eq!(
        monitor.check("take_payment", &state).unwrap_err(),
        "take_payment is not allowed now: active steps are [verify], which allow \
         [verify_identity]; take_payment is allowed only in step pay, which waits for [verify]"
    );
    monitor.record_result("c1", true, &state).unwrap();
    assert_eq!(monitor.evaluate_turn(&state).active, ["pay"]);
    assert_eq!(monitor.turns(), 2);
}

#[test]
fn parallel_steps_are_active_together() {
    let spec = Flow::new()
        .step("greet")
        .allow(["greet"])
        .done(Guard::called("greet"))
        .step("lookup")
        .allow(["find_order"])
        .done(Guard::exists("order_id"))
        .step("refund")
        .after("greet")
        .after("lookup")
        .allow(["refund"])
        .build()
        .unwrap();
    let mut monitor = FlowMonitor::new(spec, Enforcement::Enforce);
    let mut state = BTreeMap::new();
    assert_eq!(monitor.evaluate_turn(&state).active, ["greet", "lookup"]);
    assert!(monitor.gate("greet", "c1", &state).unwrap().admitted());
    assert_eq!(monitor.evaluate_turn(&state).active, ["lookup"]);
    state.insert("order_id".to_string(), json!("o-7"));
    assert_eq!(monitor.evaluate_turn(&state).active, ["refund"]);
    assert!(monitor.gate("refund", "c2", &state).unwrap().admitted());
}

#[test]
fn an_empty_flow_admits_nothing() {
    let mut monitor = FlowMonitor::new(FlowSpec::empty(), Enforcement::Enforce);
    let decision = monitor.gate("anything", "c1", &BTreeMap::new()).unwrap();
    assert_eq!(
        decision.reason().unwrap(),
        "anything is not allowed now: the flow has no steps; no step of this flow allows anything"
    );
}

#[test]
fn a_decision_serializes_with_its_verdict() {
    let mut monitor = FlowMonitor::new(verify_then_pay(), Enforcement::Enforce);
    let state = BTreeMap::new();
    let admitted = monitor.gate("verify_identity", "c1", &state).unwrap();
    assert_eq!(
        serde_json::to_value(&admitted).unwrap(),
        json!({"tool": "verify_identity", "call_id": "c1", "verdict": "admitted"})
    );
    let denied = monitor.gate("refund", "c2", &state).unwrap();
    assert_eq!(
        serde_json::to_value(&denied).unwrap()["verdict"],
        json!("denied")
    );
    assert_eq!(
        denied.to_string(),
        format!("refund (c2): denied: {}", denied.reason().unwrap())
    );
}

/// When two connections the session left each issued `call-1`, the result
/// that arrives is the one still running (the older one has finished), and
/// it counts toward its tool's tally.
#[test]
fn a_left_result_completes_the_call_still_running() {
    let spec = Flow::new().step("look").allow(["lookup"]).build().unwrap();
    let mut monitor = FlowMonitor::new(spec, Enforcement::Enforce);
    let state = json!({});
    assert!(monitor.gate("lookup", "call-1", &state).unwrap().admitted());
    monitor.record_result("call-1", true, &state).unwrap();
    monitor.new_connection();
    assert!(monitor.gate("lookup", "call-1", &state).unwrap().admitted());
    monitor.new_connection();
    monitor.record_left_result("call-1", true, &state).unwrap();
    assert_eq!(monitor.tally("lookup").ok, 2);
}
