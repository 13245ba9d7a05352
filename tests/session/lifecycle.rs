//! The session's life: setup, what it sends, what it keeps, and how it
//! ends.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use livesim::Seed;
use livesim::executor::Simulation;
use livesim::prelude::*;
use livesim::session::SessionError;
use livesim::testing::ScriptedServer;
use livesim::transport::Transport;
use livesim::transport::memory::pair;
use livesim::wire::Frame;
use serde_json::json;

/// Text still pending when the connection closes is dropped, never
/// emitted in full (aggregation row 22, at session level).
#[tokio::test]
async fn pending_text_is_dropped_when_the_connection_closes() {
    let run = ScriptedServer::new()
        .text("Hel")
        .close(1011, "Internal error encountered.")
        .play(Live::builder())
        .await
        .unwrap();
    let events = run.events();
    assert!(
        events
            .iter()
            .any(|e| matches!(e, LiveEvent::TextDelta { text, .. } if text == "Hel"))
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, LiveEvent::TextComplete { .. }))
    );
    assert!(events.iter().any(|e| matches!(
        e,
        LiveEvent::Disconnected { code: Some(1011), reason, class: Some(class) } if reason == "Internal error encountered." && class == "retryable"
    )));
    assert!(!run.handle().is_connected());
}

/// The stored log keeps a server event iff it is not partial and carries
/// no inline audio, video or image.
#[tokio::test]
async fn the_session_log_keeps_full_events_without_media() {
    let run = ScriptedServer::new()
        .text("Hel")
        .frame(json!({ "serverContent": { "modelTurn": { "parts": [
            { "inlineData": { "mimeType": "audio/pcm;rate=24000", "data": "AAAA" } }
        ] } } }))
        .says("lo")
        .play(Live::builder())
        .await
        .unwrap();
    let log = run.handle().session_log();
    assert!(log.iter().all(|e| !e.is_partial()));
    assert!(!log.iter().any(|e| matches!(e, LiveEvent::Media { .. })));
    assert!(
        log.iter()
            .any(|e| matches!(e, LiveEvent::TextComplete { text, .. } if text == "Hello"))
    );
    assert!(
        run.events()
            .iter()
            .any(|e| matches!(e, LiveEvent::Media { .. }))
    );
    run.disconnect().await;
}

/// What the handle sends goes out as the protocol's client messages.
#[tokio::test]
async fn the_handle_sends_client_messages() {
    let (transport, control) = ScriptedServer::new()
        .expects("clientContent")
        .says("Hi there.")
        .expects("realtimeInput")
        .into_transport();
    let handle = Live::builder()
        .connect_with_transport(transport)
        .await
        .unwrap();
    let mut events = handle.events();
    control.release();
    handle.send_text("Hello").unwrap();
    while let Some(event) = events.next().await {
        if matches!(event, LiveEvent::TurnComplete { .. }) {
            break;
        }
    }
    handle.send_audio(&[0, 1, 2, 3]).unwrap();
    control.drained().await;
    let sent = control.sent();
    assert_eq!(
        sent[1],
        json!({ "clientContent": { "turns": [{ "role": "user", "parts": [{ "text": "Hello" }] }], "turnComplete": true } })
    );
    assert_eq!(sent[2]["realtimeInput"]["audio"]["data"], "AAECAw==");
    // The Live API's input audio: 16-bit PCM at 16 kHz, said in the type.
    assert_eq!(
        sent[2]["realtimeInput"]["audio"]["mimeType"],
        "audio/pcm;rate=16000"
    );
    assert!(control.errors().is_empty(), "{:?}", control.errors());
    handle.disconnect().await;
    assert!(handle.send_text("too late").is_err());
}

/// A server that never completes setup is given up on at the setup
/// timeout, on virtual time.
#[test]
fn setup_times_out_on_virtual_time() {
    let out = Simulation::new(Seed::new(5))
        .run(|| async {
            let (client, mut server) = pair();
            livesim::executor::spawn("silent server", async move {
                while let Some(Ok(_)) = server.recv().await {}
            });
            let started = livesim::executor::now();
            let error = Live::builder()
                .setup_timeout(Duration::from_secs(15))
                .connect_with_transport(client)
                .await
                .unwrap_err();
            (error, livesim::executor::now() - started)
        })
        .unwrap();
    let (error, waited) = out.value;
    assert!(matches!(error, SessionError::SetupTimeout(d) if d == Duration::from_secs(15)));
    assert_eq!(
        error.to_string(),
        "setup timed out: no setupComplete within 15s"
    );
    assert_eq!(waited, Duration::from_secs(15));
}

