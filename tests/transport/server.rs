//! A WebSocket server on 127.0.0.1 for the client's end-to-end tests.

// tungstenite's handshake callback returns its own large error type.
#![allow(clippy::result_large_err)]

use std::sync::{Arc, Mutex};

use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::StatusCode;

/// A listening socket and the base URL that reaches it.
pub struct Local {
    pub listener: TcpListener,
    pub base_url: String,
}

pub async fn listen() -> Local {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    Local {
        listener,
        base_url: format!("ws://127.0.0.1:{port}"),
    }
}

/// What the client's upgrade request carried.
#[derive(Clone, Debug, Default)]
pub struct Upgrade {
    pub uri: String,
    pub headers: Vec<(String, String)>,
}

impl Upgrade {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn remember(seen: &Arc<Mutex<Upgrade>>, request: &Request) {
    *seen.lock().unwrap() = Upgrade {
        uri: request.uri().to_string(),
        headers: request
            .headers()
            .iter()
            .map(|(n, v)| {
                (
                    n.to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
    };
}

/// Accepts one WebSocket connection.
pub async fn accept(local: &Local) -> (WebSocketStream<TcpStream>, Upgrade) {
    let (stream, _) = local.listener.accept().await.unwrap();
    let seen = Arc::new(Mutex::new(Upgrade::default()));
    let record = seen.clone();
    let ws = tokio_tungstenite::accept_hdr_async(stream, move |req: &Request, resp: Response| {
        remember(&record, req);
        Ok(resp)
    })
    .await
    .unwrap();
    let upgrade = seen.lock().unwrap().clone();
    (ws, upgrade)
}

/// Refuses one upgrade with `status` and `body`.
pub async fn refuse(local: &Local, status: u16, body: &str) -> Upgrade {
    let (stream, _) = local.listener.accept().await.unwrap();
    let seen = Arc::new(Mutex::new(Upgrade::default()));
    let record = seen.clone();
    let body = body.to_owned();
    let _ = tokio_tungstenite::accept_hdr_async(stream, move |req: &Request, _resp: Response| {
        remember(&record, req);
        let mut refusal = ErrorResponse::new(Some(body));
        *refusal.status_mut() = StatusCode::from_u16(status).unwrap();
        Err(refusal)
    })
    .await;
    seen.lock().unwrap().clone()
}

/// A port with nothing listening (bound, then released).
pub async fn dead_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap().port()
}
