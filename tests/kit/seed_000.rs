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
    assert!(run.model_text().contains("It is sunny"));
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
    assert_eq!(run.model_text(), "It is sunny in Paris.");
    run.disconnect().await;
}

#[tokio::test]
async fn drives_the_connection_itself() -> Result<(), Box<dyn std::error::Error>> {
    let (transport, control) = ScriptedServer::new().says("Hello.").into_transport();
    let handle = Live::builder().connect_with_transport(transport).await?;
    let mut events = handle.events(); // subscribe before releasing
    control.release();
    control.drained().await; // every frame handed to the session loop
    let outbound = control.outbound_frames(); // raw bytes: setup, tool responses
    let setup: serde_json::Value = serde_json::from_slice(&outbound[0])?;
    assert!(setup.get("setup").is_some());
    let mut text = None;
    while let Some(event) = events.next().await {
        match event {
            LiveEvent::TextComplete { text: t, .. } => text = Some(t),
            LiveEvent::TurnComplete { .. } => break,
            _ => {}
        }
    }
    assert_eq!(text.as_deref(), Some("Hello."));
    handle.disconnect().await;
    Ok(())
}

#[test]
fn a_manual_clock_moves_only_when_told() {
    use livesim::testing::ManualClock; // the seed's path
    use std::time::Duration;

    let clock = Arc::new(ManualClock::new());
    let state = State::new().with_clock(clock.clone());

    let t0 = state.clock().now();
    clock.advance(Duration::from_secs(5));
    assert_eq!(state.clock().now() - t0, Duration::from_secs(5));
    // Every clone and view shares it.
    let view = state.scoped("user:");
    assert_eq!(view.clock().now() - t0, Duration::from_secs(5));
    clock.set_elapsed(Duration::from_secs(3)); // never backwards
    assert_eq!(clock.elapsed(), Duration::from_secs(5));
}

/// Test tools that write `party_size`, `confirmed` and `booked` into state.
fn booking_tools(state: &State) -> ToolComposite {
    let (a, b, c) = (state.clone(), state.clone(), state.clone());
    T::simple("set_party", "Sets the party size", move |args| {
        let state = a.clone();
        async move {
            state.set("party_size", args["size"].clone());
            Ok(json!({ "party_size": args["size"] }))
        }
    }) | T::simple("confirm", "The customer confirmed", move |_| {
        let state = b.clone();
        async move {
            state.set("confirmed", true);
            Ok(json!({ "confirmed": true }))
        }
    }) | T::simple("book_table", "Books the table", move |_| {
        let state = c.clone();
        async move {
            state.set("booked", true);
            Ok(json!({ "booked": true }))
        }
    })
}

fn booking_conversation() -> CompiledConversation {
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

#[tokio::test]
async fn a_recorded_session_becomes_a_scenario() -> Result<(), Box<dyn std::error::Error>> {
    use livesim::simulation::Scenario;
    use livesim::state::MemoryJournalSink;

    let convo = booking_conversation();
    let journal = Arc::new(MemoryJournalSink::new());
    let state = State::new().with_journal_sink(journal.clone());

    let run = ScriptedServer::new()
        .calls("set_party", json!({ "size": 4 }))
        .says("Four people. Shall I book?")
        .calls("confirm", json!({}))
        .says("Confirmed.")
        .calls("book_table", json!({}))
        .says("Booked.")
        .play(
            Live::builder()
                .state(state.clone())
                .tools(booking_tools(&state))
                .converse(&convo),
        )
        .await?;
    run.disconnect().await;
    assert_eq!(state.get("booked"), Some(json!(true)));

    let scenario = Scenario::from_journal("booking-incident", &journal.entries());
    scenario.run(&convo, Enforcement::Enforce).await?; // the spec reproduces it

    let steps = serde_json::from_str::<serde_json::Value>(&scenario.to_json())?["steps"].clone();
    assert_eq!(steps[0], json!({ "expect_allowed": "set_party" }));
    assert_eq!(
        steps[1],
        json!({ "set": { "key": "party_size", "value": 4 } })
    );
    assert_eq!(
        steps[2],
        json!({ "tool_result": { "tool": "set_party", "ok": true } })
    );
    assert_eq!(steps[3], json!("turn"));
    assert_eq!(steps[4], json!({ "expect_active": ["book"] }));

    // A stricter spec that also requires a manager's approval refuses it.
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
        .compile()?;
    let failure = scenario
        .run(&stricter, Enforcement::Enforce)
        .await
        .unwrap_err();
    assert!(failure.to_string().contains("book_table"), "{failure}");
    Ok(())
}

/// The same test on a multi-threaded runtime, where the session's lanes
/// and tools may run on other threads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_weather_example_runs_on_a_multi_threaded_runtime() {
    for _ in 0..5 {
        let run = ScriptedServer::new()
            .hears("What's the weather in Paris?")
            .calls("get_weather", json!({ "city": "Paris" }))
            .says("It is sunny in Paris.")
            .settle_after(std::time::Duration::from_millis(50))
            .play(
                Live::builder().tools(T::simple("get_weather", "Weather", |args| async move {
                    Ok(json!({ "city": args["city"], "sky": "sunny" }))
                })),
            )
            .await
            .unwrap();
        assert_eq!(run.tool_responses()[0]["response"]["sky"], "sunny");
        assert_eq!(run.model_text(), "It is sunny in Paris.");
        run.disconnect().await;
    }
}
