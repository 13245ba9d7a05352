//! Conversations: slots, commit tools behind guards, resolvers, and the
//! seed's booking example.

use std::collections::BTreeMap;

use livesim::flow::{
    CompiledConversation, Conversation, DueResolution, Enforcement, Guard, resolver,
};
use livesim::simulation::{Scenario, Step};
use serde_json::{Value, json};

pub fn booking() -> CompiledConversation {
    Conversation::new()
        .stage("party")
        .allow(["set_party"])
        .slot("party_size")
        .stage("book")
        .allow(["confirm"])
        .commit("book_table", Guard::is_true("confirmed"))
        .compile()
        .unwrap()
}

/// The beginning of the seed's booking scenario, written out by hand.
fn booking_incident() -> Scenario {
    Scenario::new(
        "booking-incident",
        vec![
            Step::ExpectAllowed("set_party".into()),
            Step::Set {
                key: "party_size".into(),
                value: json!(4),
            },
            Step::ToolResult {
                tool: "set_party".into(),
                ok: true,
            },
            Step::Turn,
            Step::ExpectActive(vec!["book".into()]),
            Step::ExpectAllowed("confirm".into()),
            Step::Set {
                key: "confirmed".into(),
                value: json!(true),
            },
            Step::ToolResult {
                tool: "confirm".into(),
                ok: true,
            },
            Step::Turn,
            Step::ExpectActive(vec!["book".into()]),
            Step::ExpectAllowed("book_table".into()),
            Step::Set {
                key: "booked".into(),
                value: json!(true),
            },
            Step::ToolResult {
                tool: "book_table".into(),
                ok: true,
            },
            Step::Turn,
            Step::ExpectActive(vec![]),
        ],
    )
}

#[tokio::test]
async fn the_seed_booking_scenario_runs_against_the_conversation()
-> Result<(), Box<dyn std::error::Error>> {
    let convo = booking();
    let scenario = booking_incident();
    scenario.run(&convo, Enforcement::Enforce).await?;
    Ok(())
}

#[test]
fn a_stricter_spec_fails_at_the_commit() {
    let stricter = Conversation::new()
        .stage("party")
        .allow(["set_party"])
        .slot("party_size")
        .stage("book")
        .allow(["confirm"])
        .commit(
            "book_table",
            Guard::all([
                Guard::is_true("confirmed"),
                Guard::is_true("manager_approved"),
            ]),
        )
        .compile()
        .unwrap();
    let failure = booking_incident()
        .run_now(&stricter, Enforcement::Enforce)
        .unwrap_err();
    assert_eq!(failure.index, 10);
    assert_eq!(*failure.step, Step::ExpectAllowed("book_table".into()));
    assert_eq!(
        failure.to_string(),
        "scenario `booking-incident` failed at steps[10] {\"expect_allowed\":\"book_table\"}: \
         expected book_table to be allowed, but the flow refused it: book_table is not allowed \
         now: stage book allows it only when all(is_true(confirmed), is_true(manager_approved)), \
         and manager_approved is not set"
    );
}

#[test]
fn a_commit_waits_for_its_guard_and_its_stage() {
    let mut monitor = booking().monitor(Enforcement::Enforce);
    let mut state: BTreeMap<String, Value> = BTreeMap::new();
    state.insert("confirmed".into(), json!(true));
    // Confirmed, but the stage is not active yet.
    assert_eq!(
        monitor.check("book_table", &state).unwrap_err(),
        "book_table is not allowed now: active stages are [party], which allow [set_party]; \
         book_table is allowed only in stage book, which waits for [party]"
    );
    state.insert("party_size".into(), json!(2));
    state.insert("confirmed".into(), json!(false));
    // Active, but the guard does not hold: gates are live, not latched.
    assert_eq!(
        monitor.check("book_table", &state).unwrap_err(),
        "book_table is not allowed now: stage book allows it only when is_true(confirmed), \
         and confirmed is false, not true"
    );
    state.insert("confirmed".into(), json!(true));
    assert!(monitor.gate("book_table", "c1", &state).unwrap().admitted());
    // The stage is done only once the commit completed ok.
    assert_eq!(monitor.evaluate_turn(&state).active, ["book"]);
    monitor.record_result("c1", true, &state).unwrap();
    assert!(monitor.evaluate_turn(&state).active.is_empty());
}

