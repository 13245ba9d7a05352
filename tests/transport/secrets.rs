//! A recognisable fake key, a recorded session that goes wrong in several
//! ways, and the check that the key (and the handle, and the token) is
//! nowhere: not in the wire log, not in any error's Display or Debug, not
//! in the logs.

use std::io;

use futures::{SinkExt, StreamExt};
use livesim::transport::Transport;
use livesim::transport::recording::{MemorySink, Recording, WireLogWriter};
use livesim::transport::websocket::{Endpoint, WebSocketTransport};
use livesim::wire::{Closed, Decoded, ServerMessage, decode};
use livesim::wire::{Frame, Secret};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::CloseFrame as WsCloseFrame;

use super::server::{accept, dead_port, listen, refuse};

const KEY: &str = "FAKE-KEY-1234567890";
const HANDLE: &str = "CiQ3Y-resumption-handle";
const TOKEN: &str = "auth_tokens/ephemeral-abc123";

/// Everything the test produced that a person or a file could see.
#[derive(Default)]
struct Exposed {
    texts: Vec<(String, String)>,
}

impl Exposed {
    fn add(&mut self, what: &str, text: impl Into<String>) {
        self.texts.push((what.into(), text.into()));
    }

    fn add_error<E: std::fmt::Display + std::fmt::Debug>(&mut self, what: &str, error: &E) {
        self.add(&format!("{what} (Display)"), error.to_string());
        self.add(&format!("{what} (Debug)"), format!("{error:?}"));
    }

    fn assert_clean(&self) {
        for (what, text) in &self.texts {
            for secret in [KEY, HANDLE, "ephemeral-abc123"] {
                assert!(
                    !text.contains(secret),
                    "{secret} leaked into {what}: {text}"
                );
            }
        }
    }
}

/// A sink whose writes fail with a message that quotes the key.
struct LeakyFailingSink;

impl io::Write for LeakyFailingSink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if buf.starts_with(b"{\"v\"") {
            return Ok(buf.len());
        }
        Err(io::Error::other(format!("cannot write for key {KEY}")))
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn the_key_appears_in_no_log_file_error_or_log_line() {
    let logs = MemorySink::new();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer({
            let logs = logs.clone();
            move || logs.clone()
        })
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let mut exposed = Exposed::default();
    let key = Secret::new(KEY);
    exposed.add_error("the key", &key);

    // 1. A recorded session whose traffic mentions every secret, ending in 1007.
    let local = listen().await;
    let endpoint = Endpoint::google_ai(key.clone()).base_url(&local.base_url);
    exposed.add("endpoint (Debug)", format!("{endpoint:?}"));
    let wire_log = MemorySink::new();
    let server = async {
        let (mut ws, upgrade) = accept(&local).await;
        assert_eq!(
            upgrade.header("x-goog-api-key"),
            Some(KEY),
            "the key did reach the server"
        );
        let _setup = ws.next().await;
        let _careless = ws.next().await;
        let frames = [
            format!(r#"{{"sessionResumptionUpdate":{{"newHandle":"{HANDLE}","resumable":true}}}}"#),
            format!(
                r#"{{"serverContent":{{"modelTurn":{{"parts":[{{"text":"your key {KEY} and token {TOKEN}"}}]}}}}}}"#
            ),
            format!("not json: wss://x/ws?key={KEY}"),
        ];
        for frame in frames {
            ws.send(Message::Binary(frame.into_bytes().into()))
                .await
                .unwrap();
        }
        ws.send(Message::Binary(
            vec![0xff, b' ']
                .into_iter()
                .chain(KEY.bytes())
                .collect::<Vec<u8>>()
                .into(),
        ))
        .await
        .unwrap();
        ws.send(Message::Close(Some(WsCloseFrame {
            code: 1007u16.into(),
            reason: format!("API key not valid: {KEY}").into(),
        })))
        .await
        .unwrap();
        while let Some(Ok(_)) = ws.next().await {}
    };
    let client = async {
        let inner = WebSocketTransport::connect(&endpoint).await.unwrap();
        let log = WireLogWriter::builder(wire_log.clone())
            .model("models/test")
            .connect(endpoint.descriptor())
            .redactor(&endpoint.redactor())
            .start()
            .unwrap();
        let mut client = Recording::new(inner, log);
        client
            .send(Frame::Text(format!(
                r#"{{"setup":{{"model":"models/test","sessionResumption":{{"handle":"{HANDLE}"}}}}}}"#
            )))
            .await
            .unwrap();
        client
            .send(Frame::Text(format!(
                r#"{{"realtimeInput":{{"text":"my key is {KEY}"}}}}"#
            )))
            .await
            .unwrap();
        let mut closes = Vec::new();
        while let Some(frame) = client.recv().await {
            let frame = frame.unwrap();
            if let Ok(Decoded::Closed(closed)) = decode::<ServerMessage>(&frame) {
                closes.push(closed);
            }
        }
        closes
    };
    let ((), closes) = tokio::join!(server, client);
    let [closed]: [Closed; 1] = closes.try_into().unwrap();
    assert_eq!(closed.code, 1007);
    assert_eq!(closed.reason, "API key not valid: <redacted>");
    exposed.add_error("close", &closed);
    let recorded = String::from_utf8_lossy(&wire_log.contents()).into_owned();
    assert!(
        recorded.contains("<handle-1>") && recorded.contains("<redacted:auth_token>"),
        "{recorded}"
    );
    exposed.add("wire log", recorded);

    // 2. Nothing listening, with the key put (wrongly) in the URL.
    let port = dead_port().await;
    let careless =
        Endpoint::google_ai(key.clone()).base_url(format!("ws://127.0.0.1:{port}/?key={KEY}&x=1"));
    let Err(error) = WebSocketTransport::connect(&careless).await else {
        panic!("connected")
    };
    exposed.add_error("connect error", &error);
    exposed.add_error("connect error as a close", &error.as_closed());

    // 3. An upgrade refused with a body that echoes the key.
    let local = listen().await;
    let endpoint = Endpoint::google_ai(key.clone()).base_url(&local.base_url);
    let body = format!("API key {KEY} not valid");
    let (_, refused) = tokio::join!(
        refuse(&local, 401, &body),
        WebSocketTransport::connect(&endpoint)
    );
    let Err(error) = refused else {
        panic!("connected")
    };
    assert!(
        error
            .to_string()
            .contains("HTTP 401: API key <redacted> not valid"),
        "{error}"
    );
    exposed.add_error("refusal", &error);

    // 4. A wire log whose sink fails with a message quoting the key.
    let log = WireLogWriter::builder(LeakyFailingSink)
        .secret(&key)
        .start()
        .unwrap();
    let (a, mut b) = livesim::transport::memory::pair();
    let mut a = Recording::new(a, log);
    a.send(Frame::Text("{}".into())).await.unwrap();
    b.recv().await.unwrap().unwrap();
    exposed.add("write error", a.log().error().unwrap().to_owned());

    let logged = String::from_utf8_lossy(&logs.contents()).into_owned();
    assert!(
        logged.contains("connecting") && logged.contains("wire log write failed"),
        "{logged}"
    );
    exposed.add("tracing output", logged);
    exposed.assert_clean();
}
