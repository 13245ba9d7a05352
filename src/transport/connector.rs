//! Connectors: how a session that reconnects opens each new connection.
//!
//! A [`Connector`] is an async factory of transports. A session given one
//! (instead of a single transport) can move to a new connection when the
//! server sends `goAway` or a connection fails, resuming where it was.
//! `WebSocketConnector` (feature `websocket`) opens WebSockets to an
//! `Endpoint`; the test
//! kit's scripted server and the simulated network provide their own; a
//! closure returning a boxed transport is a connector too.

use std::future::Future;

use futures::FutureExt;
use futures::future::BoxFuture;

#[cfg(feature = "websocket")]
use super::websocket::{Endpoint, WebSocketTransport};
use super::{Transport, TransportError};

/// A transport of any kind, as a connector hands it out.
pub type BoxedTransport = Box<dyn Transport>;

/// Opens connections to one server, as many times as asked.
///
/// ```
/// use livesim::transport::connector::{BoxedTransport, Connector};
/// use livesim::transport::{Transport, TransportError, memory};
///
/// // Any closure that opens a connection is a connector.
/// let connector = || async {
///     let (client, _server) = memory::pair();
///     Ok::<BoxedTransport, TransportError>(Box::new(client))
/// };
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// assert!(connector.connect().await.is_ok());
/// # });
/// ```
pub trait Connector: Send + Sync + 'static {
    /// Opens a new connection.
    fn connect(&self) -> BoxFuture<'_, Result<BoxedTransport, TransportError>>;
}

impl<F, Fut> Connector for F
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<BoxedTransport, TransportError>> + Send + 'static,
{
    fn connect(&self) -> BoxFuture<'_, Result<BoxedTransport, TransportError>> {
        self().boxed()
    }
}

/// Opens a [`WebSocketTransport`] to an endpoint for each connection.
#[cfg(feature = "websocket")]
#[cfg_attr(docsrs, doc(cfg(feature = "websocket")))]
#[derive(Clone, Debug)]
pub struct WebSocketConnector {
    endpoint: Endpoint,
}

#[cfg(feature = "websocket")]
impl WebSocketConnector {
    /// A connector to `endpoint`.
    pub fn new(endpoint: Endpoint) -> Self {
        WebSocketConnector { endpoint }
    }
}

#[cfg(feature = "websocket")]
impl Connector for WebSocketConnector {
    fn connect(&self) -> BoxFuture<'_, Result<BoxedTransport, TransportError>> {
        async move {
            let transport = WebSocketTransport::connect(&self.endpoint).await?;
            Ok(Box::new(transport) as BoxedTransport)
        }
        .boxed()
    }
}
