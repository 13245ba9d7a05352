//! The hang guard: a run watched from outside its simulation.
//!
//! A task that never returns `Pending` (a busy loop in a tool, or in the
//! session) never gives the executor back its thread, so nothing inside
//! the simulation can notice: not the deadlock watchdog, not the virtual
//! time limit. A [`Watch`] is the run's window for a thread outside it:
//! the thread running a seed notes what runs and since when (wall time),
//! and the simulation it starts shares its trace. A sentinel (the soak's
//! coordinating thread, or the thread [`guard`] starts for a seed runner)
//! reads the wall clock, and past a bound reports the run as a hang: its
//! name, its replay line and the last entries of its trace.
//!
//! The bound counts the wall time the process ran, as its sentinel saw
//! it: each look credits the time since the one before, up to
//! [`STOPPED`]. A longer gap means the sentinel itself did not run (the
//! process was stopped with Ctrl-Z or `SIGSTOP`, or its machine paused),
//! so that stretch is not held against the run: a soak resumed with `fg`
//! reports no hang it did not have.
//!
//! Reading the wall clock here is allowed for the same reason as the
//! soak's time budget: it decides when a run is given up on, never what
//! happens inside one.

use std::cell::RefCell;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::trace::Trace;

/// How long a run may take in wall time before it is reported as a hang,
/// unless `LIVESIM_HANG` says otherwise (`90s`, `5m`).
pub const DEFAULT_HANG: Duration = Duration::from_secs(60);

/// The environment variable that sets the hang bound.
pub const HANG_VARIABLE: &str = "LIVESIM_HANG";

/// The hang bound: `LIVESIM_HANG` when set (`30s`, `2m`, `500ms`), else
/// [`DEFAULT_HANG`]. A value that is not a bound (`garbage`, `0s`) is not
/// silently ignored: the first time it is read, one line on stderr names
/// it and the default used instead. Set but empty counts as not set.
pub fn hang_bound() -> Duration {
    let Some(value) = std::env::var_os(HANG_VARIABLE).filter(|v| !v.is_empty()) else {
        return DEFAULT_HANG;
    };
    match value.to_str().and_then(parse) {
        Some(bound) => bound,
        None => {
            static WARNED: std::sync::Once = std::sync::Once::new();
            WARNED.call_once(|| {
                // Past a test harness's capture, like the hang report: a
                // setting that is ignored must be seen.
                use std::io::Write as _;
                let _ = writeln!(std::io::stderr().lock(), "{}", not_a_bound(&value));
            });
            DEFAULT_HANG
        }
    }
}

/// The warning for a `LIVESIM_HANG` that is not a bound.
fn not_a_bound(value: &std::ffi::OsStr) -> String {
    format!(
        "livesim: warning: {HANG_VARIABLE}={value:?} is not a hang bound, so the default, \
         {}s, is used: write a whole number of ms, s or m above zero (500ms, 30s, 2m), or \
         unset it",
        DEFAULT_HANG.as_secs()
    )
}

fn parse(text: &str) -> Option<Duration> {
    let text = text.trim();
    let (number, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit())?);
    let n: u64 = number.parse().ok()?;
    match unit {
        "ms" => Some(Duration::from_millis(n)),
        "s" => Some(Duration::from_secs(n)),
        "m" => n.checked_mul(60).map(Duration::from_secs),
        _ => None,
    }
    .filter(|d| !d.is_zero())
}

/// The longest gap between two looks at a run that counts in full: a
/// sentinel looks every 100 ms (the soak's every 50 ms), so a longer one
/// means this process was not running.
pub(crate) const STOPPED: Duration = Duration::from_secs(2);

/// The wall clock, which only a sentinel reads: it decides when a run is
/// given up on, never what happens inside one.
pub(crate) fn wall_clock() -> Instant {
    #[allow(clippy::disallowed_methods)]
    Instant::now()
}

/// One thread's run, as a sentinel sees it.
#[derive(Default)]
pub(crate) struct Watch {
    state: Mutex<Option<Watched>>,
}

