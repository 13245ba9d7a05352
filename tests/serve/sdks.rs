//! What Google's SDKs, and the clients built on them, send and read:
//! served as the service serves it, so a client that works here works
//! against the real endpoint.

use futures::StreamExt;
use serde_json::json;
use tokio_tungstenite::tungstenite::Message;

use super::harness::{LIMIT, hang_up, send, serve, until};

/// Google's live-api-web-console parses only binary frames: a text
/// `setupComplete` would leave it waiting forever.
#[tokio::test]
async fn setup_complete_goes_out_in_a_binary_frame() {
    let script = json!({ "v": 1, "name": "hello", "actions": [
        { "expect": "clientContent" },
        { "send": { "serverContent": { "turnComplete": true } } }
    ] });
    let served = serve(&script, &[]).await;
    let (mut ws, _) = tokio_tungstenite::connect_async(served.url.as_str())
        .await
        .unwrap();
    send(&mut ws, json!({ "setup": { "model": "models/test" } })).await;
    let first = tokio::time::timeout(LIMIT, ws.next())
        .await
        .expect("setupComplete in time")
        .expect("a frame")
        .unwrap();
    match first {
        Message::Binary(bytes) => assert_eq!(&bytes[..], br#"{"setupComplete":{}}"#),
        other => panic!("setupComplete came as {other:?}, not a binary frame"),
    }
    send(
        &mut ws,
        json!({ "clientContent": { "turns": [{ "role": "user", "parts": [{ "text": "Hi" }] }], "turnComplete": true } }),
    )
    .await;
    until(&mut ws, "serverContent").await;
    hang_up(&mut ws).await;
    let ended = served.finish().await;
    assert_eq!(ended.code, Some(0), "{}", ended.output());
}

/// A client of `served` whose `setup` was answered.
async fn connected(
    served: &super::harness::Served,
    setup: serde_json::Value,
) -> super::harness::Ws<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>> {
    let (mut ws, _) = tokio_tungstenite::connect_async(served.url.as_str())
        .await
        .unwrap();
    send(&mut ws, json!({ "setup": setup })).await;
    until(&mut ws, "setupComplete").await;
    ws
}

fn hi() -> serde_json::Value {
    json!({ "clientContent": { "turns": [{ "role": "user", "parts": [{ "text": "Hi" }] }], "turnComplete": true } })
}

/// What `send_context_update` / `sendContextUpdate` send.
fn context_update() -> serde_json::Value {
    json!({ "contextUpdate": { "systemInstruction": { "parts": [{ "text": "Be concise." }] } } })
}

#[tokio::test]
async fn a_context_update_the_script_expects_plays_through() {
    let script = json!({ "v": 1, "name": "ctx", "actions": [
        { "expect": "contextUpdate.systemInstruction" },
        { "expect": "clientContent" },
        { "send": { "serverContent": { "turnComplete": true } } }
    ] });
    let served = serve(&script, &[]).await;
    let mut ws = connected(&served, json!({ "model": "models/test" })).await;
    send(&mut ws, context_update()).await;
    send(&mut ws, hi()).await;
    until(&mut ws, "serverContent").await;
    hang_up(&mut ws).await;
    let ended = served.finish().await;
    assert_eq!(ended.code, Some(0), "{}", ended.output());
    assert!(
        ended
            .output()
            .contains("client → contextUpdate: system instruction"),
        "{}",
        ended.output()
    );
}

#[tokio::test]
async fn an_unexpected_context_update_breaks_the_script_like_any_unexpected_message() {
    let script = json!({ "v": 1, "name": "ctx", "actions": [
        { "expect": "clientContent" },
        { "send": { "serverContent": { "turnComplete": true } } }
    ] });
    let served = serve(&script, &[]).await;
    let mut ws = connected(&served, json!({ "model": "models/test" })).await;
    send(&mut ws, context_update()).await;
    let close = super::harness::next(&mut ws).await.unwrap();
    assert_eq!(
        close,
        json!({ "close": 1007, "reason": "Request contains an invalid argument." })
    );
    // Answering the close ends the connection without the server's wait.
    while super::harness::next(&mut ws).await.is_some() {}
    let ended = served.finish().await;
    assert_eq!(ended.code, Some(1), "{}", ended.output());
    assert!(
        ended
            .output()
            .contains("the client sent contextUpdate, which the script does not expect here"),
        "{}",
        ended.output()
    );
}

/// An agent that resumes a handle kept from an earlier run gets what the
/// service answers, not a session that pretends to resume.
#[tokio::test]
async fn a_first_setup_resuming_a_stale_handle_is_closed_session_not_found() {
    let script = json!({ "v": 1, "name": "hello", "actions": [
        { "expect": "clientContent" },
        { "send": { "serverContent": { "turnComplete": true } } }
    ] });
    let served = serve(&script, &[]).await;
    let (mut ws, _) = tokio_tungstenite::connect_async(served.url.as_str())
        .await
        .unwrap();
    send(
        &mut ws,
        json!({ "setup": { "model": "models/test",
            "sessionResumption": { "handle": "HANDLE-from-yesterday" } } }),
    )
    .await;
    let close = super::harness::next(&mut ws).await.unwrap();
    assert_eq!(
        close,
        json!({ "close": 1008, "reason": "BidiGenerateContent session not found" })
    );
    // Answering the close ends the connection without the server's wait.
    while super::harness::next(&mut ws).await.is_some() {}
    let ended = served.finish().await;
    assert_eq!(ended.code, Some(1), "{}", ended.output());
    assert!(
        ended
            .output()
            .contains("setup resumes a handle, but this client session has been issued none"),
        "{}",
        ended.output()
    );
    assert!(!ended.output().contains("HANDLE-"), "{}", ended.output());
}

/// A script that acts past its own goAway deadline is closed there by
/// the server; the report says so instead of blaming the client.
#[tokio::test]
async fn a_script_acting_past_its_go_away_deadline_is_reported_as_closed_there() {
    let script = json!({ "v": 1, "name": "goaway-deadline", "actions": [
        { "expect": "clientContent" },
        { "send": { "serverContent": { "modelTurn": { "parts": [{ "text": "Let me think" }] } } } },
        { "go_away_ms": 50 },
        { "pause_ms": 60000 },
        { "send": { "serverContent": { "turnComplete": true } } }
    ] });
    let served = serve(&script, &[]).await;
    let mut ws = connected(&served, json!({ "model": "models/test" })).await;
    send(&mut ws, hi()).await;
    until(&mut ws, "goAway").await;
    let close = super::harness::next(&mut ws).await.unwrap();
    assert_eq!(
        close,
        json!({ "close": 1000, "reason": "The goAway deadline has passed." })
    );
    while super::harness::next(&mut ws).await.is_some() {}
    let ended = served.finish().await;
    assert_eq!(ended.code, Some(1), "{}", ended.output());
    let output = ended.output();
    assert!(
        output.contains(
            "the server closed it (1000) at the deadline of action #3's goAway, at action #4"
        ),
        "{output}"
    );
    assert!(!output.contains("hung up"), "{output}");
}

/// NON_BLOCKING tools stream results (`will_continue`), as
/// `py_nonblocking.py` does with Google's Python SDK.
#[tokio::test]
async fn streamed_function_responses_with_will_continue_are_accepted() {
    let script = json!({ "v": 1, "name": "nonblocking", "actions": [
        { "expect": "clientContent" },
        { "call": { "id": "call-1", "name": "track_delivery", "args": {}, "wait": false } },
        { "send": { "serverContent": { "turnComplete": true } } },
        { "expect": "clientContent" },
        { "send": { "serverContent": { "turnComplete": true } } }
    ] });
    let served = serve(&script, &[]).await;
    let mut ws = connected(&served, json!({ "model": "models/test" })).await;
    send(&mut ws, hi()).await;
    until(&mut ws, "toolCall").await;
    for (status, more) in [("shipped", true), ("arrived", false)] {
        send(
            &mut ws,
            json!({ "tool_response": { "function_responses": [{ "id": "call-1",
                "name": "track_delivery", "response": { "status": status },
                "will_continue": more, "scheduling": "WHEN_IDLE" }] } }),
        )
        .await;
    }
    send(&mut ws, hi()).await;
    until(&mut ws, "serverContent").await;
    until(&mut ws, "serverContent").await;
    hang_up(&mut ws).await;
    let ended = served.finish().await;
    assert_eq!(ended.code, Some(0), "{}", ended.output());
}

/// 20 ms of microphone, as `send_realtime_input(audio=…)` sends it.
fn chunk() -> serde_json::Value {
    json!({ "realtime_input": { "audio": { "data": "AAAAAAAAAAAAAAAAAAAAAA==", "mime_type": "audio/pcm;rate=16000" } } })
}

/// A voice client streams its microphone the whole time (before the
/// model speaks, while a tool runs, after the reply): a script that
/// streams audio takes every chunk over a real socket, the report counts
/// them, and no audio is logged.
#[tokio::test]
async fn a_streamed_microphone_plays_through_and_is_counted() {
    let script = json!({ "v": 1, "name": "mic", "stream": ["realtimeInput.audio"], "actions": [
        { "expect": "realtimeInput.audio" },
        { "call": { "id": "call-1", "name": "get_weather", "args": { "city": "Paris" } } },
        { "send": { "serverContent": { "turnComplete": true } } }
    ] });
    let served = serve(&script, &[]).await;
    let mut ws = connected(&served, json!({ "model": "models/test" })).await;
    for _ in 0..3 {
        send(&mut ws, chunk()).await;
    }
    until(&mut ws, "toolCall").await;
    for _ in 0..2 {
        send(&mut ws, chunk()).await;
    }
    send(
        &mut ws,
        json!({ "tool_response": { "function_responses": [
            { "id": "call-1", "name": "get_weather", "response": { "sky": "sunny" } }
        ] } }),
    )
    .await;
    send(&mut ws, chunk()).await;
    until(&mut ws, "serverContent").await;
    for _ in 0..2 {
        send(&mut ws, chunk()).await;
    }
    hang_up(&mut ws).await;
    let ended = served.finish().await;
    assert_eq!(ended.code, Some(0), "{}", ended.output());
    let output = ended.output();
    assert!(
        output.contains("script \"mic\" played to its end")
            && output.contains("it took 8 streamed client messages"),
        "{output}"
    );
    assert!(!output.contains("AAAAAAAA"), "{output}");
    // A run of chunks is one line and a count, not a line a chunk.
    let one_each = output
        .lines()
        .filter(|l| l.contains("client → realtime_input: audio "))
        .count();
    assert_eq!(one_each, 2, "{output}");
    for counted in [
        "client → 4 more realtimeInput audio chunks (",
        "client → 2 more realtimeInput audio chunks (",
    ] {
        assert!(output.contains(counted), "no {counted:?} in {output}");
    }
}
