//! The examples of "Testing Conversations Offline" (seed 000), written
//! against livesim's API.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use livesim::compose::tools::ToolComposite;
use livesim::prelude::*;
use livesim::testing::ScriptedServer;
use serde_json::json;

#[tokio::test]
async fn answers_a_weather_question() {
    let run = ScriptedServer::new()
        .hears("What's the weather in Paris?")
        .calls("get_weather", json!({ "city": "Paris" }))
        .says("It is sunny in Paris.")
        .play(
            Live::builder()
                .instruction("You are a weather assistant.")
                .tools(T::simple(
                    "get_weather",
                    "Weather for a city",
                    |args| async move { Ok(json!({ "city": args["city"], "sky": "sunny" })) },
                )),
        )
        .await
        .unwrap();

    let responses = run.tool_responses();
    assert_eq!(responses[0]["name"], "get_weather");
    assert_eq!(responses[0]["response"]["sky"], "sunny");
    assert!(run.transcript_text().contains("It is sunny"));
    run.disconnect().await;
}

fn counting_tool(name: &'static str, calls: Arc<AtomicUsize>) -> ToolComposite {
    T::simple(name, name, move |_| {
        let calls = calls.clone();
        async move {
            calls.fetch_add(1, Ordering::SeqCst);
            Ok(json!({ "ok": true }))
        }
    })
}

#[tokio::test]
async fn governance_blocks_an_out_of_order_tool() {
    let verified = Arc::new(AtomicUsize::new(0));
    let paid = Arc::new(AtomicUsize::new(0));
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

    let run = ScriptedServer::new()
        .calls("take_payment", json!({ "amount": 10 }))
        .calls("verify_identity", json!({}))
        .calls("take_payment", json!({ "amount": 10 }))
        .says("Payment taken.")
        .play(
            Live::builder()
                .tools(counting_tool("verify_identity", verified.clone()))
                .tools(counting_tool("take_payment", paid.clone()))
                .govern(flow),
        )
        .await
        .unwrap();

    assert_eq!(verified.load(Ordering::SeqCst), 1);
    assert_eq!(paid.load(Ordering::SeqCst), 1); // the early call never ran
    let responses = run.tool_responses();
    assert_eq!(responses.len(), 3); // every call is answered
    assert_ne!(responses[0]["response"], json!({ "ok": true })); // a refusal
    run.disconnect().await;
}

/// The weather example under the seeded runtime: every seed answers the
/// same way, in virtual time.
#[livesim::test(seeds = 50)]
async fn the_weather_example_holds_for_every_seed() {
    let run = ScriptedServer::new()
        .hears("What's the weather in Paris?")
        .calls("get_weather", json!({ "city": "Paris" }))
        .says("It is sunny in Paris.")
        .play(Live::builder().tools(T::simple(
            "get_weather",
            "Weather for a city",
            |args| async move { Ok(json!({ "city": args["city"], "sky": "sunny" })) },
        )))
        .await
        .unwrap();
    assert_eq!(run.tool_responses()[0]["response"]["sky"], "sunny");
    assert_eq!(run.transcript_text(), "It is sunny in Paris.");
    run.disconnect().await;
}
