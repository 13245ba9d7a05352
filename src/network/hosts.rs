//! The two hosts of a simulated network: the server (the script player
//! behind a real WebSocket upgrade on turmoil TCP) and the session's way
//! to it (a connector that dials turmoil TCP and upgrades with the real
//! WebSocket client).

use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

use super::tap::Tap;
use crate::executor;
use crate::testing::ScriptedServer;
use crate::testing::player::{Progress, play_connections};
use crate::transport::TransportError;
use crate::transport::connector::{BoxedTransport, Connector};
use crate::transport::websocket::WebSocketTransport;
use crate::wire::Redactor;

/// The server host's name on the simulated network.
pub const SERVER: &str = "server";

/// The session's host's name on the simulated network.
pub const CLIENT: &str = "client";

/// The port the server listens on.
pub const PORT: u16 = 443;

/// The path the session's upgrade asks for (the Live API's).
const PATH: &str = "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent";

/// The WebSocket settings of both ends: a read buffer of 8 KiB, not
/// tungstenite's 128 KiB. tungstenite zeroes the free part of its read
/// buffer before every read, including the many that find nothing yet on
/// a simulated connection that is polled at every step of the network:
/// with the default, that zeroing was two fifths of a network session's
/// instructions. A frame longer than the buffer is read in several reads
/// of the same poll, so what a session sees is unchanged.
fn websocket_config() -> WebSocketConfig {
    WebSocketConfig::default().read_buffer_size(8 * 1024)
}

/// One start of the server host's software: listen, upgrade every
/// connection with the real WebSocket handshake, and hand it to a script
/// player. A restart starts a new player, which knows no handle.
pub(super) async fn serve(script: ScriptedServer, progress: Arc<Progress>) -> turmoil::Result {
    let listener = turmoil::net::TcpListener::bind(("0.0.0.0", PORT)).await?;
    let (connections, incoming) = mpsc::unbounded_channel::<BoxedTransport>();
    let name = format!("script:{}", script.name());
    executor::spawn(
        name,
        play_connections(script, incoming, progress.clone(), true),
    );
    loop {
        let (stream, _) = listener.accept().await?;
        progress.update(|s| s.accepted += 1);
        let connections = connections.clone();
        executor::spawn("network:upgrade", async move {
            if let Ok(ws) =
                tokio_tungstenite::accept_async_with_config(stream, Some(websocket_config())).await
            {
                let transport = WebSocketTransport::from_stream(ws, Redactor::new());
                let _ = connections.send(Box::new(transport));
            }
        });
    }
}

/// Opens connections from the session's host to the server: turmoil TCP,
/// the real WebSocket upgrade, and a keepalive (a partition leaves a
/// connection half-dead; only a ping that goes unanswered notices).
///
/// A connection attempt fails at once while the server is unreachable
/// (partitioned or down), and after [`NetworkConnector::CONNECT_TIMEOUT`]
/// when its upgrade is stuck.
#[derive(Clone, Debug)]
pub struct NetworkConnector {
    keepalive: (Duration, Duration),
    tap: Option<Tap>,
}

impl NetworkConnector {
    /// How long an upgrade may take before the attempt fails.
    pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

    pub(super) fn new(keepalive: (Duration, Duration), tap: Option<Tap>) -> Self {
        NetworkConnector { keepalive, tap }
    }
}

impl Connector for NetworkConnector {
    fn connect(&self) -> BoxFuture<'_, Result<BoxedTransport, TransportError>> {
        let (interval, timeout) = self.keepalive;
        let tap = self.tap.clone();
        let url = format!("ws://{SERVER}:{PORT}{PATH}");
        let fail = move |problem: String| TransportError::Connect {
            url: format!("ws://{SERVER}:{PORT}{PATH}"),
            problem,
        };
        async move {
            let dial = async {
                let stream = turmoil::net::TcpStream::connect((SERVER, PORT))
                    .await
                    .map_err(|e| fail(e.to_string()))?;
                let (ws, _) = tokio_tungstenite::client_async_with_config(
                    url.as_str(),
                    stream,
                    Some(websocket_config()),
                )
                .await
                .map_err(|e| fail(e.to_string()))?;
                Ok::<_, TransportError>(ws)
            };
            let ws = tokio::time::timeout(Self::CONNECT_TIMEOUT, dial)
                .await
                .map_err(|_| fail("the upgrade did not complete in time".to_string()))??;
            let transport =
                WebSocketTransport::from_stream(ws, Redactor::new()).keepalive(interval, timeout);
            let transport = Box::new(transport) as BoxedTransport;
            Ok(match tap {
                Some(tap) => tap.wrap(transport),
                None => transport,
            })
        }
        .boxed()
    }
}
