//! The listener: bind 127.0.0.1, accept connections, play the script on
//! each, and say how every play ended.

use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use tokio::net::TcpListener;

use super::connection::{self, Attempt, Shared};
use super::log::{ServeLog, one_line};
use super::report::ServeReport;
use super::tls::{default_certificate_path, local_tls};
use super::upgrade::SERVED_PATHS;
use crate::testing::ScriptedServer;

/// The most connections open at once (in their handshake or playing):
/// more wait in the system's queue of pending connections, so a crowd of
/// clients cannot grow the server's memory past this many connections'
/// worth.
pub const MAX_OPEN: usize = 64;

/// How many connections to serve before exiting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Connections {
    /// This many script plays, then stop (the default is one).
    Count(NonZeroUsize),
    /// Keep serving until the process is stopped.
    Forever,
}

impl Default for Connections {
    fn default() -> Self {
        Connections::Count(NonZeroUsize::MIN)
    }
}

/// What `serve` enforces on every connection, so one bad client can
/// neither hold the server nor grow its memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The largest message (and frame) a client may send, in bytes; a
    /// larger one is closed with 1009. Default 4 MiB.
    pub max_message_size: usize,
    /// How long a client has, after the upgrade, to send its first
    /// message (`setup`); then the connection is closed with 1011, as the
    /// service does when a deadline passes. Default 10 s.
    pub setup_timeout: Duration,
    /// How long a connection may go without a frame either way before it
    /// is closed with 1011. Script pauses count: a script that pauses
    /// longer needs a longer timeout. A frame the client does not read for
    /// this long ends the connection too (dropped, as a close could not
    /// be written either). Default 120 s.
    pub idle_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_message_size: 4 * 1024 * 1024,
            setup_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(120),
        }
    }
}

/// How to serve.
#[derive(Clone, Debug, Default)]
pub struct ServeOptions {
    /// The port on 127.0.0.1; 0 picks a free one.
    pub port: u16,
    /// How many connections to serve.
    pub connections: Connections,
    /// Serve `wss://` with a fresh self-signed certificate.
    pub tls: bool,
    /// Where to write the certificate (PEM) with `tls`; by default
    /// `livesim-serve-<port>.pem` in the system temp directory.
    pub certificate_out: Option<PathBuf>,
    /// Message size and timeouts for every connection.
    pub limits: Limits,
    /// Record each connection as a wire log in this folder
    /// (`connection-<n>.jsonl`, secrets removed, directions as the client
    /// saw them), for `livesim sim import`.
    pub record: Option<PathBuf>,
}

/// Why serving could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The port could not be bound.
    #[error("could not listen on 127.0.0.1:{port}: {source}")]
    Bind {
        /// The port asked for.
        port: u16,
        /// What the system said.
        source: std::io::Error,
    },
    /// The certificate file could not be written.
    #[error("could not write the certificate to {path}: {source}")]
    Certificate {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The `record` folder could not be made (a file in its place, say).
    #[error("cannot record to {path}: {source} (give --record a folder, new or existing)")]
    Record {
        /// The folder asked for.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The `record` folder holds a recording already, which this run
    /// would overwrite.
    #[error(
        "{path} is a recording from an earlier run, which this one would overwrite: record \
         into a new or empty folder, or move the earlier recordings away"
    )]
    Recorded {
        /// The earlier recording.
        path: PathBuf,
    },
    /// The certificate or the TLS configuration could not be made.
    #[error("could not set up TLS: {0}")]
    Tls(String),
}

/// A recording in `dir` (`connection-<n>.jsonl`), if it holds one: each
/// run numbers its connections from 1, so a second run recording there
/// would replace the first run's files.
fn earlier_recording(dir: &Path) -> std::io::Result<Option<PathBuf>> {
    let mut found: Option<std::ffi::OsString> = None;
    for entry in std::fs::read_dir(dir)? {
        let name = entry?.file_name();
        let recording = name
            .to_str()
            .and_then(|n| n.strip_prefix("connection-"))
            .and_then(|n| n.strip_suffix(".jsonl"))
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        if recording && found.as_ref().is_none_or(|first| name < *first) {
            found = Some(name);
        }
    }
    Ok(found.map(|name| dir.join(name)))
}

/// A redactor that knows every handle `script` issues.
fn script_handles(script: &ScriptedServer) -> crate::wire::Redactor {
    let mut redactor = crate::wire::Redactor::new();
    for action in script.actions() {
        if let crate::testing::Action::ResumptionUpdate(update) = action
            && let Some(handle) = &update.handle
        {
            redactor.add_secret(&crate::wire::Secret::new(handle.clone()));
        }
    }
    redactor
}

