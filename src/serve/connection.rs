//! One accepted connection: TLS (with `--tls`), the WebSocket upgrade,
//! the script played by the kit's own player under the connection's
//! limits (message size, setup and idle timeouts), the closing handshake,
//! and the connection's report.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;

use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

use super::log::{Logged, ServeLog, SharedCut};
use super::report::ConnectionReport;
use super::server::Limits;
use super::upgrade::{self, Accepted};
use crate::testing::ScriptedServer;
use crate::testing::player::{Progress, play_connections, play_on};
use crate::transport::connector::BoxedTransport;
use crate::transport::recording::{Recording, WireLogWriter};
use crate::transport::websocket::WebSocketTransport;
use crate::transport::{CloseFrame, Frame, Transport};

/// How long a client has to finish the TLS handshake and the upgrade: a
/// socket that never sends a request must not hold a connection slot.
const HANDSHAKE_LIMIT: Duration = Duration::from_secs(10);

/// How much of what the server writes may wait for a client that does
/// not read (above the largest message a client may send): pongs to a
/// flood of pings past it are answered only for the latest ping (RFC 6455
/// allows it), so memory stays bounded; a script's own frame past it ends
/// the connection.
const WRITE_BUFFER_LIMIT: usize = 16 * 1024 * 1024;

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
    /// The connection joined a client session already playing the script
    /// (a reconnect); that session's first connection reports it.
    Joined,
}

/// What every connection shares.
#[derive(Clone)]
pub(crate) struct Shared {
    pub script: ScriptedServer,
    /// Knows every handle the script issues: they are secrets from a
    /// connection's first line (a client resumes with them, and a script
    /// may quote one in a close reason).
    pub script_handles: crate::wire::Redactor,
    pub tls: Option<TlsAcceptor>,
    pub log: ServeLog,
    pub limits: Limits,
    /// For a script that spans connections: the client session playing
    /// it now, which the next connection joins.
    pub session: Arc<Mutex<Option<Session>>>,
    /// Woken when a client session opens (the server then lets its
    /// reconnects in, whatever the connection count).
    pub session_opened: Arc<tokio::sync::Notify>,
    /// Where each connection's wire log goes, if anywhere.
    pub record: Option<std::path::PathBuf>,
    /// The plays started, against how many to serve.
    pub plays: Plays,
}

/// The script plays started so far, claimed at each upgrade.
#[derive(Clone, Default)]
pub(crate) struct Plays {
    started: Arc<std::sync::atomic::AtomicUsize>,
    /// How many plays to serve (`usize::MAX`: keep serving).
    pub budget: usize,
}