#[test]
fn a_stage_is_done_when_every_slot_is_filled() {
    let convo = Conversation::new()
        .stage("details")
        .allow(["set_name", "set_date"])
        .slot("name")
        .slot("date")
        .stage("confirm")
        .allow(["confirm"])
        .compile()
        .unwrap();
    let mut monitor = convo.monitor(Enforcement::Enforce);
    let name_only = json!({"name": "Ada"});
    assert_eq!(monitor.evaluate_turn(&name_only).active, ["details"]);
    let explanation = monitor.explain(&name_only);
    assert_eq!(
        explanation.active[0].waits_for[0].to_string(),
        "exists(date): date is not set"
    );
    let both = json!({"name": "Ada", "date": null});
    assert_eq!(monitor.evaluate_turn(&both).active, ["details"]); // null is not filled
    let both = json!({"name": "Ada", "date": "2026-12-01"});
    assert_eq!(monitor.evaluate_turn(&both).active, ["confirm"]);
}

#[tokio::test]
async fn resolved_slots_are_due_when_their_inputs_are_set() -> Result<(), String> {
    let convo = Conversation::new()
        .stage("account")
        .allow(["identify"])
        .slot("account_id")
        .resolve_slot(
            "balance",
            ["account_id"],
            resolver(|args| async move {
                let id = args["account_id"].as_str().unwrap_or_default().to_string();
                Ok(json!({"account": id, "cents": 1200}))
            }),
        )
        .stage("pay")
        .allow(["pay_bill"])
        .compile()
        .unwrap();
    let mut monitor = convo.monitor(Enforcement::Enforce);
    let mut state: BTreeMap<String, Value> = BTreeMap::new();
    let active = monitor.evaluate_turn(&state).active;
    assert!(convo.due_resolutions(&active, &state).is_empty());

    state.insert("account_id".into(), json!("a-7"));
    let active = monitor.evaluate_turn(&state).active;
    assert_eq!(active, ["account"]); // balance is still missing
    let due = convo.due_resolutions(&active, &state);
    assert_eq!(due.len(), 1);
    // The session runs the resolver; here the test does.
    let run = convo.resolver(&due[0].slot).unwrap();
    let value = run(due[0].args.clone()).await?;
    state.insert(due[0].slot.clone(), value);
    assert_eq!(monitor.evaluate_turn(&state).active, ["pay"]);
    Ok(())
}

/// A resolved slot is due exactly when its stage is active, the slot holds
/// no value (unset or `null`) and every input holds one (set, not `null`),
/// and its resolver is given those inputs and nothing else.
#[test]
fn a_resolution_is_due_only_in_its_stage_with_its_inputs_set_and_its_slot_empty() {
    let convo = Conversation::new()
        .stage("verify")
        .allow(["verify_caller"])
        .stage("transfer")
        .allow(["transfer_funds"])
        .resolve_slot(
            "limit",
            ["verified", "tier"],
            resolver(|_| async move { Ok(json!(500)) }),
        )
        .compile()
        .unwrap();
    let verify = ["verify".to_string()];
    let transfer = ["transfer".to_string()];
    let both = ["verify".to_string(), "transfer".to_string()];
    let inputs = json!({"verified": true, "tier": "gold", "other": 1});
    let none: [DueResolution; 0] = [];
    let due_limit = [DueResolution {
        slot: "limit".into(),
        args: json!({"verified": true, "tier": "gold"}),
    }];

    // Its stage not active: not due, whatever the state holds.
    assert_eq!(convo.due_resolutions(&verify, &inputs), none);
    assert_eq!(convo.due_resolutions(&[], &inputs), none);
    // Active (alone or beside another stage), inputs set, slot unset.
    assert_eq!(convo.due_resolutions(&transfer, &inputs), due_limit);
    assert_eq!(convo.due_resolutions(&both, &inputs), due_limit);
    // An input that is `null` or missing holds no value.
    let null_input = json!({"verified": true, "tier": null});
    assert_eq!(convo.due_resolutions(&transfer, &null_input), none);
    assert_eq!(
        convo.due_resolutions(&transfer, &json!({"tier": "gold"})),
        none
    );
    // A slot holding `null` is empty; one holding any value (0, false, "")
    // is filled.
    let null_slot = json!({"verified": true, "tier": "gold", "limit": null});
    assert_eq!(convo.due_resolutions(&transfer, &null_slot), due_limit);
    for filled in [json!(0), json!(false), json!(""), json!(750)] {
        let state = json!({"verified": true, "tier": "gold", "limit": filled});
        assert_eq!(convo.due_resolutions(&transfer, &state), none, "{filled}");
    }
}

