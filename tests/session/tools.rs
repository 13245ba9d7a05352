//! Tools: every call answered exactly once, concurrently, with errors,
//! panics, timeouts, cancellations and duplicate ids handled by policy.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use livesim::Seed;
use livesim::executor::{Runner, Simulation};
use livesim::prelude::*;
use livesim::testing::{Action, Call, ScriptedServer};
use serde_json::{Value, json};

/// A tool whose latency is drawn from the seed: calls finish in
/// seed-chosen orders.
fn slow_echo() -> ToolComposite {
    T::simple("echo", "Echoes after a seeded delay", |args| async move {
        let ms = livesim::executor::draw("tool-latency", |s| s.range(1..=50)).unwrap_or(5);
        tokio::time::sleep(Duration::from_millis(ms)).await;
        Ok(json!({ "echo": args["n"] }))
    })
}

fn many_calls(n: u64) -> ScriptedServer {
    let calls = (1..=n)
        .map(|i| Call {
            id: format!("call-{i}"),
            name: "echo".into(),
            args: json!({ "n": i }),
            wait: true,
        })
        .collect();
    ScriptedServer::new()
        .action(Action::CallMany(calls))
        .says("All done.")
}

fn answered_ids(run: &livesim::testing::ScriptedRun) -> Vec<String> {
    run.tool_responses()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect()
}

/// For every seed, each of many concurrent calls is answered exactly once,
/// with its own id and its own result; across seeds they finish in
/// different orders.
#[test]
fn concurrent_calls_are_each_answered_exactly_once() {
    let orders = Arc::new(Mutex::new(BTreeSet::new()));
    let seen = orders.clone();
    let summary = Runner::new(livesim::test_id!()).seeds(100).run(move |_| {
        let seen = seen.clone();
        async move {
            let run = many_calls(8)
                .play(Live::builder().tools(slow_echo()))
                .await
                .unwrap();
            let ids = answered_ids(&run);
            let mut sorted = ids.clone();
            sorted.sort();
            let expected: Vec<String> = (1..=8).map(|i| format!("call-{i}")).collect();
            let mut expected_sorted = expected.clone();
            expected_sorted.sort();
            assert_eq!(sorted, expected_sorted, "every id exactly once");
            for response in run.tool_responses() {
                let n: u64 = response["id"].as_str().unwrap()[5..].parse().unwrap();
                assert_eq!(response["response"]["echo"], json!(n), "its own result");
            }
            seen.lock().unwrap().insert(ids);
            run.disconnect().await;
        }
    });
    if summary.seeds >= 100 {
        assert!(
            orders.lock().unwrap().len() >= 20,
            "completion orders barely vary"
        );
    }
}

/// Errors and panics in a tool become `{"error": …}` answers; unknown
/// tools are answered with an error naming the declared tools.
#[tokio::test]
async fn failures_are_answered_as_errors() {
    let tools = T::simple("fails", "", |_| async { Err("the city is unknown".into()) })
        | T::simple("panics", "", |_| async { panic!("boom") });
    let run = ScriptedServer::new()
        .calls("fails", json!({}))
        .calls("panics", json!({}))
        .calls("missing", json!({}))
        .play(Live::builder().tools(tools))
        .await
        .unwrap();
    let responses = run.tool_responses();
    assert_eq!(responses.len(), 3);
    assert_eq!(
        responses[0]["response"],
        json!({ "error": "the city is unknown" })
    );
    assert_eq!(
        responses[1]["response"],
        json!({ "error": "panics panicked: boom" })
    );
    assert_eq!(
        responses[2]["response"],
        json!({ "error": "unknown tool \"missing\": this session declares [fails, panics]" })
    );
    run.disconnect().await;
}

/// A tool that never returns is answered with a timeout error exactly at
/// its deadline of virtual time: two minutes pass instantly.
#[test]
fn a_tool_times_out_at_exactly_its_deadline() {
    let out = Simulation::new(Seed::new(11))
        .run(|| async {
            let stamps = Arc::new(Mutex::new(Vec::new()));
            let log = stamps.clone();
            let never = T::simple("lookup", "Never answers", |_| async {
                std::future::pending::<()>().await;
                Ok(Value::Null)
            })
            .timeout(Duration::from_secs(120));
            let run = ScriptedServer::new()
                .calls("lookup", json!({}))
                .settle_cap(Duration::from_secs(600))
                .play(Live::builder().tools(never).on_event(move |event| {
                    if matches!(
                        event,
                        LiveEvent::ToolCall { .. } | LiveEvent::ToolResponse { .. }
                    ) {
                        log.lock().unwrap().push(livesim::executor::now());
                    }
                }))
                .await
                .unwrap();
            let response = run.tool_responses()[0].clone();
            run.disconnect().await;
            let stamps = stamps.lock().unwrap().clone();
            (response, stamps)
        })
        .unwrap();
    let (response, stamps) = out.value;
    assert_eq!(
        response["response"],
        json!({ "error": "lookup timed out after 2m" })
    );
    assert_eq!(stamps.len(), 2);
    assert_eq!(
        stamps[1] - stamps[0],
        Duration::from_secs(120),
        "exactly the deadline"
    );
}

