//! Misusing the flow API gets a clear error: a conversation with an empty
//! slot or input key, a spec file that gates a tool it does not allow.
//! Each error says what is wrong, and the test pins its words (the soak's
//! side: `tests/soak/misuse.rs`).

use livesim::flow::{Conversation, FlowError, Guard, Spec, resolver};
use serde_json::json;

/// A slot declared with an empty key is refused at compile time, naming
/// the stage it is in.
#[test]
fn a_slot_with_an_empty_key_is_refused() {
    let err = Conversation::new()
        .stage("party")
        .allow(["set_party"])
        .slot("")
        .compile()
        .expect_err("an empty slot key compiles");
    assert_eq!(
        err,
        FlowError::Invalid {
            noun: "stage",
            step: "party".into(),
            problem: "a slot has an empty key".into(),
        }
    );
    assert_eq!(err.to_string(), "stage `party`: a slot has an empty key");
}

/// A resolved slot whose resolver reads an empty key is refused at compile
/// time, naming the stage and the slot.
#[test]
fn a_resolved_slot_that_reads_an_empty_key_is_refused() {
    let err = Conversation::new()
        .stage("account")
        .slot("account_id")
        .resolve_slot(
            "balance",
            ["account_id", ""],
            resolver(|_| async move { Ok(json!(1200)) }),
        )
        .compile()
        .expect_err("a resolver reading an empty key compiles");
    assert_eq!(
        err.to_string(),
        "stage `account`: slot balance is resolved from an empty key"
    );
    assert!(matches!(err, FlowError::Invalid { noun: "stage", .. }));
}

/// A flow spec file that gates a tool its step does not allow is refused
/// with the file, the line and column of the step, and what to do (the
/// builder's `gate` allows the tool itself, so only a file can say this).
#[test]
fn a_spec_file_that_gates_a_tool_it_does_not_allow_is_refused() {
    let text = r#"{"v": 1, "kind": "flow", "steps": [
  {"id": "verify", "allow": ["verify_identity"], "done": {"called_ok": "verify_identity"}},
  {"id": "pay", "after": ["verify"], "allow": ["get_balance"],
   "gates": {"take_payment": {"is_true": "amount_confirmed"}}}
]}"#;
    let err = Spec::from_json(text, "pay.spec.json").expect_err("the gate was taken");
    assert_eq!(err.file, "pay.spec.json");
    assert_eq!(err.path.as_deref(), Some("steps[1]"));
    assert_eq!(err.position, Some((3, 3)));
    assert_eq!(
        err.problem,
        "step `pay`: take_payment has a gate but is not in allow: allow it too"
    );
    assert_eq!(
        err.to_string(),
        "pay.spec.json:3:3: at steps[1]: step `pay`: take_payment has a gate but is not in \
         allow: allow it too"
    );
    // The same step with the tool allowed reads.
    let allowed = text.replace(r#"["get_balance"]"#, r#"["get_balance", "take_payment"]"#);
    let spec = Spec::from_json(&allowed, "pay.spec.json").expect("the fixed file reads");
    assert_eq!(
        spec.flow().step("pay").expect("step pay").gates()["take_payment"],
        Guard::is_true("amount_confirmed")
    );
}
