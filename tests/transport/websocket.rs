//! The WebSocket client against a real WebSocket server on 127.0.0.1.

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use livesim::transport::websocket::{Endpoint, GOOGLE_AI_PATH, WebSocketTransport};
use livesim::transport::{Transport, TransportError};
use livesim::wire::{ClientMessage, CloseClass, Decoded, ServerMessage, Setup, decode};
use livesim::wire::{CloseFrame, Frame, Redactor, Secret};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::CloseFrame as WsCloseFrame;

use super::server::{accept, dead_port, listen, refuse};

const KEY: &str = "FAKE-KEY-1234567890";

fn endpoint(base_url: &str) -> Endpoint {
    Endpoint::google_ai(Secret::new(KEY)).base_url(base_url)
}

fn ws_close(code: u16, reason: &str) -> Message {
    Message::Close(Some(WsCloseFrame {
        code: code.into(),
        reason: reason.into(),
    }))
}

/// Reads what the server gets until the client's close handshake ends.
async fn drain<
    S: futures::Stream<Item = Result<Message, tokio_tungstenite::tungstenite::Error>> + Unpin,
>(
    ws: &mut S,
) -> Vec<Message> {
    let mut got = Vec::new();
    while let Some(Ok(message)) = ws.next().await {
        got.push(message);
    }
    got
}

