//! `patterns-follow-spec`: the `pattern_matched` events of a run are what
//! its agent file's `"temporal"` patterns imply for the run's state
//! journal, worked out by a small model of the timing (not by the
//! session's pattern watch).
//!
//! The session checks its patterns on events and on its timer: each tick
//! is a `session:elapsed_ms` entry in the journal, and the lane that
//! checks handles it within [`LAG`]; the soak receives an event within
//! [`LAG`] of its emission, so a match recorded at `t` was decided at a
//! check from `t - LAG` to `t`. A pattern's stretch starts at the
//! first check that sees its condition hold, and the pattern fires at the
//! first check that sees the stretch last its duration; a check that
//! sees the condition fail ends the stretch. Checks may miss a break in
//! the condition shorter than the time between them, so the model asks
//! only what every timing allows:
//!
//! - a match names a declared pattern, comes once the session had run
//!   for the pattern's duration, and its condition held at its check;
//! - no break a tick surely saw (the tick and its handling inside the
//!   break) lies in the duration before a match;
//! - two matches of a pattern have a moment between them at which its
//!   condition failed;
//! - a stretch of the condition that lasts past a tick, its duration,
//!   the next tick and their handling, while the session still ticks,
//!   has a match (since the start of the stretch the checks may have
//!   seen, across breaks no tick surely saw).

use std::time::Duration;

use crate::clock::VIRTUAL_EPOCH;
use crate::executor::format_time;
use crate::session::LiveEvent;
use crate::soak::agent::temporal::Sustained;
use crate::soak::check::state_model::StateModel;
use crate::soak::check::telemetry::LAG;
use crate::soak::run::record::RunRecord;

/// The check: `Ok` when the run's matches are the patterns'.
pub(crate) fn check(patterns: &[Sustained], run: &RunRecord) -> Result<(), String> {
    let matches: Vec<(Duration, &str)> = run
        .events
        .iter()
        .filter_map(|e| match &e.event {
            LiveEvent::PatternMatched { name } => Some((e.at, name.as_str())),
            _ => None,
        })
        .collect();
    if let Some((at, name)) = matches
        .iter()
        .find(|(_, name)| !patterns.iter().any(|p| p.name == *name))
    {
        return Err(format!(
            "a pattern named {name:?} matched at t={}, but the agent declares no such pattern",
            format_time(*at)
        ));
    }
    let ticks: Vec<Duration> = run
        .journal
        .iter()
        .filter(|m| m.key == "session:elapsed_ms")
        .map(|m| m.timestamp - VIRTUAL_EPOCH)
        .collect();
    let connected = run
        .events
        .iter()
        .find(|e| e.event.kind() == "connected")
        .map(|e| e.at);
    for pattern in patterns {
        let timeline = Timeline::of(pattern, run);
        let at: Vec<Duration> = matches
            .iter()
            .filter(|(_, name)| *name == pattern.name)
            .map(|(at, _)| *at)
            .collect();
        for &t in &at {
            timeline.allows_match(pattern, t, connected, &ticks)?;
        }
        for pair in at.windows(2) {
            if !timeline.failed_within(pair[0].saturating_sub(LAG), pair[1]) {
                return Err(format!(
                    "{} matched at t={} and again at t={}, but its condition ({}) held \
                     throughout: a pattern fires once per stretch",
                    pattern.name,
                    format_time(pair[0]),
                    format_time(pair[1]),
                    pattern.when
                ));
            }
        }
        timeline.owes_no_match(pattern, &at, &ticks)?;
    }
    Ok(())
}

/// When a pattern's condition held, by the journal: its value on the
/// empty state, then after each entry that changed it (so the values
/// alternate).
struct Timeline {
    points: Vec<(Duration, bool)>,
}

impl Timeline {
    fn of(pattern: &Sustained, run: &RunRecord) -> Timeline {
        let mut state = StateModel::default();
        let mut points = vec![(Duration::ZERO, state.holds(&pattern.when))];
        for entry in &run.journal {
            state.apply(entry);
            let holds = state.holds(&pattern.when);
            if points.last().is_some_and(|(_, was)| *was != holds) {
                points.push((entry.timestamp - VIRTUAL_EPOCH, holds));
            }
        }
        Timeline { points }
    }

    /// Whether the condition failed at some moment from `from` to `to`.
    fn failed_within(&self, from: Duration, to: Duration) -> bool {
        self.some_moment(from, to, false)
    }

    /// Whether the condition held at some moment from `from` to `to`.
    fn held_within(&self, from: Duration, to: Duration) -> bool {
        self.some_moment(from, to, true)
    }

