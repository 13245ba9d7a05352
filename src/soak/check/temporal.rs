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
        timeline.judge(pattern, &at, connected, &ticks)?;
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
    /// The model's verdict on one pattern's matches (received at `at`),
    /// given when the connection came and the timer ticked.
    fn judge(
        &self,
        pattern: &Sustained,
        at: &[Duration],
        connected: Option<Duration>,
        ticks: &[Duration],
    ) -> Result<(), String> {
        for &t in at {
            self.allows_match(pattern, t, connected, ticks)?;
        }
        for pair in at.windows(2) {
            if !self.failed_within(pair[0].saturating_sub(LAG), pair[1]) {
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
        self.owes_no_match(pattern, at, ticks)
    }

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
                "{name} matched at t={when}, {} after the session connected (at t={}): its \
                 condition must hold for {}",
                format_time(t.saturating_sub(connected)),
                format_time(connected),
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

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::flow::Guard;

    const TICK: u64 = 500;
    const LAG_MS: u64 = 250;

    /// A pattern watch as the session's is documented, written again
    /// here: a check that sees the condition fail ends the stretch; the
    /// first that sees it hold starts one; the first that sees it last
    /// `lasting` fires, once per stretch. Returns the check times that
    /// fired.
    fn watch(points: &[(u64, bool)], checks: &[u64], lasting: u64) -> Vec<u64> {
        let holds = |c: u64| {
            points
                .iter()
                .rev()
                .find(|(at, _)| *at <= c)
                .is_some_and(|(_, h)| *h)
        };
        let (mut since, mut fired, mut out) = (None, false, Vec::new());
        for &c in checks {
            if !holds(c) {
                (since, fired) = (None, false);
                continue;
            }
            let start = *since.get_or_insert(c);
            if !fired && c - start >= lasting {
                fired = true;
                out.push(c);
            }
        }
        out
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    proptest! {
        /// For every condition timeline and every schedule of checks the
        /// session's timing allows (a tick every 500 ms handled within
        /// 250 ms, checks on events at any time, each match received
        /// within 250 ms), the matches of a correct pattern watch pass
        /// the model.
        #[test]
        fn a_correct_watch_passes_whatever_the_timing(
            first in any::<bool>(),
            gaps in proptest::collection::vec(1u64..3_000, 0..12),
            start in 0u64..1_000,
            tick_lags in proptest::collection::vec(0u64..=LAG_MS, 60),
            event_checks in proptest::collection::vec(0u64..25_000, 0..30),
            receipt_lags in proptest::collection::vec(0u64..=LAG_MS, 30),
            connected_lag in 0u64..=LAG_MS,
            lasting in prop_oneof![Just(0u64), 1u64..4_000],
        ) {
            // The condition: `first` from the start, flipping after each gap.
            let mut points = vec![(0u64, first)];
            let mut at = 0;
            for gap in gaps {
                at += gap;
                let last = points.last().map(|(_, h)| *h).unwrap_or(first);
                points.push((at, !last));
            }
            // Ticks from the connection, each handled in order within LAG.
            let ticks: Vec<u64> = (1..=tick_lags.len() as u64).map(|k| start + k * TICK).collect();
            let mut handled = Vec::new();
            for (tick, lag) in ticks.iter().zip(&tick_lags) {
                let h = (tick + lag).max(handled.last().copied().unwrap_or(0));
                handled.push(h);
            }
            let end = *ticks.last().unwrap();
            let mut checks: Vec<u64> = handled
                .into_iter()
                .chain(event_checks.into_iter().map(|c| start + c).filter(|c| *c <= end))
                .collect();
            checks.sort_unstable();
            let fired = watch(&points, &checks, lasting);
            let mut received: Vec<Duration> = Vec::new();
            for (c, lag) in fired.iter().zip(receipt_lags.iter().cycle()) {
                let r = ms(c + lag).max(received.last().copied().unwrap_or_default());
                received.push(r);
            }
            let timeline = Timeline {
                points: points.iter().map(|(at, h)| (ms(*at), *h)).collect(),
            };
            let pattern = Sustained {
                name: "p".into(),
                when: Guard::Exists("k".into()),
                lasting: ms(lasting),
            };
            let ticks: Vec<Duration> = ticks.into_iter().map(ms).collect();
            let verdict = timeline.judge(&pattern, &received, Some(ms(start + connected_lag)), &ticks);
            prop_assert_eq!(verdict, Ok(()), "points {:?} checks {:?} fired {:?}", points, checks, fired);
        }
    }
}
