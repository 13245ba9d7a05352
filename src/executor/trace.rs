//! The trace: an ordered log of what happened in a run, and its fingerprint.
//!
//! Each entry is (virtual time, label, event): the label names the lane or
//! task that was running, the event says what it did. The runtime appends
//! lane picks, deliveries and panics; the session appends every event it
//! emits, each tool's start, waits and finish, and every state write; test
//! code appends with [`record!`](crate::record). Lane picks and deliveries
//! are marked as **scheduling** entries: part of the fingerprint like any
//! other, but folded in failure reports, where they would drown what the
//! code under test did. An entry may end in a **detail** (a value written,
//! a tool's arguments) that the [interleaving](Trace::interleaving)
//! fingerprint leaves out, since values often carry times. Two runs of one
//! seed must produce the same trace, entry for entry; [`Trace::hash`]
//! condenses that into one number, and [`Trace::first_divergence`] finds
//! where two traces part ways.
//!
//! Event texts live in one growing buffer rather than one allocation each:
//! a busy run records thousands of entries, and formatting straight into the
//! buffer keeps recording cheap enough to leave on.
//!
//! The hash is FNV-1a 64 (see [`Fnv64`]) over, for each entry in order: the
//! virtual time in nanoseconds as a little-endian `u64`, the label's bytes,
//! a `0xff` byte, the event's bytes and a `0xfe` byte. It is computed when
//! asked for, so a run that never asks pays nothing for it.

use std::fmt::{self, Write as _};
use std::sync::Arc;
use std::time::Duration;

use super::hash::Fnv64;

/// The name of a lane or task, shared cheaply between trace entries.
pub type Label = Arc<str>;

/// One thing that happened, at one virtual instant, in one lane or task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceEntry<'a> {
    /// Virtual time since the run started.
    pub at: Duration,
    /// The lane or task that was running (`runtime` for the executor itself).
    pub label: &'a str,
    /// What happened.
    pub event: &'a str,
}

impl TraceEntry<'_> {
    /// An owned copy, for keeping after the trace is gone.
    pub fn to_owned(&self) -> OwnedTraceEntry {
        OwnedTraceEntry {
            at: self.at,
            label: self.label.to_string(),
            event: self.event.to_string(),
        }
    }
}

impl fmt::Display for TraceEntry<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{:>10}] {:<10} | ", format_time(self.at), self.label)?;
        // Continuation lines of a multi-line event line up under its first.
        let mut lines = self.event.split('\n');
        f.write_str(lines.next().unwrap_or(""))?;
        for line in lines {
            write!(f, "\n{:24}| {line}", "")?;
        }
        Ok(())
    }
}

/// A trace entry that owns its text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnedTraceEntry {
    /// Virtual time since the run started.
    pub at: Duration,
    /// The lane or task that was running.
    pub label: String,
    /// What happened.
    pub event: String,
}

impl OwnedTraceEntry {
    /// A borrowed view of this entry.
    pub fn as_entry(&self) -> TraceEntry<'_> {
        TraceEntry {
            at: self.at,
            label: &self.label,
            event: &self.event,
        }
    }
}

impl fmt::Display for OwnedTraceEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.as_entry().fmt(f)
    }
}

/// Formats a virtual time as seconds with millisecond precision: `12.500s`.
pub fn format_time(at: Duration) -> String {
    let mut text = String::with_capacity(12);
    push_time(&mut text, at);
    text
}

/// Writes `at` onto `text` as [`format_time`] shows it, without the
/// formatting machinery (every captured log line starts with one).
pub(crate) fn push_time(text: &mut String, at: Duration) {
    text.push_str(itoa::Buffer::new().format(at.as_secs()));
    text.push('.');
    let millis = at.subsec_millis();
    for digit in [millis / 100, millis / 10 % 10, millis % 10] {
        text.push(char::from(b'0' + digit as u8));
    }
    text.push('s');
}

/// Formats `args` onto `text`; a text without arguments (`record("tick")`,
/// most entries' heads) is copied without the formatting machinery.
fn write_args(text: &mut String, args: fmt::Arguments<'_>) {
    match args.as_str() {
        Some(literal) => text.push_str(literal),
        // Writing to a String cannot fail.
        None => {
            let _ = text.write_fmt(args);
        }
    }
}

#[derive(Clone, Debug)]
struct Slot {
    at: Duration,
    label: Label,
    start: usize,
    end: usize,
    /// Where the event's detail begins (`end` when it has none).
    detail: usize,
    scheduling: bool,
}

