//! The `telemetry` invariant: the signals the session writes to state on
//! its timer agree with what the run saw.
//!
//! A session with phases also writes `session:time_in_phase_ms` on each
//! tick: the time since the latest `session:phase` write, by the
//! journal's own timestamps.
//!
//! Every tick the telemetry lane writes `session:elapsed_ms` (time since
//! setup) and then `session:silence_ms` (time since content last moved:
//! model parts or a transcript). This check reads those pairs from the
//! journal and holds them against the run's own events, not against the
//! session's code:
//!
//! * `elapsed_ms` grows from tick to tick, and `silence_ms` never exceeds
//!   it (silence is counted from setup at the latest);
//! * `silence_ms` never exceeds the time since the last content event (a
//!   text, transcript or media delta, which only a content frame makes)
//!   the soak received at least [`SETTLED`] before the tick, plus
//!   [`LAG`]. A frame handled just before a tick may reach the telemetry
//!   lane just after it (the lanes interleave as the seed says), and the
//!   soak receives an event a little after the session handled its frame:
//!   the two margins cover both, and are small next to what a session
//!   that stops counting some content writes (seconds, growing all run).
//!
//! A tick's time is read as the `connected` event's time plus the tick's
//! `elapsed_ms`: the telemetry lane starts with the connection.

use std::time::Duration;

use crate::executor::format_time;
use crate::session::LiveEvent;
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
}

/// Checks the run's telemetry signals against its events.
pub(crate) fn check(run: &RunRecord) -> Result<(), String> {
    time_in_phase(run)?;
    let ticks = ticks(run);
    let Some(start) = run
        .events
        .iter()
        .find(|e| e.event.kind() == "connected")
        .map(|e| e.at)
    else {
        return Ok(());
    };
    let content: Vec<Duration> = run
        .events
        .iter()
        .filter(|e| moves_content(&e.event))
        .map(|e| e.at)
        .collect();
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
        let owed = content.partition_point(|&seen| seen + SETTLED <= at);
        if let Some(&seen) = owed.checked_sub(1).and_then(|i| content.get(i)) {
            let bound = at - seen + LAG;
            if tick.silence > bound {
                return Err(format!(
                    "{} at t={}: content moved at t={} (an event the run received), so \
                     silence_ms can be at most {} there",
                    name(),
                    format_time(at),
                    format_time(seen),
                    bound.as_millis()
                ));
            }
        }
    }
    Ok(())
}

/// Each `session:time_in_phase_ms` a session with phases writes is the
/// time, by the journal's own timestamps, since the latest
/// `session:phase` write before it (the phase it is in was entered then).
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
                    out.push(Tick { elapsed, silence });
                }
            }
            _ => {}
        }
    }
    out
}
