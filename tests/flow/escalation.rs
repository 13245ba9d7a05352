//! Escalation: after enough failures or interruptions a step escalates
//! once, and its tools are refused from then on.

use livesim::flow::{Conversation, Enforcement, FlowEntry, FlowMonitor, NoState, Verdict};

fn lookup_then_answer() -> livesim::flow::CompiledConversation {
    Conversation::new()
        .stage("lookup")
        .allow(["find_order", "ask_again"])
        .slot("order_id")
        .escalate_after_tool_failures(2)
        .escalate_after_interruptions(3)
        .stage("answer")
        .allow(["explain_order"])
        .compile()
        .unwrap()
}

#[test]
fn failures_escalate_the_stage_once() {
    let convo = lookup_then_answer();
    let mut monitor = convo.monitor(Enforcement::Enforce);
    monitor.gate("find_order", "c1", &NoState).unwrap();
    let first = monitor.record_result("c1", false, &NoState).unwrap();
    assert_eq!(first.len(), 1); // just the result
    // A timeout with no result counts too.
    let second = monitor.record_failure("find_order", &NoState);
    assert_eq!(
        second,
        [
            FlowEntry::ToolFailed {
                tool: "find_order".into()
            },
            FlowEntry::Escalated {
                stage: "lookup".into(),
                reason: "escalated after 2 tool failures".into()
            },
        ]
    );
    assert_eq!(
        monitor.escalations(),
        [("lookup", "escalated after 2 tool failures")]
    );
    let refused = monitor.gate("ask_again", "c2", &NoState).unwrap();
    assert_eq!(
        refused.verdict,
        Verdict::Denied {
            reason: "ask_again is not allowed now: stage lookup escalated after 2 tool failures"
                .into()
        }
    );
    // Further failures do not escalate it again.
    assert_eq!(
        monitor.record_failure("find_order", &NoState),
        [FlowEntry::ToolFailed {
            tool: "find_order".into()
        }]
    );
}

#[test]
fn interruptions_escalate_the_stage() {
    let mut monitor = lookup_then_answer().monitor(Enforcement::Enforce);
    assert_eq!(
        monitor.record_interruption(&NoState),
        [FlowEntry::Interrupted]
    );
    assert_eq!(monitor.record_interruption(&NoState).len(), 1);
    let third = monitor.record_interruption(&NoState);
    assert_eq!(
        third[1],
        FlowEntry::Escalated {
            stage: "lookup".into(),
            reason: "escalated after 3 interruptions".into()
        }
    );
    assert!(
        !monitor
            .gate("find_order", "c1", &NoState)
            .unwrap()
            .admitted()
    );
    // An escalated stage stays active and can still complete.
    let filled = serde_json::json!({"order_id": "o-1"});
    assert_eq!(monitor.evaluate_turn(&filled).active, ["answer"]);
    assert!(
        monitor
            .gate("explain_order", "c2", &filled)
            .unwrap()
            .admitted()
    );
}

#[test]
fn failures_count_toward_the_step_that_allows_the_tool() {
    let spec = livesim::flow::Flow::new()
        .step("a")
        .allow(["search"])
        .escalate_after_tool_failures(1)
        .step("b")
        .allow(["book"])
        .escalate_after_tool_failures(1)
        .build()
        .unwrap();
    let mut monitor = FlowMonitor::new(spec, Enforcement::Enforce);
    let entries = monitor.record_failure("search", &NoState);
    assert_eq!(
        entries[1],
        FlowEntry::Escalated {
            stage: "a".into(),
            reason: "escalated after 1 tool failure".into()
        }
    );
    assert!(monitor.gate("book", "c1", &NoState).unwrap().admitted());
    // A tool no active step allows counts toward every active step.
    let entries = monitor.record_failure("unknown", &NoState);
    assert_eq!(entries.len(), 2);
    assert_eq!(monitor.escalations().len(), 2);
}

#[test]
fn escalation_under_observe_is_recorded_not_enforced() {
    let mut monitor = lookup_then_answer().monitor(Enforcement::Observe);
    monitor.record_failure("find_order", &NoState);
    monitor.record_failure("find_order", &NoState);
    let decision = monitor.gate("find_order", "c1", &NoState).unwrap();
    assert!(decision.admitted());
    assert_eq!(
        decision.reason(),
        Some("find_order is not allowed now: stage lookup escalated after 2 tool failures")
    );
}
