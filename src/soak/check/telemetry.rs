//! The `telemetry` invariant: the signals the session writes to state on
//! its timer agree with what the run saw, and so do the keys that say
//! which connection it is on (`connection_state`); the remaining budget
//! counts one budget down (`remaining_budget`).
//!
//! A session with phases also writes `session:time_in_phase_ms` on each
//! tick: the time since the latest `session:phase` write, by the
//! journal's own timestamps. After a `goAway` it writes
//! `session:go_away_remaining_ms`, counting down to that connection's
//! deadline and no longer once the session is on a new connection
//! ([`go_away_remaining`]).
//!
//! Every tick the telemetry lane writes `session:elapsed_ms` (time since
//! setup) and then `session:silence_ms` (time since content last moved:
//! model parts or a transcript). This check reads those pairs from the
//! journal and holds them against the run's own events, not against the
//! session's code:
//!
//! * `elapsed_ms` grows from tick to tick, and `silence_ms` never exceeds
//!   it (silence is counted from setup at the latest);
//! * `silence_ms` never exceeds the time since content last moved at
//!   least [`SETTLED`] before the tick, plus [`LAG`]: a content event (a
//!   text, transcript or media delta, which only a content frame makes)
//!   the soak received, or (in-memory runs) a message the soak's user
//!   sent, typed or spoken, on a connection or between two. A frame handled just before a tick may reach the telemetry
//!   lane just after it (the lanes interleave as the seed says), and the
//!   soak receives an event a little after the session handled its frame:
//!   the two margins cover both, and are small next to what a session
//!   that stops counting some content writes (seconds, growing all run).
//!
//! * `silence_ms` is never less than the time since the latest moment
//!   content could have moved: a content frame the session read (model
//!   parts or a transcript, by the reference model's reading), plus
//!   [`LAG`] for the lane to hear of it; a content message the server got
//!   (or the tick's time, if it got it within [`LAG`] after); something
//!   the soak's user sent, plus [`LAG`]; the connection. A session that
//!   counts other messages as content (a tool's answer, say) writes less.
//!   In-memory runs only (the times come from the script's connections).
//!
//! A tick's time is read as the `connected` event's time plus the tick's
//! `elapsed_ms`: the telemetry lane starts with the connection. The lower
//! bound reads it from the journal's own timestamp of `silence_ms`.

use std::time::Duration;

use crate::clock::VIRTUAL_EPOCH;
use crate::executor::format_time;
use crate::session::LiveEvent;
use crate::soak::check::wire_order;
use crate::soak::run::record::RunRecord;

/// How long before a tick a content event must have been received for
/// the tick to owe it.
pub(crate) const SETTLED: Duration = Duration::from_millis(250);

/// How long after its frame was handled the soak may receive an event.
pub(crate) const LAG: Duration = Duration::from_millis(250);

/// One tick's signals, as the journal holds them.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Tick {
    elapsed: Duration,
    silence: Duration,
    /// When the journal says `silence_ms` was written (virtual time).
    written: Duration,
}

/// Checks the run's telemetry signals against its events.
pub(crate) fn check(run: &RunRecord) -> Result<(), String> {
    super::connection_state::check(run)?;
    time_in_phase(run)?;
    go_away_remaining(run)?;
    super::tick_keys::every_tick(run)?;
    ticks_agree(run)?;
    // After the ticks' own checks: a tick whose elapsed time is wrong is
    // named as such, not as a budget that does not add up.
    super::remaining_budget::check(run)
}

/// Each tick's `elapsed_ms` and `silence_ms` against the run's events.
fn ticks_agree(run: &RunRecord) -> Result<(), String> {
    let ticks = ticks(run);
    let Some(start) = run
        .events
        .iter()
        .find(|e| e.event.kind() == "connected")
        .map(|e| e.at)
    else {
        return Ok(());
    };
    let mut content: Vec<(Duration, &str)> = run
        .events
        .iter()
        .filter(|e| moves_content(&e.event))
        .map(|e| (e.at, "an event the run received"))
        .collect();
    // Content moves the user's way too: each message the user sent (text,
    // audio, a marker) the session took at once, connected or between
    // connections. In memory only: over a network the session may be
    // held up writing to a congested socket.
    if run.network.is_none() {
        content.extend(
            run.typed_at
                .iter()
                .map(|&at| (at, "a message the user sent")),
        );
        content.sort_by_key(|&(at, _)| at);
    }
    let moments = content_moments(run, start);
    let mut before: Option<Tick> = None;
    for (n, tick) in ticks.iter().enumerate() {
        let name = || {
            format!(
                "tick {} (elapsed_ms {}, silence_ms {})",
                n + 1,
                tick.elapsed.as_millis(),
                tick.silence.as_millis()
            )
        };
        if let Some(before) = before
            && tick.elapsed <= before.elapsed
        {
            return Err(format!(
                "{}: elapsed_ms did not grow from the tick before ({})",
                name(),
                before.elapsed.as_millis()
            ));
        }
        before = Some(*tick);
        if tick.silence > tick.elapsed {
            return Err(format!("{}: more silence than time since setup", name()));
        }
        let at = start + tick.elapsed;
        // Events are in the order (and so the times) the run received
        // them: the last one owed is found by halving, not by a scan.
        let owed = content.partition_point(|&(seen, _)| seen + SETTLED <= at);
        if let Some(&(seen, what)) = owed.checked_sub(1).and_then(|i| content.get(i)) {
            let bound = at - seen + LAG;
            if tick.silence > bound {
                return Err(format!(
                    "{} at t={}: content moved at t={} ({what}), so silence_ms can be at \
                     most {} there",
                    name(),
                    format_time(at),
                    format_time(seen),
                    bound.as_millis()
                ));
            }
        }
        if let Some(moments) = &moments {
            least_silence(tick, moments).map_err(|e| format!("{}: {e}", name()))?;
        }
    }
    Ok(())
}

