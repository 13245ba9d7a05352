//! Scheduling noise, folded: the executor's own decisions (lane picks,
//! tasks stepping aside, yield points, deliveries, virtual time jumps) are
//! what a seed varies, but listed one by one they drown what the code
//! under test did. Logs and failure reports fold them into one summary
//! line per virtual instant, unless `LIVESIM_LOG=scheduling` asks to see
//! each one.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::{Context as LayerContext, Layer};

use super::context;
use super::seed::Seed;
use super::trace::{Trace, format_time};

/// The `tracing` target of the executor's scheduling decisions.
pub(crate) const SCHEDULING_TARGET: &str = "livesim::executor";

/// Whether `LIVESIM_LOG` asks for every scheduling decision
/// (`LIVESIM_LOG=scheduling`; a comma-separated list may hold more).
pub(crate) fn show_scheduling() -> bool {
    std::env::var("LIVESIM_LOG").is_ok_and(|v| {
        v.split(',')
            .any(|part| part.trim().eq_ignore_ascii_case("scheduling"))
    })
}

/// What one scheduling log message counts as.
fn kind_of(message: &str) -> &'static str {
    match message {
        "lane picked" => "lane_picks",
        "task steps aside" => "steps_aside",
        "yield point yields" => "yields",
        "yield point sleeps" => "sleeps",
        "delivery" => "deliveries",
        "virtual time advanced" => "time_jumps",
        _ => "other",
    }
}

/// Decisions counted at one virtual instant.
struct Fold {
    at: Option<Duration>,
    seed: Option<Seed>,
    counts: BTreeMap<&'static str, u64>,
}

impl Fold {
    fn line(&self) -> String {
        let mut line = match (self.at, self.seed) {
            (Some(at), Some(seed)) => format!("t={} seed={seed} ", format_time(at)),
            _ => "t=- ".to_string(),
        };
        line.push_str("DEBUG livesim::executor: scheduling folded");
        for (kind, n) in &self.counts {
            let _ = write!(line, " {kind}={n}");
        }
        line
    }
}

/// A layer that counts scheduling events instead of printing them, and
/// writes one summary line per virtual instant to `writer` before the next
/// other line (or when [`flush`](Self::flush) is called). Pair it with a
/// formatting layer that skips [`SCHEDULING_TARGET`], added after it.
#[derive(Clone)]
pub(crate) struct FoldLayer<W> {
    writer: W,
    pending: Pending,
}

/// Where a fold layer keeps the summary it is counting.
#[derive(Clone)]
enum Pending {
    /// In the layer: one stream of lines (stderr).
    Shared(Arc<Mutex<Option<Fold>>>),
    /// In the thread: a layer shared by threads that each write their own
    /// lines (the captures' shared subscriber), so one thread's count
    /// never lands in another's lines.
    Thread,
}

thread_local! {
    static THREAD_FOLD: std::cell::RefCell<Option<Fold>> = const { std::cell::RefCell::new(None) };
}

impl<W: for<'a> MakeWriter<'a>> FoldLayer<W> {
    pub(crate) fn new(writer: W) -> Self {
        FoldLayer {
            writer,
            pending: Pending::Shared(Arc::new(Mutex::new(None))),
        }
    }

    /// A layer whose summary is counted per thread, for a writer that
    /// writes each thread's lines to that thread's own place.
    pub(crate) fn per_thread(writer: W) -> Self {
        FoldLayer {
            writer,
            pending: Pending::Thread,
        }
    }

    fn take(&self) -> Option<Fold> {
        match &self.pending {
            Pending::Shared(pending) => pending.lock().unwrap_or_else(|p| p.into_inner()).take(),
            Pending::Thread => THREAD_FOLD.with(|f| f.borrow_mut().take()),
        }
    }

    fn write(&self, fold: Fold) {
        let _ = writeln!(self.writer.make_writer(), "{}", fold.line());
    }

    /// Writes the pending summary line, if any (this thread's, for a
    /// per-thread layer).
    pub(crate) fn flush(&self) {
        if let Some(fold) = self.take() {
            self.write(fold);
        }
    }

    /// Counts one decision of kind `kind` at `at`, writing the summary of
    /// the instant before first if `at` is a new one.
    fn count(&self, kind: &'static str, at: Option<Duration>, seed: Option<Seed>) {
        let add = |pending: &mut Option<Fold>| -> Option<Fold> {
            let done = pending
                .as_ref()
                .is_some_and(|fold| fold.at != at)
                .then(|| pending.take())
                .flatten();
            let fold = pending.get_or_insert_with(|| Fold {
                at,
                seed,
                counts: BTreeMap::new(),
            });
            *fold.counts.entry(kind).or_default() += 1;
            done
        };
        let done = match &self.pending {
            Pending::Shared(pending) => add(&mut pending.lock().unwrap_or_else(|p| p.into_inner())),
            Pending::Thread => THREAD_FOLD.with(|f| add(&mut f.borrow_mut())),
        };
        if let Some(done) = done {
            self.write(done);
        }
    }
}