impl Plays {
    /// How many plays have started.
    pub fn started(&self) -> usize {
        self.started.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Starts a play, if one is left to serve.
    fn claim(&self) -> bool {
        use std::sync::atomic::Ordering::SeqCst;
        self.started
            .fetch_update(SeqCst, SeqCst, |n| (n < self.budget).then_some(n + 1))
            .is_ok()
    }
}

/// A client session playing a script across its connections.
#[derive(Clone)]
pub(crate) struct Session {
    connections: mpsc::UnboundedSender<BoxedTransport>,
    /// The latest connection's cut (a timeout, a protocol breach).
    cut: SharedCut,
}

impl Shared {
    /// Whether a client session is playing a script that spans
    /// connections (its reconnects must be accepted).
    pub fn session_open(&self) -> bool {
        lock(&self.session)
            .as_ref()
            .is_some_and(|s| !s.connections.is_closed())
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
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

/// Closes an upgraded connection that came when every play asked for had
/// started: 1013, "Try Again Later" (RFC 6455, section 7.4.1).
async fn no_room<T: Transport>(mut io: Logged<T>) -> Attempt {
    io.say("every connection asked for is playing or played: closing with 1013");
    let close = CloseFrame {
        code: 1013,
        reason: "Try Again Later".to_string(),
    };
    let _ = io.send(Frame::Close(Some(close))).await;
    io.finish(CLOSE_LIMIT).await;
    Attempt::Refused
}

/// Drives `play` to its end, or gives it up (`Err`) once the script's
/// progress has stood still for `quiet`: the client left at a reconnect
/// and never came back. Every connection's own deadlines (setup, idle)
/// would have ended it by then, so no connection is cut here; the
/// player was only waiting for the next one.
async fn until_played_or_quiet(
    play: impl std::future::Future<Output = ()>,
    progress: &Progress,
    quiet: Duration,
) -> Result<(), ()> {
    tokio::pin!(play);
    loop {
        let changed = progress.changed.notified();
        tokio::select! {
            biased;
            () = &mut play => return Ok(()),
            () = changed => {}
            () = tokio::time::sleep(quiet) => break,
        }
    }
    Err(())
}

/// A wire log writer for connection `number` in `dir`. The file is made
/// new: whatever stands at its path (a link, another run's recording) is
/// neither written through nor replaced.
fn recorder(
    dir: &std::path::Path,
    number: usize,
    redactor: &crate::wire::Redactor,
) -> std::io::Result<(WireLogWriter, std::path::PathBuf)> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join(format!("connection-{number}.jsonl"));
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    let writer = WireLogWriter::builder(file)
        .redactor(redactor)
        .server_side()
        .start()?;
    Ok((writer, path))
}

async fn upgrade_and_play<S>(number: usize, stream: S, shared: &Shared) -> Attempt
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let prefix = format!("livesim serve: #{number} ");
    let say = |line: &str| (shared.log)(&format!("{prefix}{line}"));
    let limits = shared.limits;
    let config = WebSocketConfig::default()
        .max_message_size(Some(limits.max_message_size))
        .max_frame_size(Some(limits.max_message_size))
        .max_write_buffer_size(WRITE_BUFFER_LIMIT + limits.max_message_size);
    let Accepted { ws, inspection } =
        match tokio::time::timeout(HANDSHAKE_LIMIT, upgrade::accept(stream, config)).await {
            Ok(Ok(accepted)) => accepted,
            Ok(Err(refusal)) => {
                say(&refusal);
                return Attempt::Refused;
            }
            Err(_) => {
                say(&format!(
                    "no WebSocket upgrade within {HANDSHAKE_LIMIT:?}; dropped"
                ));
                return Attempt::Refused;
            }
        };
    let mut redactor = shared.script_handles.clone();
    redactor.absorb(&inspection.redactor);
    let ws = WebSocketTransport::from_stream(ws, redactor.clone());
    let inner: BoxedTransport = match &shared.record {
        Some(dir) => match recorder(dir, number, &redactor) {
            Ok((writer, path)) => {
                say(&format!("recording to {}", path.display()));
                Box::new(Recording::new(ws, writer))
            }
            Err(e) => {
                say(&format!("cannot record: {e}"));
                Box::new(ws)
            }
        },
        None => Box::new(ws),
    };
    let mut io = Logged::new(
        inner,
        redactor,
        shared.log.clone(),
        prefix.clone(),
        (limits.setup_timeout, limits.idle_timeout),
    );
    io.say(&format!("upgraded on {}", inspection.path));
    for note in &inspection.notes {
        io.say(note);
    }

    // A real server has no test holding the frames back, and its report
    // needs no copy of what the client sent.
    let progress = Arc::new(Progress::for_server());
    let mut redactor = io.redactor().clone();
    let cut;
    if shared.script.spans_connections() {
        // One script position for every connection of a client session:
        // a reconnect joins the session its setup resumes.
        let joining = lock(&shared.session)
            .as_ref()
            .filter(|s| !s.connections.is_closed())
            .cloned();
        if let Some(session) = joining {
            io.say("joins the client session playing the script (a reconnect)");
            // A new connection: an earlier one's cut did not end the session.
            *lock(&session.cut) = None;
            io.share_cut(session.cut.clone());
            let _ = session.connections.send(Box::new(io));
            return Attempt::Joined;
        }
        if !shared.plays.claim() {
            return no_room(io).await;
        }
        let (connections, incoming) = mpsc::unbounded_channel();
        let session_cut = SharedCut::default();
        io.share_cut(session_cut.clone());
        *lock(&shared.session) = Some(Session {
            connections: connections.clone(),
            cut: session_cut.clone(),
        });
        shared.session_opened.notify_one();
        let _ = connections.send(Box::new(io) as BoxedTransport);
        drop(connections);
        let play = play_connections(shared.script.clone(), incoming, progress.clone(), false);
        let quiet = limits.setup_timeout + limits.idle_timeout;
        if until_played_or_quiet(play, &progress, quiet).await.is_err() {
            say(&format!(
                "nothing played for {} and no client connection: the client session ends",
                crate::session::human_duration(quiet)
            ));
        }
        *lock(&shared.session) = None;
        cut = lock(&session_cut).clone();
    } else {
        if !shared.plays.claim() {
            return no_room(io).await;
        }
        play_on(shared.script.clone(), &mut io, progress.clone()).await;
        io.finish(CLOSE_LIMIT).await;
        // What the connection taught it (a handle in the setup).
        redactor = io.redactor().clone();
        cut = io.cut().cloned();
    }

    let unanswered = progress.unanswered();
    let report = ConnectionReport::from_record(
        number,
        shared.script.name(),
        &progress.lock(),
        unanswered,
        cut,
        &redactor,
    );
    // One log line per report line: each is escaped and bounded alone.
    for line in report.to_string().lines() {
        (shared.log)(&format!("livesim serve: {line}"));
    }
    Attempt::Played(report)
}
