//! Logs stamped with virtual time, seed and lane.
//!
//! The executor logs its decisions as `tracing` events under the target
//! `livesim::executor`: lane picks, tasks stepping aside, yield points,
//! deliveries, virtual time jumps. [`SimFormat`] prefixes every line with
//! `t=<virtual time> seed=<seed> lane=<label>` so a log of a simulated run
//! reads like its trace, and scrubs each line of every remembered secret
//! ([`crate::wire::remember`]) and secret-shaped text. [`init`] installs it globally, filtered by
//! `RUST_LOG`; the seed runner captures it per run and prints it for a
//! failing seed. Both fold the scheduling decisions into one line per
//! virtual instant (`scheduling folded lane_picks=2 deliveries=1`) unless
//! `LIVESIM_LOG=scheduling` asks for each.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::io;
use std::sync::{Arc, Mutex, OnceLock};

use tracing::{Dispatch, Event, Subscriber};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;

use super::fold::{FoldLayer, SCHEDULING_TARGET, show_scheduling};
use super::log_line;

/// A `tracing-subscriber` event format that stamps each line with the
/// virtual time, the seed and the lane (or `t=-` outside a simulation).
/// It writes the fields itself, as `tracing-subscriber`'s default format
/// does (the message, then `name=value`), whatever field format the layer
/// has, and escapes terminal control characters in the line.
///
/// ```
/// use livesim::executor::logs::SimFormat;
///
/// let subscriber = tracing_subscriber::fmt()
///     .event_format(SimFormat)
///     .with_env_filter("livesim=debug")
///     .finish();
/// tracing::subscriber::with_default(subscriber, || tracing::info!("hello"));
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct SimFormat;

impl<S, N> FormatEvent<S, N> for SimFormat
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        // The line is built whole, scrubbed and escaped before any of it
        // is written.
        let mut line = String::with_capacity(192);
        log_line::write(&mut line, event);
        writer.write_str(&line)?;
        writer.write_char('\n')
    }
}

/// Installs a global subscriber that prints [`SimFormat`] lines to stderr,
/// filtered by `RUST_LOG` (default: warnings), scheduling decisions folded
/// unless `LIVESIM_LOG=scheduling`. Returns an error if a global
/// subscriber is already set.
pub fn init() -> Result<(), tracing_subscriber::util::TryInitError> {
    use tracing_subscriber::util::SubscriberInitExt;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    let (fold, lines) = layers(io::stderr, true);
    tracing_subscriber::registry()
        .with(filter)
        .with(fold)
        .with(lines)
        .try_init()
}

/// The layers that print [`SimFormat`] lines to `writer`: a fold of the
/// scheduling decisions (unless `LIVESIM_LOG=scheduling`), then the lines
/// themselves.
fn layers<S, W>(
    writer: W,
    ansi: bool,
) -> (
    Option<FoldLayer<W>>,
    impl tracing_subscriber::Layer<S> + Send + Sync + 'static,
)
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    W: for<'a> tracing_subscriber::fmt::MakeWriter<'a> + Clone + Send + Sync + 'static,
{
    use tracing_subscriber::Layer as _;
    let fold = (!show_scheduling()).then(|| FoldLayer::new(writer.clone()));
    let folding = fold.is_some();
    let lines = tracing_subscriber::fmt::layer()
        .event_format(SimFormat)
        .with_ansi(ansi)
        .with_writer(writer)
        .with_filter(tracing_subscriber::filter::filter_fn(move |meta| {
            !(folding && meta.target() == SCHEDULING_TARGET)
        }));
    (fold, lines)
}

/// Most lines a capture keeps; older lines are dropped first.
const CAPTURE_LINES: usize = 20_000;

/// Log lines of one run, kept in memory for its failure report.
///
/// Captures run on many threads at once (a soak's jobs), so they share
/// one subscriber per filter, made once and never dropped, which writes
/// each line to the capture of the thread that logged it. A subscriber
/// made and dropped per run would make `tracing` recompute every
/// callsite's interest while other threads log, which can leave a
/// callsite disabled for a run that wanted it (a line dropped).
#[derive(Clone)]
pub(crate) struct Capture {
    lines: Arc<Mutex<Lines>>,
    filter: String,
}

#[derive(Default)]
struct Lines {
    kept: VecDeque<String>,
    partial: Vec<u8>,
    dropped: usize,
}