/// The moments content may have moved, each kind in order of time.
struct Moments {
    /// Frames read and the user's sends: heard at most [`LAG`] after.
    heard: Vec<Duration>,
    /// Content messages the server got: sent at most then.
    sent: Vec<Duration>,
    /// The connection.
    start: Duration,
}

/// The run's [`Moments`]; `None` when its times are not all there (over
/// a network, or in a record a test changed).
fn content_moments(run: &RunRecord, start: Duration) -> Option<Moments> {
    if run.network.is_some()
        || run.server_frames_at.len() != run.server_frames.len()
        || run.sent_at.len() != run.sent.len()
    {
        return None;
    }
    // The reference model read every frame but the handshakes', in order
    // (worked out once per run): its flags are the frames' in turn.
    let mut read = wire_order::connections(run)
        .iter()
        .flat_map(|connection| &connection.frames)
        .map(|frame| frame.moves_content);
    let mut heard: Vec<Duration> = run
        .frames_read()
        .iter()
        .zip(&run.server_frames_at)
        .filter(|(frame, _)| {
            !wire_order::is_setup_complete(frame.payload().unwrap_or_default())
                && read.next().unwrap_or(false)
        })
        .map(|(_, at)| *at + LAG)
        .chain(run.typed_at.iter().map(|at| *at + LAG))
        .collect();
    heard.sort();
    let sent = run
        .sent
        .iter()
        .zip(&run.sent_at)
        .filter(|(message, _)| {
            message.get("clientContent").is_some() || message.get("realtimeInput").is_some()
        })
        .map(|(_, at)| *at)
        .collect();
    Some(Moments { heard, sent, start })
}

/// `tick`'s silence against the latest moment content may have moved
/// before it.
fn least_silence(tick: &Tick, moments: &Moments) -> Result<(), String> {
    // Millisecond rounding of the tick's time and of the silence.
    const ROUNDING: Duration = Duration::from_millis(2);
    let at = tick.written;
    let heard = moments
        .heard
        .iter()
        .rev()
        .find(|&&h| h.saturating_sub(LAG) <= at);
    // A message the server got within LAG after the tick may have left
    // before it.
    let sent = moments.sent.iter().rev().find(|&&s| s <= at + LAG);
    let latest = [Some(&moments.start), heard, sent]
        .into_iter()
        .flatten()
        .map(|&m| m.min(at))
        .max()
        .unwrap_or(at);
    let least = (at - latest).saturating_sub(ROUNDING);
    if tick.silence < least {
        return Err(format!(
            "at t={} silence_ms is {}, but content last moved at t={} at the latest (a \
             content frame read, a message sent, the user's input or the connection), so it \
             is at least {}",
            format_time(at),
            tick.silence.as_millis(),
            format_time(latest),
            least.as_millis()
        ));
    }
    Ok(())
}