/// An ordered log of a run.
///
/// ```
/// use std::time::Duration;
/// use livesim::executor::Trace;
///
/// let mut a = Trace::default();
/// a.push(Duration::ZERO, "main".into(), "hello");
/// let mut b = a.clone();
/// assert_eq!(a.hash(), b.hash());
/// b.push(Duration::from_millis(5), "main".into(), "again");
/// assert_ne!(a.hash(), b.hash());
/// assert_eq!(a.first_divergence(&b).unwrap().index, 1);
/// ```
#[derive(Clone, Debug, Default)]
pub struct Trace {
    text: String,
    slots: Vec<Slot>,
}

impl Trace {
    /// An empty trace with room for about `n` entries.
    pub fn with_capacity(n: usize) -> Self {
        Trace {
            text: String::with_capacity(n * 24),
            slots: Vec::with_capacity(n),
        }
    }

    /// Appends one entry.
    pub fn push(&mut self, at: Duration, label: Label, event: &str) {
        let start = self.text.len();
        self.text.push_str(event);
        let end = self.text.len();
        self.push_slot(at, label, start, end, false);
    }

    /// Appends one entry, formatting its event straight into the trace.
    pub fn push_fmt(&mut self, at: Duration, label: Label, event: fmt::Arguments<'_>) {
        self.append(at, label, event, false);
    }

    /// Appends a scheduling entry: a decision of the executor's own (a
    /// lane pick, a delivery), which reports fold.
    pub fn push_scheduling(&mut self, at: Duration, label: Label, event: fmt::Arguments<'_>) {
        self.append(at, label, event, true);
    }

    /// [`push_scheduling`](Self::push_scheduling), the event written
    /// straight into the trace's text by `event` (the executor's own
    /// entries, thousands a run, skip the formatting machinery).
    pub(crate) fn push_scheduling_with(
        &mut self,
        at: Duration,
        label: Label,
        event: impl FnOnce(&mut String),
    ) {
        self.push_with(at, label, event, true);
    }

    /// Appends one entry whose event `event` writes straight into the
    /// trace's text (`record!` with a plain format string).
    pub(crate) fn push_written(
        &mut self,
        at: Duration,
        label: Label,
        event: impl FnOnce(&mut String),
    ) {
        self.push_with(at, label, event, false);
    }

    /// Appends one entry (a scheduling one or not) that `event` writes.
    fn push_with(
        &mut self,
        at: Duration,
        label: Label,
        event: impl FnOnce(&mut String),
        scheduling: bool,
    ) {
        let start = self.text.len();
        event(&mut self.text);
        self.push_slot(at, label, start, self.text.len(), scheduling);
    }

    /// Appends one entry whose event is `head` followed by `detail`.
    pub fn push_detailed(&mut self, at: Duration, label: Label, head: &str, detail: &str) {
        let start = self.text.len();
        self.text.push_str(head);
        let detail_at = self.text.len();
        self.text.push_str(detail);
        self.push_slot(at, label, start, detail_at, false);
    }

    /// Appends one entry whose event is `head` followed by `detail`, each
    /// written straight into the trace's text by its function: a hot
    /// entry (a state write, a tool's start) builds its text without the
    /// formatting machinery.
    pub(crate) fn push_detailed_with(
        &mut self,
        at: Duration,
        label: Label,
        head: impl FnOnce(&mut String),
        detail: impl FnOnce(&mut String),
    ) {
        let start = self.text.len();
        head(&mut self.text);
        let detail_at = self.text.len();
        detail(&mut self.text);
        self.push_slot(at, label, start, detail_at, false);
    }

    fn append(&mut self, at: Duration, label: Label, event: fmt::Arguments<'_>, scheduling: bool) {
        let start = self.text.len();
        write_args(&mut self.text, event);
        let end = self.text.len();
        self.push_slot(at, label, start, end, scheduling);
    }

    /// Ends the entry whose text runs from `start` to the buffer's end,
    /// its detail (if any) from `detail`.
    fn push_slot(
        &mut self,
        at: Duration,
        label: Label,
        start: usize,
        detail: usize,
        scheduling: bool,
    ) {
        self.slots.push(Slot {
            at,
            label,
            start,
            end: self.text.len(),
            detail,
            scheduling,
        });
    }

    /// Whether the entry at `index` is a scheduling entry.
    pub fn is_scheduling(&self, index: usize) -> bool {
        self.slots.get(index).is_some_and(|slot| slot.scheduling)
    }

