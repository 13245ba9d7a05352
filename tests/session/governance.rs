//! Flow governance inside a running session, over seeds and generated
//! call sequences.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use livesim::Seed;
use livesim::executor::Simulation;
use livesim::flow::{FlowEntry, FlowMonitor, FlowSpec};
use livesim::prelude::*;
use livesim::state::MemoryJournalSink;
use livesim::testing::ScriptedServer;
use proptest::prelude::*;
use serde_json::{Value, json};

const TOOLS: [&str; 4] = ["a", "b", "c", "d"];

/// A chain of steps, each allowing some tools and done when one of them
/// completes ok.
fn flow() -> impl Strategy<Value = FlowSpec> {
    proptest::collection::vec(
        (
            proptest::sample::subsequence(TOOLS.to_vec(), 1..=3),
            0usize..3,
        ),
        1..5,
    )
    .prop_map(|steps| {
        let mut flow = Flow::new();
        for (i, (allow, done)) in steps.iter().enumerate() {
            flow = flow.step(format!("s{i}")).allow(allow.iter().copied());
            if i > 0 {
                flow = flow.after(format!("s{}", i - 1));
            }
            flow = flow.done(Guard::called_ok(allow[done % allow.len()]));
        }
        flow.build().expect("a chain is a valid flow")
    })
}

/// Calls: a tool name and whether the tool succeeds.
fn calls() -> impl Strategy<Value = Vec<(&'static str, bool)>> {
    proptest::collection::vec(
        (
            proptest::sample::select(TOOLS.to_vec()),
            proptest::bool::weighted(0.8),
        ),
        1..12,
    )
}

struct Outcome {
    ran: Vec<String>,
    responses: Vec<Value>,
    journal: Vec<livesim::state::StateMutation>,
}

fn run_session(seed: u64, spec: FlowSpec, calls: Vec<(&'static str, bool)>) -> Outcome {
    Simulation::new(Seed::new(seed))
        .run(move || async move {
            let ran = Arc::new(Mutex::new(Vec::new()));
            let journal = Arc::new(MemoryJournalSink::new());
            let state = State::new().with_journal_sink(journal.clone());
            let mut tools = ToolComposite::new();
            for tool in TOOLS {
                let ran = ran.clone();
                tools = tools.with(T::simple(tool, tool, move |args| {
                    let ran = ran.clone();
                    async move {
                        ran.lock()
                            .unwrap()
                            .push(args["id"].as_str().unwrap().to_string());
                        if args["ok"] == json!(true) {
                            Ok(json!({ "done": true }))
                        } else {
                            Err("it failed".into())
                        }
                    }
                }));
            }
            let mut script = ScriptedServer::new();
            for (i, (tool, ok)) in calls.iter().enumerate() {
                script = script
                    .calls(*tool, json!({ "id": format!("call-{}", i + 1), "ok": ok }))
                    .turn_complete();
            }
            let run = script
                .play(
                    Live::builder()
                        .state(state.clone())
                        .tools(tools)
                        .govern(spec),
                )
                .await
                .unwrap();
            let outcome = Outcome {
                ran: ran.lock().unwrap().clone(),
                responses: run.tool_responses(),
                journal: journal.entries(),
            };
            run.disconnect().await;
            outcome
        })
        .expect("the run finishes")
        .value
}

proptest! {
    // Each case is a whole simulated session: 64 by default, more with
    // PROPTEST_CASES for nightly runs.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(64),
        ..ProptestConfig::default()
    })]

    // Under Enforce, over seeds and generated call sequences: no refused
    // call's tool runs and every admitted call is exactly what a reference
    // monitor admits; every call is answered exactly once, with its own id;
    // the journal's sequence numbers strictly increase and its timestamps
    // never go backwards.
    #[test]
    fn enforced_flows_hold_in_running_sessions(
        seed in any::<u64>().no_shrink(),
        spec in flow(),
        calls in calls(),
    ) {
        let out = run_session(seed, spec.clone(), calls.clone());

        // Every call answered exactly once, with its own id.
        let answered: Vec<String> = out.responses.iter().map(|r| r["id"].as_str().unwrap().to_string()).collect();
        let expected: Vec<String> = (1..=calls.len()).map(|i| format!("call-{i}")).collect();
        prop_assert_eq!(&answered, &expected);

        // The journal's flow entries, in order.
        let entries: Vec<FlowEntry> = out
            .journal
            .iter()
            .filter_map(|m| FlowEntry::parse(&m.key, &m.value).ok().flatten())
            .collect();
        let admitted: BTreeSet<String> = entries.iter().filter_map(|e| match e {
            FlowEntry::ToolCall { id, .. } => Some(id.clone()),
            _ => None,
        }).collect();
        let denied: BTreeSet<String> = entries.iter().filter_map(|e| match e {
            FlowEntry::ToolDenied { id, .. } => Some(id.clone()),
            _ => None,
        }).collect();
        prop_assert!(admitted.is_disjoint(&denied));
        prop_assert_eq!(admitted.len() + denied.len(), calls.len());
        // A refused call's tool never ran; every admitted call's tool did.
        let ran: BTreeSet<String> = out.ran.iter().cloned().collect();
        prop_assert_eq!(&ran, &admitted);
        for id in &denied {
            let response = out.responses.iter().find(|r| r["id"] == json!(id)).unwrap();
            prop_assert!(response["response"]["error"].is_string());
        }

        // The session decided exactly as a reference monitor fed the same
        // calls and outcomes.
        let mut reference = FlowMonitor::new(spec, Enforcement::Enforce);
        let no_state = std::collections::BTreeMap::<String, Value>::new();
        for (i, (tool, ok)) in calls.iter().enumerate() {
            let id = format!("call-{}", i + 1);
            let decision = reference.gate(tool, &id, &no_state).unwrap();
            prop_assert_eq!(decision.admitted(), admitted.contains(&id), "call {}", id);
            if decision.admitted() {
                reference.record_result(&id, *ok, &no_state).unwrap();
            }
            reference.evaluate_turn(&no_state);
        }

        // Sequence numbers strictly increase; timestamps never go back.
        for pair in out.journal.windows(2) {
            prop_assert!(pair[0].seq < pair[1].seq);
            prop_assert!(pair[0].timestamp <= pair[1].timestamp);
        }
    }
}

