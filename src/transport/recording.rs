//! Recording a transport's traffic as a wire log, secrets removed.
//!
//! [`Recording`] wraps any [`Transport`] and hands every frame it moves to
//! a [`WireLogWriter`], which writes one JSONL line per frame (format in
//! [`wire_log`](super::wire_log)). What never reaches the log:
//!
//! * the API key, tokens, and any other secret given to the writer, in any
//!   string or payload;
//! * `auth_tokens/…` names, `?key=` / `access_token=` parameters and
//!   `Bearer` credentials, wherever they appear;
//! * resumption handles (`newHandle`, `setup.sessionResumption.handle`),
//!   which become `<handle-1>`, `<handle-2>`, … (one per distinct handle);
//! * request headers: the log records frames only.
//!
//! The log holds the frames that pass through the [`Transport`] calls; what
//! the inner transport does on its own (answering a ping, echoing a close)
//! is not in it.
//!
//! Writes are synchronous (`std::io::Write`) and flushed per line, so a
//! crash leaves at most a torn last line. A write error does not break
//! the session: the first one is logged (`tracing`, redacted), kept for
//! [`WireLogWriter::error`], and recording stops, so the file never holds
//! a line after a broken one.

use std::io::{self, Write};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::Value;

use super::scrub::FrameScrubber;
use super::wire_log::{
    CloseLine, Direction, FrameLine, Header, LineType, WIRE_LOG_KIND, WIRE_LOG_VERSION,
};
use super::{CloseFrame, Frame, Transport, TransportError};
use crate::wire::{Redactor, Secret};

/// A clock for `t_ms`: milliseconds since the recording started.
pub type RecordingClock = Box<dyn Fn() -> u64 + Send>;

/// Writes a wire log. Build with [`WireLogWriter::builder`].
pub struct WireLogWriter {
    sink: Box<dyn Write + Send>,
    clock: RecordingClock,
    scrubber: FrameScrubber,
    error: Option<String>,
    frames: u64,
    /// Recording a server's side: directions are turned to the client's.
    server_side: bool,
}

/// Options for a [`WireLogWriter`]; [`start`](Self::start) writes the header.
pub struct WireLogBuilder {
    sink: Box<dyn Write + Send>,
    model: Option<String>,
    started_at: SystemTime,
    connect: Option<Value>,
    redactor: Redactor,
    clock: Option<RecordingClock>,
    server_side: bool,
}

impl WireLogWriter {
    /// A writer into `sink` (a file, a [`MemorySink`], …).
    pub fn builder(sink: impl Write + Send + 'static) -> WireLogBuilder {
        WireLogBuilder {
            sink: Box::new(sink),
            model: None,
            started_at: UNIX_EPOCH,
            connect: None,
            redactor: Redactor::new(),
            clock: None,
            server_side: false,
        }
    }

    /// The first write error, if writing stopped because of one.
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// How many frame lines were written.
    pub fn frames_written(&self) -> u64 {
        self.frames
    }

    /// The direction to write: a server's recording says it as its client
    /// would, so every wire log reads the same way.
    fn seen_from_the_client(&self, dir: Direction) -> Direction {
        match (self.server_side, dir) {
            (false, dir) => dir,
            (true, Direction::In) => Direction::Out,
            (true, Direction::Out) => Direction::In,
        }
    }

    /// Records a frame that went `dir`.
    pub fn record(&mut self, dir: Direction, frame: &Frame) {
        let dir = self.seen_from_the_client(dir);
        let t_ms = (self.clock)();
        let mut line = FrameLine {
            dir,
            t_ms,
            line_type: match frame {
                Frame::Text(_) => LineType::Text,
                Frame::Binary(_) => LineType::Binary,
                Frame::Close(_) => LineType::Close,
            },
            json: None,
            raw: None,
            raw_base64: None,
            close: None,
            error: None,
        };
        match frame {
            Frame::Close(close) => {
                line.close = close.as_ref().map(|c| CloseLine {
                    code: c.code,
                    reason: self.scrubber.scrub_text(&c.reason),
                });
            }
            _ => {
                let payload = frame.payload().unwrap_or_default();
                match std::str::from_utf8(payload) {
                    Ok(text) => match serde_json::from_str::<Value>(text) {
                        Ok(mut json) => {
                            self.scrubber.scrub_json(&mut json);
                            line.json = Some(json);
                        }
                        Err(_) => line.raw = Some(self.scrubber.scrub_unparsed(text)),
                    },
                    Err(_) => {
                        let scrubbed = self.scrubber.scrub_unparsed_bytes(payload);
                        line.raw_base64 = Some(STANDARD.encode(scrubbed))
                    }
                }
            }
        }
        self.write_line(&line);
    }