/// A script served on a bound port, ready to [`run`](Server::run).
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use livesim::serve::{ServeOptions, Server};
/// use livesim::testing::ScriptedServer;
///
/// let script = ScriptedServer::load("weather.json")?;
/// let server = Server::bind(script, ServeOptions::default()).await?;
/// println!("listening on {}", server.url());
/// let report = server.run(Arc::new(|line: &str| eprintln!("{line}"))).await;
/// std::process::exit(report.exit_code().into());
/// # }
/// ```
pub struct Server {
    listener: TcpListener,
    port: u16,
    shared: Shared,
    connections: Connections,
    certificate: Option<PathBuf>,
}

impl Server {
    /// Binds 127.0.0.1 on the port asked for and, with TLS, makes and
    /// writes the certificate.
    pub async fn bind(script: ScriptedServer, options: ServeOptions) -> Result<Server, ServeError> {
        let listener = TcpListener::bind(("127.0.0.1", options.port))
            .await
            .map_err(|source| ServeError::Bind {
                port: options.port,
                source,
            })?;
        let port = listener
            .local_addr()
            .map_err(|source| ServeError::Bind {
                port: options.port,
                source,
            })?
            .port();
        // A recording that cannot be made is refused before any client
        // comes, not found missing after the session.
        if let Some(dir) = &options.record {
            let refused = |source| ServeError::Record {
                path: dir.clone(),
                source,
            };
            std::fs::create_dir_all(dir).map_err(refused)?;
            if let Some(path) = earlier_recording(dir).map_err(refused)? {
                return Err(ServeError::Recorded { path });
            }
        }
        let (tls, certificate) = if options.tls {
            let path = options
                .certificate_out
                .clone()
                .unwrap_or_else(|| default_certificate_path(port));
            let tls = local_tls(&path)?;
            (Some(tls.acceptor), Some(tls.certificate))
        } else {
            (None, None)
        };
        Ok(Server {
            listener,
            port,
            shared: Shared {
                script_handles: script_handles(&script),
                script,
                tls,
                log: std::sync::Arc::new(|_: &str| {}),
                session: Default::default(),
                session_opened: Default::default(),
                plays: Default::default(),
                limits: options.limits,
                record: options.record,
            },
            connections: options.connections,
            certificate,
        })
    }

    /// The port listened on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `ws://127.0.0.1:PORT` (`wss://` with TLS): what a client that adds
    /// the Live path itself takes as its base URL.
    pub fn base_url(&self) -> String {
        let scheme = if self.shared.tls.is_some() {
            "wss"
        } else {
            "ws"
        };
        format!("{scheme}://127.0.0.1:{}", self.port)
    }

    /// The full URL of the v1beta Live endpoint on this server.
    pub fn url(&self) -> String {
        format!("{}{}", self.base_url(), SERVED_PATHS[0])
    }

    /// Where the certificate was written, with TLS.
    pub fn certificate_path(&self) -> Option<&Path> {
        self.certificate.as_deref()
    }

    /// Serves until the connections asked for have played the script
    /// (never, with [`Connections::Forever`]). Connections are served
    /// concurrently, at most [`MAX_OPEN`] at once; a play starts at its
    /// upgrade, and one whose upgrade failed (a wrong path, a failed TLS
    /// handshake) does not count. A client that upgrades once every play
    /// asked for has started is closed with 1013 ("Try Again Later").
    /// Every line of the log goes to `log`.
    pub async fn run(mut self, log: ServeLog) -> ServeReport {
        // Every line, whoever writes it: one printable, bounded line.
        let bounded: ServeLog = std::sync::Arc::new(move |line: &str| log(&one_line(line)));
        let log = bounded.clone();
        self.shared.log = bounded;
        let budget = match self.connections {
            Connections::Count(n) => n.get(),
            Connections::Forever => usize::MAX,
        };
        self.shared.plays.budget = budget;
        let mut report = ServeReport::default();
        let mut in_flight = FuturesUnordered::new();
        let mut accepted = 0;
        loop {
            // A play is claimed at its upgrade, so a socket that never
            // sends a request holds no slot. A client session playing a
            // script across connections counts once: its reconnects are
            // always let in.
            let started = self.shared.plays.started();
            let room = started < budget || self.shared.session_open();
            // Every play done: sockets still in their handshake would only
            // be told there is no room; they are dropped.
            if !room && report.connections.len() >= started {
                break;
            }
            let open = in_flight.len() < MAX_OPEN;
            tokio::select! {
                biased;
                Some(attempt) = in_flight.next(), if !in_flight.is_empty() => {
                    match attempt {
                        Attempt::Played(connection) => report.connections.push(connection),
                        Attempt::Refused | Attempt::Joined => {}
                    }
                }
                // A session opened: look at the room again.
                _ = self.shared.session_opened.notified(), if !room => {}
                incoming = self.listener.accept(), if room && open => match incoming {
                    Ok((tcp, peer)) => {
                        accepted += 1;
                        in_flight.push(connection::serve(accepted, tcp, peer, self.shared.clone()));
                    }
                    Err(error) => {
                        log(&format!("livesim serve: accept failed: {error}"));
                        // Out of file descriptors, say: give the open
                        // connections a moment rather than spin.
                        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    }
                },
            }
        }
        report
    }
}
