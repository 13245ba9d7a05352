//! Part of `telemetry`: every tick writes each of its keys.
//!
//! On each tick the session writes `session:elapsed_ms`, then
//! `session:silence_ms` and `session:remaining_budget_ms`; while a
//! `goAway`'s deadline stands, `session:go_away_remaining_ms`; and in a
//! session with phases, `session:time_in_phase_ms`. The other checks of
//! `telemetry` judge the values written; this one that none is skipped
//! (a guard reading a key a tick skipped reads a stale value). A tick is
//! read from the journal as its `session:elapsed_ms` and what comes
//! before the next one:
//!
//! * one `silence_ms` and one `remaining_budget_ms`: the telemetry lane
//!   writes the four of a tick at one go;
//! * one `time_in_phase_ms` when the session has phases (a
//!   `session:phase` in the journal), which the control lane writes as
//!   the tick reaches it: within the tick's instant, since virtual time
//!   moves on only once every lane is idle. The session's last tick may
//!   go without, if the session ended first;
//! * a `go_away_remaining_ms` when a `goAway` with a time left was
//!   received at least [`LAG`] before the tick, its deadline is more than
//!   [`LAG`] away, and the session had not moved to a new connection
//!   since (a `resumed` from [`LAG`] before the `goAway` to [`LAG`] after
//!   the tick counts: the lanes interleave).

use std::time::Duration;

use crate::clock::VIRTUAL_EPOCH;
use crate::executor::format_time;
use crate::session::LiveEvent;
use crate::soak::check::telemetry::LAG;
use crate::soak::run::record::RunRecord;

/// Checks every tick wrote each of its keys.
pub(crate) fn every_tick(run: &RunRecord) -> Result<(), String> {
    let journal = &run.journal;
    let phased = journal.iter().any(|e| e.key == "session:phase");
    let ticks: Vec<usize> = (0..journal.len())
        .filter(|&i| journal[i].key == "session:elapsed_ms")
        .collect();
    let standing = deadlines(run);
    for (n, &start) in ticks.iter().enumerate() {
        let last = n + 1 == ticks.len();
        let end = ticks.get(n + 1).copied().unwrap_or(journal.len());
        let tick = &journal[start];
        let at = tick.timestamp - VIRTUAL_EPOCH;
        let written = |key: &str| {
            journal[start..end]
                .iter()
                .filter(|e| e.key == key && !e.removed)
                .count()
        };
        let mut owed = vec![
            ("session:silence_ms", 1..=1),
            ("session:remaining_budget_ms", 1..=1),
        ];
        if phased {
            owed.push(("session:time_in_phase_ms", if last { 0..=1 } else { 1..=1 }));
        }
        let deadline = standing.iter().find(|d| {
            d.got + LAG <= at && at + LAG < d.ends && d.moved.is_none_or(|m| at + LAG < m)
        });
        if deadline.is_some() {
            owed.push(("session:go_away_remaining_ms", 1..=1));
        }
        for (key, times) in owed {
            let count = written(key);
            if times.contains(&count) {
                continue;
            }
            let why = match deadline {
                Some(d) if key == "session:go_away_remaining_ms" => format!(
                    " (the goAway received at t={} stood until t={})",
                    format_time(d.got),
                    format_time(d.ends)
                ),
                _ => String::new(),
            };
            return Err(format!(
                "journal #{}: the tick at t={} (session:elapsed_ms) wrote {key} {count} time(s) \
                 before the next tick; every tick writes it once{why}",
                tick.seq,
                format_time(at)
            ));
        }
    }
    Ok(())
}

/// A `goAway`'s deadline, as the run saw it.
struct Deadline {
    /// When the run received the `goAway`.
    got: Duration,
    /// When its time ran out.
    ends: Duration,
    /// When the session next said it was on a new connection, if it did:
    /// from [`LAG`] before the `goAway`, since the telemetry lane that
    /// reports it may do so after the move it caused.
    moved: Option<Duration>,
}

/// Every `goAway` with a time left the run received.
fn deadlines(run: &RunRecord) -> Vec<Deadline> {
    run.events
        .iter()
        .filter_map(|e| match e.event {
            LiveEvent::GoAway {
                time_left: Some(left),
            } => Some(Deadline {
                got: e.at,
                ends: e.at + left,
                moved: run
                    .events
                    .iter()
                    .find(|r| r.at + LAG >= e.at && matches!(r.event, LiveEvent::Resumed { .. }))
                    .map(|r| r.at),
            }),
            _ => None,
        })
        .collect()
}