impl<S, W> Layer<S> for FoldLayer<W>
where
    S: Subscriber,
    W: for<'a> MakeWriter<'a> + 'static,
{
    fn on_event(&self, event: &Event<'_>, _ctx: LayerContext<'_, S>) {
        if event.metadata().target() != SCHEDULING_TARGET {
            self.flush();
            return;
        }
        let mut message = Message(String::new());
        event.record(&mut message);
        let (at, seed) = context::with(|c| (c.now(), c.seed)).unzip();
        self.count(kind_of(&message.0), at, seed);
    }
}

/// The `message` field of an event.
struct Message(String);

impl Visit for Message {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.0 = value.to_string();
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

/// The last `n` entries of `trace` that are not scheduling entries, one
/// per line, each run of scheduling entries at one virtual instant folded
/// into one summary line (all entries as they are with `show_scheduling`).
/// Returns the lines, how many entries they show and how many scheduling
/// entries were folded.
pub(crate) fn trace_tail(
    trace: &Trace,
    n: usize,
    show_scheduling: bool,
) -> (Vec<String>, usize, usize) {
    if show_scheduling {
        let lines = trace.tail(n).lines().map(String::from).collect();
        return (lines, n.min(trace.len()), 0);
    }
    let mut kept = 0;
    let mut start = trace.len();
    while start > 0 && kept < n {
        start -= 1;
        if !trace.is_scheduling(start) {
            kept += 1;
        }
    }
    let mut lines = Vec::new();
    let mut folded = 0;
    // (time, picks, deliveries, others) of the run being folded.
    let mut run: Option<(Duration, u64, u64, u64)> = None;
    let close = |run: &mut Option<(Duration, u64, u64, u64)>, lines: &mut Vec<String>| {
        if let Some((at, picks, deliveries, others)) = run.take() {
            let counts: Vec<String> = [
                (picks, "lane pick", "lane picks"),
                (deliveries, "delivery", "deliveries"),
                (others, "other", "others"),
            ]
            .into_iter()
            .filter(|(n, _, _)| *n > 0)
            .map(|(n, one, many)| format!("{n} {}", if n == 1 { one } else { many }))
            .collect();
            lines.push(format!(
                "[{:>10}] {:<10} | folded: {}",
                format_time(at),
                "scheduling",
                counts.join(", ")
            ));
        }
    };
    for (i, entry) in trace.entries().enumerate().skip(start) {
        if trace.is_scheduling(i) {
            folded += 1;
            if run.is_some_and(|r| r.0 != entry.at) {
                close(&mut run, &mut lines);
            }
            let r = run.get_or_insert((entry.at, 0, 0, 0));
            match entry.event {
                "picked" => r.1 += 1,
                e if e.starts_with("deliver ") => r.2 += 1,
                _ => r.3 += 1,
            }
            continue;
        }
        close(&mut run, &mut lines);
        lines.extend(entry.to_string().lines().map(String::from));
    }
    close(&mut run, &mut lines);
    (lines, kept, folded)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scheduling_entries_fold_per_instant() {
        let mut trace = Trace::default();
        let ms = Duration::from_millis;
        trace.push(ms(0), "runtime".into(), "run seed=0x1");
        trace.push_scheduling(ms(1), "fast".into(), format_args!("picked"));
        trace.push_scheduling(ms(1), "wire".into(), format_args!("deliver q #1"));
        trace.push(ms(1), "fast".into(), "text_delta \"Hi\"");
        trace.push_scheduling(ms(2), "control".into(), format_args!("picked"));
        trace.push(ms(2), "control".into(), "turn_complete");
        let (lines, shown, folded) = trace_tail(&trace, 3, false);
        assert_eq!((shown, folded), (3, 3));
        assert_eq!(lines.len(), 5, "{lines:#?}");
        assert!(
            lines[1].ends_with("folded: 1 lane pick, 1 delivery"),
            "{}",
            lines[1]
        );
        assert!(lines[2].ends_with("text_delta \"Hi\""));
        assert!(lines[3].ends_with("folded: 1 lane pick"));
        let (last, shown, folded) = trace_tail(&trace, 1, false);
        assert_eq!((last.len(), shown, folded), (1, 1, 0), "{last:#?}");
        let (all, shown, folded) = trace_tail(&trace, 10, true);
        assert_eq!((all.len(), shown, folded), (6, 6, 0));
    }
}