/// A conversation built with every builder method reads back, stage by
/// stage, as it was written, and is the conversation its spec file text
/// says (read by the spec-file decoder, not the builder).
#[test]
fn a_built_conversation_reads_back_as_written() {
    let built = Conversation::new()
        .stage("account")
        .allow(["find_account"])
        .resolve_slot(
            "balance",
            ["account_id"],
            resolver(|_| async move { Ok(json!({ "cents": 1200 })) }),
        )
        .escalate_after_tool_failures(2)
        .stage("pay")
        .after("account")
        .allow(["get_fee"])
        .slot("amount")
        .commit("pay", Guard::is_true("approved"))
        .done(Guard::exists("receipt"))
        .escalate_after_interruptions(3)
        .stage("goodbye")
        .after("pay")
        .allow(["hang_up"])
        .compile()
        .unwrap();

    let ids: Vec<&str> = built.stages().iter().map(|s| s.id()).collect();
    assert_eq!(ids, ["account", "pay", "goodbye"]);
    let account = built.stage("account").unwrap();
    let pay = built.stage("pay").unwrap();
    assert!(built.stage("nowhere").is_none());

    assert!(account.after().is_empty());
    assert_eq!(pay.after().iter().collect::<Vec<_>>(), ["account"]);
    assert_eq!(account.allow().iter().collect::<Vec<_>>(), ["find_account"]);
    assert_eq!(pay.allow().iter().collect::<Vec<_>>(), ["get_fee"]);
    assert_eq!(account.slots().len(), 1);
    assert_eq!(account.slots()[0].key, "balance");
    assert_eq!(
        account.slots()[0].resolve_from.as_deref(),
        Some(&["account_id".to_string()][..])
    );
    assert_eq!(pay.slots()[0].key, "amount");
    assert_eq!(pay.slots()[0].resolve_from, None);
    assert!(account.commits().is_empty());
    let commits: Vec<(&String, String)> = pay
        .commits()
        .iter()
        .map(|(t, g)| (t, g.to_string()))
        .collect();
    assert_eq!(
        commits,
        [(&"pay".to_string(), "is_true(approved)".to_string())]
    );
    assert_eq!(account.done(), None);
    assert_eq!(
        pay.done().map(|g| g.to_string()).as_deref(),
        Some("exists(receipt)")
    );
    assert_eq!(
        (
            account.escalate().tool_failures,
            account.escalate().interruptions
        ),
        (Some(2), None)
    );
    assert_eq!(
        (pay.escalate().tool_failures, pay.escalate().interruptions),
        (None, Some(3))
    );

    let written = CompiledConversation::from_json(
        r#"{"v": 1, "kind": "conversation", "stages": [
            {"id": "account", "allow": ["find_account"],
             "slots": [{"key": "balance", "resolve_from": ["account_id"]}],
             "escalate": {"tool_failures": 2}},
            {"id": "pay", "after": ["account"], "allow": ["get_fee"],
             "slots": [{"key": "amount"}], "commits": {"pay": {"is_true": "approved"}},
             "done": {"exists": "receipt"}, "escalate": {"interruptions": 3}},
            {"id": "goodbye", "after": ["pay"], "allow": ["hang_up"]}
        ]}"#,
        "written",
    )
    .unwrap();
    assert_eq!(built, written);
    assert_ne!(built, booking());
    assert_eq!(built.flow(), written.flow());

    // Each stage compiles to a step done when its slots are filled, its
    // commits made and its own guard holds; a stage with none of them is
    // never done (not done at once).
    let done = |id: &str| built.flow().step(id).unwrap().done().map(|g| g.to_string());
    assert_eq!(done("account").as_deref(), Some("exists(balance)"));
    let pay_done = done("pay").unwrap();
    for part in ["exists(amount)", "called_ok(pay)", "exists(receipt)"] {
        assert!(pay_done.contains(part), "{pay_done}");
    }
    assert_eq!(done("goodbye"), None);
}
