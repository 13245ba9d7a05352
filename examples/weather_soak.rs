//! The weather agent, soaked: `Soak` generates a conversation for each
//! seed from the tools the builder declares, draws the seed's faults
//! (text split mid-word, parallel calls, cancellations racing answers,
//! interruptions, closes, …), plays it, and checks every built-in
//! invariant plus the agent's own after every session.
//!
//! ```sh
//! cargo run --example weather_soak
//! LIVESIM_SEEDS=0..20000 cargo run --release --example weather_soak
//! ```
//!
//! A failure prints its seed, its faults, the invariant it broke and the
//! line that replays it, and the example exits 1.

use std::process::ExitCode;

use livesim::prelude::*;
use livesim::soak::{ExecutionOutcome, Soak};
use serde_json::json;

/// A fresh session for each seed.
fn weather_agent() -> LiveBuilder {
    let get_weather = T::simple("get_weather", "The weather for a city", |args| async move {
        let city = args["city"].as_str().unwrap_or_default();
        if city.is_empty() {
            return Err("no city given".into());
        }
        Ok(json!({ "city": city, "sky": "sunny" }))
    })
    // Generated calls draw their arguments from the parameters.
    .parameters(json!({
        "type": "OBJECT",
        "properties": { "city": { "type": "STRING", "enum": ["Paris", "Lyon", "Oslo"] } },
        "required": ["city"]
    }));
    Live::builder()
        .instruction("You are a weather assistant.")
        .tools(get_weather)
}

fn main() -> ExitCode {
    let soak = Soak::new("weather", weather_agent)
        .lines(
            ["What's the weather in Paris?", "And in Oslo?"],
            ["It is sunny.", "Bring a coat."],
        )
        // The agent's own invariant: a successful answer names the city
        // the call asked about.
        .invariant("answers-the-city-asked", |run| {
            for e in run.executions_of("get_weather") {
                if let ExecutionOutcome::Ok(result) = &e.outcome
                    && result["city"] != e.args["city"]
                {
                    return Err(format!(
                        "asked {} answered {}",
                        e.args["city"], result["city"]
                    ));
                }
            }
            Ok(())
        })
        // A goal: some seed should reach it, or the soak never tested it.
        .sometimes("weather-answered", |run| {
            run.executions_of("get_weather")
                .any(|e| matches!(e.outcome, ExecutionOutcome::Ok(_)))
        })
        .seeds(200)
        .replay_line(|seed| format!("LIVESIM_SEED={seed} cargo run --example weather_soak"));

    match soak.try_run() {
        Ok(summary) => {
            println!("{summary}");
            println!("weather_soak: ok");
            ExitCode::SUCCESS
        }
        Err(summary) => {
            eprintln!("{summary}");
            ExitCode::FAILURE
        }
    }
}
