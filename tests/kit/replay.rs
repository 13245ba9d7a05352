//! `replay_session`: a recorded wire log re-driven through the real
//! control plane, on a clock that reads the recording's times.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use livesim::Seed;
use livesim::executor::Simulation;
use livesim::prelude::*;
use livesim::testing::{ScriptedServer, replay_session};
use livesim::transport::recording::{MemorySink, Recording, WireLogWriter};
use livesim::transport::wire_log::WireLog;
use serde_json::json;

fn weather_tool(calls: Arc<Mutex<u32>>) -> ToolComposite {
    T::simple("get_weather", "Weather for a city", move |args| {
        let calls = calls.clone();
        async move {
            *calls.lock().unwrap() += 1;
            Ok(json!({ "city": args["city"], "sky": "sunny" }))
        }
    })
}

/// Records a scripted weather session (with pauses between the server's
/// messages) as a wire log.
async fn record() -> WireLog {
    let sink = MemorySink::new();
    let writer = WireLogWriter::builder(sink.clone())
        .model("models/gemini-live-2.5-flash-preview")
        .start()
        .unwrap();
    let (transport, control) = ScriptedServer::new()
        .hears("What's the weather in Paris?")
        .pause(Duration::from_secs(2))
        .calls("get_weather", json!({ "city": "Paris" }))
        .pause(Duration::from_secs(3))
        .says("It is sunny in Paris.")
        .into_transport();
    let handle = Live::builder()
        .tools(weather_tool(Arc::new(Mutex::new(0))))
        .connect_with_transport(Recording::new(transport, writer))
        .await
        .unwrap();
    let mut events = handle.events();
    control.release();
    while let Some(event) = events.next().await {
        if matches!(event, LiveEvent::TurnComplete { .. }) {
            break;
        }
    }
    handle.disconnect().await;
    WireLog::parse("recorded.jsonl", &sink.contents()).unwrap()
}

#[test]
fn a_recording_replays_through_the_real_control_plane() {
    Simulation::new(Seed::new(21))
        .run(|| async {
            let log = record().await;
            let calls = Arc::new(Mutex::new(0));
            let replay = replay_session(&log, Live::builder().tools(weather_tool(calls.clone())))
                .await
                .unwrap();
            // The tool ran again, for real, and was answered again.
            assert_eq!(*calls.lock().unwrap(), 1);
            assert!(
                replay
                    .sent()
                    .iter()
                    .any(
                        |m| m["toolResponse"]["functionResponses"][0]["response"]["sky"] == "sunny"
                    )
            );
            assert!(
                replay.divergences().is_empty(),
                "{:?}",
                replay.divergences()
            );
            let text: String = replay
                .events()
                .iter()
                .filter_map(|e| match e {
                    LiveEvent::TextComplete { text, .. } => Some(text.as_str()),
                    _ => None,
                })
                .collect();
            assert_eq!(text, "It is sunny in Paris.");
            // The clock started at the first inbound frame and moved to the
            // last frame's recorded time: the recording's 5 s of pauses.
            let first_in = log
                .frames
                .iter()
                .find(|f| f.dir == livesim::transport::wire_log::Direction::In)
                .unwrap()
                .t_ms;
            let last_in = log
                .frames
                .iter()
                .rev()
                .find(|f| f.dir == livesim::transport::wire_log::Direction::In)
                .unwrap()
                .t_ms;
            assert!(last_in - first_in >= 5000, "the recording has its pauses");
            assert_eq!(
                replay.clock().elapsed(),
                Duration::from_millis(last_in - first_in)
            );
            assert_eq!(
                replay.clock().origin().unix_millis(),
                log.header.started_at_ms + first_in
            );
            replay.disconnect().await;
        })
        .unwrap();
}

/// A slow tool's answer and the settle window after it, under one seed.
async fn answered_then_settled(window: Duration) -> (Duration, Duration, Duration) {
    let tool = T::simple("lookup", "Looks it up", |_| async {
        tokio::time::sleep(Duration::from_millis(250)).await;
        Ok(json!({ "found": true }))
    });
    let run = ScriptedServer::new()
        .calls("lookup", json!({}))
        .says("Found it.")
        .settle_after(window)
        .play(Live::builder().tools(tool))
        .await
        .unwrap();
    let called = run
        .time_of(|e| matches!(e, LiveEvent::ToolCall { .. }))
        .unwrap();
    let answered = run
        .time_of(|e| matches!(e, LiveEvent::ToolResponse { .. }))
        .unwrap();
    let times: Vec<Duration> = run.timed_events().map(|(at, _)| at).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    assert_eq!(times.len(), run.events().len());
    let after = livesim::executor::now();
    run.disconnect().await;
    (called, answered, after)
}

/// An event's own time is when it happened: a longer settle window moves
/// the clock after `play`, never the events' times, so a latency budget
/// read from them does not include the window.
#[test]
fn an_events_time_is_its_own_not_the_settle_windows() {
    let run = |window| {
        Simulation::new(Seed::new(11))
            .run(move || answered_then_settled(window))
            .unwrap()
            .value
    };
    let (called, answered, short_end) = run(Duration::from_millis(200));
    let (called_again, answered_again, long_end) = run(Duration::from_secs(2));
    assert_eq!((called, answered), (called_again, answered_again));
    assert!(answered - called >= Duration::from_millis(250));
    assert!(short_end >= answered + Duration::from_millis(200));
    assert!(long_end >= answered + Duration::from_secs(2));
}
