//! Spec files: the documented shape, round trips, and errors that name the
//! file, the line, the member and what was expected.

use livesim::flow::{
    CompiledConversation, Conversation, FlowSpec, Guard, Spec, SpecFileError, resolver,
};
use serde_json::json;

use crate::conversation::booking;
use crate::governance::verify_then_pay;
use crate::scratch::scratch;

#[test]
fn a_flow_file_has_the_documented_shape() {
    let spec = livesim::flow::Flow::new()
        .step("verify")
        .allow(["verify_identity"])
        .done(Guard::called_ok("verify_identity"))
        .step("pay")
        .after("verify")
        .gate("take_payment", Guard::equals("amount_confirmed", json!(10)))
        .done(Guard::not(Guard::called("refund")))
        .escalate_after_tool_failures(3)
        .build()
        .unwrap();
    assert_eq!(
        spec.to_json(),
        r#"{
  "v": 1,
  "kind": "flow",
  "steps": [
    {
      "id": "verify",
      "allow": [
        "verify_identity"
      ],
      "done": {
        "called_ok": "verify_identity"
      }
    },
    {
      "id": "pay",
      "after": [
        "verify"
      ],
      "allow": [
        "take_payment"
      ],
      "gates": {
        "take_payment": {
          "equals": {
            "key": "amount_confirmed",
            "value": 10
          }
        }
      },
      "done": {
        "not": {
          "called": "refund"
        }
      },
      "escalate": {
        "tool_failures": 3
      }
    }
  ]
}
"#
    );
    assert_eq!(
        FlowSpec::from_json(&spec.to_json(), "pay.spec.json").unwrap(),
        spec
    );
}

#[test]
fn a_conversation_file_stores_stages_and_reads_back_without_resolvers() {
    let convo = Conversation::new()
        .stage("account")
        .slot("account_id")
        .resolve_slot(
            "balance",
            ["account_id"],
            resolver(|_| async { Ok(json!(0)) }),
        )
        .stage("book")
        .allow(["confirm"])
        .commit("book_table", Guard::is_true("confirmed"))
        .escalate_after_interruptions(2)
        .compile()
        .unwrap();
    let text = convo.to_json();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        value,
        json!({"v": 1, "kind": "conversation", "stages": [
            {"id": "account", "slots": [
                {"key": "account_id"},
                {"key": "balance", "resolve_from": ["account_id"]}
            ]},
            {"id": "book", "after": ["account"], "allow": ["confirm"],
             "commits": {"book_table": {"is_true": "confirmed"}},
             "escalate": {"interruptions": 2}}
        ]})
    );
    let mut read = CompiledConversation::from_json(&text, "booking.spec.json").unwrap();
    assert_eq!(read, convo);
    assert_eq!(read.flow(), convo.flow());
    assert_eq!(read.missing_resolvers(), ["balance"]);
    read.attach_resolver("balance", resolver(|_| async { Ok(json!(1)) }))
        .unwrap();
    assert!(read.missing_resolvers().is_empty());
}

#[test]
fn files_round_trip_on_disk() {
    let dir = scratch("flow-spec");
    let flow_path = dir.join("pay.spec.json");
    verify_then_pay().write(&flow_path).unwrap();
    assert_eq!(FlowSpec::read(&flow_path).unwrap(), verify_then_pay());
    let convo_path = dir.join("booking.spec.json");
    booking().write(&convo_path).unwrap();
    assert_eq!(
        Spec::read(&convo_path).unwrap(),
        Spec::Conversation(booking())
    );
    // The flow that admits no tool is a file too, and reads back.
    let empty_path = dir.join("none.spec.json");
    FlowSpec::empty().write(&empty_path).unwrap();
    assert_eq!(FlowSpec::read(&empty_path).unwrap(), FlowSpec::empty());
    let err = FlowSpec::read(&convo_path).unwrap_err();
    assert!(err.to_string().ends_with(
        "booking.spec.json:3:11: at kind: this is a conversation spec, and a flow spec was expected"
    ));
}

fn error(text: &str) -> SpecFileError {
    Spec::from_json(text, "bad.spec.json").unwrap_err()
}

#[test]
fn a_syntax_error_gives_line_and_column() {
    let err = error("{\n  \"v\": 1,\n  \"kind\": \"flow\"\n  \"steps\": []\n}");
    assert_eq!(err.position, Some((4, 3)));
    assert_eq!(
        err.to_string(),
        "bad.spec.json:4:3: not valid JSON: expected `,` or `}` at line 4 column 3"
    );
}