    /// Records a transport error where a frame was expected.
    pub fn record_error(&mut self, dir: Direction, error: &TransportError) {
        let dir = self.seen_from_the_client(dir);
        let line = FrameLine {
            dir,
            t_ms: (self.clock)(),
            line_type: LineType::Error,
            json: None,
            raw: None,
            raw_base64: None,
            close: None,
            error: Some(self.scrubber.scrub_text(&error.to_string())),
        };
        self.write_line(&line);
    }

    fn write_line(&mut self, line: &FrameLine) {
        if self.error.is_some() {
            return;
        }
        let mut bytes = crate::wire::to_json(line).into_bytes();
        bytes.push(b'\n');
        if let Err(e) = write_flushed(&mut self.sink, &bytes) {
            self.fail(e);
        } else {
            self.frames += 1;
        }
    }

    fn fail(&mut self, e: io::Error) {
        let message = self.scrubber.scrub_text(&e.to_string());
        tracing::warn!(target: "livesim::transport", error = %message, "wire log write failed; recording stopped");
        self.error = Some(message);
    }
}

fn write_flushed(sink: &mut Box<dyn Write + Send>, bytes: &[u8]) -> io::Result<()> {
    sink.write_all(bytes)?;
    sink.flush()
}

impl WireLogBuilder {
    /// The model, for the header.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// The wall time recording started, for the header (default: the Unix
    /// epoch). Taken from the caller: livesim never reads the wall clock.
    pub fn started_at(mut self, at: SystemTime) -> Self {
        self.started_at = at;
        self
    }

    /// A redacted connection descriptor for the header, e.g.
    /// [`Endpoint::descriptor`](super::websocket::Endpoint::descriptor).
    pub fn connect(mut self, descriptor: Value) -> Self {
        self.connect = Some(descriptor);
        self
    }

    /// A secret that must never be written (the API key, a token).
    pub fn secret(mut self, secret: &Secret) -> Self {
        self.redactor.add_secret(secret);
        self
    }

    /// Every secret `redactor` knows (e.g. an endpoint's).
    pub fn redactor(mut self, redactor: &Redactor) -> Self {
        self.redactor = redactor.clone();
        self
    }

    /// The clock for `t_ms`. Default: `tokio::time::Instant` since
    /// [`start`](Self::start), which is virtual time under simulation.
    pub fn clock(mut self, clock: impl Fn() -> u64 + Send + 'static) -> Self {
        self.clock = Some(Box::new(clock));
        self
    }

    /// Records a server's side of the connection (`livesim serve
    /// --record`): what the server sent is written `in` and what it
    /// received `out`, as its client would have recorded them, so a
    /// server's log reads (and imports) like any other.
    pub fn server_side(mut self) -> Self {
        self.server_side = true;
        self
    }

    /// Writes the header and returns the writer.
    pub fn start(self) -> io::Result<WireLogWriter> {
        let mut scrubber = FrameScrubber::new(self.redactor);
        let mut connect = self.connect;
        if let Some(c) = connect.as_mut() {
            scrubber.scrub_json(c);
        }
        let header = Header {
            v: WIRE_LOG_VERSION,
            kind: WIRE_LOG_KIND.into(),
            model: self.model.map(|m| scrubber.scrub_text(&m)),
            started_at_ms: self
                .started_at
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64),
            connect,
        };
        let clock = self.clock.unwrap_or_else(|| {
            let origin = tokio::time::Instant::now();
            Box::new(move || origin.elapsed().as_millis() as u64)
        });
        let mut sink = self.sink;
        let mut bytes = crate::wire::to_json(&header).into_bytes();
        bytes.push(b'\n');
        write_flushed(&mut sink, &bytes)?;
        Ok(WireLogWriter {
            sink,
            clock,
            scrubber,
            error: None,
            frames: 0,
            server_side: self.server_side,
        })
    }
}