struct Watched {
    what: String,
    replay: String,
    /// When the last look was (the run's start before the first).
    looked: Instant,
    /// The wall time the run is held to have taken: the gaps between
    /// looks, each at most [`STOPPED`].
    ran: Duration,
    trace: Option<Arc<Mutex<Trace>>>,
    reported: bool,
}

/// A run that outlived the bound.
#[derive(Clone, Debug)]
pub struct Hang {
    /// What was running (`weather seed 0x1f`).
    pub what: String,
    /// The line that replays it.
    pub replay: String,
    /// How long it had run, in wall time while the process ran.
    pub after: Duration,
    /// The last entries of its trace, one per line (empty when the run
    /// had not started its simulation).
    pub tail: String,
}

impl fmt::Display for Hang {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "HANG {}: still running after {:.1}s of wall time: a task that never \
             yields (a busy loop with no .await in a tool or the session) holds the \
             executor's thread",
            self.what,
            self.after.as_secs_f64()
        )?;
        if !self.tail.is_empty() {
            writeln!(f, "  last trace entries:")?;
            for line in self.tail.lines() {
                writeln!(f, "    {line}")?;
            }
        }
        write!(f, "  replay: {}", self.replay)
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<Watch>>> = const { RefCell::new(None) };
}

/// The last trace entries a hang report shows.
const TAIL: usize = 12;

