//! What happened in a failing run, told for a person: the excerpt a
//! failure report carries below the invariant's own message.
//!
//! An invariant says what broke ("the cart lost an item"); the excerpt
//! says how the run got there, from the record and the executor's trace:
//!
//! * every tool call with its start and finish in virtual time and how it
//!   ended, and which calls ran at the same time;
//! * every state write the session's own code made (the telemetry's
//!   `session:*` keys left out) with the lane or tool that wrote it;
//! * the frames and events around the failure, scheduling folded: the
//!   window spans the calls the message names (`call-3`), else the calls
//!   that overlapped, else the end of the fault phase.
//!
//! A shrunk case's excerpt is short enough to read whole, which is why a
//! kept failure prints the shrunk run's excerpt.

use std::fmt::Write as _;
use std::time::Duration;

use crate::executor::format_time;
use crate::soak::check::report::column_width;
use crate::soak::run::record::{ExecutionOutcome, RunRecord, ToolExecution};

/// Calls listed, at most.
const CALLS_SHOWN: usize = 12;
/// State writes listed, at most.
const WRITES_SHOWN: usize = 16;
/// Trace lines shown in the window, at most.
const WINDOW_LINES: usize = 30;
/// Entries shown on each side of the window's calls.
const MARGIN: usize = 4;

/// The excerpt of `record` for a failure that says `message`; empty when
/// the run left nothing to tell (no call, no write, no trace).
pub(crate) fn excerpt(record: &RunRecord, message: &str) -> String {
    let mut out = String::new();
    let named = named_calls(record, message);
    calls(&mut out, record, &named);
    writes(&mut out, record);
    window(&mut out, record, &named);
    out.trim_end().to_string()
}

/// The executions whose call id the message names, as whole words.
fn named_calls<'a>(record: &'a RunRecord, message: &str) -> Vec<&'a ToolExecution> {
    record
        .executions
        .iter()
        .filter(|e| {
            e.call_id
                .as_deref()
                .is_some_and(|id| names_word(message, id))
        })
        .collect()
}

/// Whether `text` holds `word` not as part of a longer word (`call-1` is
/// not named by `call-12`).
fn names_word(text: &str, word: &str) -> bool {
    let is_word = |c: char| c.is_alphanumeric() || c == '-' || c == '_';
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(is_word) && !after.is_some_and(is_word)
    })
}

/// When a run of `e` ends, for overlaps: its finish, or the end of the run.
fn end_of(e: &ToolExecution, record: &RunRecord) -> Duration {
    e.finished.unwrap_or(record.virtual_time)
}

/// The most of a call's name and id an excerpt shows.
const NAME_SHOWN: usize = 60;

/// `tool(call id)`, cut at [`NAME_SHOWN`] characters.
fn call_name(e: &ToolExecution) -> String {
    let name = format!("{}({})", e.tool, e.call_id.as_deref().unwrap_or("no call"));
    short(&name, NAME_SHOWN)
}

fn short(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let cut: String = text.chars().take(max).collect();
    format!("{cut}…")
}

/// The pairs of runs that overlapped in virtual time, in start order.
/// A pair of tool runs that overlapped, and from when to when.
type Overlap<'a> = (&'a ToolExecution, &'a ToolExecution, Duration, Duration);

fn overlaps(record: &RunRecord) -> Vec<Overlap<'_>> {
    let runs = &record.executions;
    let mut pairs = Vec::new();
    for (i, a) in runs.iter().enumerate() {
        for b in &runs[i + 1..] {
            let from = a.started.max(b.started);
            let to = end_of(a, record).min(end_of(b, record));
            if from < to {
                pairs.push((a, b, from, to));
            }
        }
    }
    pairs
}

fn calls(out: &mut String, record: &RunRecord, named: &[&ToolExecution]) {
    if record.executions.is_empty() {
        return;
    }
    let _ = writeln!(out, "tool calls (virtual time):");
    let width = column_width(
        record
            .executions
            .iter()
            .take(CALLS_SHOWN)
            .map(|e| call_name(e).chars().count()),
        0,
    );
    for e in record.executions.iter().take(CALLS_SHOWN) {
        let end = match e.finished {
            Some(at) => format_time(at),
            None => "(never finished)".to_string(),
        };
        let how = match &e.outcome {
            ExecutionOutcome::Ok(value) => format!("ok {}", short(&value.to_string(), 80)),
            ExecutionOutcome::Failed(why) => format!("failed: {}", short(why, 80)),
            ExecutionOutcome::Unfinished => "unfinished (aborted or cut off)".to_string(),
        };
        let mark = if named.iter().any(|n| std::ptr::eq(*n, e)) {
            "  ← named in the failure"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "  {:<width$}  {} → {end}  {how}{mark}",
            call_name(e),
            format_time(e.started)
        );
    }
    if record.executions.len() > CALLS_SHOWN {
        let _ = writeln!(
            out,
            "  … {} more calls",
            record.executions.len() - CALLS_SHOWN
        );
    }
    let pairs = overlaps(record);
    if pairs.is_empty() {
        let _ = writeln!(out, "  no two calls ran at the same time");
    }
    for (a, b, from, to) in pairs.iter().take(CALLS_SHOWN) {
        let _ = writeln!(
            out,
            "  overlapped: {} and {}, from {} to {}",
            call_name(a),
            call_name(b),
            format_time(*from),
            format_time(*to)
        );
    }
    if pairs.len() > CALLS_SHOWN {
        let _ = writeln!(out, "  … {} more overlaps", pairs.len() - CALLS_SHOWN);
    }
}

