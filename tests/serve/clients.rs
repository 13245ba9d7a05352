//! Clients that play the script through: exit status 0.

use livesim::prelude::*;
use livesim::testing::ScriptedServer;
use serde_json::json;

use super::harness::{KEY, hang_up, next, send, serve, until};
use super::scratch::scratch;

fn weather() -> ScriptedServer {
    ScriptedServer::new()
        .named("weather")
        .hears("What's the weather in Paris?")
        .calls("get_weather", json!({ "city": "Paris" }))
        .says("It is sunny in Paris.")
}

/// livesim's own session, with the weather tool, connected to `base_url`.
async fn weather_session(base_url: &str) -> LiveHandle {
    Live::builder()
        .base_url(base_url)
        .api_key(KEY)
        .tools(T::simple(
            "get_weather",
            "Weather for a city",
            |args| async move { Ok(json!({ "city": args["city"], "sky": "sunny" })) },
        ))
        .connect()
        .await
        .unwrap()
}

#[tokio::test]
async fn livesims_own_session_plays_the_weather_script_end_to_end() {
    let served = serve(&weather().to_json(), &[]).await;
    let handle = weather_session(&served.base_url).await;

    let mut events = handle.events();
    let (mut answered, mut text) = (None, String::new());
    while let Some(event) = events.next().await {
        match event {
            LiveEvent::ToolResponse { id, response, .. } => answered = Some((id, response)),
            LiveEvent::TextDelta { text: t, .. } => text.push_str(&t),
            LiveEvent::TurnComplete { .. } => break,
            _ => {}
        }
    }
    assert_eq!(
        answered,
        Some((
            "call-1".to_string(),
            json!({ "city": "Paris", "sky": "sunny" })
        ))
    );
    assert_eq!(text, "It is sunny in Paris.");
    handle.disconnect().await;

    let ended = served.finish().await;
    assert_eq!(ended.code, Some(0), "{}", ended.output());
    assert!(
        ended
            .stderr
            .contains("client → toolResponse: call-1 get_weather"),
        "{}",
        ended.stderr
    );
    assert!(
        ended
            .stderr
            .contains("script \"weather\" played to its end"),
        "{}",
        ended.stderr
    );
    assert!(!ended.output().contains(KEY), "{}", ended.output());
}

/// Google's Python SDK sends top-level keys in snake_case with camelCase
/// inside, and the key in an `x-goog-api-key` header.
#[tokio::test]
async fn snake_case_messages_as_the_python_sdk_sends_them_are_accepted() {
    let script = ScriptedServer::new()
        .named("python-shapes")
        .expects("clientContent")
        .calls("get_weather", json!({ "city": "Paris" }))
        .calls("get_weather", json!({ "city": "Lyon" }))
        .says("Sunny in both.");
    let mut served = serve(&script.to_json(), &[]).await;
    assert_eq!(
        served.line().await,
        format!("livesim serve: base URL {}", served.base_url)
    );

    let mut request =
        tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(
            served.url.as_str(),
        )
        .unwrap();
    request
        .headers_mut()
        .insert("x-goog-api-key", KEY.parse().unwrap());
    let (mut ws, _) = tokio_tungstenite::connect_async(request).await.unwrap();

    send(
        &mut ws,
        json!({ "setup": { "model": "models/gemini-live-2.5-flash-preview",
        "generationConfig": { "responseModalities": ["TEXT"] } } }),
    )
    .await;
    until(&mut ws, "setupComplete").await;
    send(
        &mut ws,
        json!({ "client_content": {
        "turns": [{ "role": "user", "parts": [{ "text": "Weather in Paris and Lyon?" }] }],
        "turn_complete": true } }),
    )
    .await;
    let call = until(&mut ws, "toolCall").await;
    assert_eq!(call["toolCall"]["functionCalls"][0]["id"], "call-1");
    // Top level snake_case, camelCase inside: the Python SDK's shape.
    send(
        &mut ws,
        json!({ "tool_response": { "functionResponses": [
        { "id": "call-1", "name": "get_weather", "response": { "sky": "sunny" } } ] } }),
    )
    .await;
    let call = until(&mut ws, "toolCall").await;
    assert_eq!(call["toolCall"]["functionCalls"][0]["id"], "call-2");
    // snake_case all the way down is accepted too.
    send(
        &mut ws,
        json!({ "tool_response": { "function_responses": [
        { "id": "call-2", "name": "get_weather", "response": { "sky": "sunny" } } ] } }),
    )
    .await;
    let text = until(&mut ws, "serverContent").await;
    assert_eq!(
        text["serverContent"]["modelTurn"]["parts"][0]["text"],
        "Sunny in both."
    );
    assert_eq!(
        until(&mut ws, "serverContent").await["serverContent"]["turnComplete"],
        true
    );
    hang_up(&mut ws).await;
    assert!(next(&mut ws).await.is_none());

    let ended = served.finish().await;
    assert_eq!(ended.code, Some(0), "{}", ended.output());
    for line in [
        "credential present: an x-goog-api-key header (value not logged)",
        "client → setup: model models/gemini-live-2.5-flash-preview, modalities [TEXT]",
        "client → client_content: user \"Weather in Paris and Lyon?\" (turn complete)",
        "client → tool_response: call-1 get_weather",
        "client → tool_response: call-2 get_weather",
        "client → close 1000",
    ] {
        assert!(
            ended.stderr.contains(line),
            "no {line:?} in:\n{}",
            ended.stderr
        );
    }
    assert!(!ended.output().contains(KEY), "{}", ended.output());
}

