//! Clocks: where every time-dependent decision of a session reads the time.
//!
//! Temporal patterns, the phase machine, session signals, the resolver
//! cache and the mutation journal never ask the operating system for the
//! time; they ask a [`Clock`]. In production that is a [`SystemClock`]; in
//! a test it can be a [`ManualClock`] that moves only when the test moves
//! it, or the [`VirtualClock`] that follows the simulated runtime's virtual
//! time. Same inputs, same clock readings, same decisions.
//!
//! A clock reads as a [`Timestamp`]: wall-clock time in nanoseconds since
//! the Unix epoch. Subtracting two gives a `Duration`, which is what
//! components compare against their thresholds.

use std::fmt;
use std::ops::{Add, Sub};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The runtime's instant `after` from now. A duration past what the
/// runtime's clock can add (`Duration::MAX`, as a user writes "never") is
/// thirty years, as far as any session goes: tokio's own timeouts treat
/// it the same way, where `Instant + Duration` would panic.
pub(crate) fn deadline_in(after: Duration) -> tokio::time::Instant {
    const FAR: Duration = Duration::from_secs(30 * 365 * 24 * 3600);
    let now = tokio::time::Instant::now();
    now.checked_add(after).unwrap_or(now + FAR)
}

/// A point in wall-clock time: nanoseconds since the Unix epoch (UTC).
///
/// ```
/// use std::time::Duration;
/// use livesim::clock::Timestamp;
///
/// let t0 = Timestamp::from_unix_millis(1_700_000_000_000);
/// let t1 = t0 + Duration::from_millis(1500);
/// assert_eq!(t1 - t0, Duration::from_millis(1500));
/// assert_eq!(t0 - t1, Duration::ZERO); // never negative
/// assert_eq!(t0.to_string(), "2023-11-14T22:13:20.000Z");
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp(u64);

impl Timestamp {
    /// The Unix epoch.
    pub const EPOCH: Timestamp = Timestamp(0);

    /// A timestamp `nanos` nanoseconds after the epoch.
    pub const fn from_unix_nanos(nanos: u64) -> Self {
        Timestamp(nanos)
    }

    /// A timestamp `millis` milliseconds after the epoch.
    pub const fn from_unix_millis(millis: u64) -> Self {
        Timestamp(millis.saturating_mul(1_000_000))
    }

    /// Nanoseconds since the epoch.
    pub const fn unix_nanos(self) -> u64 {
        self.0
    }

    /// Whole milliseconds since the epoch.
    pub const fn unix_millis(self) -> u64 {
        self.0 / 1_000_000
    }

    /// Time since `earlier`, or zero if `earlier` is later.
    pub fn saturating_since(self, earlier: Timestamp) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
}

impl From<SystemTime> for Timestamp {
    /// Times before the epoch become the epoch.
    fn from(time: SystemTime) -> Self {
        let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
        Timestamp(u64::try_from(since.as_nanos()).unwrap_or(u64::MAX))
    }
}

impl From<Timestamp> for SystemTime {
    fn from(t: Timestamp) -> Self {
        UNIX_EPOCH + Duration::from_nanos(t.0)
    }
}

impl Sub for Timestamp {
    type Output = Duration;

    /// The time between two readings; zero when `rhs` is later.
    fn sub(self, rhs: Timestamp) -> Duration {
        self.saturating_since(rhs)
    }
}

impl Add<Duration> for Timestamp {
    type Output = Timestamp;

    fn add(self, rhs: Duration) -> Timestamp {
        Timestamp(
            self.0
                .saturating_add(u64::try_from(rhs.as_nanos()).unwrap_or(u64::MAX)),
        )
    }
}

impl fmt::Display for Timestamp {
    /// RFC 3339 in UTC with milliseconds: `2026-11-30T05:37:18.123Z`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secs = self.0 / 1_000_000_000;
        let millis = (self.0 / 1_000_000) % 1000;
        let (days, rem) = (secs / 86_400, secs % 86_400);
        let (year, month, day) = civil_from_days(days as i64);
        write!(
            f,
            "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
            rem / 3600,
            (rem / 60) % 60,
            rem % 60
        )
    }
}

impl serde::Serialize for Timestamp {
    /// As whole milliseconds since the epoch, the unit of every livesim file.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.unix_millis())
    }
}

impl<'de> serde::Deserialize<'de> for Timestamp {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        u64::deserialize(d).map(Timestamp::from_unix_millis)
    }
}

impl fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Timestamp({self})")
    }
}

/// Days since 1970-01-01 to (year, month, day): Howard Hinnant's algorithm.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// A source of the current time.
///
/// Implementations must never go backwards: components subtract readings.
pub trait Clock: Send + Sync + fmt::Debug {
    /// The current time.
    fn now(&self) -> Timestamp;
}

/// A clock shared by everything that reads it.
pub type SharedClock = Arc<dyn Clock>;

/// Anything that can become a [`SharedClock`]: an `Arc` of any clock type,
/// or a `SharedClock` itself. Lets `with_clock(clock.clone())` take an
/// `Arc<ManualClock>` directly.
pub trait IntoSharedClock {
    /// The shared form.
    fn into_shared_clock(self) -> SharedClock;
}

impl<C: Clock + 'static> IntoSharedClock for Arc<C> {
    fn into_shared_clock(self) -> SharedClock {
        self
    }
}

impl IntoSharedClock for SharedClock {
    fn into_shared_clock(self) -> SharedClock {
        self
    }
}

