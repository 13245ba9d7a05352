//! What reads the clock follows the session's clock: session signals,
//! temporal patterns, the phase machine and media timestamps move with a
//! ManualClock, not with the wall clock or virtual time.

use std::sync::Arc;
use std::time::Duration;

use livesim::Seed;
use livesim::clock::ManualClock;
use livesim::clock::Timestamp;
use livesim::executor::Simulation;
use livesim::prelude::*;
use livesim::testing::ScriptedServer;
use serde_json::json;

fn origin() -> Timestamp {
    Timestamp::from_unix_millis(1_700_000_000_000)
}

/// Waits one signal tick (500 ms of virtual time) and a little more.
async fn one_tick() {
    tokio::time::sleep(Duration::from_millis(600)).await;
}

#[test]
fn session_signals_follow_a_manual_clock() {
    Simulation::new(Seed::new(1))
        .run(|| async {
            let clock = Arc::new(ManualClock::starting_at(origin()));
            let (transport, control) = ScriptedServer::new().into_transport();
            let handle = Live::builder()
                .clock(clock.clone())
                .session_budget(Duration::from_secs(60))
                .connect_with_transport(transport)
                .await
                .unwrap();
            control.release();
            let state = handle.state();
            // Ten seconds of virtual time: many ticks, but the clock stood still.
            tokio::time::sleep(Duration::from_secs(10)).await;
            assert_eq!(state.get("session:elapsed_ms"), Some(json!(0)));
            assert_eq!(
                state.get("session:remaining_budget_ms"),
                Some(json!(60_000))
            );
            clock.advance(Duration::from_secs(5));
            one_tick().await;
            assert_eq!(state.get("session:elapsed_ms"), Some(json!(5000)));
            assert_eq!(state.get("session:silence_ms"), Some(json!(5000)));
            assert_eq!(
                state.get("session:remaining_budget_ms"),
                Some(json!(55_000))
            );
            handle.disconnect().await;
        })
        .unwrap();
}

/// The telemetry lane writes its signals as often as the lower-level
/// builder says (`signal_interval`), and setting the interval keeps what
/// was set before it (the clock, the budget).
#[test]
fn signals_come_at_the_interval_the_builder_sets() {
    Simulation::new(Seed::new(3))
        .run(|| async {
            let clock = Arc::new(ManualClock::starting_at(origin()));
            let (transport, control) = ScriptedServer::new().into_transport();
            let handle = livesim::session::LiveSessionBuilder::new()
                .clock(clock.clone())
                .session_budget(Duration::from_secs(60))
                .signal_interval(Duration::from_millis(100))
                .connect_with_transport(transport)
                .await
                .unwrap();
            control.release();
            let state = handle.state();
            tokio::time::sleep(Duration::from_millis(10)).await;
            clock.advance(Duration::from_secs(5));
            // A 100 ms tick has passed since; a 500 ms one (the default)
            // would not have.
            tokio::time::sleep(Duration::from_millis(150)).await;
            assert_eq!(state.get("session:elapsed_ms"), Some(json!(5000)));
            assert_eq!(
                state.get("session:remaining_budget_ms"),
                Some(json!(55_000))
            );
            handle.disconnect().await;
        })
        .unwrap();
}

#[test]
fn a_temporal_pattern_means_clock_seconds() {
    Simulation::new(Seed::new(2))
        .run(|| async {
            let clock = Arc::new(ManualClock::starting_at(origin()));
            let (transport, control) = ScriptedServer::new().into_transport();
            let handle = Live::builder()
                .clock(clock.clone())
                .temporal(TemporalPattern::sustained(
                    "quiet",
                    Duration::from_secs(5),
                    |s| s.is_true("quiet"),
                ))
                .connect_with_transport(transport)
                .await
                .unwrap();
            let mut events = handle.events();
            control.release();
            handle.state().set("quiet", true);
            one_tick().await; // the pattern sees the condition start
            // A minute of virtual time, but only 4.9 clock seconds.
            clock.advance(Duration::from_millis(4900));
            tokio::time::sleep(Duration::from_secs(60)).await;
            let matched = |events: &mut livesim::session::EventStream| {
                events
                    .drain()
                    .iter()
                    .any(|e| matches!(e, LiveEvent::PatternMatched { name } if name == "quiet"))
            };
            assert!(!matched(&mut events), "4.9 clock seconds are not 5");
            clock.advance(Duration::from_millis(100));
            one_tick().await;
            assert!(matched(&mut events), "5 clock seconds fire the pattern");
            handle.disconnect().await;
        })
        .unwrap();
}

#[test]
fn the_phase_machine_is_timed_by_the_clock() {
    Simulation::new(Seed::new(3))
        .run(|| async {
            let clock = Arc::new(ManualClock::starting_at(origin()));
            let state = State::new();
            let writer = state.clone();
            let run = ScriptedServer::new()
                .calls("set_name", json!({ "name": "Ada" }))
                .says("Hello Ada.")
                .play(
                    Live::builder()
                        .state(state.clone())
                        .clock(clock.clone())
                        .phases(
                            Phases::new("greet")
                                .transition("greet", "collect", |s| s.contains("name")),
                        )
                        .tools(T::simple("set_name", "", move |args| {
                            let state = writer.clone();
                            async move {
                                state.set("name", args["name"].clone());
                                Ok(json!({}))
                            }
                        })),
                )
                .await
                .unwrap();
            assert!(run.events().iter().any(|e| matches!(
                e,
                LiveEvent::PhaseChanged { from, to } if from == "greet" && to == "collect"
            )));
            assert_eq!(state.get("session:phase"), Some(json!("collect")));
            clock.advance(Duration::from_secs(2));
            one_tick().await;
            assert_eq!(state.get("session:time_in_phase_ms"), Some(json!(2000)));
            run.disconnect().await;
        })
        .unwrap();
}

#[test]
fn media_is_stamped_by_the_clock() {
    Simulation::new(Seed::new(4))
        .run(|| async {
            let clock = Arc::new(ManualClock::starting_at(origin()));
            clock.advance(Duration::from_millis(1234));
            let run = ScriptedServer::new()
                .frame(json!({ "serverContent": { "modelTurn": { "parts": [
                    { "inlineData": { "mimeType": "audio/pcm;rate=24000", "data": "AAAA" } }
                ] } } }))
                .play(Live::builder().clock(clock.clone()))
                .await
                .unwrap();
            let at = run
                .events()
                .iter()
                .find_map(|e| match e {
                    LiveEvent::Media { at, .. } => Some(*at),
                    _ => None,
                })
                .unwrap();
            assert_eq!(at, origin() + Duration::from_millis(1234));
            run.disconnect().await;
        })
        .unwrap();
}
