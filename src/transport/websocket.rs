//! The WebSocket client for the real Live service, and the frame layer
//! both ends of a WebSocket share.
//!
//! TLS is rustls with the `ring` provider and the webpki root store, so
//! nothing is read from the OS. The API key travels in the
//! `x-goog-api-key` header and never in the URL: the URL is a string that
//! errors and logs echo. The upgrade request is written by livesim itself
//! (the `handshake` module), so no dependency ever holds the key
//! (tungstenite traces the requests it writes). Every error this module
//! returns has been through a [`Redactor`] that knows the key, and shows
//! the URL without its query.
//!
//! [`WebSocketTransport`] is generic over the byte stream under the
//! WebSocket, so `livesim serve` wraps the sockets it accepts (plain TCP
//! or TLS) in the same frame handling the client uses.

use futures::future::BoxFuture;
use futures::{FutureExt, SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::error::ProtocolError;
use tokio_tungstenite::tungstenite::protocol::CloseFrame as WsCloseFrame;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use super::handshake::{self, UpgradeError};
use super::{CloseFrame, Frame, Transport, TransportError};
use crate::wire::Secret;
use crate::wire::{Redactor, clip, redact_url};

/// The Google AI Live endpoint's host.
pub const GOOGLE_AI_BASE_URL: &str = "wss://generativelanguage.googleapis.com";

/// The Google AI Live endpoint's path (v1beta, API-key authentication).
pub const GOOGLE_AI_PATH: &str =
    "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent";

/// The header that carries the API key.
pub const API_KEY_HEADER: &str = "x-goog-api-key";

/// Where to connect and with which credential.
///
/// ```
/// use livesim::wire::Secret;
/// use livesim::transport::websocket::Endpoint;
///
/// let endpoint = Endpoint::google_ai(Secret::new("FAKE-KEY-1234567890"));
/// assert_eq!(
///     endpoint.url(),
///     "wss://generativelanguage.googleapis.com/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent",
/// );
/// let local = endpoint.clone().base_url("ws://127.0.0.1:9000/");
/// assert!(local.url().starts_with("ws://127.0.0.1:9000/ws/"));
/// assert!(!format!("{local:?}").contains("FAKE-KEY")); // the key prints as <redacted>
/// ```
#[derive(Clone, Debug)]
pub struct Endpoint {
    base_url: String,
    path: String,
    api_key: Option<Secret>,
}

impl Endpoint {
    /// The Google AI endpoint, authenticated with `api_key`.
    pub fn google_ai(api_key: Secret) -> Self {
        Endpoint {
            base_url: GOOGLE_AI_BASE_URL.into(),
            path: GOOGLE_AI_PATH.into(),
            api_key: Some(api_key),
        }
    }

    /// Points somewhere else, e.g. `ws://127.0.0.1:PORT` for a local fake.
    pub fn base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = base_url.into();
        self
    }

    /// Replaces the path (another API version or method).
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// The URL connected to. It holds no credential (unless the base URL
    /// given had one, which [`redacted_url`](Self::redacted_url) hides).
    pub fn url(&self) -> String {
        // A query on the base URL stays at the end, after the path.
        let (base, query) = match self.base_url.split_once('?') {
            Some((base, query)) => (base, Some(query)),
            None => (self.base_url.as_str(), None),
        };
        let base = base.trim_end_matches('/');
        let path = self.path.trim_start_matches('/');
        match query {
            Some(query) => format!("{base}/{path}?{query}"),
            None => format!("{base}/{path}"),
        }
    }

    /// The URL as errors and logs show it: no user info, no query.
    pub fn redacted_url(&self) -> String {
        redact_url(&self.url())
    }

    /// A redactor that knows this endpoint's credential.
    pub fn redactor(&self) -> Redactor {
        let mut redactor = Redactor::new();
        if let Some(key) = &self.api_key {
            redactor.add_secret(key);
        }
        redactor
    }

    /// A description safe to record in a wire log header.
    pub fn descriptor(&self) -> Value {
        json!({
            "transport": "websocket",
            "url": self.redacted_url(),
            "auth": if self.api_key.is_some() { "<redacted:api_key>" } else { "none" },
        })
    }
}

