//! Explanations: active steps, failing guard leaves, tool answers, as text
//! and as JSON.

use livesim::flow::{ActiveStep, Enforcement, Explanation, Flow, FlowMonitor, Guard, NoState};
use serde_json::json;

use crate::conversation::booking;
use crate::governance::verify_then_pay;

#[test]
fn the_explanation_walks_to_the_failing_leaves() {
    let spec = Flow::new()
        .step("identify")
        .allow(["lookup_account", "verify_identity"])
        .done(Guard::all([
            Guard::called_ok("verify_identity"),
            Guard::any([Guard::equals("tier", "gold"), Guard::is_true("manager_ok")]),
            Guard::not(Guard::is_true("flagged")),
        ]))
        .step("pay")
        .after("identify")
        .allow(["take_payment"])
        .build()
        .unwrap();
    let mut monitor = FlowMonitor::new(spec, Enforcement::Enforce);
    monitor.gate("verify_identity", "c1", &NoState).unwrap();
    monitor.record_result("c1", false, &NoState).unwrap();
    let state = json!({"tier": "silver", "flagged": true});
    let why = monitor.explain(&state);
    let leaves: Vec<String> = why.active[0]
        .waits_for
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        leaves,
        [
            "called_ok(verify_identity): verify_identity has not completed ok (it failed once)",
            "equals(tier, \"gold\"): tier is \"silver\", not \"gold\"",
            "is_true(manager_ok): manager_ok is not set",
            "not(is_true(flagged)): is_true(flagged) holds, and it must not",
        ]
    );
}

#[test]
fn the_explanation_serializes_and_displays() {
    let monitor = FlowMonitor::new(verify_then_pay(), Enforcement::Enforce);
    let why = monitor.explain(&NoState);
    let reason = "take_payment is not allowed now: active steps are [verify], which allow \
                  [verify_identity]; take_payment is allowed only in step pay, which waits for [verify]";
    assert_eq!(
        serde_json::to_value(&why).unwrap(),
        json!({
            "enforcement": "enforce",
            "turns": 0,
            "done": [],
            "active": [{
                "id": "verify",
                "allow": ["verify_identity"],
                "done_when": "called_ok(verify_identity)",
                "waits_for": [{
                    "guard": "called_ok(verify_identity)",
                    "why": "verify_identity has not completed ok (it has not been called)"
                }],
                "gates": []
            }],
            "waiting": [{"id": "pay", "waits_for_steps": ["verify"]}],
            "tools": [
                {"tool": "take_payment", "admitted": false, "reason": reason},
                {"tool": "verify_identity", "admitted": true}
            ]
        })
    );
    assert_eq!(
        why.to_string(),
        format!(
            "flow (enforce), after 0 turns\n\
             done: []\n\
             active verify: allows [verify_identity]\n\
             \x20 done when called_ok(verify_identity); waits for:\n\
             \x20   called_ok(verify_identity): verify_identity has not completed ok (it has not been called)\n\
             waiting pay: for [verify]\n\
             tool take_payment: refused: {reason}\n\
             tool verify_identity: admitted\n"
        )
    );
}

#[test]
fn a_gate_is_explained_open_or_closed() {
    let mut monitor = booking().monitor(Enforcement::Enforce);
    let state = json!({"party_size": 3});
    monitor.evaluate_turn(&state);
    let why = monitor.explain(&state);
    assert_eq!(why.done, ["party"]);
    let gate = &why.active[0].gates[0];
    assert_eq!(gate.tool, "book_table");
    assert_eq!(gate.unmet[0].why, "confirmed is not set");
    assert!(why.to_string().contains(
        "  gate book_table when is_true(confirmed): closed\n    is_true(confirmed): confirmed is not set\n"
    ));
    let confirmed = json!({"party_size": 3, "confirmed": true});
    assert!(
        monitor.explain(&confirmed).active[0].gates[0]
            .unmet
            .is_empty()
    );
    assert!(monitor.explain_tool("book_table", &confirmed).admitted);
}

#[test]
fn any_tool_can_be_asked_about() {
    let monitor = FlowMonitor::new(verify_then_pay(), Enforcement::Enforce);
    let answer = monitor.explain_tool("send_email", &NoState);
    assert!(!answer.admitted);
    assert_eq!(
        answer.reason.unwrap(),
        "send_email is not allowed now: active steps are [verify], which allow \
         [verify_identity]; no step of this flow allows send_email"
    );
}

/// An active step whose done guard holds prints "holds now" rather than an
/// empty "waits for" list. `explain` never builds one (the monitor counts
/// such a step done), so the explanation is written by hand, as a caller
/// comparing or reporting explanations may.
#[test]
fn an_active_step_whose_guard_holds_prints_so() {
    let why = Explanation {
        enforcement: Enforcement::Observe,
        turns: 1,
        done: vec![],
        active: vec![ActiveStep {
            id: "confirm".into(),
            allow: vec!["confirm_order".into()],
            done_when: Some("is_true(confirmed)".into()),
            waits_for: vec![],
            gates: vec![],
            escalated: None,
        }],
        waiting: vec![],
        tools: vec![],
    };
    assert_eq!(
        why.to_string(),
        "flow (observe), after 1 turn\n\
         done: []\n\
         active confirm: allows [confirm_order]\n\
         \x20 done when is_true(confirmed): holds now\n"
    );
}

/// A step that waits lists only the steps before it that are not done yet,
/// and an escalated active step says why it escalated, in the explanation
/// and in its text.
#[test]
fn waiting_names_only_unfinished_steps_and_an_escalation_is_explained() {
    let spec = Flow::new()
        .step("identify")
        .allow(["verify_identity"])
        .done(Guard::called_ok("verify_identity"))
        .step("lookup")
        .after("identify")
        .allow(["find_order"])
        .done(Guard::called_ok("find_order"))
        .escalate_after_tool_failures(1)
        .step("refund")
        .after("identify")
        .after("lookup")
        .allow(["issue_refund"])
        .build()
        .unwrap();
    let mut monitor = FlowMonitor::new(spec, Enforcement::Enforce);
    let before = monitor.explain(&NoState);
    assert_eq!(before.waiting[1].id, "refund");
    assert_eq!(before.waiting[1].waits_for_steps, ["identify", "lookup"]);

    monitor.gate("verify_identity", "c1", &NoState).unwrap();
    monitor.record_result("c1", true, &NoState).unwrap();
    monitor.evaluate_turn(&NoState);
    monitor.gate("find_order", "c2", &NoState).unwrap();
    monitor.record_result("c2", false, &NoState).unwrap();
    let why = monitor.explain(&NoState);
    assert_eq!(why.done, ["identify"]);
    assert_eq!(why.waiting.len(), 1);
    assert_eq!(why.waiting[0].id, "refund");
    assert_eq!(why.waiting[0].waits_for_steps, ["lookup"]);
    assert_eq!(why.active[0].id, "lookup");
    assert_eq!(
        why.active[0].escalated.as_deref(),
        Some("escalated after 1 tool failure")
    );
    assert!(
        why.to_string()
            .contains("active lookup: allows [find_order]; escalated after 1 tool failure, so it admits none of them"),
        "{why}"
    );
    assert!(
        why.to_string().contains("waiting refund: for [lookup]\n"),
        "{why}"
    );
}