    /// The entry at `index`.
    pub fn get(&self, index: usize) -> Option<TraceEntry<'_>> {
        self.slots.get(index).map(|slot| TraceEntry {
            at: slot.at,
            label: &slot.label,
            event: &self.text[slot.start..slot.end],
        })
    }

    /// Every entry, in order.
    pub fn entries(&self) -> impl DoubleEndedIterator<Item = TraceEntry<'_>> + ExactSizeIterator {
        (0..self.slots.len()).map(|i| self.get(i).expect("index in range"))
    }

    /// The last entry.
    pub fn last(&self) -> Option<TraceEntry<'_>> {
        self.len().checked_sub(1).and_then(|i| self.get(i))
    }

    /// How many entries there are.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The run's fingerprint: equal traces have equal hashes.
    pub fn hash(&self) -> u64 {
        let mut hash = Fnv64::new();
        for entry in self.entries() {
            hash.write_u64(entry.at.as_nanos() as u64);
            hash.write(entry.label.as_bytes());
            hash.write(&[0xff]);
            hash.write(entry.event.as_bytes());
            hash.write(&[0xfe]);
        }
        hash.finish()
    }

    /// The first place where `self` and `other` differ, if they do.
    pub fn first_divergence(&self, other: &Trace) -> Option<Divergence> {
        let index = self
            .entries()
            .zip(other.entries())
            .position(|(a, b)| a != b)
            .unwrap_or(self.len().min(other.len()));
        if index == self.len() && index == other.len() {
            return None;
        }
        let owned = |e: Option<TraceEntry<'_>>| e.map(|e| e.to_owned());
        Some(Divergence {
            index,
            first: owned(self.get(index)),
            second: owned(other.get(index)),
            before: owned(index.checked_sub(1).and_then(|i| self.get(i))),
        })
    }

    /// A fingerprint of what the run's lanes and tasks did, in order: the
    /// hash of every entry but the first (the run's header, which names
    /// the seed) and the scheduling entries, without times or details.
    /// Two runs with the same fingerprint interleaved their work the same
    /// way, however their picks, delays and values differed.
    pub fn interleaving(&self) -> u64 {
        let mut hash = Fnv64::new();
        for slot in self.slots.iter().skip(1) {
            if slot.scheduling {
                continue;
            }
            hash.write(slot.label.as_bytes());
            hash.write(&[0xff]);
            hash.write(&self.text.as_bytes()[slot.start..slot.detail]);
            hash.write(&[0xfe]);
        }
        hash.finish()
    }

    /// The last `n` entries, rendered one per line.
    pub fn tail(&self, n: usize) -> String {
        let mut out = String::new();
        for entry in self.entries().skip(self.len().saturating_sub(n)) {
            let _ = writeln!(out, "{entry}");
        }
        out
    }
}

impl PartialEq for Trace {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.entries().eq(other.entries())
    }
}

impl Eq for Trace {}

/// Where two traces of the same seed stopped agreeing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Divergence {
    /// Index of the first entry that differs.
    pub index: usize,
    /// The first run's entry there (`None`: that run's trace ended).
    pub first: Option<OwnedTraceEntry>,
    /// The second run's entry there (`None`: that run's trace ended).
    pub second: Option<OwnedTraceEntry>,
    /// The last entry both runs agreed on.
    pub before: Option<OwnedTraceEntry>,
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let show = |e: &Option<OwnedTraceEntry>| match e {
            Some(e) => e.to_string(),
            None => "(trace ended)".to_string(),
        };
        writeln!(f, "the two runs diverge at trace entry #{}", self.index)?;
        if let Some(before) = &self.before {
            writeln!(f, "  last agreed: {before}")?;
        }
        writeln!(f, "  first run:   {}", show(&self.first))?;
        write!(f, "  second run:  {}", show(&self.second))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(header: &str, picks_first: bool, value: &str, order: [&str; 2]) -> Trace {
        let mut trace = Trace::default();
        let ms = Duration::from_millis;
        trace.push(ms(0), "runtime".into(), header);
        if picks_first {
            trace.push_scheduling(ms(1), "a".into(), format_args!("picked"));
        }
        trace.push_detailed(ms(2), "a".into(), "state total", value);
        for label in order {
            trace.push(ms(3), label.into(), "done");
        }
        trace
    }

    #[test]
    fn the_interleaving_ignores_header_scheduling_times_and_details() {
        let one = run("run seed=0x1", true, " = 1", ["a", "b"]);
        let two = run("run seed=0x2", false, " = 2", ["a", "b"]);
        assert_ne!(one.hash(), two.hash());
        assert_eq!(one.interleaving(), two.interleaving());
        let swapped = run("run seed=0x1", true, " = 1", ["b", "a"]);
        assert_ne!(one.interleaving(), swapped.interleaving());
        assert_eq!(one.get(2).unwrap().event, "state total = 1");
    }
}