impl Watch {
    /// Runs `f` on this thread watched as `what`, replayed by `replay`.
    pub(crate) fn run<T>(
        self: &Arc<Self>,
        what: String,
        replay: String,
        f: impl FnOnce() -> T,
    ) -> T {
        let started = wall_clock();
        *self.lock() = Some(Watched {
            what,
            replay,
            looked: started,
            ran: Duration::ZERO,
            trace: None,
            reported: false,
        });
        struct Done<'a>(&'a Watch, Option<Arc<Watch>>);
        impl Drop for Done<'_> {
            fn drop(&mut self) {
                *self.0.lock() = None;
                CURRENT.with(|c| *c.borrow_mut() = self.1.take());
            }
        }
        let previous = CURRENT.with(|c| c.replace(Some(self.clone())));
        let _done = Done(self, previous);
        f()
    }

    /// The run past `bound`, the first time it is seen past it. Called
    /// by the sentinel every time it looks.
    pub(crate) fn overdue(&self, bound: Duration) -> Option<Hang> {
        self.overdue_at(bound, wall_clock())
    }

    /// [`overdue`](Self::overdue), looked at `now`.
    fn overdue_at(&self, bound: Duration, now: Instant) -> Option<Hang> {
        let mut state = self.lock();
        let watched = state.as_mut()?;
        let gap = now.saturating_duration_since(watched.looked);
        watched.looked = watched.looked.max(now);
        watched.ran += gap.min(STOPPED);
        let after = watched.ran;
        if watched.reported || after < bound {
            return None;
        }
        watched.reported = true;
        let tail = watched
            .trace
            .as_ref()
            .map(|trace| {
                let trace = trace.lock().unwrap_or_else(|p| p.into_inner());
                trace.tail(TAIL)
            })
            .unwrap_or_default();
        Some(Hang {
            what: watched.what.clone(),
            replay: watched.replay.clone(),
            after,
            tail,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Watched>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A simulation starting on this thread shows its trace to the watch, if
/// the thread is watched.
pub(crate) fn share_trace(trace: &Arc<Mutex<Trace>>) {
    CURRENT.with(|c| {
        if let Some(watch) = c.borrow().as_ref()
            && let Some(watched) = watch.lock().as_mut()
        {
            watched.trace = Some(trace.clone());
        }
    });
}

/// A thread that watches a [`Watch`] every 100 ms and, past the bound,
/// prints the hang report to stderr and ends the process with status 101:
/// the hung thread cannot be stopped from outside, and a test that hangs
/// must not hang its whole run. The seed runner (and so every
/// `#[livesim::test]`) runs its seeds under one. Stops when dropped.
pub(crate) struct Sentinel {
    stop: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Sentinel {
    pub(crate) fn exiting(watch: Arc<Watch>, bound: Duration) -> Sentinel {
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("livesim-hang-guard".to_string())
            .spawn(move || {
                loop {
                    match stopped.recv_timeout(Duration::from_millis(100)) {
                        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                        _ => return,
                    }
                    if let Some(hang) = watch.overdue(bound) {
                        // Past the test harness's capture: the process
                        // ends before it would print what it captured.
                        use std::io::Write as _;
                        let report = crate::wire::scrub_known(&hang.to_string());
                        let _ = writeln!(std::io::stderr().lock(), "\n{report}");
                        std::process::exit(101);
                    }
                }
            })
            .ok();
        Sentinel {
            stop: Some(stop),
            thread,
        }
    }
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        self.stop.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hang_bounds_parse_and_bad_ones_fall_back() {
        assert_eq!(parse("30s"), Some(Duration::from_secs(30)));
        assert_eq!(parse("2m"), Some(Duration::from_secs(120)));
        assert_eq!(parse("500ms"), Some(Duration::from_millis(500)));
        for bad in [
            "",
            "s",
            "10",
            "0s",
            "1h",
            "-3s",
            "3 s",
            "999999999999999999m",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }

    // A bad LIVESIM_HANG is named in a warning, with the default used and
    // how to write one (it used to fall back to 60s without a word).
    #[test]
    fn a_bad_hang_bound_is_named_with_the_default_used() {
        let warning = not_a_bound(std::ffi::OsStr::new("garbage"));
        assert!(
            warning.contains("LIVESIM_HANG=\"garbage\" is not a hang bound"),
            "{warning}"
        );
        assert!(warning.contains("the default, 60s, is used"), "{warning}");
        assert!(warning.contains("500ms, 30s, 2m"), "{warning}");
    }

    // A watched run past the bound is reported once, with what it was and
    // its replay line; a run within it, or none, is not.
    #[test]
    fn a_run_past_the_bound_is_reported_once() {
        let watch = Arc::new(Watch::default());
        assert!(watch.overdue(Duration::ZERO).is_none());
        watch.run("w seed 0x1".into(), "replay it".into(), || {
            assert!(watch.overdue(Duration::from_secs(3600)).is_none());
            let hang = watch.overdue(Duration::ZERO).expect("overdue");
            assert_eq!(
                (hang.what.as_str(), hang.replay.as_str()),
                ("w seed 0x1", "replay it")
            );
            assert!(hang.to_string().contains("replay: replay it"));
            assert!(watch.overdue(Duration::ZERO).is_none());
        });
        assert!(watch.overdue(Duration::ZERO).is_none());
    }

    // A run looked at steadily is reported once its looks add up to the
    // bound; a stretch in which nobody looked (the process was stopped)
    // counts only as long as a look's gap may be, so a run stopped for
    // longer than the bound is not a hang, and is still caught if it
    // keeps the thread once the process runs again.
    #[test]
    fn a_stopped_process_does_not_count_against_its_runs() {
        let bound = Duration::from_secs(60);
        let watch = Arc::new(Watch::default());
        watch.run("w seed 0x2".into(), "replay it".into(), || {
            let start = wall_clock();
            let at = |secs: f64| start + Duration::from_secs_f64(secs);
            // Ten seconds of steady looks, then the process stops for five
            // minutes, then runs on.
            let mut t = 0.0;
            while t < 10.0 {
                t += 0.1;
                assert!(watch.overdue_at(bound, at(t)).is_none(), "at {t}s");
            }
            t += 300.0;
            assert!(watch.overdue_at(bound, at(t)).is_none(), "after the stop");
            // Counted so far: about 10 s, plus at most `STOPPED` for the
            // stop; the run is a hang once about 48 s more have run.
            let resumed = t;
            let hang = loop {
                t += 0.1;
                if let Some(hang) = watch.overdue_at(bound, at(t)) {
                    break hang;
                }
                assert!(t < resumed + 60.0, "never reported");
            };
            let ran = t - resumed;
            assert!(
                (47.5..=50.5).contains(&ran),
                "reported {ran:.1}s after resuming"
            );
            assert!(hang.after >= bound && hang.after < bound + STOPPED);
            assert!(
                watch.overdue_at(bound, at(t + 1.0)).is_none(),
                "reported twice"
            );
        });
    }
}
