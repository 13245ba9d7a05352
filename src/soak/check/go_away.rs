//! Part of `reconnect-ends`: a session that resumes acts on a `goAway` in
//! time.
//!
//! The server says how long the connection has left. A session that
//! resumes and holds a resumption handle starts its move to a new
//! connection (`reconnecting`, cause `goAway`) by half that time at the
//! latest (the other half is for the move itself), and sooner when its
//! turn is over. Read from the run's events alone:
//!
//! * the notice is the `go_away` event, received at `g` with `time_left`
//!   `T` (none: at once); the move is owed by `g + T/2`, plus [`LAG`] for
//!   the move's own event to reach the soak;
//! * it is owed only if the session surely had a handle by then: a
//!   `resumption_update` saying it can resume, after the last fresh
//!   start, and received before the notice or at least [`LAG`] before
//!   `g + T/2` (an update received later may have been read after the
//!   move was due: a notice without `timeLeft` followed at once by a
//!   handle finds the session without one, and it stays);
//! * the connection may end first (another `reconnecting`, or
//!   `disconnected`) and nothing is owed; a notice that comes while a
//!   move is under way is one the session ignores.
//!
//! The `go_away` and `reconnecting` events come on different lanes, so a
//! move may be received a little before its notice: one within [`LAG`]
//! before it counts.

use std::time::Duration;

use crate::executor::format_time;
use crate::session::LiveEvent;
use crate::soak::check::telemetry::LAG;
use crate::soak::run::record::RunRecord;

/// Checks every `goAway` the session got was acted on in time.
pub(crate) fn moved_in_time(run: &RunRecord) -> Result<(), String> {
    if !run.resumption.is_on() {
        return Ok(());
    }
    let events = &run.events;
    for (k, notice) in events.iter().enumerate() {
        let LiveEvent::GoAway { time_left } = &notice.event else {
            continue;
        };
        if moving_at(run, k) {
            continue;
        }
        let g = notice.at;
        let due = g + time_left.unwrap_or_default() / 2;
        let deadline = due + LAG;
        if !handle_by(run, k, due) {
            continue;
        }
        let since = g.saturating_sub(LAG);
        // The move, or the connection's end, from just before the notice.
        let end = events.iter().find(|e| {
            e.at >= since
                && matches!(
                    e.event,
                    LiveEvent::Reconnecting { .. } | LiveEvent::Disconnected { .. }
                )
        });
        let at = match end {
            Some(e) if e.at <= deadline => continue,
            Some(e) => e.at,
            None if run.settling.ended || run.virtual_time <= deadline => continue,
            None => run.virtual_time,
        };
        let what = match end.map(|e| &e.event) {
            Some(LiveEvent::Reconnecting { cause, .. }) => {
                format!("it moved at t={} ({cause})", format_time(at))
            }
            Some(_) => format!("the connection ended at t={}", format_time(at)),
            None => format!("the run ended at t={} without a move", format_time(at)),
        };
        return Err(format!(
            "a goAway at t={} gave {}, and the session held a resumption handle, so its move was \
             owed by t={} (half the time left); {what}",
            format_time(g),
            format_time(time_left.unwrap_or_default()),
            format_time(deadline)
        ));
    }
    Ok(())
}

/// Whether a move was under way when event `k` came: a `reconnecting`
/// since the last `resumed`, `resumption_failed` or `disconnected`.
fn moving_at(run: &RunRecord, k: usize) -> bool {
    run.events[..k]
        .iter()
        .rev()
        .find(|e| {
            matches!(
                e.event,
                LiveEvent::Reconnecting { .. }
                    | LiveEvent::Resumed { .. }
                    | LiveEvent::ResumptionFailed { .. }
                    | LiveEvent::Disconnected { .. }
            )
        })
        .is_some_and(|e| matches!(e.event, LiveEvent::Reconnecting { .. }))
}

/// Whether the session surely held a handle when its move was `due`: a
/// resumable update after the last fresh start before the notice (event
/// `k`), received before the notice (the two share a lane, so the
/// session read the update first) or at least [`LAG`] before `due` (an
/// event reaches the soak up to `LAG` after the session read its frame;
/// one closer to `due` may have been read after it, and is no proof).
fn handle_by(run: &RunRecord, k: usize, due: Duration) -> bool {
    let fresh_start = run.events[..k]
        .iter()
        .rposition(|e| {
            matches!(
                e.event,
                LiveEvent::Resumed { fresh: true, .. } | LiveEvent::ResumptionFailed { .. }
            )
        })
        .map_or(0, |i| i + 1);
    run.events
        .iter()
        .enumerate()
        .skip(fresh_start)
        .any(|(i, e)| {
            (i < k || e.at + LAG <= due)
                && matches!(e.event, LiveEvent::ResumptionUpdate { resumable: true })
        })
}