/// Each `session:time_in_phase_ms` a session with phases writes is the
/// time, by the journal's own timestamps, since the latest
/// `session:phase` write before it (the phase it is in was entered then).
/// (That every tick writes one is [`tick_keys`](super::tick_keys)'.)
fn time_in_phase(run: &RunRecord) -> Result<(), String> {
    let mut entered = None;
    for entry in &run.journal {
        match entry.key.as_str() {
            "session:phase" => entered = Some((entry.timestamp, &entry.value)),
            "session:time_in_phase_ms" => {
                let Some((since, phase)) = &entered else {
                    return Err(format!(
                        "journal #{}: session:time_in_phase_ms written before any session:phase",
                        entry.seq
                    ));
                };
                let owed = (entry.timestamp - *since).as_millis() as u64;
                if entry.value.as_u64() != Some(owed) {
                    return Err(format!(
                        "journal #{}: session:time_in_phase_ms is {}, but the session entered \
                         phase {phase} {owed} ms before (journal timestamps)",
                        entry.seq, entry.value
                    ));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Each `session:go_away_remaining_ms` the session writes counts down to
/// the deadline of a `goAway` that stands: the latest the run received
/// before it, one received in the same instant (which the telemetry
/// lane may have handled just before the write or just after), or one
/// received at most [`LAG`] after (the run hears of a frame a little
/// after the session handled it), on the connection the write is made
/// on. A session that moved to a new connection since has
/// no deadline: the old connection's no longer stands, and a guard
/// reading the key would take the new connection for one about to end.
/// The value is the time left less the time since, give or take the lag.
/// The key is removed only as the session moves, after a `goAway`.
fn go_away_remaining(run: &RunRecord) -> Result<(), String> {
    let mut writes = run
        .journal
        .iter()
        .filter(|m| m.key == "session:go_away_remaining_ms")
        .peekable();
    if writes.peek().is_none() {
        return Ok(());
    }
    // (when received, the time left) of each goAway with a time left;
    // when the run heard of each new connection.
    let go_aways: Vec<(Duration, Duration)> = run
        .events
        .iter()
        .filter_map(|e| match &e.event {
            LiveEvent::GoAway {
                time_left: Some(left),
            } => Some((e.at, *left)),
            _ => None,
        })
        .collect();
    let moves: Vec<Duration> = run
        .events
        .iter()
        .filter(|e| matches!(e.event, LiveEvent::Resumed { .. }))
        .map(|e| e.at)
        .collect();
    for write in writes {
        let at = write.timestamp - VIRTUAL_EPOCH;
        let name = || {
            format!(
                "journal #{}: session:go_away_remaining_ms {} at t={}",
                write.seq,
                write.value,
                format_time(at)
            )
        };
        if write.removed {
            // Removed as the session moved, and only once some goAway
            // came: the lanes interleave, so the telemetry lane may hear
            // of the move up to a lag after the run does, or before.
            let moved = moves.iter().any(|&m| {
                m <= at + LAG && at <= m + LAG && go_aways.iter().any(|&(got, _)| got <= m)
            });
            if !moved {
                return Err(format!(
                    "{}: removed, but the session did not move to a new connection after a \
                     goAway then",
                    name()
                ));
            }
            continue;
        }
        // The goAways the write may count down from: the latest received
        // before it, and any received in its instant or within the lag
        // after.
        let latest = go_aways.iter().rposition(|&(got, _)| got < at);
        let mut candidates = go_aways
            .iter()
            .enumerate()
            .filter(|&(i, &(got, _))| Some(i) == latest || (at <= got && got <= at + LAG))
            .map(|(_, &g)| g)
            .peekable();
        if candidates.peek().is_none() {
            return Err(format!("{}, with no goAway before it", name()));
        }
        let mut first_problem = None;
        for (got, left) in candidates {
            match counts_down(write.value.as_u64(), at, got, left, &moves) {
                Ok(()) => {
                    first_problem = None;
                    break;
                }
                Err(why) => {
                    first_problem.get_or_insert(why);
                }
            }
        }
        if let Some(why) = first_problem {
            return Err(format!("{}: {why}", name()));
        }
    }
    Ok(())
}

/// Whether `value`, written at `at`, counts down from the `goAway`
/// received at `got` with `left`: no move to a new connection came
/// between them, and the value is `left` less the time since, give or
/// take [`LAG`].
fn counts_down(
    value: Option<u64>,
    at: Duration,
    got: Duration,
    left: Duration,
    moves: &[Duration],
) -> Result<(), String> {
    if let Some(moved) = moves.iter().find(|&&m| got < m && m + LAG < at) {
        return Err(format!(
            "the session moved to a new connection at t={}, after the goAway of t={}, so \
             that goAway's deadline no longer stands",
            format_time(*moved),
            format_time(got)
        ));
    }
    let most = left.saturating_sub(at.saturating_sub(got));
    let least = left.saturating_sub((at + LAG).saturating_sub(got));
    match value.map(Duration::from_millis) {
        Some(v) if least <= v && v <= most => Ok(()),
        _ => Err(format!(
            "the goAway received at t={} left {} ms, so between {} and {} ms remain then",
            format_time(got),
            left.as_millis(),
            least.as_millis(),
            most.as_millis()
        )),
    }
}

/// Whether the session makes `event` only from a frame that carries
/// content (model parts or a transcript chunk).
fn moves_content(event: &LiveEvent) -> bool {
    matches!(
        event,
        LiveEvent::TextDelta { .. }
            | LiveEvent::Media { .. }
            | LiveEvent::InputTranscriptDelta { .. }
            | LiveEvent::OutputTranscriptDelta { .. }
    )
}

/// Each tick's `elapsed_ms` and the `silence_ms` written after it, in
/// journal order.
fn ticks(run: &RunRecord) -> Vec<Tick> {
    let millis = |v: &serde_json::Value| v.as_u64().map(Duration::from_millis);
    let mut out = Vec::new();
    let mut elapsed = None;
    for entry in &run.journal {
        match entry.key.as_str() {
            "session:elapsed_ms" => elapsed = millis(&entry.value),
            "session:silence_ms" => {
                if let (Some(elapsed), Some(silence)) = (elapsed.take(), millis(&entry.value)) {
                    out.push(Tick {
                        elapsed,
                        silence,
                        written: entry.timestamp - VIRTUAL_EPOCH,
                    });
                }
            }
            _ => {}
        }
    }
    out
}
