//! A script's `attach` action: members put on the next message the script
//! sends (usage on a tool call's own frame), once, and refused when empty.

use livesim::prelude::*;
use livesim::testing::ScriptedServer;
use livesim::transport::Transport;
use serde_json::{Value, json};

use super::strict::client;

/// The next frame the scripted server sends, as JSON.
async fn next_message(transport: &mut livesim::testing::ReplayTransport) -> Value {
    let frame = transport.recv().await.expect("a frame").expect("no error");
    serde_json::from_slice(frame.payload().expect("a data frame")).expect("JSON")
}

#[tokio::test]
async fn attached_members_ride_on_the_next_message_only() {
    let script = ScriptedServer::new()
        .attaches("usageMetadata", json!({ "totalTokenCount": 120 }))
        .calls_without_waiting("get_weather", json!({ "city": "Paris" }))
        .says("Looking.");
    let (mut transport, _control) = client(script).await;
    let call = next_message(&mut transport).await;
    assert_eq!(call["toolCall"]["functionCalls"][0]["name"], "get_weather");
    assert_eq!(call["usageMetadata"]["totalTokenCount"], 120);
    let text = next_message(&mut transport).await;
    assert!(text.get("serverContent").is_some(), "{text}");
    assert!(
        text.get("usageMetadata").is_none(),
        "attached twice: {text}"
    );
}

#[tokio::test]
async fn a_session_keeps_usage_that_rides_on_a_tool_call() {
    let run = ScriptedServer::new()
        .hears("Weather in Paris?")
        .attaches("usageMetadata", json!({ "totalTokenCount": 77 }))
        .calls("get_weather", json!({ "city": "Paris" }))
        .says("Sunny.")
        .play(Live::builder().tools(T::simple(
            "get_weather",
            "Weather for a city",
            |args| async move { Ok(json!({ "city": args["city"], "sky": "sunny" })) },
        )))
        .await
        .unwrap();

    let usage: Vec<&Value> = run
        .events()
        .iter()
        .filter_map(|e| match e {
            LiveEvent::Usage { usage } => Some(usage),
            _ => None,
        })
        .collect();
    assert_eq!(usage.len(), 1, "{:?}", run.events());
    assert_eq!(usage[0]["totalTokenCount"], 77);
    assert_eq!(run.tool_responses()[0]["response"]["sky"], "sunny");
    run.disconnect().await;
}

#[test]
fn an_empty_attach_is_refused_where_it_stands() {
    let script = json!({ "v": 1, "actions": [
        { "send": { "serverContent": { "turnComplete": true } } },
        { "attach": {} }
    ]});
    let error = ScriptedServer::from_json_str(&script.to_string(), "usage.json")
        .unwrap_err()
        .to_string();
    assert_eq!(
        error,
        "script usage.json: action #2 at line 1, column 68: attach needs at least one member to attach"
    );
}

#[test]
fn attach_round_trips_through_a_script_file() {
    let script = ScriptedServer::new()
        .attaches("usageMetadata", json!({ "totalTokenCount": 5 }))
        .calls("get_weather", json!({}));
    let text = script.to_json().to_string();
    assert!(
        text.contains(r#"{"attach":{"usageMetadata":{"totalTokenCount":5}}}"#),
        "{text}"
    );
    let back = ScriptedServer::from_json_str(&text, "mem").unwrap();
    assert_eq!(back.actions(), script.actions());
}