/// A cancelled call is aborted and never answered, even once it would
/// have finished.
#[test]
fn a_cancelled_call_is_never_answered() {
    Runner::new(livesim::test_id!()).seeds(20).run(|_| async {
        let finished = Arc::new(Mutex::new(false));
        let done = finished.clone();
        let slow = T::simple("slow", "", move |_| {
            let done = done.clone();
            async move {
                tokio::time::sleep(Duration::from_secs(10)).await;
                *done.lock().unwrap() = true;
                Ok(json!({ "late": true }))
            }
        });
        let run = ScriptedServer::new()
            .calls_without_waiting("slow", json!({}))
            .pause(Duration::from_secs(1))
            .cancels(["call-1"])
            .says("Never mind.")
            .settle_after(Duration::from_secs(20))
            .play(Live::builder().tools(slow))
            .await
            .unwrap();
        assert!(
            run.tool_responses().is_empty(),
            "{:?}",
            run.tool_responses()
        );
        assert!(!*finished.lock().unwrap(), "the call was aborted");
        assert!(
            run.events()
                .iter()
                .any(|e| matches!(e, LiveEvent::ToolCancelled { ids } if ids == &["call-1"]))
        );
        run.disconnect().await;
    });
}

/// Duplicate call ids: the first call wins; a repeat, in the same message
/// or a later one, is not run and not answered, and a warning says so.
#[tokio::test]
async fn a_duplicate_call_id_is_answered_once() {
    let counter = Arc::new(Mutex::new(0));
    let count = counter.clone();
    let tool = T::simple("count", "", move |_| {
        let count = count.clone();
        async move {
            *count.lock().unwrap() += 1;
            Ok(json!({}))
        }
    });
    let run = ScriptedServer::new()
        .frame(json!({ "toolCall": { "functionCalls": [
            { "id": "dup", "name": "count", "args": {} },
            { "id": "dup", "name": "count", "args": {} }
        ] } }))
        .pause(Duration::from_millis(50))
        .frame(json!({ "toolCall": { "functionCalls": [{ "id": "dup", "name": "count" }] } }))
        .play(Live::builder().tools(tool))
        .await
        .unwrap();
    assert_eq!(run.tool_responses().len(), 1);
    assert_eq!(*counter.lock().unwrap(), 1);
    let warnings = run
        .events()
        .iter()
        .filter(|e| matches!(e, LiveEvent::Warning { message } if message.contains("duplicate tool call id \"dup\"")))
        .count();
    assert_eq!(warnings, 2);
    run.disconnect().await;
}

/// A call without an id (or with an empty one) is not run, since no
/// answer could be matched to it: nothing is sent for it, a warning names
/// the tool, and a call with an id in the same message runs as usual.
/// (Virtual time: the script waits out its answer window for the calls
/// without one.)
#[tokio::test(start_paused = true)]
async fn a_call_without_an_id_is_not_run() {
    let counter = Arc::new(Mutex::new(0));
    let count = counter.clone();
    let tool = T::simple("count", "", move |_| {
        let count = count.clone();
        async move {
            *count.lock().unwrap() += 1;
            Ok(json!({}))
        }
    });
    let run = ScriptedServer::new()
        .frame(json!({ "toolCall": { "functionCalls": [
            { "name": "count", "args": {} },
            { "id": "", "name": "count", "args": {} },
            { "id": "call-1", "name": "count", "args": {} }
        ] } }))
        .pause(Duration::from_millis(50))
        .play(Live::builder().tools(tool))
        .await
        .unwrap();
    assert_eq!(*counter.lock().unwrap(), 1);
    let answered: Vec<serde_json::Value> = run
        .tool_responses()
        .iter()
        .map(|r| r["id"].clone())
        .collect();
    assert_eq!(answered, [json!("call-1")]);
    let warnings = run
        .events()
        .iter()
        .filter(|e| matches!(e, LiveEvent::Warning { message } if message == "tool call to count has no id: not run, since no response could be matched to it"))
        .count();
    assert_eq!(warnings, 2);
    run.disconnect().await;
}

/// A typed tool gets its arguments as a struct; arguments that do not fit
/// are answered with an error and the function is not called.
#[tokio::test]
async fn typed_tools_check_their_arguments() {
    #[derive(serde::Deserialize)]
    struct Party {
        size: u32,
    }
    let tool = T::typed(
        "set_party",
        "Sets the party size",
        |party: Party| async move { Ok(json!({ "size": party.size })) },
    );
    let run = ScriptedServer::new()
        .calls("set_party", json!({ "size": 4 }))
        .calls("set_party", json!({ "size": "four" }))
        .play(Live::builder().tools(tool))
        .await
        .unwrap();
    let responses = run.tool_responses();
    assert_eq!(responses[0]["response"], json!({ "size": 4 }));
    let error = responses[1]["response"]["error"].as_str().unwrap();
    assert!(
        error.starts_with("invalid arguments for set_party:"),
        "{error}"
    );
    run.disconnect().await;
}

/// Declarations go out in setup.
#[tokio::test]
async fn tools_are_declared_in_setup() {
    let run = ScriptedServer::new()
        .play(Live::builder().tools(slow_echo().parameters(json!({
            "type": "OBJECT", "properties": { "n": { "type": "INTEGER" } }
        }))))
        .await
        .unwrap();
    let declaration = &run.setup()["tools"][0]["functionDeclarations"][0];
    assert_eq!(declaration["name"], "echo");
    assert_eq!(
        declaration["parameters"]["properties"]["n"]["type"],
        "INTEGER"
    );
    run.disconnect().await;
}