/// A transport whose traffic is written to a wire log.
///
/// ```
/// use livesim::transport::recording::{MemorySink, Recording, WireLogWriter};
/// use livesim::transport::wire_log::WireLog;
/// use livesim::transport::{Transport, memory};
/// use livesim::wire::{Frame, Secret};
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let key = Secret::new("FAKE-KEY-1234567890");
/// let sink = MemorySink::new();
/// let log = WireLogWriter::builder(sink.clone()).model("models/demo").secret(&key).start().unwrap();
/// let (client, mut server) = memory::pair();
/// let mut client = Recording::new(client, log);
///
/// client.send(Frame::Text(r#"{"clientContent":{"turns":[{"parts":[{"text":"my key is FAKE-KEY-1234567890"}]}]}}"#.into())).await.unwrap();
/// server.send(Frame::Binary(br#"{"sessionResumptionUpdate":{"newHandle":"CiQ3Y","resumable":true}}"#.to_vec())).await.unwrap();
/// client.recv().await.unwrap().unwrap();
///
/// let text = String::from_utf8(sink.contents()).unwrap();
/// assert!(!text.contains("FAKE-KEY") && !text.contains("CiQ3Y"));
/// let log = WireLog::parse("memory", &sink.contents()).unwrap();
/// assert_eq!(log.frames[1].json.as_ref().unwrap()["sessionResumptionUpdate"]["newHandle"], "<handle-1>");
/// # });
/// ```
pub struct Recording<T> {
    inner: T,
    log: WireLogWriter,
}

impl<T: Transport> Recording<T> {
    /// Records `inner`'s traffic into `log`.
    pub fn new(inner: T, log: WireLogWriter) -> Self {
        Recording { inner, log }
    }

    /// The log writer (to check [`WireLogWriter::error`]).
    pub fn log(&self) -> &WireLogWriter {
        &self.log
    }

    /// The wrapped transport.
    pub fn inner(&self) -> &T {
        &self.inner
    }

    /// The wrapped transport and the writer.
    pub fn into_parts(self) -> (T, WireLogWriter) {
        (self.inner, self.log)
    }
}

impl<T: Transport> Transport for Recording<T> {
    fn send(&mut self, frame: Frame) -> BoxFuture<'_, Result<(), TransportError>> {
        async move {
            // Recorded once it left: a frame that failed to go is not traffic.
            let copy = frame.clone();
            self.inner.send(frame).await?;
            self.log.record(Direction::Out, &copy);
            Ok(())
        }
        .boxed()
    }

    fn recv(&mut self) -> BoxFuture<'_, Option<Result<Frame, TransportError>>> {
        async move {
            // Cancel-safe because the inner recv is and nothing is awaited
            // after it returns.
            let got = self.inner.recv().await;
            match &got {
                Some(Ok(frame)) => self.log.record(Direction::In, frame),
                Some(Err(error)) => self.log.record_error(Direction::In, error),
                None => {}
            }
            got
        }
        .boxed()
    }

    fn close(&mut self, close: Option<CloseFrame>) -> BoxFuture<'_, Result<(), TransportError>> {
        async move {
            let frame = Frame::Close(close.clone());
            self.inner.close(close).await?;
            self.log.record(Direction::Out, &frame);
            Ok(())
        }
        .boxed()
    }
}

/// An in-memory sink for wire logs, shareable between the writer and a
/// test that reads it.
#[derive(Clone, Debug, Default)]
pub struct MemorySink {
    bytes: Arc<Mutex<Vec<u8>>>,
}

impl MemorySink {
    /// An empty sink.
    pub fn new() -> Self {
        MemorySink::default()
    }

    /// Everything written so far.
    pub fn contents(&self) -> Vec<u8> {
        self.lock().clone()
    }

    fn lock(&self) -> MutexGuard<'_, Vec<u8>> {
        // A panic mid-append leaves at worst a partial line, which a
        // reader reports as torn; the buffer itself is still valid.
        self.bytes
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Write for MemorySink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.lock().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