impl Lines {
    /// Keeps `line`, dropping the oldest when the capture is full.
    fn keep(&mut self, line: String) {
        if self.kept.len() == CAPTURE_LINES {
            self.kept.pop_front();
            self.dropped += 1;
        }
        self.kept.push_back(line);
    }
}

impl Capture {
    /// A capture filtered by `filter` (a `RUST_LOG`-style directive).
    pub(crate) fn new(filter: &str) -> Self {
        Capture {
            lines: Arc::new(Mutex::new(Lines::default())),
            filter: filter.to_string(),
        }
    }

    /// The filter this capture uses.
    pub(crate) fn filter(&self) -> &str {
        &self.filter
    }

    /// Runs `f` with this capture taking the thread's log lines.
    pub(crate) fn scope<T>(&self, f: impl FnOnce() -> T) -> T {
        let (dispatch, fold) = shared(&self.filter);
        // Put back whatever the thread captured before, even if `f`
        // unwinds.
        struct Restore(Option<Arc<Mutex<Lines>>>);
        impl Drop for Restore {
            fn drop(&mut self) {
                TARGET.with(|t| *t.borrow_mut() = self.0.take());
            }
        }
        let _restore = Restore(TARGET.with(|t| t.replace(Some(self.lines.clone()))));
        let value = tracing::dispatcher::with_default(&dispatch, f);
        if let Some(fold) = fold {
            fold.flush();
        }
        value
    }

    /// Every captured line, taken out of the capture (a run's own capture,
    /// read once at its end).
    pub(crate) fn take(&self) -> Vec<String> {
        let mut lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        std::mem::take(&mut lines.kept).into()
    }

    /// The last `n` captured lines, and how many lines came before them.
    pub(crate) fn tail(&self, n: usize) -> (Vec<String>, usize) {
        let lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        let start = lines.kept.len().saturating_sub(n);
        (
            lines.kept.iter().skip(start).cloned().collect(),
            lines.dropped + start,
        )
    }
}

thread_local! {
    /// The capture taking this thread's lines, while one does.
    static TARGET: std::cell::RefCell<Option<Arc<Mutex<Lines>>>> =
        const { std::cell::RefCell::new(None) };
}

/// The subscriber captures with `filter` share, and its fold layer (none
/// with `LIVESIM_LOG=scheduling`): made on first use, kept for the
/// process.
fn shared(filter: &str) -> (Dispatch, Option<FoldLayer<ThreadWriter>>) {
    type Shared = (Dispatch, Option<FoldLayer<ThreadWriter>>);
    static SHARED: OnceLock<Mutex<BTreeMap<String, Shared>>> = OnceLock::new();
    // With a single live subscriber, `tracing` decides a callsite's
    // interest from whatever subscriber the thread that first reaches it
    // has: a thread outside every capture would disable the callsite for
    // good, and every capture would lose its lines. A second subscriber
    // that is always there (and wants nothing) makes `tracing` ask each
    // one instead: the captures' then keeps every callsite it wants.
    static COMPANION: OnceLock<Dispatch> = OnceLock::new();
    COMPANION.get_or_init(|| Dispatch::new(tracing::subscriber::NoSubscriber::default()));
    let mut made = SHARED
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    made.entry(filter.to_string())
        .or_insert_with(|| {
            let env = EnvFilter::try_new(filter).unwrap_or_else(|_| EnvFilter::new("warn"));
            let fold = (!show_scheduling()).then(|| FoldLayer::per_thread(ThreadWriter));
            let (_, lines) = layers(ThreadWriter, false);
            let subscriber = tracing_subscriber::registry()
                .with(env)
                .with(fold.clone())
                .with(lines);
            (Dispatch::new(subscriber), fold)
        })
        .clone()
}

/// Writes to the capture taking the thread's lines (nothing outside one).
#[derive(Clone, Copy)]
struct ThreadWriter;

impl tracing_subscriber::fmt::MakeWriter<'_> for ThreadWriter {
    type Writer = ThreadWriter;

    fn make_writer(&self) -> ThreadWriter {
        *self
    }
}