#[test]
fn a_wrong_member_is_named_by_path_and_line() {
    let text = r#"{
  "v": 1,
  "kind": "flow",
  "steps": [
    {"id": "verify", "allow": ["verify_identity"]},
    {"id": "pay", "after": ["verify"],
     "done": {"all": [{"called_ok": "take_payment"}, {"is_true": 1}]}}
  ]
}"#;
    let err = error(text);
    assert_eq!(err.path.as_deref(), Some("steps[1].done.all[1].is_true"));
    assert_eq!(
        err.to_string(),
        "bad.spec.json:7:66: at steps[1].done.all[1].is_true: expected a state key, found a number (1)"
    );
    let err = error(r#"{"v": 1, "kind": "flow", "steps": [{"id": "a", "done": "called_ok(x)"}]}"#);
    assert!(err.to_string().starts_with(
        "bad.spec.json:1:56: at steps[0].done: expected a guard: an object with one key, \
         such as {\"called_ok\": \"tool\"}"
    ));
    assert!(
        err.to_string()
            .ends_with("found a string (\"called_ok(x)\")")
    );
    let err = error(
        r#"{"v": 1, "kind": "flow", "steps": [{"id": "a", "escalate": {"interruptions": 0}}]}"#,
    );
    assert_eq!(
        err.to_string(),
        "bad.spec.json:1:78: at steps[0].escalate.interruptions: expected interruptions: a whole number, 1 or more, found a number (0)"
    );
}

#[test]
fn an_invalid_spec_points_at_the_step() {
    let text = "{\"v\": 1, \"kind\": \"flow\", \"steps\": [\n  {\"id\": \"verify\"},\n  {\"id\": \"pay\", \"after\": [\"verfy\"]}\n]}";
    let err = error(text);
    assert_eq!(
        err.to_string(),
        "bad.spec.json:3:26: at steps[1].after: step `pay` comes after `verfy`, which is not a \
         step (the steps are: verify, pay)"
    );
    let err = error(
        r#"{"v": 1, "kind": "conversation", "stages": [{"id": "a", "slots": [{"key": "x"}]}, {"id": "b", "slots": [{"key": "x"}]}]}"#,
    );
    assert_eq!(err.path.as_deref(), Some("stages[1].slots"));
    // An empty id is refused where it stands, counted from 0 (by the
    // reader, before the flow's own validation sees it).
    let err = error(r#"{"v": 1, "kind": "flow", "steps": [{"id": "a"}, {"id": "b"}, {"id": ""}]}"#);
    assert_eq!(err.path.as_deref(), Some("steps[2].id"), "{err}");
    assert!(
        err.to_string()
            .ends_with("at steps[2].id: expected a step id, found an empty string"),
        "{err}"
    );
}

#[test]
fn the_header_is_checked() {
    assert_eq!(
        error(r#"{"v": 2, "kind": "flow", "steps": []}"#).to_string(),
        "bad.spec.json:1:7: at v: this is a version 2 spec, and this livesim reads version 1"
    );
    assert_eq!(
        error(r#"{"kind": "flow", "steps": []}"#).to_string(),
        "bad.spec.json:1:1: missing field `v` (the spec format version, 1)"
    );
    assert_eq!(
        error(r#"{"v": 1, "kind": "flows", "steps": []}"#).to_string(),
        "bad.spec.json:1:18: at kind: expected \"flow\" or \"conversation\", found a string (\"flows\")"
    );
    assert_eq!(
        error(r#"{"v": 1, "kind": "flow", "stages": []}"#).to_string(),
        "bad.spec.json:1:1: unknown field `stages` in a flow spec; expected one of: v, kind, steps"
    );
    let err = Spec::read("/nonexistent/x.spec.json").unwrap_err();
    assert!(
        err.to_string()
            .starts_with("/nonexistent/x.spec.json: cannot read it: ")
    );
}

/// What a file says once is said once: a tool allowed twice, or a step
/// named twice in `after`, is refused where the second one is (most often
/// a slip for another name); an `escalate` with no threshold, which would
/// never escalate, is refused too.
#[test]
fn repeated_entries_and_an_empty_escalate_are_refused() {
    assert_eq!(
        error(
            r#"{"v": 1, "kind": "flow", "steps": [
  {"id": "verify", "allow": ["verify_identity", "verify_identity"]}
]}"#
        )
        .to_string(),
        "bad.spec.json:2:49: at steps[0].allow[1]: `verify_identity` is listed twice"
    );
    assert_eq!(
        error(
            r#"{"v": 1, "kind": "flow", "steps": [
  {"id": "a"}, {"id": "b", "after": ["a", "a"]}
]}"#
        )
        .to_string(),
        "bad.spec.json:2:43: at steps[1].after[1]: `a` is listed twice"
    );
    assert_eq!(
        error(
            r#"{"v": 1, "kind": "conversation", "stages": [
  {"id": "party", "allow": ["set_party"], "escalate": {}}
]}"#
        )
        .to_string(),
        "bad.spec.json:2:55: at stages[0].escalate: expected {\"tool_failures\": n, \"interruptions\": n} with at least one of them: an empty `escalate` never escalates"
    );
}
