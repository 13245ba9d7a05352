//! Observe mode: every call is admitted, and what Enforce would have
//! refused is recorded with the same reason.

use livesim::flow::{Enforcement, FlowEntry, FlowMonitor, NoState, Verdict};
use serde_json::json;

use crate::governance::verify_then_pay;

#[test]
fn observe_admits_and_records_what_enforce_would_refuse() {
    let mut enforce = FlowMonitor::new(verify_then_pay(), Enforcement::Enforce);
    let mut observe = FlowMonitor::new(verify_then_pay(), Enforcement::Observe);
    let refused = enforce.gate("take_payment", "call-1", &NoState).unwrap();
    let observed = observe.gate("take_payment", "call-1", &NoState).unwrap();

    let reason = refused.reason().unwrap().to_string();
    assert_eq!(
        observed.verdict,
        Verdict::WouldDeny {
            reason: reason.clone()
        }
    );
    assert!(observed.admitted());
    assert_eq!(observed.refusal(), None); // the tool runs; nothing to answer in its place
    assert_eq!(
        observed.entries(),
        [
            FlowEntry::ToolCall {
                tool: "take_payment".into(),
                id: "call-1".into()
            },
            FlowEntry::ToolWouldDeny {
                tool: "take_payment".into(),
                id: "call-1".into(),
                reason: reason.clone()
            },
        ]
    );
    assert_eq!(
        observed.entries()[1].to_pair(),
        (
            "flow:tool_would_deny".to_string(),
            json!({"tool": "take_payment", "id": "call-1", "reason": reason})
        )
    );
}

#[test]
fn observed_calls_count_as_outcomes() {
    // Under Observe the payment ran, so its outcome is a fact the flow sees.
    let mut monitor = FlowMonitor::new(verify_then_pay(), Enforcement::Observe);
    monitor.gate("take_payment", "c1", &NoState).unwrap();
    let entries = monitor.record_result("c1", true, &NoState).unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(monitor.tally("take_payment").ok, 1);
    // `pay` is still waiting for `verify`: a step is not done before it is active.
    assert_eq!(monitor.evaluate_turn(&NoState).active, ["verify"]);
    monitor.gate("verify_identity", "c2", &NoState).unwrap();
    monitor.record_result("c2", true, &NoState).unwrap();
    // Once active, pay's guard already holds: both complete in one evaluation.
    assert!(monitor.evaluate_turn(&NoState).active.is_empty());
}

#[test]
fn an_allowed_call_under_observe_is_plainly_admitted() {
    let mut monitor = FlowMonitor::new(verify_then_pay(), Enforcement::Observe);
    let decision = monitor.gate("verify_identity", "c1", &NoState).unwrap();
    assert_eq!(decision.verdict, Verdict::Admitted);
    assert_eq!(decision.entries().len(), 1);
    assert_eq!(
        monitor.explain_tool("take_payment", &NoState).to_string(),
        "tool take_payment: admitted (observe); enforce would refuse: take_payment is not \
         allowed now: active steps are [verify], which allow [verify_identity]; take_payment \
         is allowed only in step pay, which waits for [verify]"
    );
}
