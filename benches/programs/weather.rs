//! The seed documents' weather test: one scripted turn with a tool call,
//! then the 200 ms settle window. Shared by `benches/session.rs`
//! (criterion, seeded against the real clock) and
//! `benches/profile/executor.rs` (instruction counts under callgrind).

use livesim::prelude::*;
use livesim::testing::ScriptedServer;
use serde_json::json;

pub async fn weather() {
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
    assert!(run.model_text().contains("It is sunny"));
    run.disconnect().await;
}