/// What a server sends before `setupComplete` on the first connection is
/// handled first, once the session runs, not dropped: a turn sent early
/// is in the stored log before the turn sent after.
#[test]
fn frames_before_setup_complete_are_handled_first() {
    let out = Simulation::new(Seed::new(5))
        .run(|| async {
            let (client, mut server) = pair();
            livesim::executor::spawn("early server", async move {
                let _setup = server.recv().await;
                for frame in [
                    json!({"serverContent": {"modelTurn": {"parts": [{"text": "early"}]}, "turnComplete": true}}),
                    json!({"setupComplete": {}}),
                    json!({"serverContent": {"modelTurn": {"parts": [{"text": "after"}]}, "turnComplete": true}}),
                ] {
                    let _ = server.send(Frame::Text(frame.to_string())).await;
                }
                while let Some(Ok(_)) = server.recv().await {}
            });
            let handle = Live::builder()
                .text_only()
                .connect_with_transport(client)
                .await
                .expect("the session connects");
            tokio::time::sleep(Duration::from_secs(1)).await;
            handle.session_log()
        })
        .expect("the simulation finishes");
    let texts: Vec<&str> = out
        .value
        .iter()
        .filter_map(|e| match e {
            LiveEvent::TextComplete { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(texts, ["early", "after"]);
}

/// A close instead of setupComplete is a setup failure that keeps the
/// close's class and (redacted) reason.
#[tokio::test]
async fn a_rejected_setup_keeps_its_class_and_reason() {
    let error = ScriptedServer::new()
        .rejects_setup(1007, "API key not valid. Please pass a valid API key.")
        .play(Live::builder())
        .await
        .err()
        .unwrap();
    let text = error.to_string();
    assert!(text.contains("1007 (fatal): API key not valid"), "{text}");
}

/// Watchers run on the control lane when their key changes, with the old
/// and new values.
#[tokio::test]
async fn watchers_see_changes() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let state = State::new();
    let writer = state.clone();
    let run = ScriptedServer::new()
        .calls("set_party", json!({ "size": 2 }))
        .calls("set_party", json!({ "size": 4 }))
        .play(
            Live::builder()
                .state(state.clone())
                .tools(T::simple("set_party", "", move |args| {
                    let state = writer.clone();
                    async move {
                        state.set("party_size", args["size"].clone());
                        Ok(json!({}))
                    }
                }))
                .watch("party_size", move |key, old, new, _| {
                    log.lock()
                        .unwrap()
                        .push((key.to_string(), old.cloned(), new.clone()));
                }),
        )
        .await
        .unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        vec![
            ("party_size".to_string(), None, json!(2)),
            ("party_size".to_string(), Some(json!(2)), json!(4)),
        ]
    );
    run.disconnect().await;
}

/// A write made as the session ends still reaches its watcher: a tool
/// that writes and returns at once is called as the user hangs up, and
/// over seeds the session hears of it before the hang-up, with it, or
/// stops the tool first. Whatever the order, the watcher is called once
/// exactly when the tool wrote.
#[test]
fn a_write_as_the_session_ends_reaches_its_watcher() {
    let mut orders = std::collections::BTreeSet::new();
    for seed in 0..64 {
        let (wrote, calls, warnings) = Simulation::new(Seed::new(seed))
            .run(|| async {
                let calls = Arc::new(Mutex::new(0));
                let log = calls.clone();
                let state = State::new();
                let writer = state.clone();
                let script = ScriptedServer::new()
                    .calls_without_waiting("set_party", json!({ "size": 2 }))
                    .pause(Duration::from_secs(5))
                    .says("Still there?");
                let (connector, control) = script.into_connector();
                let handle = Live::builder()
                    .state(state.clone())
                    .tools(T::simple("set_party", "", move |args| {
                        let state = writer.clone();
                        async move {
                            state.set("party_size", args["size"].clone());
                            Ok(json!({}))
                        }
                    }))
                    .watch("party_size", move |_, _, _, _| *log.lock().unwrap() += 1)
                    .connect_with_connector(connector)
                    .await
                    .unwrap();
                control.release();
                let rest = super::hang_up_at_first_call(&handle).await;
                let wrote = state.get("party_size").is_some();
                let calls = *calls.lock().unwrap();
                (wrote, calls, super::warnings(&rest))
            })
            .unwrap()
            .value;
        assert_eq!(
            calls,
            usize::from(wrote),
            "seed {seed}: wrote {wrote}, watcher calls"
        );
        let at_the_end = warnings
            .iter()
            .any(|w| w.contains("(call-1) returned as the session ended"));
        orders.insert(match (wrote, at_the_end) {
            (false, _) => "stopped before it wrote",
            (true, true) => "returned as the session ended",
            (true, false) => "answered before the end",
        });
    }
    assert!(
        orders.contains("returned as the session ended"),
        "the seeds should reach the order that matters: {orders:?}"
    );
}

/// Unknown messages are events; malformed frames are warnings; neither
/// ends the session. A frame holding only an `error` does.
#[tokio::test]
async fn odd_frames_are_events_and_errors_end_the_session() {
    use livesim::testing::Action;
    let run = ScriptedServer::new()
        .frame(json!({ "newFeature": { "x": 1 } }))
        .action(Action::SendRaw("/w==".into())) // 0xff: not UTF-8
        .says("Still here.")
        .frame(json!({ "error": { "code": 400, "message": "bad request" } }))
        .play(Live::builder())
        .await
        .unwrap();
    let events = run.events();
    assert!(
        events.iter().any(
            |e| matches!(e, LiveEvent::Unknown { message } if message["newFeature"]["x"] == 1)
        )
    );
    assert!(events.iter().any(|e| matches!(e, LiveEvent::Warning { message } if message.contains("server frame #2 ignored") && message.contains("not UTF-8"))));
    assert!(
        events
            .iter()
            .any(|e| matches!(e, LiveEvent::TextComplete { text, .. } if text == "Still here."))
    );
    assert!(events.iter().any(|e| matches!(e, LiveEvent::Disconnected { reason, .. } if reason == "the server sent error 400: bad request")));
}

/// A frame with one malformed payload keeps the others: a usage count
/// that is no number beside the turn's end still ends the turn, and the
/// warning names the payload left out. A frame with nothing readable is
/// ignored whole, as before.
#[tokio::test]
async fn a_frame_keeps_its_readable_payloads_when_one_is_malformed() {
    let run = ScriptedServer::new()
        .text("Half")
        .frame(json!({
            "serverContent": { "turnComplete": true },
            "usageMetadata": { "totalTokenCount": "many" },
        }))
        .frame(json!({ "usageMetadata": { "totalTokenCount": [] } }))
        .says("Next.")
        .play(Live::builder())
        .await
        .unwrap();
    let events = run.events();
    let warnings: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            LiveEvent::Warning { message } => Some(message.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(warnings.len(), 2, "{warnings:#?}");
    assert!(
        warnings[0].starts_with("server frame #2: `usageMetadata` left out: ")
            && warnings[0].ends_with("; the rest was read"),
        "{}",
        warnings[0]
    );
    assert!(
        warnings[1].starts_with("server frame #3 ignored: "),
        "{}",
        warnings[1]
    );
    // The first turn ended at frame #2, so "Next." is a turn of its own.
    let completes: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            LiveEvent::TextComplete { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(completes, ["Half", "Next."]);
    let turns = events
        .iter()
        .filter(|e| matches!(e, LiveEvent::TurnComplete { .. }))
        .count();
    assert_eq!(turns, 2);
    assert!(!events.iter().any(|e| matches!(e, LiveEvent::Usage { .. })));
}

/// A go-away is an event, and its deadline becomes a session signal.
#[test]
fn a_go_away_sets_its_deadline_signal() {
    Simulation::new(Seed::new(6))
        .run(|| async {
            let run = ScriptedServer::new()
                .frame(json!({ "goAway": { "timeLeft": "30s" } }))
                .play(Live::builder())
                .await
                .unwrap();
            assert!(run.events().iter().any(|e| matches!(
                e,
                LiveEvent::GoAway { time_left: Some(d) } if *d == Duration::from_secs(30)
            )));
            // The signal is written on the telemetry lane's next tick.
            tokio::time::sleep(Duration::from_millis(600)).await;
            let remaining = run
                .state()
                .get_as::<u64>("session:go_away_remaining_ms")
                .unwrap();
            assert!((29_000..=30_000).contains(&remaining), "{remaining}");
            run.disconnect().await;
        })
        .unwrap();
}

/// Disconnecting closes the connection with 1000 and ends every stream.
#[tokio::test]
async fn disconnect_ends_the_session() {
    let (transport, control) = ScriptedServer::new().into_transport();
    let handle = Live::builder()
        .connect_with_transport(transport)
        .await
        .unwrap();
    let mut events = handle.events();
    control.release();
    handle.disconnect().await;
    let mut last = None;
    while let Some(event) = events.next().await {
        last = Some(event);
    }
    assert!(
        matches!(
            last,
            Some(LiveEvent::Disconnected {
                code: Some(1000),
                ..
            })
        ),
        "{last:?}"
    );
    assert!(!handle.is_connected());
}

/// A bare model name is sent as `models/<name>`; a name that already says
/// `models/…` or a Vertex AI resource path (`projects/…`) is sent as given.
#[test]
fn the_setup_names_the_model_as_the_service_expects() {
    let model = |name: &str| Live::builder().model(name).setup_message()["setup"]["model"].clone();
    assert_eq!(
        model("gemini-live-2.5-flash-preview"),
        json!("models/gemini-live-2.5-flash-preview")
    );
    assert_eq!(
        model("models/gemini-2.0-flash-live-001"),
        json!("models/gemini-2.0-flash-live-001")
    );
    let vertex = "projects/p/locations/us-central1/publishers/google/models/gemini-live-2.5-flash";
    assert_eq!(model(vertex), json!(vertex));
}

/// The setup always asks for the user's speech to be transcribed, and for
/// the model's only when it answers in audio; a field given with
/// `setup_field` goes out as given, even one the builder writes itself
/// (here `generationConfig`, to choose a voice).
#[test]
fn the_setup_asks_for_transcriptions_and_sends_the_fields_given() {
    let audio = Live::builder().setup_message();
    assert_eq!(
        audio["setup"]["generationConfig"]["responseModalities"],
        json!(["AUDIO"])
    );
    assert_eq!(audio["setup"]["inputAudioTranscription"], json!({}));
    assert_eq!(audio["setup"]["outputAudioTranscription"], json!({}));
    let text = Live::builder().text_only().setup_message();
    assert_eq!(text["setup"]["inputAudioTranscription"], json!({}));
    assert!(
        text["setup"].get("outputAudioTranscription").is_none(),
        "{text}"
    );
    let config = json!({
        "responseModalities": ["AUDIO"],
        "speechConfig": { "voiceConfig": { "prebuiltVoiceConfig": { "voiceName": "Kore" } } }
    });
    let given = Live::builder()
        .into_session_builder()
        .setup_field("generationConfig", config.clone())
        .setup_message();
    assert_eq!(given["setup"]["generationConfig"], config);
}

/// A callback given with `on_event` sees every event a subscriber sees, in
/// the same order: stored events and notices (a warning) alike.
#[tokio::test]
async fn a_callback_sees_what_a_subscriber_sees_notices_included() {
    use livesim::testing::Action;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let run = ScriptedServer::new()
        .frame(json!({ "newFeature": { "x": 1 } }))
        .action(Action::SendRaw("/w==".into())) // 0xff: not UTF-8
        .says("Still here.")
        .play(Live::builder().on_event(move |event| log.lock().unwrap().push(event.clone())))
        .await
        .unwrap();
    let seen = seen.lock().unwrap().clone();
    assert!(
        seen.iter()
            .any(|e| matches!(e, LiveEvent::Warning { message } if message.contains("not UTF-8"))),
        "{seen:?}"
    );
    assert_eq!(seen, run.events());
}

/// Durations at their ends, as users write them: a settle window of zero
/// ("settled as soon as quiet") or of `Duration::MAX`, a settle cap of
/// `Duration::MAX` ("as long as it takes"), a tool timeout and a session
/// budget of either. A played script still ends with the session's events
/// and no panic. (A zero window spun without letting virtual time move,
/// and `MAX` overflowed the clock.)
#[test]
fn durations_at_their_ends_play_without_a_hang_or_a_panic() {
    let cases: [(&str, Duration); 10] = [
        ("settle", Duration::ZERO),
        ("settle", Duration::MAX),
        ("cap", Duration::MAX),
        ("timeout", Duration::ZERO),
        ("timeout", Duration::MAX),
        ("budget", Duration::ZERO),
        ("budget", Duration::MAX),
        ("setup", Duration::MAX),
        ("settle", Duration::from_nanos(1)),
        ("cap", Duration::from_secs(3600)),
    ];
    for (what, d) in cases {
        let out = Simulation::new(Seed::new(1))
            .run(move || async move {
                let mut builder = Live::builder();
                let mut script = ScriptedServer::new().says("Hi.");
                match what {
                    "settle" => script = script.settle_after(d),
                    "cap" => script = script.settle_cap(d),
                    "budget" => builder = builder.session_budget(d),
                    "setup" => builder = builder.setup_timeout(d),
                    _ => {
                        let echo = T::simple("echo", "Says it back", |a| async move { Ok(a) });
                        builder = builder.tools(echo.timeout(d));
                        script = script.calls("echo", json!({"x": 1}));
                    }
                }
                let run = script.play(builder).await.expect("the script plays");
                run.model_text()
            })
            .unwrap_or_else(|f| panic!("{what} {d:?}: {f}"));
        assert_eq!(out.value, "Hi.", "{what} {d:?}");
    }
}
