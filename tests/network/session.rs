//! A Live session on the client host, the script on the server host.

use livesim::Seed;
use livesim::executor::{Runner, Simulation};
use livesim::network::{Faults, Network};
use livesim::prelude::*;
use livesim::testing::ScriptedServer;
use livesim::transport::connector::Connector;
use serde_json::json;

fn weather() -> ScriptedServer {
    ScriptedServer::new()
        .named("weather")
        .hears("What's the weather in Paris?")
        .calls("get_weather", json!({ "city": "Paris" }))
        .says("It is sunny in Paris.")
}

async fn weather_session(connector: livesim::network::NetworkConnector) -> Result<String, String> {
    let tools = T::simple("get_weather", "Weather", |args| async move {
        Ok(json!({ "city": args["city"], "sky": "sunny" }))
    });
    first_answer(connector, tools).await
}

/// Connects a text session with `tools` and returns its first answer.
async fn first_answer(
    connector: livesim::network::NetworkConnector,
    tools: impl Into<ToolComposite>,
) -> Result<String, String> {
    let transport = connector.connect().await.map_err(|e| e.to_string())?;
    let handle = Live::builder()
        .text_only()
        .tools(tools)
        .connect_with_transport(transport)
        .await
        .map_err(|e| e.to_string())?;
    let mut events = handle.events();
    while let Some(event) = events.next().await {
        if let LiveEvent::TextComplete { text, .. } = event {
            handle.disconnect().await;
            return Ok(text);
        }
    }
    Err("the session ended before the answer".to_string())
}

#[test]
fn a_session_runs_over_the_real_websocket_transport_on_turmoil() {
    let network = Network::new(weather()).faults(Faults::drawn().only(&[]).count(0..=0));
    let outcome = network
        .run(&Simulation::new(Seed::new(4)), weather_session)
        .unwrap();
    assert_eq!(outcome.value.unwrap(), "It is sunny in Paris.");
    let trace = outcome.trace.tail(usize::MAX);
    // The session's lanes and the script ran under the seed in both hosts.
    assert!(trace.contains("tool_response"), "{trace}");
    assert!(trace.contains("(entered)"), "{trace}");
}

/// Property: under any seed with drawn latency (and no fault), the session
/// over turmoil gets its answer, and the same seed gives the same trace.
#[test]
fn the_same_seed_gives_the_same_trace_and_seeds_vary() {
    let network = Network::new(weather()).faults(
        Faults::none()
            .latency(std::time::Duration::from_millis(1)..=std::time::Duration::from_millis(30)),
    );
    let summary = Runner::new(livesim::test_id!())
        .seeds(12)
        .check_determinism(true)
        .run_with(|sim| {
            let outcome = network.run(sim, weather_session)?;
            Ok(livesim::executor::Outcome {
                value: outcome
                    .value
                    .and_then(|text| (text == "It is sunny in Paris.").then_some(()).ok_or(text)),
                trace: outcome.trace,
                elapsed: outcome.elapsed,
                warnings: outcome.warnings,
            })
        });
    let mut hashes: Vec<u64> = summary.hashes.iter().map(|(_, h)| *h).collect();
    hashes.sort_unstable();
    hashes.dedup();
    assert!(hashes.len() > 1, "seeds should vary the run");
}

#[test]
fn a_stuck_run_ends_at_the_time_limit_with_the_seed() {
    let network = Network::new(ScriptedServer::new().says("hi"))
        .faults(Faults::none())
        .duration(std::time::Duration::from_secs(2));
    let failure = network
        .run(&Simulation::new(Seed::new(9)), |_connector| {
            std::future::pending::<()>()
        })
        .unwrap_err();
    assert!(
        failure
            .summary()
            .starts_with("time limit of 2.000s passed, seed 0x9"),
        "{}",
        failure.summary()
    );
}

/// Both ends read with a buffer of a few kilobytes: a frame many times
/// that size (the session's tool response, the server's answer) arrives
/// whole and unchanged, in either direction.
#[test]
fn frames_longer_than_a_read_buffer_cross_whole() {
    let answer: String = (0..20_000).map(|i| format!("{} ", i % 97)).collect();
    let script = ScriptedServer::new()
        .named("long")
        .calls("get_weather", json!({ "city": "Paris" }))
        .says(answer.trim_end());
    let network = Network::new(script).faults(Faults::none());
    let outcome = network
        .run(&Simulation::new(Seed::new(7)), |connector| {
            let tools = T::simple("get_weather", "Weather", |_| async move {
                let hours: Vec<String> = (0..5_000).map(|h| format!("hour {h}: sunny")).collect();
                Ok(json!({ "hours": hours }))
            });
            first_answer(connector, tools)
        })
        .unwrap();
    let text = outcome.value.unwrap();
    assert!(text.len() > 50_000, "{}", text.len());
    assert_eq!(text, answer.trim_end());
    let trace = outcome.trace.tail(usize::MAX);
    assert!(trace.contains("tool_response"), "{trace}");
}
