//! One accepted connection: TLS (with `--tls`), the WebSocket upgrade,
//! the script played by the kit's own player, the closing handshake, and
//! the connection's report.

// tungstenite's handshake callback returns its own large error type.
#![allow(clippy::result_large_err)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;

use super::log::{Logged, ServeLog};
use super::report::ConnectionReport;
use super::upgrade::Inspection;
use crate::testing::ScriptedServer;
use crate::testing::player::{Progress, play_on};
use crate::transport::websocket::WebSocketTransport;

/// How long a client has to finish the TLS handshake and the upgrade: a
/// socket that never sends a request must not hold a connection slot.
const HANDSHAKE_LIMIT: Duration = Duration::from_secs(10);

/// How long, after closing, the server waits for the client's close.
const CLOSE_LIMIT: Duration = Duration::from_secs(5);

/// How an accepted socket ended.
pub(crate) enum Attempt {
    /// No script was played: the TLS handshake or the upgrade failed (a
    /// wrong path, not a WebSocket request). It does not use up one of
    /// the connections to serve.
    Refused,
    /// The script was played.
    Played(ConnectionReport),
}

/// What every connection shares.
#[derive(Clone)]
pub(crate) struct Shared {
    pub script: ScriptedServer,
    pub tls: Option<TlsAcceptor>,
    pub log: ServeLog,
}

/// Serves connection `number` on `tcp`.
pub(crate) async fn serve(
    number: usize,
    tcp: TcpStream,
    peer: SocketAddr,
    shared: Shared,
) -> Attempt {
    let say = |line: &str| (shared.log)(&format!("livesim serve: #{number} {line}"));
    say(&format!("accepted a connection from {peer}"));
    match shared.tls.clone() {
        None => upgrade_and_play(number, tcp, &shared).await,
        Some(acceptor) => match tokio::time::timeout(HANDSHAKE_LIMIT, acceptor.accept(tcp)).await {
            Ok(Ok(stream)) => upgrade_and_play(number, stream, &shared).await,
            Ok(Err(error)) => {
                say(&format!("TLS handshake failed: {error}"));
                Attempt::Refused
            }
            Err(_) => {
                say(&format!(
                    "no TLS handshake within {HANDSHAKE_LIMIT:?}; dropped"
                ));
                Attempt::Refused
            }
        },
    }
}

async fn upgrade_and_play<S>(number: usize, stream: S, shared: &Shared) -> Attempt
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let prefix = format!("livesim serve: #{number} ");
    let say = |line: &str| (shared.log)(&format!("{prefix}{line}"));
    let mut inspection = Inspection::default();
    let upgraded = tokio::time::timeout(
        HANDSHAKE_LIMIT,
        tokio_tungstenite::accept_hdr_async(stream, |request: &_, response| {
            inspection.check(request, response)
        }),
    )
    .await;
    let ws = match upgraded {
        Ok(Ok(ws)) => ws,
        Ok(Err(_)) if !inspection.path.is_empty() && !inspection.served => {
            say(&inspection.refusal());
            return Attempt::Refused;
        }
        Ok(Err(error)) => {
            let error = inspection.redactor.scrub(&error.to_string()).into_owned();
            say(&format!("not a WebSocket upgrade: {error}"));
            return Attempt::Refused;
        }
        Err(_) => {
            say(&format!(
                "no WebSocket upgrade within {HANDSHAKE_LIMIT:?}; dropped"
            ));
            return Attempt::Refused;
        }
    };
    let redactor = inspection.redactor.clone();
    let mut io = Logged::new(
        WebSocketTransport::from_stream(ws, redactor.clone()),
        redactor,
        shared.log.clone(),
        prefix.clone(),
    );
    io.say(&format!("upgraded on {}", inspection.path));
    for note in &inspection.notes {
        io.say(note);
    }

    let progress = Arc::new(Progress::default());
    // A real server has no test holding the frames back.
    progress.update(|s| s.released = true);
    play_on(shared.script.clone(), &mut io, progress.clone()).await;
    io.finish(CLOSE_LIMIT).await;

    let unanswered = progress.unanswered();
    let report = ConnectionReport::from_record(
        number,
        shared.script.name(),
        &progress.lock(),
        unanswered,
        io.redactor(),
    );
    (shared.log)(&format!("livesim serve: {report}"));
    Attempt::Played(report)
}