#[tokio::test]
async fn handshake_carries_the_key_in_a_header_and_frames_flow_both_ways() {
    let local = listen().await;
    let server = async {
        let (mut ws, upgrade) = accept(&local).await;
        assert_eq!(upgrade.header("x-goog-api-key"), Some(KEY));
        assert_eq!(upgrade.uri, GOOGLE_AI_PATH);
        assert!(!upgrade.uri.contains("key"), "{}", upgrade.uri);

        let Some(Ok(Message::Text(setup))) = ws.next().await else {
            panic!("no setup")
        };
        let setup = ClientMessage::from_slice(setup.as_bytes()).unwrap();
        assert_eq!(setup.setup.unwrap().model.as_deref(), Some("models/test"));
        let Some(Ok(Message::Binary(bytes))) = ws.next().await else {
            panic!("no binary")
        };
        assert_eq!(&bytes[..], br#"{"realtimeInput":{"text":"hi"}}"#);

        ws.send(Message::Binary(br#"{"setupComplete":{}}"#.to_vec().into()))
            .await
            .unwrap();
        ws.send(Message::Ping(b"are you there".to_vec().into()))
            .await
            .unwrap();
        ws.send(Message::Text(
            r#"{"serverContent":{"modelTurn":{"parts":[{"text":"Hello"}]},"turnComplete":true}}"#
                .into(),
        ))
        .await
        .unwrap();
        ws.send(ws_close(1007, "Request contains an invalid argument."))
            .await
            .unwrap();
        drain(&mut ws).await
    };
    let client = async {
        let mut client = WebSocketTransport::connect(&endpoint(&local.base_url))
            .await
            .unwrap();
        client
            .send(ClientMessage::setup(Setup::new("models/test")).to_frame())
            .await
            .unwrap();
        client
            .send(Frame::Binary(
                br#"{"realtimeInput":{"text":"hi"}}"#.to_vec(),
            ))
            .await
            .unwrap();
        let mut frames = Vec::new();
        while let Some(frame) = client.recv().await {
            frames.push(frame.unwrap());
        }
        assert!(client.recv().await.is_none(), "None stays None");
        frames
    };
    let (server_saw, frames) = tokio::join!(server, client);

    assert_eq!(frames.len(), 3, "{frames:?}"); // the ping never surfaces
    assert!(matches!(frames[0], Frame::Binary(_)));
    assert!(matches!(frames[1], Frame::Text(_)));
    let Decoded::Message(first) = decode::<ServerMessage>(&frames[0]).unwrap() else {
        panic!()
    };
    assert!(first.setup_complete.is_some());
    let Decoded::Message(second) = decode::<ServerMessage>(&frames[1]).unwrap() else {
        panic!()
    };
    assert!(second.server_content.unwrap().turn_complete);
    let Decoded::Closed(closed) = decode::<ServerMessage>(&frames[2]).unwrap() else {
        panic!()
    };
    assert_eq!((closed.code, closed.class), (1007, CloseClass::Fatal));
    assert_eq!(closed.reason, "Request contains an invalid argument.");
    // The client answered the ping and the close.
    assert!(
        server_saw.iter().any(|m| matches!(m, Message::Pong(_))),
        "{server_saw:?}"
    );
}

async fn close_class_for(code: u16, reason: &'static str) -> (u16, CloseClass, String) {
    let local = listen().await;
    let server = async {
        let (mut ws, _) = accept(&local).await;
        ws.send(ws_close(code, reason)).await.unwrap();
        drain(&mut ws).await;
    };
    let client = async {
        let mut client = WebSocketTransport::connect(&endpoint(&local.base_url))
            .await
            .unwrap();
        let frame = client.recv().await.unwrap().unwrap();
        assert!(client.recv().await.is_none());
        let Decoded::Closed(closed) = decode::<ServerMessage>(&frame).unwrap() else {
            panic!()
        };
        (closed.code, closed.class, closed.reason)
    };
    tokio::join!(server, client).1
}

#[tokio::test]
async fn close_codes_arrive_with_their_class_and_reason() {
    assert_eq!(
        close_class_for(1008, "BidiGenerateContent session not found").await,
        (
            1008,
            CloseClass::ResumeRejected,
            "BidiGenerateContent session not found".into()
        )
    );
    assert_eq!(
        close_class_for(1011, "Internal error encountered.").await,
        (
            1011,
            CloseClass::Retryable,
            "Internal error encountered.".into()
        )
    );
    assert_eq!(
        close_class_for(1000, "").await,
        (1000, CloseClass::Retryable, String::new())
    );
    assert_eq!(
        close_class_for(
            1008,
            "Operation is not implemented, or supported, or enabled."
        )
        .await
        .1,
        CloseClass::Fatal
    );
}

#[tokio::test]
async fn a_client_close_is_answered_and_ends_the_stream() {
    let local = listen().await;
    let server = async {
        let (mut ws, _) = accept(&local).await;
        drain(&mut ws).await
    };
    let client = async {
        let mut client = WebSocketTransport::connect(&endpoint(&local.base_url))
            .await
            .unwrap();
        let reserved = client.close(Some(CloseFrame::new(1006, "abnormal"))).await;
        assert!(
            matches!(reserved, Err(TransportError::Io { .. })),
            "{reserved:?}"
        );
        client
            .close(Some(CloseFrame::new(1000, "bye")))
            .await
            .unwrap();
        client.close(None).await.unwrap(); // closing twice is fine
        let late = client.send(Frame::Text("{}".into())).await;
        assert_eq!(late, Err(TransportError::Closed));
        let echo = client.recv().await.unwrap().unwrap();
        assert!(client.recv().await.is_none());
        echo
    };
    let (server_saw, echo) = tokio::join!(server, client);
    assert!(
        matches!(&server_saw[..], [Message::Close(Some(c))] if c.code == 1000u16.into() && c.reason == "bye"),
        "{server_saw:?}"
    );
    assert_eq!(echo, Frame::close(1000, "bye"));
}

#[tokio::test]
async fn a_connection_dropped_without_a_close_frame_is_lost_and_retryable() {
    let local = listen().await;
    let server = async {
        let (ws, _) = accept(&local).await;
        drop(ws);
    };
    let client = async {
        let mut client = WebSocketTransport::connect(&endpoint(&local.base_url))
            .await
            .unwrap();
        let error = client.recv().await.unwrap().unwrap_err();
        assert!(client.recv().await.is_none());
        error
    };
    let ((), error) = tokio::join!(server, client);
    assert!(
        matches!(error, TransportError::ConnectionLost { .. }),
        "{error:?}"
    );
    assert_eq!(error.as_closed().code, 1006);
    assert_eq!(error.class(), CloseClass::Retryable);
}

#[tokio::test]
async fn a_refused_upgrade_reports_its_status_and_class() {
    for (status, class) in [
        (401, CloseClass::Fatal),
        (404, CloseClass::Fatal),
        (429, CloseClass::Retryable),
        (503, CloseClass::Retryable),
    ] {
        let local = listen().await;
        let endpoint = endpoint(&local.base_url);
        let (upgrade, result) = tokio::join!(
            refuse(&local, status, "quota says no"),
            WebSocketTransport::connect(&endpoint)
        );
        assert_eq!(upgrade.header("x-goog-api-key"), Some(KEY));
        let Err(error) = result else {
            panic!("connected despite {status}")
        };
        assert!(
            matches!(&error, TransportError::Rejected { status: s, body, .. } if *s == status && body == "quota says no"),
            "{error:?}"
        );
        assert_eq!(error.class(), class, "{status}");
    }
}

#[tokio::test]
async fn nothing_listening_is_a_retryable_connect_error() {
    let port = dead_port().await;
    let Err(error) =
        WebSocketTransport::connect(&endpoint(&format!("ws://127.0.0.1:{port}"))).await
    else {
        panic!("connected to nothing")
    };
    let text = error.to_string();
    assert!(
        text.starts_with(&format!(
            "could not connect to ws://127.0.0.1:{port}{GOOGLE_AI_PATH}: "
        )),
        "{text}"
    );
    assert_eq!(error.class(), CloseClass::Retryable);
}

#[tokio::test]
async fn recv_is_cancel_safe_inside_select() {
    let local = listen().await;
    let server = async {
        let (mut ws, _) = accept(&local).await;
        for i in 0..50 {
            ws.send(Message::Text(format!("{{\"n\":{i}}}").into()))
                .await
                .unwrap();
        }
        ws.send(ws_close(1000, "")).await.unwrap();
        drain(&mut ws).await;
    };
    let client = async {
        let mut client: Box<dyn Transport> = Box::new(
            WebSocketTransport::connect(&endpoint(&local.base_url))
                .await
                .unwrap(),
        );
        let (mut got, mut cancelled) = (Vec::new(), 0);
        loop {
            tokio::select! {
                biased;
                frame = client.recv() => match frame {
                    Some(Ok(Frame::Text(text))) => got.push(text),
                    Some(Ok(_)) => {}
                    Some(Err(e)) => panic!("{e}"),
                    None => break,
                },
                // Ready on its second poll: cancels any recv that is pending.
                () = tokio::task::yield_now() => cancelled += 1,
            }
        }
        (got, cancelled)
    };
    let ((), (got, cancelled)) = tokio::join!(server, client);
    let expected: Vec<String> = (0..50).map(|i| format!("{{\"n\":{i}}}")).collect();
    assert_eq!(got, expected);
    assert!(cancelled > 0, "the race never cancelled a recv");
}

/// A query on the base URL stays at the end, after the path; a slash
/// between them is never doubled nor lost.
#[test]
fn a_base_urls_query_goes_after_the_path() {
    assert_eq!(
        endpoint("ws://127.0.0.1:9000/?tenant=a&x=1").url(),
        "ws://127.0.0.1:9000/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent?tenant=a&x=1"
    );
    assert_eq!(
        endpoint("ws://127.0.0.1:9000?tenant=a")
            .path("/v1/live")
            .url(),
        "ws://127.0.0.1:9000/v1/live?tenant=a"
    );
    assert_eq!(
        endpoint("wss://proxy.example/base/").path("live").url(),
        "wss://proxy.example/base/live"
    );
}

/// Both ends of a WebSocket over an in-process pipe: the client wrapped
/// in the transport with a 300 ms keepalive, the server as tungstenite
/// gives it.
async fn piped() -> (
    WebSocketTransport<tokio::io::DuplexStream>,
    tokio_tungstenite::WebSocketStream<tokio::io::DuplexStream>,
) {
    use tokio_tungstenite::WebSocketStream;
    use tokio_tungstenite::tungstenite::protocol::Role;
    let (client, server) = tokio::io::duplex(1 << 16);
    let client = WebSocketStream::from_raw_socket(client, Role::Client, None).await;
    let server = WebSocketStream::from_raw_socket(server, Role::Server, None).await;
    let keepalive = Duration::from_millis(300);
    let client =
        WebSocketTransport::from_stream(client, Redactor::new()).keepalive(keepalive, keepalive);
    (client, server)
}

/// A peer that keeps talking but has stopped hearing us (here: it never
/// reads, so never answers a ping) is given up once a ping's pong is
/// overdue: its other frames do not answer the ping.
#[tokio::test(start_paused = true)]
async fn a_peer_that_talks_but_never_answers_a_ping_is_lost() {
    let (mut client, mut server) = piped().await;
    // A quiet spell (the ping goes out 300 ms in), then ten seconds of
    // talking, if the connection is not given up first.
    let talking = async {
        for i in 0..100 {
            if server.send(Message::text(format!("{i}"))).await.is_err() {
                break;
            }
            let gap = if i == 0 { 350 } else { 100 };
            tokio::time::sleep(Duration::from_millis(gap)).await;
        }
    };
    let start = tokio::time::Instant::now();
    let listening = async {
        let mut heard = 0;
        loop {
            match client.recv().await {
                Some(Ok(Frame::Text(_))) => heard += 1,
                Some(Err(error)) => return (heard, error, start.elapsed()),
                other => panic!("{other:?}"),
            }
        }
    };
    let (heard, error, after) = tokio::select! {
        biased;
        lost = listening => lost,
        () = talking => panic!("the connection was not given up in ten seconds of talking"),
    };
    assert!(
        matches!(&error, TransportError::ConnectionLost { problem } if problem.contains("no answer to a ping")),
        "{error:?}"
    );
    // The ping went out 300 ms in, and its pong was due 300 ms later; the
    // peer's frames came meanwhile (at 350, 450 and 550 ms).
    assert_eq!(after, Duration::from_millis(600));
    assert_eq!(heard, 4);
}

/// A peer that talks and answers each ping keeps the connection, however
/// long it lasts.
#[tokio::test(start_paused = true)]
async fn a_peer_that_answers_its_pings_keeps_the_connection() {
    let (mut client, mut server) = piped().await;
    let talking = async {
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        loop {
            tokio::select! {
                biased;
                // Reading is what answers a ping (tungstenite sends the
                // pong).
                read = server.next() => match read {
                    Some(Ok(_)) => {}
                    _ => break,
                },
                _ = tick.tick() => {
                    if server.send(Message::text("still here")).await.is_err() {
                        break;
                    }
                }
            }
        }
    };
    let listening = async {
        for _ in 0..100 {
            match client.recv().await {
                Some(Ok(Frame::Text(_))) => {}
                other => panic!("{other:?}"),
            }
        }
    };
    tokio::select! {
        biased;
        () = listening => {}
        () = talking => panic!("the server stopped"),
    }
}