#[tokio::test]
async fn two_connections_each_play_the_script() {
    let script = ScriptedServer::new().named("hello").says("Hello.");
    let served = serve(&script.to_json(), &["--connections", "2"]).await;
    for _ in 0..2 {
        let handle = Live::builder()
            .base_url(served.base_url.clone())
            .api_key(KEY)
            .connect()
            .await
            .unwrap();
        let mut events = handle.events();
        let mut text = String::new();
        while let Some(event) = events.next().await {
            match event {
                LiveEvent::TextDelta { text: t, .. } => text.push_str(&t),
                LiveEvent::TurnComplete { .. } => break,
                _ => {}
            }
        }
        assert_eq!(text, "Hello.");
        handle.disconnect().await;
    }
    let ended = served.finish().await;
    assert_eq!(ended.code, Some(0), "{}", ended.output());
    assert!(
        ended
            .stderr
            .contains("connection 1: script \"hello\" played to its end"),
        "{}",
        ended.stderr
    );
    assert!(
        ended
            .stderr
            .contains("connection 2: script \"hello\" played to its end"),
        "{}",
        ended.stderr
    );
}

/// A client in any language is tested on resumption too: two connections
/// of one client session share the script's position, as Google's Python
/// SDK's frames would reach it (snake_case top-level keys, a goAway, a
/// new connection resuming the latest handle, then the old one closed).
#[tokio::test]
async fn a_python_sdk_shaped_client_resumes_across_connections() {
    let script = ScriptedServer::new()
        .named("resume")
        .resumption_update("HANDLE-one", true)
        .expects("clientContent")
        .text("Hel")
        .go_away(std::time::Duration::from_secs(5))
        .says("lo")
        .resumption_update("HANDLE-two", true)
        .reconnect_resuming("HANDLE-two")
        .expects("clientContent")
        .says("Again");
    let mut served = serve(&script.to_json(), &[]).await;
    served.line().await;
    let open = |url: String| async move {
        let mut request =
            tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(
                url.as_str(),
            )
            .unwrap();
        request
            .headers_mut()
            .insert("x-goog-api-key", KEY.parse().unwrap());
        tokio_tungstenite::connect_async(request).await.unwrap().0
    };
    let setup = |resumption: serde_json::Value| {
        json!({ "setup": { "model": "models/gemini-live-2.5-flash-preview",
            "generationConfig": { "responseModalities": ["TEXT"] },
            "sessionResumption": resumption } })
    };
    let turn = |text: &str| {
        json!({ "client_content": {
            "turns": [{ "role": "user", "parts": [{ "text": text }] }],
            "turn_complete": true } })
    };

    let mut first = open(served.url.clone()).await;
    send(&mut first, setup(json!({}))).await;
    until(&mut first, "setupComplete").await;
    send(&mut first, turn("Hello?")).await;
    until(&mut first, "goAway").await;
    let mut handle = serde_json::Value::Null;
    while handle != "HANDLE-two" {
        let update = until(&mut first, "sessionResumptionUpdate").await;
        handle = update["sessionResumptionUpdate"]["newHandle"].clone();
    }
    // Make-before-break: the new connection first, with the latest handle.
    let mut second = open(served.url.clone()).await;
    send(&mut second, setup(json!({ "handle": handle }))).await;
    until(&mut second, "setupComplete").await;
    hang_up(&mut first).await;
    send(&mut second, turn("Again?")).await;
    let text = until(&mut second, "serverContent").await;
    assert_eq!(
        text["serverContent"]["modelTurn"]["parts"][0]["text"],
        "Again"
    );
    until(&mut second, "serverContent").await;
    hang_up(&mut second).await;

    let ended = served.finish().await;
    assert_eq!(ended.code, Some(0), "{}", ended.output());
    assert!(
        ended
            .stderr
            .contains("joins the client session playing the script (a reconnect)"),
        "{}",
        ended.stderr
    );
    // Handles are secrets: the log shows neither.
    assert!(!ended.output().contains("HANDLE-"), "{}", ended.output());
}

/// `--record DIR` keeps each connection as a wire log, as the client saw
/// it and without the key; `livesim sim import` makes it a script that
/// calls what the served script called, with its transcription.
#[tokio::test]
async fn a_recorded_connection_imports_as_the_script_it_played() {
    // The server makes the recording's folder, inside a scratch folder.
    let dir = scratch("serve-record").inside("recording");
    let served = serve(&weather().to_json(), &["--record", dir.to_str().unwrap()]).await;
    let handle = weather_session(&served.base_url).await;
    let mut events = handle.events();
    while let Some(event) = events.next().await {
        if matches!(event, LiveEvent::TurnComplete { .. }) {
            break;
        }
    }
    handle.disconnect().await;
    let ended = served.finish().await;
    assert_eq!(ended.code, Some(0), "{}", ended.output());
    let log = dir.join("connection-1.jsonl");
    let bytes = std::fs::read(&log).unwrap();
    let text = String::from_utf8_lossy(&bytes);
    assert!(!text.contains(KEY), "{text}");
    let parsed =
        livesim::transport::wire_log::WireLog::parse("connection-1.jsonl", &bytes).unwrap();
    use livesim::transport::wire_log::Direction;
    let first = &parsed.frames[0];
    assert_eq!(
        first.dir,
        Direction::Out,
        "the client's setup, as the client saw it"
    );
    assert!(first.json.as_ref().unwrap().get("setup").is_some());
    let imported = livesim::soak::import_wire_log("connection-1.jsonl", &bytes, "weather").unwrap();
    assert!(imported.damaged.is_empty(), "{:?}", imported.damaged);
    let calls: Vec<_> = imported
        .script
        .actions()
        .iter()
        .filter_map(|a| match a {
            livesim::testing::Action::Call(call) => Some((call.name.clone(), call.args.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        calls,
        [("get_weather".to_string(), json!({ "city": "Paris" }))]
    );
}