/// A connected WebSocket: to a Live endpoint (the default stream type,
/// from [`connect`](WebSocketTransport::connect)), or any open WebSocket
/// over a byte stream `S` (see [`from_stream`](WebSocketTransport::from_stream)).
///
/// Text and binary frames go out as given; pings are answered and never
/// surface; an incoming close reason is redacted. A peer that breaks the
/// WebSocket protocol gets the close code RFC 6455 gives for it (1007 for
/// invalid UTF-8 in a text message, 1009 for a message over the size
/// limit, 1002 for a malformed frame) and `recv` yields
/// [`TransportError::Violation`]. Closing with a code that only describes
/// a close (1005, 1006, 1015) is an error: it cannot be sent.
///
/// ```no_run
/// use livesim::transport::websocket::{Endpoint, WebSocketTransport};
/// use livesim::transport::{Transport, TransportError};
/// use livesim::wire::Secret;
/// use livesim::wire::{ClientMessage, Setup};
///
/// # async fn demo() -> Result<(), TransportError> {
/// let key = Secret::new(std::env::var("GEMINI_API_KEY").unwrap_or_default());
/// let mut live = WebSocketTransport::connect(&Endpoint::google_ai(key)).await?;
/// let setup = Setup::new("models/gemini-live-2.5-flash-preview");
/// live.send(ClientMessage::setup(setup).to_frame()).await?;
/// let first = live.recv().await; // setupComplete, or a close that says why not
/// # let _ = first;
/// # Ok(())
/// # }
/// ```
pub struct WebSocketTransport<S = MaybeTlsStream<TcpStream>> {
    ws: WebSocketStream<S>,
    redactor: Redactor,
    /// A close frame taken off the socket but not yet returned (see `recv`).
    pending: Option<Frame>,
    closing: bool,
    finished: bool,
    keepalive: Option<Keepalive>,
}

/// Pings after a quiet spell, and a deadline for the ping's pong.
struct Keepalive {
    interval: std::time::Duration,
    timeout: std::time::Duration,
    /// When anything last came from the peer.
    heard: tokio::time::Instant,
    /// When the ping still waiting for its pong went out.
    pinged: Option<tokio::time::Instant>,
}

impl WebSocketTransport {
    /// Opens the connection (TCP, TLS for `wss://`, WebSocket upgrade).
    ///
    /// No timeout is applied here; wrap the call in `tokio::time::timeout`.
    pub async fn connect(endpoint: &Endpoint) -> Result<Self, TransportError> {
        let url = endpoint.url();
        let shown = endpoint.redacted_url();
        let redactor = endpoint.redactor();
        if let Some(key) = &endpoint.api_key {
            // Log lines livesim writes are scrubbed of it from now on.
            crate::wire::remember(key);
        }
        tracing::debug!(target: "livesim::transport", url = %shown, "connecting");
        let headers: Vec<(&str, &str)> = endpoint
            .api_key
            .iter()
            .map(|key| (API_KEY_HEADER, key.expose()))
            .collect();
        let ws = match handshake::connect(&url, &headers).await {
            Ok(ws) => ws,
            Err(UpgradeError::Refused { status, body }) => {
                // Redacted, then cut: a cut first could keep half a key.
                let body = clean(&redactor, &url, &shown, body.trim());
                let error = TransportError::Rejected {
                    url: shown.clone(),
                    status,
                    body: clip(&body, MAX_SHOWN_BODY).into_owned(),
                };
                tracing::debug!(target: "livesim::transport", %error, "upgrade refused");
                return Err(error);
            }
            Err(UpgradeError::Connect(problem)) => {
                let error = TransportError::Connect {
                    url: shown.clone(),
                    problem: clean(&redactor, &url, &shown, &problem),
                };
                tracing::debug!(target: "livesim::transport", %error, "connect failed");
                return Err(error);
            }
        };
        tracing::debug!(target: "livesim::transport", url = %shown, "connected");
        Ok(WebSocketTransport::from_stream(ws, redactor))
    }
}

