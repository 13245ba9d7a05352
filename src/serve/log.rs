//! The serve log, and the connection's deadlines: one line per frame on a
//! served connection, through a redactor, and the setup and idle timeouts
//! that end a connection whose client stopped talking.
//!
//! [`Logged`] wraps the connection's transport, so the script player runs
//! unchanged while every client message (and every server message, for
//! context) is described in one line: the direction, the top-level key
//! and a short summary (see [`summary`](super::summary)). Each line passes
//! through the connection's [`Redactor`], which knows the credential the
//! client connected with and learns any resumption handle its setup
//! carries, and then through [`one_line`]: control characters escaped,
//! cut at [`MAX_LINE`] bytes.

use crate::wire::JsonPath;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::Value;
use tokio::time::Instant;

use super::summary;
use crate::transport::{CloseFrame, Frame, Transport, TransportError};
use crate::wire::{Redactor, Secret, clip, handles_in_text};

/// Where serve log lines go (the CLI writes them to stderr). Lines are
/// already redacted, escaped and bounded.
pub type ServeLog = Arc<dyn Fn(&str) + Send + Sync>;

/// The longest a log line gets, in bytes (longer ones end in `…(N bytes)`).
pub const MAX_LINE: usize = 2048;

/// How long writing a close frame may take before the connection is
/// simply dropped.
const CLOSE_WRITE: Duration = Duration::from_secs(5);

/// The close the service sends when a deadline passes.
const DEADLINE_CODE: u16 = 1011;
const DEADLINE_REASON: &str = "Deadline expired before operation could complete.";

/// `text` as one printable line: control characters (and the Unicode line
/// separators and direction overrides) escaped, so a client's `ESC[2J`
/// or newline cannot reach the terminal raw, then cut at [`MAX_LINE`].
///
/// ```
/// use livesim::serve::one_line;
///
/// assert_eq!(one_line("a\x1b[2Jb\nc"), "a\\u{1b}[2Jb\\nc");
/// assert!(one_line(&"x".repeat(5000)).ends_with("…(5000 bytes)"));
/// ```
pub fn one_line(text: &str) -> String {
    let unsafe_char = crate::wire::acts_on_a_terminal;
    if !text.chars().any(unsafe_char) {
        return clip(text, MAX_LINE).into_owned();
    }
    let mut escaped = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if unsafe_char(c) {
            escaped.extend(c.escape_default());
        } else {
            escaped.push(c);
        }
    }
    clip(&escaped, MAX_LINE).into_owned()
}

/// A connection that a deadline, or the client's breach of the WebSocket
/// protocol, ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Cut {
    /// A deadline passed: `missing` is "no setup within 10s"; `closed`
    /// says whether a 1011 close was sent (a client that reads nothing is
    /// dropped instead).
    TimedOut { missing: String, closed: bool },
    /// The client broke the WebSocket protocol; the server closed with
    /// `code`.
    Violation { code: u16, problem: String },
}

/// A transport that logs what crosses it and enforces the deadlines.
pub(crate) struct Logged<T> {
    inner: T,
    redactor: Redactor,
    log: ServeLog,
    prefix: String,
    setup_timeout: Duration,
    idle_timeout: Duration,
    /// When the upgrade completed.
    opened: Instant,
    /// The last frame either way.
    last_frame: Instant,
    client_frames: u64,
    /// This end sent a close frame (the script's close, or the player
    /// closing on a broken expectation).
    closed_here: bool,
    cut: Option<Cut>,
    /// Where a client session playing a script across connections keeps
    /// the cut of its latest connection, for its report.
    shared_cut: Option<SharedCut>,
    /// A microphone streams fifty chunks a second: after the first of a
    /// run, chunks are counted, and said in one line a second.
    audio: Option<AudioRun>,
}

/// Audio chunks the client sent since the line that logged the first.
struct AudioRun {
    since: Instant,
    chunks: u64,
    bytes: usize,
}

/// The latest cut among a client session's connections.
pub(crate) type SharedCut = Arc<std::sync::Mutex<Option<Cut>>>;

impl<T: Transport> Logged<T> {
    pub fn new(
        inner: T,
        redactor: Redactor,
        log: ServeLog,
        prefix: String,
        timeouts: (Duration, Duration),
    ) -> Self {
        let now = Instant::now();
        Logged {
            inner,
            redactor,
            log,
            prefix,
            setup_timeout: timeouts.0,
            idle_timeout: timeouts.1,
            opened: now,
            last_frame: now,
            client_frames: 0,
            closed_here: false,
            cut: None,
            shared_cut: None,
            audio: None,
        }
    }

