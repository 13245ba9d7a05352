//! Temporal patterns: conditions that must hold for a length of clock time,
//! such as "the user has been silent for 5 seconds".
//!
//! A pattern is checked on events and on the session's 500 ms timer; the
//! clock decides how much time has passed, not when a check runs. A
//! pattern fires once per stretch in which its condition holds without a
//! break, as soon as a check sees the stretch long enough.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::clock::Timestamp;
use crate::state::State;

type Condition = Arc<dyn Fn(&State) -> bool + Send + Sync>;

/// A named condition and how long it must hold.
///
/// ```
/// use std::time::Duration;
/// use livesim::session::TemporalPattern;
///
/// let silence = TemporalPattern::sustained("long_silence", Duration::from_secs(5), |s| {
///     s.get_as::<u64>("session:silence_ms").is_some_and(|ms| ms > 0)
/// });
/// assert_eq!(silence.name(), "long_silence");
/// assert_eq!(silence.duration(), Duration::from_secs(5));
/// assert!(format!("{silence:?}").contains("5s"));
/// ```
#[derive(Clone)]
pub struct TemporalPattern {
    name: String,
    duration: Duration,
    condition: Condition,
}

impl fmt::Debug for TemporalPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TemporalPattern")
            .field("name", &self.name)
            .field("duration", &self.duration)
            .finish_non_exhaustive()
    }
}

impl TemporalPattern {
    /// Fires when `condition` has held for `duration` of clock time.
    pub fn sustained(
        name: impl Into<String>,
        duration: Duration,
        condition: impl Fn(&State) -> bool + Send + Sync + 'static,
    ) -> Self {
        TemporalPattern {
            name: name.into(),
            duration,
            condition: Arc::new(condition),
        }
    }

    /// The pattern's name, as its events carry it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How long the condition must hold.
    pub fn duration(&self) -> Duration {
        self.duration
    }
}

/// A pattern being watched during a session.
#[derive(Debug)]
pub struct PatternWatch {
    pattern: TemporalPattern,
    holding_since: Option<Timestamp>,
    fired: bool,
}

impl PatternWatch {
    /// Starts watching `pattern`.
    pub fn new(pattern: TemporalPattern) -> Self {
        PatternWatch {
            pattern,
            holding_since: None,
            fired: false,
        }
    }

    /// The pattern watched.
    pub fn pattern(&self) -> &TemporalPattern {
        &self.pattern
    }

    /// Checks the condition at `now`; true when the pattern fires.
    pub fn check(&mut self, state: &State, now: Timestamp) -> bool {
        if !(self.pattern.condition)(state) {
            self.holding_since = None;
            self.fired = false;
            return false;
        }
        let since = *self.holding_since.get_or_insert(now);
        if !self.fired && now - since >= self.pattern.duration {
            self.fired = true;
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fires_once_per_stretch_after_the_duration() {
        let state = State::new();
        let mut watch = PatternWatch::new(TemporalPattern::sustained(
            "quiet",
            Duration::from_secs(5),
            |s| s.is_true("quiet"),
        ));
        let at = |ms| Timestamp::from_unix_millis(ms);
        state.set("quiet", true);
        assert!(!watch.check(&state, at(1000)));
        assert!(!watch.check(&state, at(5999)));
        assert!(watch.check(&state, at(6000)), "5 s after the stretch began");
        assert!(!watch.check(&state, at(9000)), "once per stretch");
        state.set("quiet", false);
        assert!(!watch.check(&state, at(9500)));
        state.set("quiet", true);
        assert!(!watch.check(&state, at(10_000)));
        assert!(watch.check(&state, at(15_000)), "a new stretch fires again");
    }
}