/// Observe admits every call and journals what Enforce would have refused.
#[tokio::test]
async fn observe_mode_runs_the_call_and_records_the_refusal() {
    let ran = Arc::new(Mutex::new(0));
    let counter = ran.clone();
    let flow = Flow::new()
        .step("verify")
        .allow(["verify_identity"])
        .done(Guard::called_ok("verify_identity"))
        .step("pay")
        .after("verify")
        .allow(["take_payment"])
        .build()
        .unwrap();
    let journal = Arc::new(MemoryJournalSink::new());
    let state = State::new().with_journal_sink(journal.clone());
    let run = ScriptedServer::new()
        .calls("take_payment", json!({ "amount": 10 }))
        .play(
            Live::builder()
                .state(state)
                .tools(T::simple("take_payment", "", move |_| {
                    let counter = counter.clone();
                    async move {
                        *counter.lock().unwrap() += 1;
                        Ok(json!({ "ok": true }))
                    }
                }))
                .govern_with(flow, Enforcement::Observe),
        )
        .await
        .unwrap();
    assert_eq!(*ran.lock().unwrap(), 1, "Observe lets the call run");
    assert_eq!(run.tool_responses()[0]["response"], json!({ "ok": true }));
    let keys: Vec<String> = journal
        .entries()
        .iter()
        .map(|m| m.key.clone())
        .filter(|k| k.starts_with("flow:"))
        .collect();
    assert_eq!(
        keys,
        ["flow:tool_call", "flow:tool_would_deny", "flow:tool_result"]
    );
    run.disconnect().await;
}

