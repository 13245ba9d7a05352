//! The weather agent under the seeded runtime: one seed, one run, every
//! time; across seeds, frame latencies, tool scheduling and the order in
//! which the session's lanes interleave all vary. Virtual time: a run's
//! settle window and the tool's latency cost no wall time.
//!
//! ```sh
//! cargo run --example weather_seeded
//! LIVESIM_SEEDS=0..2000 cargo run --example weather_seeded   # more seeds
//! ```
//!
//! It shows three things:
//!
//! 1. the same seed twice gives the same run (the same trace hash);
//! 2. `Runner` runs the test for many seeds and says how many distinct
//!    interleavings they produced;
//! 3. a check that only some seeds break (a latency budget, against a
//!    weather service whose latency comes from the seed) is reported with
//!    its seed and the line that replays it. Run that line: the same
//!    seed fails the same way.

use std::process::ExitCode;
use std::time::Duration;

use livesim::Seed;
use livesim::executor::{Runner, Simulation, Stream};
use livesim::prelude::*;
use livesim::testing::ScriptedServer;
use serde_json::json;

/// The weather agent; its service takes 50 to 900 ms, drawn from the
/// seed's stream `weather/latency` (so a seed always draws the same).
fn weather_agent() -> LiveBuilder {
    let get_weather = T::simple("get_weather", "The weather for a city", |args| async move {
        let seed = livesim::executor::seed().unwrap_or(Seed::new(0));
        let latency = Stream::new(seed, "weather/latency")
            .millis(Duration::from_millis(50)..=Duration::from_millis(900));
        tokio::time::sleep(latency).await; // virtual time: instant
        Ok(json!({ "city": args["city"], "sky": "sunny" }))
    });
    Live::builder()
        .instruction("You are a weather assistant.")
        .tools(get_weather)
}

/// One scripted conversation; returns how long (virtual time) the
/// session took to answer the call, from the call's arrival to the
/// answer, or what went wrong.
async fn weather_test() -> Result<Duration, String> {
    let run = ScriptedServer::new()
        .hears("What's the weather in Paris?")
        .calls("get_weather", json!({ "city": "Paris" }))
        .says("It is sunny in Paris.")
        .play(weather_agent())
        .await
        .map_err(|e| e.to_string())?;
    // Each event's own time: the clock after `play` has also run through
    // the settle window (200 ms of quiet), which is no part of the answer.
    let called = run.time_of(|e| matches!(e, LiveEvent::ToolCall { .. }));
    let answered = run.time_of(|e| matches!(e, LiveEvent::ToolResponse { .. }));
    let ok = run.tool_responses()[0]["response"]["sky"] == "sunny"
        && run.model_text() == "It is sunny in Paris.";
    run.disconnect().await;
    match (ok, called, answered) {
        (true, Some(called), Some(answered)) => Ok(answered - called),
        _ => Err(format!("unexpected answer or text: {:?}", run.model_text())),
    }
}

fn main() -> ExitCode {
    // 1. One seed, one run.
    let run = |seed| Simulation::new(Seed::new(seed)).run(weather_test);
    let (Ok(a), Ok(b)) = (run(7), run(7)) else {
        eprintln!("weather_seeded: seed 7 failed");
        return ExitCode::FAILURE;
    };
    println!(
        "seed 7 twice: trace hashes {:016x} and {:016x}, {} trace entries, {:?} of virtual time",
        a.trace.hash(),
        b.trace.hash(),
        a.trace.len(),
        a.elapsed
    );
    if a.trace.hash() != b.trace.hash() {
        eprintln!("weather_seeded: seed 7 ran two different ways");
        return ExitCode::FAILURE;
    }

    // 2. Many seeds (`LIVESIM_SEEDS` overrides the 200). The first seed
    // runs twice to check determinism.
    let summary = match Runner::new(livesim::test_id!())
        .seeds(200)
        .try_run(|_seed| async { weather_test().await.map(|_| ()) })
    {
        Ok(summary) => summary,
        Err(report) => {
            eprintln!("weather_seeded: the weather test failed:\n{report}");
            return ExitCode::FAILURE;
        }
    };
    println!(
        "{} seeds passed: {} distinct interleavings, {:?} of virtual time in all",
        summary.seeds,
        summary.distinct_interleavings(),
        summary.virtual_time
    );

    // 3. A check some seeds break: "answered within 600 ms of the call",
    // read from the events' own times. The runner stops at the first
    // failing seed and reports it.
    let budget = Runner::new(livesim::test_id!())
        .seeds(200)
        .try_run(|_seed| async {
            let at = weather_test().await?;
            if at > Duration::from_millis(600) {
                return Err(format!("answered after {at:?}, over the 600 ms budget"));
            }
            Ok(())
        });
    match budget {
        Err(report) => {
            println!("the latency budget failed, as a slow seed should:");
            println!("  {}", report.failure.summary());
            // In a test, `report.replay_command()` is the `cargo test`
            // line; for this example the runner reads the same variable:
            println!(
                "  replay: LIVESIM_SEED={} cargo run --example weather_seeded",
                report.failure.seed
            );
            println!("weather_seeded: ok");
            ExitCode::SUCCESS
        }
        Ok(summary) => {
            eprintln!(
                "weather_seeded: expected a seed over the latency budget; {} seeds passed",
                summary.seeds
            );
            ExitCode::FAILURE
        }
    }
}