/// How much of a refused upgrade's body an error quotes.
const MAX_SHOWN_BODY: usize = 300;

impl<S> WebSocketTransport<S>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    /// Wraps a WebSocket that is already open, at either end: a server
    /// wraps the sockets it accepts. `redactor` scrubs every error and
    /// close reason this transport reports.
    pub fn from_stream(ws: WebSocketStream<S>, redactor: Redactor) -> Self {
        WebSocketTransport {
            ws,
            redactor,
            pending: None,
            closing: false,
            finished: false,
            keepalive: None,
        }
    }

    /// Pings the peer after `interval` without a frame from it, and gives
    /// the connection up as lost when that ping's pong does not come
    /// within `timeout`. Only the pong answers it: a peer that still talks
    /// may have stopped hearing us (what we wrote was lost on the way, and
    /// everything after waits behind it), and its frames say nothing of
    /// that. A connection that died without a close or a reset (a network
    /// partition) is noticed only this way. Google's Python SDK pings
    /// every 20 s with a 20 s timeout, and waits for the pong too. Timers
    /// are tokio's, so virtual under simulation.
    pub fn keepalive(
        mut self,
        interval: std::time::Duration,
        timeout: std::time::Duration,
    ) -> Self {
        self.keepalive = Some(Keepalive {
            interval,
            timeout,
            heard: tokio::time::Instant::now(),
            pinged: None,
        });
        self
    }

    /// When the keepalive acts next: the ping, or giving up on it.
    fn keepalive_due(&self) -> Option<tokio::time::Instant> {
        let k = self.keepalive.as_ref()?;
        Some(match k.pinged {
            Some(at) => at + k.timeout,
            None => k.heard + k.interval,
        })
    }

    /// The keepalive's turn: ping, or report the connection lost.
    async fn keepalive_fired(&mut self) -> Option<TransportError> {
        let k = self.keepalive.as_mut()?;
        if let Some(at) = k.pinged {
            let waited = tokio::time::Instant::now().saturating_duration_since(at);
            return Some(TransportError::ConnectionLost {
                problem: format!("no answer to a ping within {} ms", waited.as_millis()),
            });
        }
        // Marked before the send, so a cancelled send still counts.
        k.pinged = Some(tokio::time::Instant::now());
        let _ = self.ws.send(Message::Ping(Vec::new().into())).await;
        None
    }

    fn failure(&self, error: WsError) -> TransportError {
        let problem = self.redactor.scrub(&error.to_string()).into_owned();
        match error {
            WsError::Io(_) | WsError::Protocol(ProtocolError::ResetWithoutClosingHandshake) => {
                TransportError::ConnectionLost { problem }
            }
            WsError::ConnectionClosed | WsError::AlreadyClosed => TransportError::Closed,
            _ => TransportError::Io { problem },
        }
    }

    /// The close code RFC 6455 gives for what the peer sent, when it broke
    /// the protocol: invalid UTF-8 in a text message is 1007, a message
    /// over the size limit 1009, a malformed frame (reserved bits or
    /// opcode, masking the wrong way, a bad control frame) 1002.
    fn violation(error: &WsError) -> Option<(u16, &'static str)> {
        match error {
            WsError::Utf8(_) => Some((1007, "Invalid UTF-8 in a text message.")),
            WsError::Capacity(_) => Some((1009, "Message too big.")),
            WsError::Protocol(ProtocolError::ResetWithoutClosingHandshake) => None,
            WsError::Protocol(_) => Some((1002, "Protocol error.")),
            _ => None,
        }
    }

    /// Answers a protocol violation as RFC 6455 says: a close frame with
    /// its code, then the connection is given up (no waiting for the
    /// peer, which is not speaking the protocol).
    async fn fail_connection(&mut self, error: WsError) -> TransportError {
        let problem = self.redactor.scrub(&error.to_string()).into_owned();
        let Some((code, reason)) = Self::violation(&error) else {
            return self.failure(error);
        };
        if !self.closing {
            self.closing = true;
            let frame = WsCloseFrame {
                code: code.into(),
                reason: reason.into(),
            };
            let _ = self.ws.close(Some(frame)).await;
        }
        TransportError::Violation { code, problem }
    }

    async fn recv_next(&mut self) -> Option<Result<Frame, TransportError>> {
        if let Some(frame) = self.pending.take() {
            return Some(Ok(frame));
        }
        if self.finished {
            return None;
        }
        loop {
            let due = self.keepalive_due();
            let next = tokio::select! {
                biased;
                next = self.ws.next() => next,
                _ = sleep_until(due) => {
                    if let Some(lost) = self.keepalive_fired().await {
                        self.finished = true;
                        tracing::debug!(target: "livesim::transport", error = %lost, "keepalive");
                        return Some(Err(lost));
                    }
                    continue;
                }
            };
            if let Some(k) = self.keepalive.as_mut() {
                k.heard = tokio::time::Instant::now();
                if matches!(next, Some(Ok(Message::Pong(_)))) {
                    k.pinged = None;
                }
            }
            let message = match next {
                None => {
                    self.finished = true;
                    return None;
                }
                Some(Ok(message)) => message,
                Some(Err(error)) => {
                    self.finished = true;
                    let error = self.fail_connection(error).await;
                    tracing::debug!(target: "livesim::transport", %error, "receive failed");
                    return Some(Err(error));
                }
            };
            match message {
                Message::Text(text) => return Some(Ok(Frame::Text(text.as_str().to_owned()))),
                Message::Binary(bytes) => return Some(Ok(Frame::Binary(bytes.to_vec()))),
                Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => continue,
                Message::Close(close) => {
                    let close = close.map(|c| CloseFrame {
                        code: u16::from(c.code),
                        reason: self.redactor.scrub(c.reason.as_str()).into_owned(),
                    });
                    // Keep the frame before awaiting, so a cancelled flush
                    // loses nothing; the flush sends tungstenite's reply.
                    self.pending = Some(Frame::Close(close));
                    let _ = self.ws.flush().await;
                    return self.pending.take().map(Ok);
                }
            }
        }
    }

    async fn send_frame(&mut self, frame: Frame) -> Result<(), TransportError> {
        let message = match frame {
            Frame::Close(close) => return self.close_with(close).await,
            _ if self.closing => return Err(TransportError::Closed),
            Frame::Text(text) => Message::Text(text.into()),
            Frame::Binary(bytes) => Message::Binary(bytes.into()),
        };
        self.ws.send(message).await.map_err(|e| self.failure(e))
    }

    async fn close_with(&mut self, close: Option<CloseFrame>) -> Result<(), TransportError> {
        if self.closing {
            return Ok(());
        }
        if let Some(c) = &close
            && !crate::wire::codes::sendable(c.code)
        {
            // 1005, 1006 and 1015 only describe closes; they never go on the wire.
            return Err(TransportError::Io {
                problem: format!("close code {} is reserved and cannot be sent", c.code),
            });
        }
        self.closing = true;
        let frame = close.map(|c| WsCloseFrame {
            code: c.code.into(),
            reason: c.wire_reason().to_owned().into(),
        });
        match self.ws.close(frame).await {
            Ok(()) | Err(WsError::ConnectionClosed | WsError::AlreadyClosed) => Ok(()),
            Err(e) => Err(self.failure(e)),
        }
    }
}

/// Sleeps until `deadline`; forever without one.
async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Removes the key and the full URL from a message.
fn clean(redactor: &Redactor, url: &str, shown: &str, text: &str) -> String {
    redactor.scrub(&text.replace(url, shown)).into_owned()
}

impl<S> Transport for WebSocketTransport<S>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    fn send(&mut self, frame: Frame) -> BoxFuture<'_, Result<(), TransportError>> {
        self.send_frame(frame).boxed()
    }

    fn recv(&mut self) -> BoxFuture<'_, Option<Result<Frame, TransportError>>> {
        self.recv_next().boxed()
    }

    fn close(&mut self, close: Option<CloseFrame>) -> BoxFuture<'_, Result<(), TransportError>> {
        self.close_with(close).boxed()
    }
}
