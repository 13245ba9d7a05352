//! Session resumption: the reconnect policy a session follows when its
//! connection ends without being asked to, and what it keeps to resume.
//!
//! Off by default. With [`Resumption::on`] the setup asks for resumption
//! (`sessionResumption`), and the session keeps the latest handle the
//! server offers (only a resumable, non-empty one: an absent or empty
//! handle never replaces a stored one). What happens when a connection
//! ends, by its close:
//!
//! | end | what the session does |
//! |---|---|
//! | `goAway` | moves before `timeLeft` runs out: after the turn in progress when there is time (half of `timeLeft`), else at once; the new connection is opened and set up (with the current handle) before the old one is closed with 1000 |
//! | 1000, 1006, 1011, other codes, I/O errors | with a handle: reconnects with exponential backoff and jitter, resuming; without one: ends, as Google's ADK does |
//! | 1007, 1008 | fatal: the session ends |
//! | 1008 `session not found` | the handle is dropped and a fresh session starts (no handle, no history) |
//! | attempts exhausted | the session ends with the last cause |
//!
//! The attempt counter resets after every `setupComplete`. Backoff sleeps
//! are tokio's (virtual under simulation), their jitter drawn from the
//! seed's stream `session/reconnect`. History is never resent on a resumed
//! connection: the server has it. Client messages sent while reconnecting
//! are queued and sent after the new `setupComplete`. With transparent
//! resumption (Vertex's `lastConsumedClientMessageIndex`), every content
//! message (`clientContent`, `realtimeInput`; livesim counts these, from 1,
//! setups and tool responses not counted) the server had not consumed is
//! sent again, in order, once, before the queued ones.
//!
//! Tool calls are answered only on the connection that issued them (call
//! ids belong to their connection): a tool still running when its
//! connection ends is not aborted (a half-run payment is worse) but its
//! answer is dropped, with a warning; the flow journal records its result,
//! since it ran. A tool never runs twice for one call.
//!
//! The handle is a secret: no event, trace, log line, error or journal
//! entry holds it.

use std::fmt;
use std::time::Duration;

/// Whether and how a session reconnects (see the module docs).
///
/// ```
/// use std::time::Duration;
/// use livesim::session::Resumption;
///
/// let policy = Resumption::on()
///     .attempts(3)
///     .backoff(Duration::from_millis(100), Duration::from_secs(2));
/// assert_eq!(policy.max_attempts(), 3);
/// assert!(!Resumption::off().is_on());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resumption {
    on: bool,
    attempts: u32,
    initial: Duration,
    max: Duration,
    transparent: bool,
}

impl Default for Resumption {
    fn default() -> Self {
        Self::off()
    }
}

impl Resumption {
    /// No resumption: a connection that ends ends the session.
    pub fn off() -> Self {
        Resumption {
            on: false,
            ..Self::on()
        }
    }

    /// Resumption with the default policy: 5 attempts, backoff from
    /// 250 ms doubling to 5 s, not transparent.
    pub fn on() -> Self {
        Resumption {
            on: true,
            attempts: 5,
            initial: Duration::from_millis(250),
            max: Duration::from_secs(5),
            transparent: false,
        }
    }

    /// Attempts per reconnect before the session gives up (at least 1).
    pub fn attempts(mut self, attempts: u32) -> Self {
        self.attempts = attempts.max(1);
        self
    }

    /// The wait before the first attempt, doubling up to `max`.
    pub fn backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.initial = initial;
        self.max = max.max(initial);
        self
    }

    /// Transparent resumption (Vertex): asks the server for
    /// `lastConsumedClientMessageIndex` and replays what it had not
    /// consumed.
    pub fn transparent(mut self, on: bool) -> Self {
        self.transparent = on;
        self
    }

    /// Whether resumption is on.
    pub fn is_on(&self) -> bool {
        self.on
    }

    /// Attempts per reconnect.
    pub fn max_attempts(&self) -> u32 {
        self.attempts
    }

    /// Whether resumption is transparent.
    pub fn is_transparent(&self) -> bool {
        self.transparent
    }

    /// The declared backoff: the wait before the first attempt, and the
    /// longest wait it doubles up to. The soak's `reconnect-ends` bounds
    /// every reconnect with these numbers, not with the session's own
    /// backoff.
    ///
    /// ```
    /// use std::time::Duration;
    /// use livesim::session::Resumption;
    ///
    /// let policy = Resumption::on().backoff(Duration::from_millis(250), Duration::from_secs(4));
    /// assert_eq!(
    ///     policy.backoff_bounds(),
    ///     (Duration::from_millis(250), Duration::from_secs(4))
    /// );
    /// ```
    pub fn backoff_bounds(&self) -> (Duration, Duration) {
        (self.initial, self.max)
    }

    /// The wait before attempt `attempt` (1-based): the exponential step,
    /// less up to half of it drawn from `jitter` (a number in `[0, 1)`).
    pub(crate) fn delay(&self, attempt: u32, jitter: f64) -> Duration {
        let doublings = attempt.saturating_sub(1).min(20);
        let step = self.initial.saturating_mul(1 << doublings).min(self.max);
        let cut = step.mul_f64(jitter.clamp(0.0, 1.0) / 2.0);
        // Whole milliseconds, so virtual time stays exact.
        Duration::from_millis((step - cut).as_millis() as u64)
    }

    /// The setup's `sessionResumption` object, resuming `handle`.
    pub(crate) fn setup_field(&self, handle: Option<&Handle>) -> serde_json::Value {
        let mut field = serde_json::Map::new();
        if let Some(handle) = handle {
            field.insert("handle".into(), handle.0.clone().into());
        }
        if self.transparent {
            field.insert("transparent".into(), true.into());
        }
        serde_json::Value::Object(field)
    }
}

/// A resumption handle: a secret that prints as `<handle>`.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Handle(String);

impl Handle {
    pub fn new(handle: &str) -> Self {
        Handle(handle.to_string())
    }
}

impl fmt::Debug for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<handle>")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_its_cap_and_jitter_only_shortens() {
        let p = Resumption::on().backoff(Duration::from_millis(100), Duration::from_millis(500));
        let waits: Vec<u128> = (1..=5).map(|a| p.delay(a, 0.0).as_millis()).collect();
        assert_eq!(waits, [100, 200, 400, 500, 500]);
        assert_eq!(p.delay(2, 0.999).as_millis(), 100);
        assert_eq!(format!("{:?}", Handle::new("secret")), "<handle>");
    }
}
