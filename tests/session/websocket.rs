//! A real WebSocket: `Live::builder().connect()` against a server the test
//! starts on 127.0.0.1, one text turn and one tool call end to end.

// tungstenite's handshake callback returns its own large error type.
#![allow(clippy::result_large_err)]

use futures::{SinkExt, StreamExt};
use livesim::prelude::*;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::Message;

async fn next_json(ws: &mut tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>) -> Value {
    loop {
        match ws
            .next()
            .await
            .expect("the client is connected")
            .expect("a frame")
        {
            Message::Text(text) => return serde_json::from_str(&text).unwrap(),
            Message::Binary(bytes) => return serde_json::from_slice(&bytes).unwrap(),
            _ => continue,
        }
    }
}

async fn send(ws: &mut tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>, message: Value) {
    ws.send(Message::Binary(message.to_string().into_bytes().into()))
        .await
        .unwrap();
}

#[tokio::test]
async fn connect_plays_a_text_turn_and_a_tool_call_over_a_websocket() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = tokio::spawn(async move {
        let (socket, _) = listener.accept().await.unwrap();
        let mut header = None;
        let mut ws = tokio_tungstenite::accept_hdr_async(
            socket,
            |request: &tokio_tungstenite::tungstenite::handshake::server::Request, response| {
                header = request
                    .headers()
                    .get("x-goog-api-key")
                    .map(|v| v.to_str().unwrap().to_string());
                Ok(response)
            },
        )
        .await
        .unwrap();
        let setup = next_json(&mut ws).await;
        send(&mut ws, json!({ "setupComplete": {} })).await;
        let turn = next_json(&mut ws).await;
        send(
            &mut ws,
            json!({ "serverContent": { "modelTurn": { "parts": [{ "text": "Let me look." }] } } }),
        )
        .await;
        send(&mut ws, json!({ "toolCall": { "functionCalls": [{ "id": "fc_1", "name": "get_weather", "args": { "city": "Oslo" } }] } })).await;
        let response = next_json(&mut ws).await;
        send(&mut ws, json!({ "serverContent": { "modelTurn": { "parts": [{ "text": "It is -3C in Oslo." }] }, "turnComplete": true } })).await;
        let close = ws.next().await;
        (header, setup, turn, response, close)
    });

    let handle = Live::builder()
        .base_url(format!("ws://127.0.0.1:{port}"))
        .api_key("test-key-123")
        .tools(T::simple("get_weather", "Weather", |args| async move {
            Ok(json!({ "city": args["city"], "temp_c": -3 }))
        }))
        .connect()
        .await
        .unwrap();
    let mut events = handle.events();
    handle.send_text("Weather in Oslo?").unwrap();
    let mut texts = Vec::new();
    while let Some(event) = events.next().await {
        match event {
            LiveEvent::TextComplete { text, .. } => texts.push(text),
            LiveEvent::TurnComplete { .. } => break,
            _ => {}
        }
    }
    handle.disconnect().await;
    let (header, setup, turn, response, close) = server.await.unwrap();
    assert_eq!(header.as_deref(), Some("test-key-123"));
    assert_eq!(
        setup["setup"]["model"],
        "models/gemini-live-2.5-flash-preview"
    );
    assert_eq!(
        turn["clientContent"]["turns"][0]["parts"][0]["text"],
        "Weather in Oslo?"
    );
    assert_eq!(
        response["toolResponse"]["functionResponses"][0],
        json!({ "id": "fc_1", "name": "get_weather", "response": { "city": "Oslo", "temp_c": -3 } })
    );
    assert_eq!(texts, ["Let me look.", "It is -3C in Oslo."]);
    assert!(
        matches!(close, Some(Ok(Message::Close(Some(frame)))) if u16::from(frame.code) == 1000)
    );
}
