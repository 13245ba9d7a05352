//! Part of `reconnect-ends`: a `goAway` move begins when the turn lets
//! it, neither sooner nor later.
//!
//! A session that resumes moves off a connection the server is ending
//! once the model's turn is over and a resumption handle has come since
//! that turn began (resuming an older handle would lose the turn), or at
//! half the time the server gave, whichever comes first. Moving sooner
//! loses the turn in progress (its calls' answers have nowhere to go);
//! moving later wastes the time the move needs.
//!
//! Read from the frames the session read on the connection, by a model of
//! its own (not the session's): a frame with a `toolCall`, a `modelTurn`
//! or an `outputTranscription` opens the turn and makes the handle held
//! stale; `turnComplete` closes it; a `sessionResumptionUpdate` that is
//! `resumable` with a `newHandle` gives a fresh handle. The session is
//! *ready* after a frame when no turn is open and its handle is fresh.
//! A handle, and whether it is fresh, carry over from connection to
//! connection until a fresh start; an open turn ends with its connection.
//! A session that holds no handle at the notice (none since its last
//! fresh start) is ready when its first handle comes, the turn over.
//! Judged only where the model is sure what the session holds: the only
//! notice on its connection, and a move the session made for it
//! (`reconnecting`, cause `goAway`); in memory and over the simulated
//! network alike (there the frames are the ones that reached the session,
//! timed as its transport read them).
//! Times may differ by [`LAG`]: the session reads a frame and acts on it
//! on different lanes.

use std::sync::LazyLock;
use std::time::Duration;

use memchr::memmem::Finder;

use crate::executor::format_time;
use crate::session::LiveEvent;
use crate::soak::check::json::Json;
use crate::soak::check::signals;
use crate::soak::check::telemetry::LAG;
use crate::soak::check::wire_order::{Word, is_setup_complete, mentions};
use crate::soak::run::record::RunRecord;

static GO_AWAY: Word = LazyLock::new(|| Finder::new(b"goAway"));

/// What one frame does to the model.
#[derive(Default)]
struct Frame {
    setup_complete: bool,
    turn_content: bool,
    turn_complete: bool,
    fresh_handle: bool,
    /// A `goAway`, with the time it gave.
    go_away: Option<Duration>,
}

/// Checks each `goAway` move began when the turn let it.
pub(crate) fn began_when_ready(run: &RunRecord) -> Result<(), String> {
    if !run.resumption.is_on() || run.server_frames_at.len() != run.server_frames.len() {
        return Ok(());
    }
    // Most runs have no notice: the model is worked out only for those
    // that do.
    let noticed = run
        .frames_read()
        .iter()
        .any(|f| mentions(f.payload().unwrap_or_default(), &GO_AWAY));
    if !noticed {
        return Ok(());
    }
    let frames: Vec<Frame> = run
        .frames_read()
        .iter()
        .map(|f| read(f.payload().unwrap_or_default()))
        .collect();
    let at = &run.server_frames_at;
    // Where each connection begins (its `setupComplete`).
    let starts: Vec<usize> = (0..frames.len())
        .filter(|&i| frames[i].setup_complete)
        .collect();
    for (k, frame) in frames.iter().enumerate() {
        let Some(left) = frame.go_away else {
            continue;
        };
        let connection = starts.partition_point(|&s| s < k);
        let fresh_from = last_fresh(run, connection);
        let Some(ready) = ready_after(&frames, &starts, at, k, fresh_from) else {
            continue;
        };
        let g = at[k];
        let Some(moved) = move_after(run, connection, g.saturating_sub(LAG)) else {
            continue;
        };
        let deadline = g + left / 2;
        // Sooner: not ready until well after the move, and the deadline
        // still well ahead.
        if moved + LAG < deadline && ready.is_none_or(|r| r > moved + LAG) {
            return Err(format!(
                "a goAway at t={} gave {}; the session began its move at t={}, before the \
                 model's turn was over and a handle had come since it began, and before half \
                 the time left (t={}): it resumes a handle that does not hold the turn in \
                 progress",
                format_time(g),
                format_time(left),
                format_time(moved),
                format_time(deadline)
            ));
        }
        // Later: ready well before the deadline, and still there long
        // after.
        if let Some(r) = ready
            && r + LAG < deadline
            && moved > r + LAG
        {
            return Err(format!(
                "a goAway at t={} gave {}; from t={} the turn was over and a handle had come \
                 since it began, but the session began its move only at t={}",
                format_time(g),
                format_time(left),
                format_time(r),
                format_time(moved)
            ));
        }
    }
    Ok(())
}

