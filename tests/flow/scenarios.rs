//! Scenarios: the JSON shape, the simulator's semantics, and scenarios
//! derived from journals.

use livesim::flow::{Enforcement, Guard};
use livesim::simulation::{Scenario, Sim, Step};
use serde_json::{Value, json};

use crate::conversation::booking;
use crate::governance::verify_then_pay;

#[test]
fn the_seed_scenario_shape_parses_and_writes_back() {
    let text = r#"{"name": "booking-incident", "steps": [
  {"expect_allowed": "set_party"}, {"set": {"key": "party_size", "value": 4}},
  {"tool_result": {"tool": "set_party", "ok": true}},
  "turn", {"expect_active": ["book"]},
  {"expect_denied": "book_table"}, {"tool_failed": "confirm"}, "interrupt", {"tool_ok": "confirm"}
]}"#;
    let scenario = Scenario::from_json(text, "booking.incident.scenario.json").unwrap();
    assert_eq!(scenario.steps.len(), 9);
    assert_eq!(scenario.steps[7], Step::Interrupt);
    assert_eq!(scenario.steps[8], Step::ToolOk("confirm".into()));
    let written = scenario.to_json();
    assert!(written.contains("\n    {\"set\":{\"key\":\"party_size\",\"value\":4}},\n"));
    assert_eq!(Scenario::from_json(&written, "x").unwrap(), scenario);
    scenario.run_now(&booking(), Enforcement::Enforce).unwrap();
}

#[test]
fn a_bad_scenario_file_names_the_step() {
    let err = Scenario::from_json(
        "{\"name\": \"x\", \"steps\": [\n  \"turn\",\n  {\"expect_alowed\": \"a\"}\n]}",
        "x.scenario.json",
    )
    .unwrap_err();
    assert!(
        err.to_string().starts_with(
            "x.scenario.json:3:3: at steps[1]: unknown variant `expect_alowed`, expected one of"
        ),
        "{err}"
    );
}

/// A member a step does not have (`okk` beside `ok`) is a typo, named at
/// its step: ignored, the step would mean something its author did not
/// write.
#[test]
fn a_step_with_a_member_it_does_not_have_is_named() {
    for (step, unknown) in [
        (
            r#"{"tool_result": {"tool": "a", "ok": true, "okk": false}}"#,
            "okk",
        ),
        (
            r#"{"set": {"key": "k", "value": 1, "removed": true}}"#,
            "removed",
        ),
    ] {
        let text = format!("{{\"name\": \"x\", \"steps\": [\n  \"turn\",\n  {step}\n]}}");
        let err = Scenario::from_json(&text, "x.scenario.json").unwrap_err();
        assert!(
            err.to_string().starts_with("x.scenario.json:3:")
                && err
                    .to_string()
                    .contains(&format!("at steps[1]: unknown field `{unknown}`")),
            "{err}"
        );
    }
}

#[test]
fn expectations_that_fail_say_why() {
    let mut sim = Sim::new(booking().flow().clone(), Enforcement::Enforce);
    assert_eq!(
        sim.apply(&Step::ExpectActive(vec!["book".into()]))
            .unwrap_err(),
        "expected active steps [book], but they are [party]: party waits for \
         exists(party_size): party_size is not set"
    );
    assert_eq!(
        sim.apply(&Step::ToolResult {
            tool: "set_party".into(),
            ok: true
        })
        .unwrap_err(),
        "a result for set_party, but no call of set_party is running: an admitted call \
         (expect_allowed) must come first"
    );
    assert_eq!(
        sim.apply(&Step::ToolOk("book_table".into())).unwrap_err(),
        "expected book_table to be allowed, but the flow refused it: book_table is not allowed \
         now: active stages are [party], which allow [set_party]; book_table is allowed only in \
         stage book, which waits for [party]"
    );
}

#[test]
fn expect_denied_under_observe_holds_when_enforce_would_refuse() {
    let mut sim = Sim::new(verify_then_pay(), Enforcement::Observe);
    sim.apply(&Step::ExpectDenied("take_payment".into()))
        .unwrap();
    // The call ran under Observe, so it can complete.
    sim.apply(&Step::ToolResult {
        tool: "take_payment".into(),
        ok: true,
    })
    .unwrap();
    assert_eq!(
        sim.journal()
            .iter()
            .map(|(k, _)| k.as_str())
            .collect::<Vec<_>>(),
        ["flow:tool_call", "flow:tool_would_deny", "flow:tool_result"]
    );
}

