//! Clients that break the script: the server closes as the Live service
//! would, names the script and the problem, and exits 1.

use livesim::testing::ScriptedServer;
use serde_json::{Value, json};

use super::harness::{KEY, Served, Ws, next, send, serve, until};

fn weather() -> Value {
    ScriptedServer::new()
        .named("weather")
        .hears("What's the weather in Paris?")
        .calls("get_weather", json!({ "city": "Paris" }))
        .says("It is sunny in Paris.")
        .to_json()
}

async fn connect(served: &Served) -> Ws<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>> {
    let mut request =
        tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(
            served.url.as_str(),
        )
        .unwrap();
    request
        .headers_mut()
        .insert("x-goog-api-key", KEY.parse().unwrap());
    let (mut ws, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    send(&mut ws, json!({ "setup": { "model": "models/test" } })).await;
    until(&mut ws, "setupComplete").await;
    ws
}

#[tokio::test]
async fn answering_a_call_the_script_never_issued_closes_1008_and_exits_1() {
    let served = serve(&weather(), &[]).await;
    let mut ws = connect(&served).await;
    until(&mut ws, "toolCall").await;
    send(
        &mut ws,
        json!({ "tool_response": { "function_responses": [
        { "id": "call-9", "name": "get_weather", "response": { "sky": "grey" } } ] } }),
    )
    .await;
    let close = until(&mut ws, "close").await;
    assert_eq!(
        close,
        json!({ "close": 1008, "reason": "Requested entity was not found." })
    );
    // Reading on sends our answering close: the closing handshake ends.
    assert!(next(&mut ws).await.is_none());

    let ended = served.finish().await;
    assert_eq!(ended.code, Some(1), "{}", ended.output());
    assert!(
        ended.stderr.contains("the client broke the script"),
        "{}",
        ended.stderr
    );
    assert!(
        ended.stderr.contains(
            "script \"weather\", action #2 (call get_weather as call-1): the client answered call-9, which the script never issued (issued: [call-1])"
        ),
        "{}",
        ended.stderr
    );
    assert!(!ended.output().contains(KEY), "{}", ended.output());
}

#[tokio::test]
async fn unexpected_client_content_closes_1007_and_exits_1() {
    let served = serve(&weather(), &[]).await;
    let mut ws = connect(&served).await;
    until(&mut ws, "toolCall").await;
    send(
        &mut ws,
        json!({ "client_content": {
        "turns": [{ "role": "user", "parts": [{ "text": "Never mind." }] }],
        "turn_complete": true } }),
    )
    .await;
    let close = until(&mut ws, "close").await;
    assert_eq!(
        close,
        json!({ "close": 1007, "reason": "Request contains an invalid argument." })
    );
    assert!(next(&mut ws).await.is_none());

    let ended = served.finish().await;
    assert_eq!(ended.code, Some(1), "{}", ended.output());
    assert!(
        ended.stderr.contains("script \"weather\", action #2 (call get_weather as call-1): the client sent clientContent, which the script does not expect here"),
        "{}",
        ended.stderr
    );
    assert!(ended.stderr.contains("Never mind."), "{}", ended.stderr);
}

#[tokio::test]
async fn hanging_up_before_the_end_exits_1_and_says_where() {
    let served = serve(&weather(), &[]).await;
    let mut ws = connect(&served).await;
    until(&mut ws, "toolCall").await;
    ws.close(None).await.unwrap();
    while next(&mut ws).await.is_some() {}

    let ended = served.finish().await;
    assert_eq!(ended.code, Some(1), "{}", ended.output());
    assert!(
        ended.stderr.contains(
            "connection 1: the client hung up before script \"weather\" ended, at action #2 (call get_weather as call-1) (unanswered calls: call-1)"
        ),
        "{}",
        ended.stderr
    );
}