impl io::Write for ThreadWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match TARGET.with(|t| t.borrow().clone()) {
            Some(lines) => CaptureWriter(lines).write(buf),
            None => Ok(buf.len()),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Writes whole lines into one capture.
struct CaptureWriter(Arc<Mutex<Lines>>);

impl io::Write for CaptureWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut lines = self.0.lock().unwrap_or_else(|p| p.into_inner());
        // A line usually comes whole in one write: it is copied once, into
        // the string kept; only a line split across writes waits in
        // `partial`.
        let mut rest = buf;
        while let Some(end) = memchr::memchr(b'\n', rest) {
            let text = if lines.partial.is_empty() {
                String::from_utf8_lossy(&rest[..end]).into_owned()
            } else {
                let mut line = std::mem::take(&mut lines.partial);
                line.extend_from_slice(&rest[..end]);
                String::from_utf8(line)
                    .unwrap_or_else(|bad| String::from_utf8_lossy(bad.as_bytes()).into_owned())
            };
            lines.keep(text);
            rest = &rest[end + 1..];
        }
        lines.partial.extend_from_slice(rest);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;
    use crate::Seed;
    use crate::executor::Simulation;

    fn written(writes: &[&[u8]]) -> (Vec<String>, Vec<u8>) {
        let lines = Arc::new(Mutex::new(Lines::default()));
        let mut writer = CaptureWriter(lines.clone());
        for bytes in writes {
            assert_eq!(writer.write(bytes).unwrap(), bytes.len());
        }
        let lines = lines.lock().unwrap();
        (lines.kept.iter().cloned().collect(), lines.partial.clone())
    }

    #[test]
    fn a_write_splits_into_its_lines_and_keeps_the_unfinished_one() {
        let (kept, partial) = written(&[b"one\ntwo\nthr"]);
        assert_eq!(kept, ["one", "two"]);
        assert_eq!(partial, b"thr");
    }

    #[test]
    fn a_line_split_across_writes_is_kept_whole() {
        let (kept, partial) = written(&[b"the fir", b"st line", b"\nsecond\n", b"\n"]);
        assert_eq!(kept, ["the first line", "second", ""]);
        assert!(partial.is_empty());
    }

    #[test]
    fn a_character_split_across_writes_is_not_mangled() {
        // "é" is two bytes; each write carries one.
        let (kept, _) = written(&[b"caf\xc3", b"\xa9\n", b"bad \xff byte\n"]);
        assert_eq!(kept, ["café", "bad \u{fffd} byte"]);
    }

    #[test]
    fn a_full_capture_drops_its_oldest_lines_and_counts_them() {
        let mut lines = Lines::default();
        for i in 0..CAPTURE_LINES + 3 {
            lines.keep(i.to_string());
        }
        assert_eq!(lines.kept.len(), CAPTURE_LINES);
        assert_eq!(lines.dropped, 3);
        assert_eq!(lines.kept.front().map(String::as_str), Some("3"));
    }

    #[test]
    fn a_captured_line_has_its_stamp_and_fields_and_cannot_command_a_terminal() {
        let capture = Capture::new("livesim_log_line_test=trace");
        let inside = capture.clone();
        let value = Simulation::new(Seed::new(7)).run(move || async move {
            inside.scope(|| {
                let id = "call\x1b[2J";
                tracing::info!(target: "livesim_log_line_test", r#type = "tool", %id, "ran \x1b]0;owned\x07 {}", 1);
                let refused = io::Error::new(io::ErrorKind::ConnectionRefused, "refused");
                let failed = io::Error::other(Wrapped(refused));
                let error: &(dyn std::error::Error + 'static) = &failed;
                tracing::warn!(target: "livesim_log_line_test", error, "gave up");
            });
        });
        value.expect("the run finishes");
        let (lines, before) = capture.tail(10);
        assert_eq!(before, 0);
        assert_eq!(
            lines,
            [
                "t=0.000s seed=0x7 lane=main INFO livesim_log_line_test: \
                 ran \\x1b]0;owned\\x07 1 type=\"tool\" id=call\\x1b[2J",
                "t=0.000s seed=0x7 lane=main WARN livesim_log_line_test: \
                 gave up error=connect failed error.sources=[refused]",
            ]
        );
    }

    /// An error whose source is another error.
    #[derive(Debug)]
    struct Wrapped(io::Error);

    impl fmt::Display for Wrapped {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("connect failed")
        }
    }

    impl std::error::Error for Wrapped {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }
}
