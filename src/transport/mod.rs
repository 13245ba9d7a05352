//! Transports: how frames get to and from the Live server.
//!
//! One trait, [`Transport`] (send a frame, receive the next, close), is all
//! the session uses, so what sits behind it is interchangeable:
//!
//! * [`memory::pair`]: two connected in-memory ends; under simulation,
//!   frames arrive at seeded virtual times (in order per direction);
//! * [`websocket::WebSocketTransport`]: the real service over TLS, with
//!   the API key in a header and every error redacted (feature
//!   `websocket`);
//! * [`recording::Recording`]: wraps any transport and writes a wire log
//!   that holds no secret; [`wire_log`] reads one back;
//! * [`split::TextSplit`]: seeded splitting of a text frame into several,
//!   for fakes that exercise text aggregation;
//! * [`connector::Connector`]: opens a new transport each time a session
//!   reconnects.

pub mod connector;
mod error;
#[cfg(feature = "websocket")]
pub(crate) mod handshake;
pub mod memory;
pub mod recording;
pub(crate) mod scrub;
pub mod split;
#[cfg(feature = "websocket")]
#[cfg_attr(docsrs, doc(cfg(feature = "websocket")))]
pub mod websocket;
pub mod wire_log;

use futures::future::BoxFuture;

// The frame and key types are `livesim::wire::{Frame, CloseFrame, Secret}`;
// transport code inside the crate names them from here.
pub(crate) use crate::wire::{CloseFrame, Frame, Secret as ApiKey};
pub use error::TransportError;

/// A bidirectional frame pipe to a Live server (or to a client, for fakes).
///
/// Object-safe: a session holds a `Box<dyn Transport>`.
///
/// **Contract.**
///
/// * `recv` is **cancel-safe**: the session calls it inside
///   `tokio::select!`, and dropping its future before it completes loses
///   no frame; the next call returns that frame.
/// * `recv` yields frames in the order the peer sent them. When the peer
///   closes, it yields `Frame::Close` once and then `None` forever. A
///   connection that ends without a close frame yields one
///   `Err(TransportError::ConnectionLost)` (the 1006 case), then `None`.
/// * `close` sends a close frame (`None`: one without code). After it,
///   `send` fails with [`TransportError::Closed`], and `recv` yields what
///   the peer sent before it saw the close, then the peer's answering
///   close, then `None`. Closing twice is not an error.
/// * Pings and pongs are the transport's business: `recv` never yields them.
///
/// ```
/// use livesim::transport::{Transport, memory};
/// use livesim::wire::Frame;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let (mut client, mut server) = memory::pair();
/// client.send(Frame::Text(r#"{"setup":{}}"#.into())).await.unwrap();
/// assert_eq!(server.recv().await.unwrap().unwrap(), Frame::Text(r#"{"setup":{}}"#.into()));
/// server.close(Some(livesim::wire::CloseFrame::new(1000, "bye"))).await.unwrap();
/// assert!(client.recv().await.unwrap().unwrap().is_close());
/// assert!(client.recv().await.is_none());
/// # });
/// ```
pub trait Transport: Send + 'static {
    /// Sends one frame. Sending `Frame::Close` is the same as [`close`](Self::close).
    fn send(&mut self, frame: Frame) -> BoxFuture<'_, Result<(), TransportError>>;

    /// The next frame from the peer; `None` once the connection is over.
    /// Cancel-safe.
    fn recv(&mut self) -> BoxFuture<'_, Option<Result<Frame, TransportError>>>;

    /// Starts the closing handshake with an optional code and reason.
    fn close(&mut self, close: Option<CloseFrame>) -> BoxFuture<'_, Result<(), TransportError>>;
}

impl<T: Transport + ?Sized> Transport for Box<T> {
    fn send(&mut self, frame: Frame) -> BoxFuture<'_, Result<(), TransportError>> {
        (**self).send(frame)
    }

    fn recv(&mut self) -> BoxFuture<'_, Option<Result<Frame, TransportError>>> {
        (**self).recv()
    }

    fn close(&mut self, close: Option<CloseFrame>) -> BoxFuture<'_, Result<(), TransportError>> {
        (**self).close(close)
    }
}