/// When the session was first ready at or after the notice at frame `k`
/// (`starts`: where each connection begins), or `Some(None)`: not before
/// its connection ended; `None` when the
/// notice is not one to judge: another notice came on the same
/// connection. A session that held no handle at the notice (none came
/// since its last fresh start, connection `fresh_from`) is ready once
/// its first handle comes, the turn over. A handle and whether it is
/// fresh carry over to the next connection; an open turn does not.
fn ready_after(
    frames: &[Frame],
    starts: &[usize],
    at: &[Duration],
    k: usize,
    fresh_from: usize,
) -> Option<Option<Duration>> {
    let current = starts.partition_point(|&s| s < k).checked_sub(1)?;
    let from = starts[fresh_from.saturating_sub(1).min(current)];
    let end = starts.get(current + 1).copied().unwrap_or(frames.len());
    let notices = frames[starts[current]..end]
        .iter()
        .filter(|f| f.go_away.is_some());
    if notices.count() > 1 {
        return None;
    }
    let (mut handle, mut fresh, mut open) = (false, false, false);
    for (i, frame) in frames.iter().enumerate().take(end).skip(from) {
        if frame.setup_complete {
            open = false;
            continue;
        }
        if frame.fresh_handle {
            handle = true;
            fresh = true;
        }
        if frame.turn_content {
            fresh = false;
            open = true;
        }
        if frame.turn_complete {
            open = false;
        }
        if i >= k && handle && fresh && !open {
            return Some(Some(at[i]));
        }
    }
    Some(None)
}

/// The connection (from 1) the session last started afresh by `k`'s
/// connection, `connection`: the first, or a `resumed` saying `fresh`.
fn last_fresh(run: &RunRecord, connection: usize) -> usize {
    run.events
        .iter()
        .filter_map(|e| match e.event {
            LiveEvent::Resumed {
                connection: c,
                fresh: true,
            } => Some(c as usize),
            _ => None,
        })
        .filter(|&c| c <= connection)
        .max()
        .unwrap_or(1)
}

/// When the session began a `goAway` move off its connection number
/// `connection` (from 1): the first `reconnecting` or `disconnected` from
/// `since` that comes after the session said it was on that connection,
/// if it is a `goAway` move. (The move off the connection before may bear
/// the same time as this one's start.)
fn move_after(run: &RunRecord, connection: usize, since: Duration) -> Option<Duration> {
    let on = if connection > 1 {
        run.events.iter().position(|e| {
            matches!(e.event, LiveEvent::Resumed { connection: c, .. } if c as usize == connection)
        })? + 1
    } else {
        0
    };
    let end = run.events[on..].iter().find(|e| {
        e.at >= since
            && matches!(
                e.event,
                LiveEvent::Reconnecting { .. } | LiveEvent::Disconnected { .. }
            )
    })?;
    match &end.event {
        LiveEvent::Reconnecting { cause, .. } if cause == "goAway" => Some(end.at),
        _ => None,
    }
}

/// What a frame says, read by the checks' own JSON reader.
fn read(bytes: &[u8]) -> Frame {
    let mut frame = Frame::default();
    if is_setup_complete(bytes) {
        frame.setup_complete = true;
        return frame;
    }
    let Some(json) = Json::parse(bytes) else {
        return frame;
    };
    let Some(message) = json.as_object() else {
        return frame;
    };
    let content = message.get("serverContent").and_then(Json::as_object);
    frame.turn_content = message.contains_key("toolCall")
        || content
            .is_some_and(|c| c.contains_key("modelTurn") || c.contains_key("outputTranscription"));
    frame.turn_complete = content
        .and_then(|c| c.get("turnComplete"))
        .and_then(Json::as_bool)
        .unwrap_or(false);
    if let Some(update) = message
        .get("sessionResumptionUpdate")
        .and_then(Json::as_object)
    {
        let resumable = update.get("resumable").and_then(Json::as_bool) == Some(true);
        let handle = update.get("newHandle").and_then(Json::as_str);
        frame.fresh_handle = resumable && handle.is_some_and(|h| !h.is_empty());
    }
    frame.go_away = message.get("goAway").and_then(Json::as_object).map(|g| {
        g.get("timeLeft")
            .and_then(Json::as_str)
            .and_then(signals::duration)
            .unwrap_or_default()
    });
    frame
}
