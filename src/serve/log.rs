//! The serve log: one line per frame on a served connection, through a
//! redactor.
//!
//! [`Logged`] wraps the connection's transport, so the script player runs
//! unchanged while every client message (and every server message, for
//! context) is described in one line: the direction, the top-level key
//! and a short summary (see [`summary`](super::summary)). Each line passes
//! through the connection's [`Redactor`], which knows the credential the
//! client connected with and learns any resumption handle its setup
//! carries.

use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::Value;

use super::summary;
use crate::transport::{CloseFrame, Frame, Transport, TransportError};
use crate::wire::{Redactor, Secret};

/// Where serve log lines go (the CLI writes them to stderr). Lines are
/// already redacted.
pub type ServeLog = Arc<dyn Fn(&str) + Send + Sync>;

/// A transport that logs what crosses it.
pub(crate) struct Logged<T> {
    inner: T,
    redactor: Redactor,
    log: ServeLog,
    prefix: String,
    /// This end sent a close frame (the script's close, or the player
    /// closing on a broken expectation).
    closed_here: bool,
}

impl<T: Transport> Logged<T> {
    pub fn new(inner: T, redactor: Redactor, log: ServeLog, prefix: String) -> Self {
        Logged {
            inner,
            redactor,
            log,
            prefix,
            closed_here: false,
        }
    }

    /// Logs one line, redacted.
    pub fn say(&self, line: &str) {
        (self.log)(&format!("{}{}", self.prefix, self.redactor.scrub(line)));
    }

    /// The redactor, with every secret this connection revealed.
    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    /// After the script: if this end closed, waits (at most `limit`) for
    /// the client's answering close, so the client sees a clean closing
    /// handshake rather than a dropped socket.
    pub async fn finish(&mut self, limit: std::time::Duration) {
        if !self.closed_here {
            return;
        }
        let drain = async {
            while let Some(Ok(frame)) = self.inner.recv().await {
                if frame.is_close() {
                    break;
                }
            }
        };
        let _ = tokio::time::timeout(limit, drain).await;
    }

    fn client_frame(&mut self, frame: &Frame) {
        match frame {
            Frame::Close(close) => self.say(&format!("client → close {}", describe_close(close))),
            Frame::Text(_) | Frame::Binary(_) => {
                let bytes = frame.payload().unwrap_or_default();
                self.learn_handle(bytes);
                let line = summary::client_message(bytes);
                self.say(&format!("client → {line}"));
            }
        }
    }

    /// A resumption handle in the client's setup becomes a secret before
    /// anything about the message is printed.
    fn learn_handle(&mut self, bytes: &[u8]) {
        let Ok(message) = serde_json::from_slice::<Value>(bytes) else {
            return;
        };
        let handle = [
            "/setup/sessionResumption/handle",
            "/setup/session_resumption/handle",
        ]
        .iter()
        .find_map(|pointer| message.pointer(pointer))
        .and_then(Value::as_str);
        if let Some(handle) = handle {
            self.redactor.add_secret(&Secret::new(handle));
        }
    }

    fn server_frame(&mut self, frame: &Frame) {
        match frame {
            Frame::Close(close) => {
                self.closed_here = true;
                self.say(&format!("server → close {}", describe_close(close)));
            }
            Frame::Text(_) | Frame::Binary(_) => {
                let line = summary::server_message(frame.payload().unwrap_or_default());
                self.say(&format!("server → {line}"));
            }
        }
    }
}

fn describe_close(close: &Option<CloseFrame>) -> String {
    match close {
        Some(c) if c.reason.is_empty() => c.code.to_string(),
        Some(c) => format!("{} {:?}", c.code, c.reason),
        None => "(no code)".to_string(),
    }
}

impl<T: Transport> Transport for Logged<T> {
    fn send(&mut self, frame: Frame) -> BoxFuture<'_, Result<(), TransportError>> {
        self.server_frame(&frame);
        self.inner.send(frame)
    }

    fn recv(&mut self) -> BoxFuture<'_, Option<Result<Frame, TransportError>>> {
        async move {
            let frame = self.inner.recv().await;
            match &frame {
                Some(Ok(frame)) => self.client_frame(frame),
                Some(Err(error)) => self.say(&format!("client → {error}")),
                None => {}
            }
            frame
        }
        .boxed()
    }

    fn close(&mut self, close: Option<CloseFrame>) -> BoxFuture<'_, Result<(), TransportError>> {
        self.server_frame(&Frame::Close(close.clone()));
        self.inner.close(close)
    }
}
