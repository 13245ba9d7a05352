//! Extractors after each turn: an LLM extractor reading the transcript,
//! and a record whose resolved fields are cached on the session's clock.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use livesim::clock::ManualClock;
use livesim::clock::Timestamp;
use livesim::flow::resolver;
use livesim::llm::{LlmExtractor, LlmResponse, MockLlm};
use livesim::prelude::*;
use livesim::tape::{MemoryTape, TapedLlm};
use livesim::testing::ScriptedServer;
use serde_json::{Value, json};

#[tokio::test]
async fn an_llm_extractor_writes_what_it_reads_to_state() {
    let tape = Arc::new(MemoryTape::new());
    let model = Arc::new(TapedLlm::recording(
        MockLlm::script([LlmResponse::from_text("```json\n{\"party_size\": 4}\n```")]),
        tape.clone(),
    ));
    let run = ScriptedServer::new()
        .hears("A table for four, please.")
        .says("Four people, noted.")
        .play(Live::builder().extract(LlmExtractor::new(
            "booking",
            model,
            "Extract the party size as JSON.",
            10,
        )))
        .await
        .unwrap();
    assert_eq!(run.state().get("booking"), Some(json!({ "party_size": 4 })));
    // What the model was asked: the prompt, and the transcript so far.
    let request = &tape.entries()[0].input;
    assert_eq!(
        request["system_instruction"],
        "Extract the party size as JSON."
    );
    assert_eq!(
        request["contents"][0]["parts"][0]["text"],
        "Transcript:\nuser: A table for four, please.\nmodel: Four people, noted.\n"
    );
    run.disconnect().await;
}

/// A resolved field is fetched once its inputs are set, cached for its
/// ttl of clock time, and fetched again once the clock passes it.
#[tokio::test]
async fn resolved_fields_are_cached_for_their_ttl_on_the_clock() {
    let clock = Arc::new(ManualClock::starting_at(Timestamp::from_unix_millis(0)));
    let fetches = Arc::new(Mutex::new(0));
    let counter = fetches.clone();
    let account = Extract::record("account")
        .field_resolve(
            "balance",
            ["account_id"],
            Some(Duration::from_secs(60)),
            resolver(move |args: Value| {
                let counter = counter.clone();
                async move {
                    *counter.lock().unwrap() += 1;
                    Ok(json!({ "account": args["account_id"], "balance": 42 }))
                }
            }),
        )
        .build();
    let ticker = clock.clone();
    let tick = T::simple("tick", "Moves the clock", move |args| {
        let clock = ticker.clone();
        async move {
            clock.advance(Duration::from_secs(args["secs"].as_u64().unwrap()));
            Ok(json!({}))
        }
    });
    let state = State::new();
    state.set("account_id", "a-1");
    let run = ScriptedServer::new()
        .says("One.")
        .calls("tick", json!({ "secs": 30 }))
        .says("Two.")
        .calls("tick", json!({ "secs": 31 }))
        .says("Three.")
        .play(
            Live::builder()
                .state(state.clone())
                .clock(clock.clone())
                .tools(tick)
                .extract(account),
        )
        .await
        .unwrap();
    assert_eq!(
        state.get("account:balance"),
        Some(json!({ "account": "a-1", "balance": 42 }))
    );
    // Turn one fetches; turn two (30 s later) is cached; turn three (61 s)
    // is past the ttl and fetches again.
    assert_eq!(*fetches.lock().unwrap(), 2);
    run.disconnect().await;
}

/// A field is fetched only once every input holds a value: an input
/// never set, or set to null (how a removed value reads), leaves the
/// field unfetched and unwritten.
#[tokio::test]
async fn a_field_waits_for_every_input_to_hold_a_value() {
    let fetches = Arc::new(Mutex::new(Vec::new()));
    let seen = fetches.clone();
    let account = Extract::record("account")
        .field_resolve(
            "balance",
            ["account_id", "currency"],
            None,
            resolver(move |args: Value| {
                let seen = seen.clone();
                async move {
                    seen.lock().unwrap().push(args.clone());
                    Ok(json!({ "balance": 42, "currency": args["currency"] }))
                }
            }),
        )
        .field_resolve(
            "limit",
            ["account_id", "tier"],
            None,
            resolver(move |_| async move { Ok(json!(500)) }),
        )
        .build();
    let state = State::new();
    state.set("account_id", "a-1");
    state.set("currency", Value::Null);
    let run = ScriptedServer::new()
        .says("One.")
        .play(Live::builder().state(state.clone()).extract(account))
        .await
        .unwrap();
    assert_eq!(*fetches.lock().unwrap(), Vec::<Value>::new());
    assert_eq!(state.get("account:balance"), None);
    assert_eq!(state.get("account:limit"), None, "tier was never set");
    run.disconnect().await;
}

/// An extractor that answers its own name after `delay` of virtual time.
struct Named {
    name: &'static str,
    delay: Duration,
}

impl livesim::session::Extractor for Named {
    fn name(&self) -> &str {
        self.name
    }

    fn extract(
        &self,
        _turn: livesim::session::TurnContext,
    ) -> futures::future::BoxFuture<'static, Result<livesim::session::Extracted, String>> {
        let (name, delay) = (self.name, self.delay);
        Box::pin(async move {
            tokio::time::sleep(delay).await;
            Ok(vec![(name.to_string(), json!(name))])
        })
    }
}

/// Extractions stand right after the turn's `turn_complete` in the stored
/// log, in the order the extractors were added, whichever finished first;
/// as delivered, they come as they finish.
#[test]
fn extractions_stand_after_their_turn_in_the_order_the_extractors_were_added() {
    use livesim::Seed;
    use livesim::executor::Simulation;
    let names = |events: &[LiveEvent]| -> Vec<String> {
        events
            .iter()
            .filter_map(|e| match e {
                LiveEvent::Extracted { extractor, .. } => Some(extractor.clone()),
                _ => None,
            })
            .collect()
    };
    let out = Simulation::new(Seed::new(3))
        .run(move || async move {
            let seen = Arc::new(Mutex::new(Vec::new()));
            let delivered = seen.clone();
            let run = ScriptedServer::new()
                .hears("A table for two.")
                .says("Noted.")
                .play(
                    Live::builder()
                        .extract(Named {
                            name: "slow",
                            delay: Duration::from_millis(400),
                        })
                        .extract(Named {
                            name: "fast",
                            delay: Duration::from_millis(10),
                        })
                        .on_event(move |e| seen.lock().unwrap().push(e.clone())),
                )
                .await
                .unwrap();
            // The slow one may finish after the script settles: wait for
            // it in virtual time.
            tokio::time::sleep(Duration::from_secs(1)).await;
            let log = run.session_log();
            run.disconnect().await;
            let delivered = names(&delivered.lock().unwrap());
            (log, delivered)
        })
        .unwrap();
    let (log, delivered) = out.value;
    let turn = log
        .iter()
        .position(|e| matches!(e, LiveEvent::TurnComplete { .. }))
        .expect("a turn_complete");
    // Both right after the turn's end, nothing between, and no others.
    let after_turn = log.get(turn + 1..turn + 3).map(&names);
    assert_eq!(
        after_turn.as_deref(),
        Some(&["slow", "fast"].map(String::from)[..]),
        "{log:?}"
    );
    assert_eq!(names(&log), ["slow", "fast"], "{log:?}");
    assert_eq!(delivered, ["fast", "slow"]);
}
