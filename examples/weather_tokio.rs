//! The weather agent, tested on plain tokio: a `ScriptedServer` plays the
//! Live server (what the user says, the call the model makes, what the
//! model answers) against the session `Live::builder()` configures, with
//! its real tool. No network, no key, no model.
//!
//! ```sh
//! cargo run --example weather_tokio
//! ```
//!
//! The same agent under a seed: `weather_seeded`; soaked over many seeds:
//! `weather_soak`.

use std::process::ExitCode;

use livesim::prelude::*;
use livesim::testing::ScriptedServer;
use serde_json::json;

/// The agent under test: an instruction and one tool.
fn weather_agent() -> LiveBuilder {
    let get_weather = T::simple("get_weather", "The weather for a city", |args| async move {
        // A real agent would call a weather service here.
        Ok(json!({ "city": args["city"], "sky": "sunny", "celsius": 21 }))
    })
    .parameters(json!({
        "type": "OBJECT",
        "properties": { "city": { "type": "STRING" } },
        "required": ["city"]
    }));
    Live::builder()
        .instruction("You are a weather assistant.")
        .tools(get_weather)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    // What the server does: the user asks, the model calls the tool (and
    // the script waits for the session's answer), then the model speaks.
    let script = ScriptedServer::new()
        .named("weather")
        .hears("What's the weather in Paris?")
        .calls("get_weather", json!({ "city": "Paris" }))
        .says("It is sunny in Paris, 21 degrees.");

    // `play` connects the session to the script in memory and collects
    // every event until the run settles (all calls answered, then quiet).
    let run = match script.play(weather_agent()).await {
        Ok(run) => run,
        Err(e) => {
            // A session that breaks the script (a wrong answer, an
            // unexpected message) ends up here, with the action named.
            eprintln!("weather_tokio: {e}");
            return ExitCode::FAILURE;
        }
    };

    println!("events, as delivered:");
    for event in run.events() {
        println!("  {event}");
    }
    let answer = run.tool_responses();
    println!("the session answered the call with: {}", answer[0]);
    println!("the model said: {:?}", run.model_text());

    let ok = answer[0]["response"]["sky"] == "sunny"
        && run.model_text() == "It is sunny in Paris, 21 degrees.";
    run.disconnect().await;
    if ok {
        println!("weather_tokio: ok");
        ExitCode::SUCCESS
    } else {
        eprintln!("weather_tokio: the tool's answer or the model's text was not as scripted");
        ExitCode::FAILURE
    }
}