/// The operating system's clock, made monotonic.
///
/// It reads the wall clock once, when created, and from then on adds the
/// monotonic time elapsed, so an NTP step never makes it go backwards.
/// This is the one place in livesim that reads the real time.
#[derive(Debug)]
pub struct SystemClock {
    origin: Timestamp,
    started: std::time::Instant,
}

impl SystemClock {
    /// A clock reading the current system time.
    #[allow(clippy::disallowed_methods)] // the production clock: reading real time is its job
    pub fn new() -> Self {
        SystemClock {
            origin: Timestamp::from(SystemTime::now()),
            started: std::time::Instant::now(),
        }
    }
}

impl Default for SystemClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        self.origin + self.started.elapsed()
    }
}

/// A clock that moves only when told to.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use livesim::clock::{Clock, ManualClock};
///
/// let clock = Arc::new(ManualClock::new());
/// let t0 = clock.now();
/// clock.advance(Duration::from_secs(5));
/// assert_eq!(clock.now() - t0, Duration::from_secs(5));
/// clock.set_elapsed(Duration::from_secs(2)); // earlier: ignored
/// assert_eq!(clock.elapsed(), Duration::from_secs(5));
/// ```
#[derive(Debug)]
pub struct ManualClock {
    origin: Timestamp,
    elapsed: Mutex<Duration>,
}

impl ManualClock {
    /// A clock whose time starts at the current system time.
    pub fn new() -> Self {
        Self::starting_at(SystemClock::new().now())
    }

    /// A clock whose time starts at `origin`, e.g. a recording's first
    /// timestamp.
    pub fn starting_at(origin: impl Into<Timestamp>) -> Self {
        ManualClock {
            origin: origin.into(),
            elapsed: Mutex::new(Duration::ZERO),
        }
    }

    fn elapsed_lock(&self) -> std::sync::MutexGuard<'_, Duration> {
        // A Duration cannot be left half-written; a poisoned lock is fine.
        self.elapsed.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Moves the clock forward by `d`.
    pub fn advance(&self, d: Duration) {
        let mut elapsed = self.elapsed_lock();
        *elapsed = elapsed.saturating_add(d);
    }

    /// Moves the clock to `d` after its origin, if that is later than now;
    /// never goes backwards.
    pub fn set_elapsed(&self, d: Duration) {
        let mut elapsed = self.elapsed_lock();
        if d > *elapsed {
            *elapsed = d;
        }
    }

    /// Time since the origin.
    pub fn elapsed(&self) -> Duration {
        *self.elapsed_lock()
    }

    /// Where the clock started.
    pub fn origin(&self) -> Timestamp {
        self.origin
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        self.origin + self.elapsed()
    }
}

/// The wall-clock origin of virtual time: 2026-01-01T00:00:00Z. Fixed, so a
/// simulated run's timestamps are the same on every machine and every day.
pub const VIRTUAL_EPOCH: Timestamp = Timestamp::from_unix_millis(1_767_225_600_000);

/// A clock that follows tokio's time: virtual under the simulated runtime
/// (so its readings are a function of the seed), real elsewhere.
///
/// It reads [`VIRTUAL_EPOCH`] when created and moves with
/// `tokio::time::Instant` from then on.
#[derive(Debug)]
pub struct VirtualClock {
    origin: Timestamp,
    started: tokio::time::Instant,
}

impl VirtualClock {
    /// A clock starting at [`VIRTUAL_EPOCH`] now.
    pub fn new() -> Self {
        Self::starting_at(VIRTUAL_EPOCH)
    }

    /// A clock starting at `origin` now.
    pub fn starting_at(origin: Timestamp) -> Self {
        VirtualClock {
            origin,
            started: tokio::time::Instant::now(),
        }
    }
}

impl Default for VirtualClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for VirtualClock {
    fn now(&self) -> Timestamp {
        self.origin + self.started.elapsed()
    }
}

/// The clock a session uses when none is given: the [`VirtualClock`] under
/// simulation, the [`SystemClock`] elsewhere.
pub fn default_clock() -> SharedClock {
    if crate::executor::is_simulated() {
        Arc::new(VirtualClock::new())
    } else {
        Arc::new(SystemClock::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_dates_across_eras() {
        assert_eq!(Timestamp::EPOCH.to_string(), "1970-01-01T00:00:00.000Z");
        assert_eq!(VIRTUAL_EPOCH.to_string(), "2026-01-01T00:00:00.000Z");
        // A leap day.
        assert_eq!(
            Timestamp::from_unix_millis(951_782_400_123).to_string(),
            "2000-02-29T00:00:00.123Z"
        );
    }

    #[test]
    fn system_time_round_trips() {
        let t = Timestamp::from_unix_nanos(1_234_567_890_123_456_789);
        assert_eq!(Timestamp::from(SystemTime::from(t)), t);
    }

    #[test]
    fn manual_clock_never_goes_backwards() {
        let clock = ManualClock::starting_at(Timestamp::from_unix_millis(1000));
        clock.set_elapsed(Duration::from_secs(3));
        clock.set_elapsed(Duration::from_secs(1));
        assert_eq!(clock.now(), Timestamp::from_unix_millis(4000));
        clock.advance(Duration::from_millis(250));
        assert_eq!(clock.elapsed(), Duration::from_millis(3250));
    }

    #[cfg(feature = "simulation")]
    #[test]
    fn virtual_clock_follows_simulated_time() {
        let out = crate::executor::Simulation::new(crate::Seed::new(1))
            .run(|| async {
                let clock = VirtualClock::new();
                tokio::time::sleep(Duration::from_secs(90)).await;
                clock.now()
            })
            .unwrap();
        assert_eq!(out.value, VIRTUAL_EPOCH + Duration::from_secs(90));
    }
}