    /// Whether the condition had `value` at some moment from `from` to
    /// `to`: as `from` began (before the entries stamped then; their order
    /// against a check is the lanes'), or after an entry in between.
    fn some_moment(&self, from: Duration, to: Duration, value: bool) -> bool {
        let before = self.points.iter().rev().find(|(at, _)| *at < from);
        before.is_some_and(|(_, holds)| *holds == value)
            || self
                .points
                .iter()
                .any(|(at, holds)| *holds == value && *at >= from && *at <= to)
    }

    /// The stretches in which it failed, `[start, end)`; the last may
    /// never end.
    fn breaks(&self) -> impl Iterator<Item = (Duration, Option<Duration>)> + '_ {
        self.points
            .iter()
            .enumerate()
            .filter(|(_, (_, holds))| !holds)
            .map(|(i, (at, _))| (*at, self.points.get(i + 1).map(|(end, _)| *end)))
    }

    fn allows_match(
        &self,
        pattern: &Sustained,
        t: Duration,
        connected: Option<Duration>,
        ticks: &[Duration],
    ) -> Result<(), String> {
        let name = &pattern.name;
        let when = format_time(t);
        if !self.held_within(t.saturating_sub(LAG), t) {
            return Err(format!(
                "{name} matched at t={when}, but its condition ({}) did not hold then (nor in \
                 the {} before, when the session may have decided it)",
                pattern.when,
                format_time(LAG)
            ));
        }
        let Some(connected) = connected else {
            return Err(format!("{name} matched at t={when}, before any connection"));
        };
        if t + LAG < connected + pattern.lasting {
            return Err(format!(
                "{name} matched at t={when}, {} after the session connected: its condition must \
                 hold for {}",
                format_time(t - connected),
                format_time(pattern.lasting)
            ));
        }
        // A break the session saw restarts the stretch after it.
        let window = t.saturating_sub(pattern.lasting);
        for (start, end) in self.breaks() {
            let Some(end) = end else { continue };
            // Seen before the match was decided, at `t - LAG` at the earliest.
            if end > window
                && end <= t
                && let Some(tick) = seen_by(ticks, start, end)
                && tick + LAG + LAG < t
            {
                return Err(format!(
                    "{name} matched at t={when}, but its condition ({}) failed from t={} to \
                     t={} (the tick at t={} saw it), so it had held for {} only, less than {}",
                    pattern.when,
                    format_time(start),
                    format_time(end),
                    format_time(tick),
                    format_time(t - end),
                    format_time(pattern.lasting)
                ));
            }
        }
        Ok(())
    }

    fn owes_no_match(
        &self,
        pattern: &Sustained,
        matches: &[Duration],
        ticks: &[Duration],
    ) -> Result<(), String> {
        for (idx, &(start, holds)) in self.points.iter().enumerate() {
            if !holds {
                continue;
            }
            let end = self.points.get(idx + 1).map(|(end, _)| *end);
            // The first tick in the stretch starts it for the session (at
            // the latest), the first tick a duration after that fires it.
            let Some(&first) = ticks.iter().find(|t| **t > start) else {
                break;
            };
            let Some(&firing) = ticks.iter().find(|t| **t >= first + LAG + pattern.lasting) else {
                break;
            };
            let deadline = firing + LAG;
            let still_ticking = ticks.last().is_some_and(|last| *last > deadline);
            if end.is_some_and(|end| end <= deadline) || !still_ticking {
                continue;
            }
            // Back across breaks no tick surely saw: the session may have
            // counted from an earlier stretch, and fired in it.
            let mut since = start;
            let mut k = idx;
            // points[k - 1] is the break before the stretch at points[k].
            while k >= 2 && seen_by(ticks, self.points[k - 1].0, self.points[k].0).is_none() {
                k -= 2;
                since = self.points[k].0;
            }
            if !matches.iter().any(|t| *t >= since && *t <= deadline + LAG) {
                return Err(format!(
                    "{}'s condition ({}) held from t={} to {}, but the pattern did not match by \
                     t={} (a tick at t={} starts the stretch, one at t={} ends its {}, and the \
                     event takes {} at most)",
                    pattern.name,
                    pattern.when,
                    format_time(start),
                    end.map(|e| format!("t={}", format_time(e)))
                        .unwrap_or_else(|| "the end".to_string()),
                    format_time(deadline + LAG),
                    format_time(first),
                    format_time(firing),
                    format_time(pattern.lasting),
                    format_time(LAG)
                ));
            }
        }
        Ok(())
    }
}

/// A tick the session surely handled inside `[start, end)`: one after the
/// break began whose handling, [`LAG`] at most, ended before it did.
fn seen_by(ticks: &[Duration], start: Duration, end: Duration) -> Option<Duration> {
    ticks.iter().copied().find(|t| *t > start && *t + LAG < end)
}
