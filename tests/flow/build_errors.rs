//! What `build` and `compile` reject, and what they say.

use livesim::flow::{Conversation, Flow, FlowError, Guard};

#[test]
fn an_unknown_after_target_is_named() {
    let err = Flow::new()
        .step("verify")
        .step("pay")
        .after("verfy")
        .build()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "step `pay` comes after `verfy`, which is not a step (the steps are: verify, pay)"
    );
}

#[test]
fn a_cycle_is_named_step_by_step() {
    let err = Flow::new()
        .step("a")
        .after("c")
        .step("b")
        .after("a")
        .step("c")
        .after("b")
        .build()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "steps wait for each other in a cycle, so none of them can ever start: `a` comes after \
         `c`, which comes after `b`, which comes after `a`; remove one of these `after` links"
    );
    let err = Flow::new().step("a").after("a").build().unwrap_err();
    assert_eq!(
        err,
        FlowError::Cycle {
            noun: "step",
            cycle: vec!["a".into()]
        }
    );
}

#[test]
fn a_duplicate_id_is_named() {
    let err = Flow::new()
        .step("verify")
        .step("verify")
        .build()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "step `verify` is declared twice: step ids must be unique"
    );
}

#[test]
fn other_clear_mistakes_are_named() {
    let cases = [
        (
            Flow::new().step(""),
            "step number 1 has an empty id: give every step a name",
        ),
        (
            Flow::new().done(Guard::called_ok("x")).step("a"),
            "done(..) was called before any step: start with .step(\"id\")",
        ),
        (
            Flow::new().step("a").allow([""]),
            "step `a`: allow lists an empty tool name",
        ),
        (
            Flow::new().step("a").done(Guard::all([Guard::is_true("")])),
            "step `a`: done guard: is_true() names no state key",
        ),
        (
            Flow::new().step("a").gate("t", Guard::any([])),
            "step `a`: the gate of t: any() has no guards, so it could never hold; drop it",
        ),
        (
            Flow::new().step("a").done(Guard::not(Guard::all([]))),
            "step `a`: done guard: all() has no guards, so it would always hold; drop it",
        ),
        (
            Flow::new().step("a").escalate_after_interruptions(0),
            "step `a`: escalate after 0 interruptions would escalate at once: use 1 or more",
        ),
    ];
    for (flow, message) in cases {
        assert_eq!(flow.build().unwrap_err().to_string(), message);
    }
}

#[test]
fn conversation_errors_speak_of_stages() {
    let err = Conversation::new()
        .stage("party")
        .stage("book")
        .after("paty")
        .compile()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "stage `book` comes after `paty`, which is not a stage (the stages are: party, book)"
    );
    let err = Conversation::new()
        .slot("x")
        .stage("a")
        .compile()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "slot(..) was called before any stage: start with .stage(\"id\")"
    );
    let err = Conversation::new()
        .stage("a")
        .stage("a")
        .compile()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "stage `a` is declared twice: stage ids must be unique"
    );
}