/// Interruptions count toward a stage's escalation in a live session.
#[tokio::test]
async fn interruptions_escalate_a_stage() {
    let convo = Conversation::new()
        .stage("collect")
        .allow(["lookup"])
        .slot("name")
        .escalate_after_interruptions(2)
        .compile()
        .unwrap();
    let journal = Arc::new(MemoryJournalSink::new());
    let state = State::new().with_journal_sink(journal.clone());
    let run = ScriptedServer::new()
        .text("Your name")
        .interrupts()
        .text("Could you")
        .interrupts()
        .calls("lookup", json!({}))
        .play(
            Live::builder()
                .state(state)
                .tools(T::simple("lookup", "", |_| async { Ok(json!({})) }))
                .converse(&convo),
        )
        .await
        .unwrap();
    let escalated = journal
        .entries()
        .into_iter()
        .find(|m| m.key == "flow:escalated")
        .expect("the stage escalated");
    assert_eq!(escalated.value["stage"], "collect");
    let refusal = run.tool_responses()[0]["response"]["error"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(refusal.contains("escalated"), "{refusal}");
    run.disconnect().await;
}

/// The gate reserves a committing tool for the call it admitted: two
/// calls of `take_payment` (which completes step `pay`) in one message are
/// not both admitted; the second is refused, says why, and never runs. A
/// later call, once the first has answered and failed, is admitted again.
#[test]
fn two_calls_of_a_committing_tool_in_one_message_are_not_both_admitted() {
    use livesim::testing::{Action, Call};
    let outcome = Simulation::new(Seed::new(5))
        .run(|| async {
            let paid = Arc::new(Mutex::new(Vec::new()));
            let tools = {
                let paid = paid.clone();
                T::simple("verify_identity", "verifies", |_| async {
                    Ok(json!({ "verified": true }))
                }) | T::simple("take_payment", "pays", move |args| {
                    let paid = paid.clone();
                    async move {
                        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                        paid.lock().unwrap().push(args["n"].clone());
                        if args["n"] == json!(3) {
                            Ok(json!({ "paid": true }))
                        } else {
                            Err("card declined".into())
                        }
                    }
                })
            };
            let flow = Flow::new()
                .step("verify")
                .allow(["verify_identity"])
                .done(Guard::called_ok("verify_identity"))
                .step("pay")
                .after("verify")
                .allow(["take_payment"])
                .done(Guard::called_ok("take_payment"))
                .build()
                .unwrap();
            let pay = |id: &str, n: u64| Call {
                id: id.into(),
                name: "take_payment".into(),
                args: json!({ "n": n }),
                wait: true,
            };
            let run = ScriptedServer::new()
                .calls("verify_identity", json!({}))
                .action(Action::CallMany(vec![pay("call-2", 1), pay("call-3", 2)]))
                .action(Action::Call(pay("call-4", 3)))
                .says("Paid.")
                .play(Live::builder().tools(tools).govern(flow))
                .await
                .unwrap();
            let responses = run.tool_responses();
            run.disconnect().await;
            let paid = paid.lock().unwrap().clone();
            (responses, paid)
        })
        .unwrap()
        .value;
    let (responses, paid) = outcome;
    let answer = |id: &str| {
        responses
            .iter()
            .find(|r| r["id"] == id)
            .unwrap_or_else(|| panic!("{id} not answered: {responses:?}"))["response"]
            .clone()
    };
    assert_eq!(answer("call-2")["error"], "card declined");
    let refusal = answer("call-3")["error"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        refusal.contains("take_payment completes step pay and a call of it is still running"),
        "{refusal}"
    );
    assert_eq!(answer("call-4"), json!({ "paid": true }));
    assert_eq!(paid, [json!(1), json!(3)], "the refused call never ran");
}

/// A `take_payment` tool: the call with argument `n` takes `seconds(n)`
/// seconds of virtual time, then records `n` in the list returned with the
/// tool and succeeds.
fn take_payment(seconds: fn(u64) -> u64) -> (ToolComposite, Arc<Mutex<Vec<Value>>>) {
    let paid = Arc::new(Mutex::new(Vec::new()));
    let log = paid.clone();
    let tool = T::simple("take_payment", "pays", move |args| {
        let paid = paid.clone();
        async move {
            let n = args["n"].as_u64().unwrap_or_default();
            tokio::time::sleep(std::time::Duration::from_secs(seconds(n))).await;
            paid.lock().unwrap().push(args["n"].clone());
            Ok(json!({ "paid": true }))
        }
    });
    (tool, log)
}

/// Asserts that the journal counts the first payment (`call-1`, `n` 1)
/// a success exactly when that payment was made.
fn first_payment_counted_iff_made(
    seed: u64,
    paid: &[Value],
    journal: &[livesim::state::StateMutation],
) {
    let counted = journal.iter().any(|m| {
        m.key == "flow:tool_result"
            && m.value == json!({"tool": "take_payment", "id": "call-1", "ok": true})
    });
    assert_eq!(
        counted,
        paid == [json!(1)],
        "seed {seed}: paid {paid:?}, journal {journal:?}"
    );
}

/// One step, `pay`, that a successful `take_payment` completes.
fn pay_step() -> FlowSpec {
    Flow::new()
        .step("pay")
        .allow(["take_payment"])
        .done(Guard::called_ok("take_payment"))
        .build()
        .unwrap()
}

/// A committing call the server cancels no longer holds its tool: the
/// gate learns of the cancellation (`flow:tool_cancelled` in the journal),
/// so the model's next call of the tool is admitted and runs, and the
/// journal replays to the same decisions.
#[test]
fn a_cancelled_committing_call_frees_its_tool() {
    use livesim::simulation::Scenario;
    let outcome = Simulation::new(Seed::new(11))
        .run(|| async {
            let (tools, paid) = take_payment(|n| if n == 1 { 60 } else { 1 });
            let flow = pay_step();
            let journal = Arc::new(MemoryJournalSink::new());
            let state = State::new().with_journal_sink(journal.clone());
            let run = ScriptedServer::new()
                .calls_without_waiting("take_payment", json!({ "n": 1 }))
                .pause(std::time::Duration::from_secs(1))
                .cancels(["call-1"])
                .calls("take_payment", json!({ "n": 2 }))
                .says("Paid.")
                .play(
                    Live::builder()
                        .state(state)
                        .tools(tools)
                        .govern(flow.clone()),
                )
                .await
                .unwrap();
            let responses = run.tool_responses();
            run.disconnect().await;
            let paid = paid.lock().unwrap().clone();
            (responses, paid, journal.entries(), flow)
        })
        .unwrap()
        .value;
    let (responses, paid, journal, flow) = outcome;
    assert_eq!(responses.len(), 1, "{responses:?}");
    assert_eq!(responses[0]["id"], "call-2");
    assert_eq!(responses[0]["response"], json!({ "paid": true }));
    assert_eq!(paid, [json!(2)], "the cancelled call never finished");
    let cancelled: Vec<&Value> = journal
        .iter()
        .filter(|m| m.key == "flow:tool_cancelled")
        .map(|m| &m.value)
        .collect();
    assert_eq!(
        cancelled,
        [&json!({"tool": "take_payment", "id": "call-1"})]
    );
    let scenario = Scenario::try_from_journal("cancelled", &journal).unwrap();
    let replay = scenario.replay(&flow);
    assert!(replay.clean(), "{replay}");
}

/// A committing call whose cancellation comes when its tool has already
/// returned stays done: the payment happened, so the flow counts it and
/// the model's next payment is refused. Over seeds the tool's end and the
/// cancellation, due at the same instant, reach the session in either
/// order; whatever the order, exactly one payment is made, and the journal
/// says a payment succeeded exactly when one was made by the first call.
#[test]
fn a_cancellation_after_the_tool_returned_leaves_its_payment_counted() {
    let mut orders = BTreeSet::new();
    for seed in 0..64 {
        let outcome = Simulation::new(Seed::new(seed))
            .run(|| async {
                let (tools, paid) = take_payment(|_| 1);
                let journal = Arc::new(MemoryJournalSink::new());
                let state = State::new().with_journal_sink(journal.clone());
                // An answer sent as the cancellation is on its way crosses
                // it: what the test judges is the session's own order.
                let run = ScriptedServer::new()
                    .answers_may_cross_cancellations()
                    .calls_without_waiting("take_payment", json!({ "n": 1 }))
                    .pause(std::time::Duration::from_secs(1))
                    .cancels(["call-1"])
                    .calls("take_payment", json!({ "n": 2 }))
                    .says("Done.")
                    .play(Live::builder().state(state).tools(tools).govern(pay_step()))
                    .await
                    .unwrap();
                let warnings = super::warnings(run.events());
                let answered: Vec<Value> = run
                    .tool_responses()
                    .iter()
                    .map(|r| r["id"].clone())
                    .collect();
                run.disconnect().await;
                let paid = paid.lock().unwrap().clone();
                (paid, journal.entries(), warnings, answered)
            })
            .unwrap()
            .value;
        let (paid, journal, warnings, answered) = outcome;
        assert_eq!(paid.len(), 1, "seed {seed}: payments {paid:?}");
        first_payment_counted_iff_made(seed, &paid, &journal);
        let late = warnings
            .iter()
            .any(|w| w.contains("(call-1) had returned when the server cancelled it"));
        if late {
            assert!(
                !answered.contains(&json!("call-1")),
                "seed {seed}: a cancelled call was answered"
            );
        }
        orders.insert(match (paid == [json!(1)], late) {
            (false, _) => "aborted",
            (true, true) => "returned before its cancellation was handled",
            (true, false) => "answered before its cancellation",
        });
    }
    assert!(
        orders.contains("returned before its cancellation was handled")
            && orders.contains("aborted"),
        "the seeds should reach both orders: {orders:?}"
    );
}

/// A cancellation that finds its call's tool returned frees the tool at
/// once: the session knows the call is over, so the model's next call of
/// it, in the same instant, is not refused as "still running". The first
/// payment is declined after a second, as its cancellation and the next
/// payment come; over seeds the session aborts it, answers it, or finds
/// it returned, and in every order the second payment is admitted and
/// made.
#[test]
fn a_tool_found_returned_by_its_cancellation_is_free_for_the_next_call() {
    let mut orders = BTreeSet::new();
    for seed in 0..64 {
        let (paid, warnings, denied) = Simulation::new(Seed::new(seed))
            .run(|| async {
                let paid = Arc::new(Mutex::new(Vec::new()));
                let log = paid.clone();
                let tools = T::simple("take_payment", "pays", move |args| {
                    let paid = paid.clone();
                    async move {
                        if args["n"] == 1 {
                            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                            return Err("card declined".into());
                        }
                        paid.lock().unwrap().push(args["n"].clone());
                        Ok(json!({ "paid": true }))
                    }
                });
                let run = ScriptedServer::new()
                    .answers_may_cross_cancellations()
                    .calls_without_waiting("take_payment", json!({ "n": 1 }))
                    .pause(std::time::Duration::from_secs(1))
                    .cancels(["call-1"])
                    .calls("take_payment", json!({ "n": 2 }))
                    .says("Done.")
                    .play(Live::builder().tools(tools).govern(pay_step()))
                    .await
                    .unwrap();
                let warnings = super::warnings(run.events());
                let denied: Vec<String> = run
                    .events()
                    .iter()
                    .filter_map(|e| match e {
                        LiveEvent::ToolDenied { reason, .. } => Some(reason.clone()),
                        _ => None,
                    })
                    .collect();
                run.disconnect().await;
                let paid = log.lock().unwrap().clone();
                (paid, warnings, denied)
            })
            .unwrap()
            .value;
        assert!(denied.is_empty(), "seed {seed}: refused {denied:?}");
        assert_eq!(paid, [json!(2)], "seed {seed}: payments");
        let late = warnings
            .iter()
            .any(|w| w.contains("(call-1) had returned when the server cancelled it"));
        let ignored = warnings
            .iter()
            .any(|w| w.contains("cancellation of tool call \"call-1\" ignored"));
        orders.insert(match (late, ignored) {
            (true, _) => "returned before its cancellation was handled",
            (false, true) => "answered before its cancellation",
            (false, false) => "aborted",
        });
    }
    assert!(
        orders.contains("returned before its cancellation was handled"),
        "the seeds should reach the order that matters: {orders:?}"
    );
}

/// A payment whose tool returns as the user hangs up is counted: it took
/// the money, so the journal says so, though no answer can go. The tool
/// returns at once and the user hangs up as its call comes; over seeds
/// the session hears of the tool's end before the hang-up, with it, or
/// stops the tool first. Whatever the order, the journal has a
/// `flow:tool_result` exactly when the tool paid.
#[test]
fn a_payment_that_returns_as_the_user_hangs_up_is_counted() {
    let mut orders = BTreeSet::new();
    for seed in 0..64 {
        let outcome = Simulation::new(Seed::new(seed))
            .run(|| async {
                let (tools, paid) = take_payment(|_| 0);
                let journal = Arc::new(MemoryJournalSink::new());
                let state = State::new().with_journal_sink(journal.clone());
                let script = ScriptedServer::new()
                    .calls_without_waiting("take_payment", json!({ "n": 1 }))
                    .pause(std::time::Duration::from_secs(5))
                    .says("Still there?");
                let (connector, control) = script.into_connector();
                let handle = Live::builder()
                    .state(state)
                    .tools(tools)
                    .govern(pay_step())
                    .connect_with_connector(connector)
                    .await
                    .unwrap();
                control.release();
                // The tool returns at once: hang up as its call comes.
                let rest = super::hang_up_at_first_call(&handle).await;
                let warnings = super::warnings(&rest);
                let paid = paid.lock().unwrap().clone();
                (paid, journal.entries(), warnings)
            })
            .unwrap()
            .value;
        let (paid, journal, warnings) = outcome;
        first_payment_counted_iff_made(seed, &paid, &journal);
        let at_the_end = warnings
            .iter()
            .any(|w| w.contains("(call-1) returned as the session ended"));
        orders.insert(match (paid.is_empty(), at_the_end) {
            (true, _) => "stopped before it paid",
            (false, true) => "returned as the session ended",
            (false, false) => "answered before the end",
        });
    }
    assert!(
        orders.contains("returned as the session ended")
            && orders.contains("stopped before it paid"),
        "the seeds should reach both orders: {orders:?}"
    );
}