    /// Says how many audio chunks came since the run's last line.
    fn flush_audio(&mut self) {
        if let Some(run) = self.audio.take().filter(|run| run.chunks > 0) {
            self.say(&format!(
                "client → {} more realtimeInput audio chunk{} ({} bytes) in {}",
                run.chunks,
                if run.chunks == 1 { "" } else { "s" },
                run.bytes,
                seconds(run.since.elapsed())
            ));
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

    /// Whether a deadline or a protocol breach ended the connection.
    /// Keeps this connection's cut in `slot` too (a connection of a client
    /// session, which the player owns until the session ends).
    pub fn share_cut(&mut self, slot: SharedCut) {
        self.shared_cut = Some(slot);
    }

    fn set_cut(&mut self, cut: Cut) {
        if let Some(slot) = &self.shared_cut {
            *slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(cut.clone());
        }
        self.cut = Some(cut);
    }

    pub fn cut(&self) -> Option<&Cut> {
        self.cut.as_ref()
    }

    /// After the script: if this end closed, waits (at most `limit`) for
    /// the client's answering close, so the client sees a clean closing
    /// handshake rather than a dropped socket. A client that timed out or
    /// broke the protocol is not waited for.
    pub async fn finish(&mut self, limit: Duration) {
        self.flush_audio();
        if !self.closed_here || self.cut.is_some() {
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

    /// The next client frame, or `None` once the deadline for it passed
    /// (the connection is then closed with 1011, as the service does).
    async fn next_client_frame(&mut self) -> Option<Result<Frame, TransportError>> {
        let (deadline, missing) = if self.client_frames == 0 {
            (
                self.opened + self.setup_timeout,
                format!("no setup within {}", seconds(self.setup_timeout)),
            )
        } else {
            (
                self.last_frame + self.idle_timeout,
                format!(
                    "no message either way for {} (pings do not count)",
                    seconds(self.idle_timeout)
                ),
            )
        };
        match tokio::time::timeout_at(deadline, self.inner.recv()).await {
            Ok(frame) => frame,
            Err(_) => {
                self.say(&format!(
                    "{missing}: closing with {DEADLINE_CODE} {DEADLINE_REASON:?}"
                ));
                self.set_cut(Cut::TimedOut {
                    missing,
                    closed: true,
                });
                self.closed_here = true;
                let close = CloseFrame::new(DEADLINE_CODE, DEADLINE_REASON);
                // A client that reads nothing must not hold the close either.
                let _ = tokio::time::timeout(CLOSE_WRITE, self.inner.close(Some(close))).await;
                None
            }
        }
    }

    fn client_frame(&mut self, frame: &Frame) {
        match frame {
            Frame::Close(close) => {
                self.flush_audio();
                self.say(&format!("client → close {}", describe_close(close)));
            }
            Frame::Text(_) | Frame::Binary(_) => {
                let bytes = frame.payload().unwrap_or_default();
                if summary::is_audio_chunk(bytes) {
                    match &mut self.audio {
                        Some(run) if run.since.elapsed() < Duration::from_secs(1) => {
                            run.chunks += 1;
                            run.bytes += bytes.len();
                            return;
                        }
                        _ => self.flush_audio(),
                    }
                    self.audio = Some(AudioRun {
                        since: Instant::now(),
                        chunks: 0,
                        bytes: 0,
                    });
                } else {
                    self.flush_audio();
                }
                self.learn_handle(bytes);
                let line = summary::client_message(bytes);
                self.say(&format!("client → {line}"));
            }
        }
    }

    /// The resumption handles in the client's setup (either spelling, or
    /// read as words from a message that does not parse) become secrets
    /// before anything about the message is printed.
    fn learn_handle(&mut self, bytes: &[u8]) {
        let Ok(message) = serde_json::from_slice::<Value>(bytes) else {
            for handle in handles_in_text(bytes) {
                let handle = String::from_utf8_lossy(handle);
                self.redactor.add_secret(&Secret::new(handle));
            }
            return;
        };
        for pointer in [
            "/setup/sessionResumption/handle",
            "/setup/session_resumption/handle",
        ] {
            if let Some(handle) = message.at(pointer).and_then(Value::as_str) {
                self.redactor.add_secret(&Secret::new(handle));
            }
        }
    }

    fn server_frame(&mut self, frame: &Frame) {
        self.last_frame = Instant::now();
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

/// `10s`, `1.5s`, `250ms`.
fn seconds(d: Duration) -> String {
    crate::session::human_duration(d)
}

fn describe_close(close: &Option<CloseFrame>) -> String {
    match close {
        Some(c) if c.reason.is_empty() => c.code.to_string(),
        Some(c) => format!("{} {:?}", c.code, c.reason),
        None => "(no code)".to_string(),
    }
}

impl<T: Transport> Transport for Logged<T> {
    /// A client that stops reading cannot hold the server either: a send
    /// that does not complete within the idle timeout ends the connection.
    fn send(&mut self, frame: Frame) -> BoxFuture<'_, Result<(), TransportError>> {
        self.server_frame(&frame);
        async move {
            match tokio::time::timeout(self.idle_timeout, self.inner.send(frame)).await {
                Ok(sent) => sent,
                Err(_) => {
                    let missing =
                        format!("the client read nothing for {}", seconds(self.idle_timeout));
                    self.say(&format!("{missing}: dropping the connection"));
                    self.set_cut(Cut::TimedOut {
                        missing: missing.clone(),
                        closed: false,
                    });
                    Err(TransportError::Io { problem: missing })
                }
            }
        }
        .boxed()
    }

    fn recv(&mut self) -> BoxFuture<'_, Option<Result<Frame, TransportError>>> {
        async move {
            if self.cut.is_some() {
                return None;
            }
            let frame = self.next_client_frame().await;
            match &frame {
                Some(Ok(frame)) => {
                    self.client_frames += 1;
                    self.last_frame = Instant::now();
                    self.client_frame(frame);
                }
                Some(Err(TransportError::Violation { code, problem })) => {
                    self.say(&format!(
                        "client → a frame that breaks the WebSocket protocol ({problem}): closed with {code}"
                    ));
                    self.closed_here = true;
                    self.set_cut(Cut::Violation {
                        code: *code,
                        problem: problem.clone(),
                    });
                }
                Some(Err(error)) => {
                    self.flush_audio();
                    self.say(&format!("client → {error}"));
                }
                None => self.flush_audio(),
            }
            frame
        }
        .boxed()
    }

    fn close(&mut self, close: Option<CloseFrame>) -> BoxFuture<'_, Result<(), TransportError>> {
        self.flush_audio();
        self.server_frame(&Frame::Close(close.clone()));
        self.inner.close(close)
    }
}