/// The trace's state writes (`state key = value (seq n)`) other than the
/// telemetry's, with the lane or task that made each.
fn writes(out: &mut String, record: &RunRecord) {
    let found: Vec<String> = record
        .trace
        .entries()
        .filter_map(|entry| {
            let write = entry.event.strip_prefix("state ")?;
            if write.starts_with("session:") {
                return None;
            }
            Some(format!(
                "  {}  {}, by {}",
                format_time(entry.at),
                short(write, 120),
                entry.label
            ))
        })
        .collect();
    if found.is_empty() {
        return;
    }
    let _ = writeln!(out, "state writes:");
    let skip = found.len().saturating_sub(WRITES_SHOWN);
    if skip > 0 {
        let _ = writeln!(out, "  … {skip} earlier writes");
    }
    for line in &found[skip..] {
        let _ = writeln!(out, "{line}");
    }
}

/// The stretch of trace to show: around the named calls, else the
/// overlapping ones, else the end of the fault phase.
fn window(out: &mut String, record: &RunRecord, named: &[&ToolExecution]) {
    let trace = &record.trace;
    if trace.is_empty() {
        return;
    }
    let focus: Vec<&ToolExecution> = if named.is_empty() {
        overlaps(record)
            .into_iter()
            .flat_map(|(a, b, _, _)| [a, b])
            .collect()
    } else {
        named.to_vec()
    };
    let shown = |i: usize| {
        !trace.is_scheduling(i)
            && trace
                .get(i)
                .is_some_and(|e| !e.event.starts_with("state session:") && e.event != "picked")
    };
    let indexes: Vec<usize> = (0..trace.len()).filter(|&i| shown(i)).collect();
    let (from, to) = match (
        focus.iter().map(|e| e.started).min(),
        focus.iter().map(|e| end_of(e, record)).max(),
    ) {
        (Some(start), Some(end)) => {
            let first = indexes
                .iter()
                .position(|&i| trace.get(i).is_some_and(|e| e.at >= start))
                .unwrap_or(0);
            let last = indexes
                .iter()
                .rposition(|&i| trace.get(i).is_some_and(|e| e.at <= end))
                .unwrap_or(indexes.len().saturating_sub(1));
            (
                first.saturating_sub(MARGIN),
                (last + MARGIN).min(indexes.len().saturating_sub(1)),
            )
        }
        _ => {
            let done = record
                .settling
                .script_done_at
                .unwrap_or(record.virtual_time);
            let last = indexes
                .iter()
                .rposition(|&i| trace.get(i).is_some_and(|e| e.at <= done))
                .unwrap_or(indexes.len().saturating_sub(1));
            (last.saturating_sub(WINDOW_LINES - 1), last)
        }
    };
    if indexes.is_empty() || from > to {
        return;
    }
    // A long stretch keeps its end, where the failure shows.
    let from = from.max(to.saturating_sub(WINDOW_LINES - 1));
    let (first, last) = (indexes[from], indexes[to]);
    let folded = (first..=last).filter(|&i| trace.is_scheduling(i)).count();
    let hidden = (first..=last)
        .filter(|&i| !trace.is_scheduling(i) && !shown(i))
        .count();
    let _ = writeln!(
        out,
        "frames and events, {} to {} (trace entries {}–{} of {}; {folded} scheduling and \
         {hidden} telemetry entries folded):",
        format_time(trace.get(first).map_or(Duration::ZERO, |e| e.at)),
        format_time(trace.get(last).map_or(Duration::ZERO, |e| e.at)),
        first + 1,
        last + 1,
        trace.len()
    );
    for &i in &indexes[from..=to] {
        if let Some(entry) = trace.get(i) {
            for line in entry.to_string().lines() {
                let _ = writeln!(out, "  {}", short(line, 200));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_id_is_named_only_as_a_whole_word() {
        assert!(names_word("add_item (call-1) lost", "call-1"));
        assert!(names_word("call-1", "call-1"));
        assert!(!names_word("call-12 and call-10", "call-1"));
        assert!(!names_word("recall-1", "call-1"));
    }

    /// A corpus entry may carry a call id of any length (a damaged or
    /// hostile file): the excerpt cuts it, and pads to a bounded column
    /// (`format!` panics past a width of 65,535).
    #[test]
    fn a_call_id_of_any_length_is_cut_and_padded_to_a_bounded_column() {
        let e = ToolExecution {
            call_id: Some("a".repeat(70_000)),
            tool: "get_weather".to_string(),
            args: serde_json::Value::Null,
            started: Duration::ZERO,
            finished: None,
            dropped: None,
            outcome: ExecutionOutcome::Unfinished,
        };
        let name = call_name(&e);
        assert_eq!(name.chars().count(), NAME_SHOWN + 1);
        assert!(
            name.starts_with("get_weather(aaa") && name.ends_with('…'),
            "{name}"
        );
        let width = column_width([name.chars().count(), 70_000], 0);
        assert!(width <= 48, "{width}");
        assert_eq!(format!("{:<width$}|", "x").len(), width + 1);
    }
}