fn numbered(journal: &[(String, Value)]) -> Vec<(u64, String, Value)> {
    journal
        .iter()
        .enumerate()
        .map(|(i, (k, v))| (i as u64 + 1, k.clone(), v.clone()))
        .collect()
}

#[test]
fn from_journal_maps_each_key_as_documented() {
    let journal = vec![
        (7, "flow:active".to_string(), json!(["book"])),
        (
            1,
            "flow:tool_denied".to_string(),
            json!({"tool": "book_table", "id": "c1", "reason": "r"}),
        ),
        (
            2,
            "flow:tool_call".to_string(),
            json!({"tool": "set_party", "id": "c2"}),
        ),
        (3, "party_size".to_string(), json!(2)),
        (4, "turn:count".to_string(), json!(1)),
        (5, "party_size".to_string(), json!(4)),
        (5, "derived:party_label".to_string(), json!("four")),
        (
            6,
            "flow:tool_result".to_string(),
            json!({"tool": "set_party", "id": "c2", "ok": true}),
        ),
        (
            8,
            "flow:tool_failed".to_string(),
            json!({"tool": "confirm"}),
        ),
        (9, "flow:interrupted".to_string(), json!({})),
        (
            10,
            "flow:escalated".to_string(),
            json!({"stage": "book", "reason": "r"}),
        ),
        (11, "note".to_string(), json!("left at the end")),
    ];
    let scenario = Scenario::from_journal("incident", &journal);
    assert_eq!(
        scenario.steps,
        [
            Step::ExpectDenied("book_table".into()),
            Step::ExpectAllowed("set_party".into()),
            Step::Set {
                key: "party_size".into(),
                value: json!(4)
            },
            Step::ToolResult {
                tool: "set_party".into(),
                ok: true
            },
            Step::Turn,
            Step::ExpectActive(vec!["book".into()]),
            Step::ToolFailed("confirm".into()),
            Step::Interrupt,
            Step::Set {
                key: "note".into(),
                value: json!("left at the end")
            },
        ]
    );
}

#[test]
fn a_malformed_flow_entry_is_skipped_or_reported() {
    let journal = vec![
        (1, "flow:tool_call".to_string(), json!({"tool": "a"})),
        (2, "flow:active".to_string(), json!([])),
    ];
    assert_eq!(
        Scenario::from_journal("x", &journal).steps,
        [Step::Turn, Step::ExpectActive(vec![])]
    );
    assert_eq!(
        Scenario::try_from_journal("x", &journal)
            .unwrap_err()
            .to_string(),
        "journal entry 1 (flow:tool_call): flow:tool_call needs a string `id`, got {\"tool\":\"a\"}"
    );
}

#[tokio::test]
async fn a_run_replays_from_its_own_journal() -> Result<(), Box<dyn std::error::Error>> {
    let original = Scenario::new(
        "booking",
        vec![
            Step::ExpectDenied("book_table".into()),
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
            Step::Interrupt,
            Step::ToolOk("confirm".into()),
            Step::Set {
                key: "confirmed".into(),
                value: json!(true),
            },
            Step::ExpectAllowed("book_table".into()),
            Step::ToolResult {
                tool: "book_table".into(),
                ok: true,
            },
            Step::Turn,
        ],
    );
    let convo = booking();
    let sim = original.run(&convo, Enforcement::Enforce).await?;
    let replay = Scenario::from_journal("booking-replay", &numbered(sim.journal()));
    let again = replay.run(&convo, Enforcement::Enforce).await?;
    assert_eq!(again.journal(), sim.journal());
    assert!(
        replay.steps.contains(&Step::ExpectActive(vec![])),
        "the final turn is recorded: {:?}",
        replay.steps
    );
    // A stricter spec diverges at the commit.
    let stricter = livesim::flow::Conversation::new()
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
        .compile()?;
    let failure = replay
        .run(&stricter, Enforcement::Enforce)
        .await
        .unwrap_err();
    assert_eq!(*failure.step, Step::ExpectAllowed("book_table".into()));
    Ok(())
}
