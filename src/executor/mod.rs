//! The deterministic executor: one seed, one run, every time.
//!
//! This layer knows nothing of Live sessions. It gives any tokio program:
//!
//! * a [`Simulation`]: a `current_thread` tokio runtime with paused time and
//!   a `LocalSet`, where virtual time jumps to the next timer whenever
//!   everything is blocked, deadlocks and livelocks are reported instead of
//!   hanging, and the [`Trace`] fingerprints the run;
//! * the [`Seed`] and its named [`Stream`]s, the only source of randomness;
//! * the points where concurrency is decided, under the seed: [`LaneSet`]
//!   (lanes polled in a seeded order), [`spawn`] (tasks that step aside at
//!   seeded points), [`yield_point`] (explicit hand-offs) and
//!   [`Deliveries`] (scheduled arrivals with seeded tie-breaks);
//! * [`settle`], which waits until nothing can move without time passing;
//! * the [`Runner`] tests use: many seeds, a failure report with the seed and
//!   a command that replays it, and the determinism check.
//!
//! Outside a simulation every one of these falls back to plain tokio
//! behaviour, so the session runtime built on them runs in production
//! unchanged.

mod context;
mod deliveries;
#[cfg(feature = "simulation")]
mod determinism;
#[cfg(feature = "simulation")]
mod enter;
mod failure;
#[cfg(feature = "simulation")]
mod fold;
mod hash;
mod lanes;
#[cfg(feature = "simulation")]
mod log_line;
#[cfg(feature = "simulation")]
#[cfg_attr(docsrs, doc(cfg(feature = "simulation")))]
pub mod logs;
#[cfg(feature = "simulation")]
pub(crate) mod panics;
#[cfg(feature = "simulation")]
pub(crate) mod regressions;
#[cfg(feature = "simulation")]
mod report;
#[cfg(feature = "simulation")]
mod runner;
#[cfg(feature = "simulation")]
mod runtime;
mod schedule;
pub(crate) mod seed;
mod settle;
mod spawn;
mod stalls;
mod stream;
mod swarm;
mod task_table;
mod test_id;
mod trace;
#[cfg(feature = "simulation")]
pub(crate) mod watch;
mod yield_point;

use std::time::Duration;

pub use deliveries::Deliveries;
#[cfg(feature = "simulation")]
#[cfg_attr(docsrs, doc(cfg(feature = "simulation")))]
pub use determinism::{NonDeterminism, check_determinism};
#[cfg(feature = "simulation")]
#[cfg_attr(docsrs, doc(cfg(feature = "simulation")))]
pub use enter::Entered;
pub use failure::{Failure, FailureKind};
pub use hash::{Fnv64, fnv1a64};
pub use lanes::{LaneSet, MAX_LANES};
#[cfg(feature = "simulation")]
#[cfg_attr(docsrs, doc(cfg(feature = "simulation")))]
pub use regressions::{REGRESSIONS_FOLDER, regressions_file};
#[cfg(feature = "simulation")]
#[cfg_attr(docsrs, doc(cfg(feature = "simulation")))]
pub use report::{Report, Summary};
#[cfg(feature = "simulation")]
#[cfg_attr(docsrs, doc(cfg(feature = "simulation")))]
pub use runner::{Outcome as TestOutcome, Runner, SeedPlan};
#[cfg(feature = "simulation")]
#[cfg_attr(docsrs, doc(cfg(feature = "simulation")))]
pub use runtime::{DEFAULT_POLL_LIMIT, DEFAULT_TIME_LIMIT, Outcome, Simulation};
pub use schedule::{DELIVERY, Decision, LANE, Schedule, TASK, YIELD};
pub use seed::ParseSeedError;
// `Seed` is public at the crate root (`livesim::Seed`), its one path.
pub(crate) use seed::Seed;
pub use settle::settle;
pub use spawn::spawn;
pub use stalls::stall_report;
pub use stream::Stream;
pub use swarm::{LaneStrategy, Swarm};
#[doc(hidden)]
pub use test_id::type_name_of;
pub use test_id::{Target, TestId};
pub use trace::{Divergence, Label, OwnedTraceEntry, Trace, TraceEntry, format_time};
#[cfg(feature = "simulation")]
#[cfg_attr(docsrs, doc(cfg(feature = "simulation")))]
pub use watch::{DEFAULT_HANG, HANG_VARIABLE, Hang, hang_bound};
pub use yield_point::yield_point;

/// Whether this code is running inside a simulation.
pub fn is_simulated() -> bool {
    context::is_active()
}

/// The seed of the running simulation, if any.
pub fn seed() -> Option<Seed> {
    context::with(|ctx| ctx.seed)
}

/// The swarm options of the running simulation, if any.
pub fn swarm() -> Option<Swarm> {
    context::with(|ctx| ctx.swarm.clone())
}

/// Virtual time since the simulation started; `Duration::ZERO` outside one.
///
/// Always reads tokio's clock, so it sees a `tokio::time::advance` at once;
/// trace timestamps may lag such a jump until the runtime next parks.
pub fn now() -> Duration {
    context::with(|ctx| ctx.now()).unwrap_or_default()
}

/// The label of the lane or task being polled (`runtime` between polls).
pub fn current_label() -> Option<Label> {
    context::with(|ctx| ctx.label())
}

/// Appends `event` to the simulation's trace under the current label.
/// Does nothing outside a simulation.
///
/// ```
/// use livesim::Seed;
/// use livesim::executor::{Simulation, record};
///
/// let out = Simulation::new(Seed::new(1)).run(|| async { record("hello") }).unwrap();
/// let last = out.trace.last().unwrap();
/// assert_eq!((last.label, last.event), ("main", "hello"));
/// ```
pub fn record(event: &str) {
    context::with(|ctx| ctx.record(event));
}

/// Appends formatted text to the trace; the [`record!`](crate::record)
/// macro calls this. Outside a simulation the text is never formatted.
pub fn record_fmt(event: std::fmt::Arguments<'_>) {
    context::with(|ctx| ctx.record_fmt(event));
}

/// Appends an entry that `event` writes straight into the trace's text;
/// the [`record!`](crate::record) macro calls this for a plain format
/// string. Outside a simulation `event` is never called.
///
/// ```
/// use livesim::Seed;
/// use livesim::executor::{Simulation, record_written};
///
/// let out = Simulation::new(Seed::new(1))
///     .run(|| async { record_written(|text| text.push_str("hello")) })
///     .unwrap();
/// assert_eq!(out.trace.last().unwrap().event, "hello");
/// ```
pub fn record_written(event: impl FnOnce(&mut String)) {
    context::with(|ctx| ctx.record_written(event));
}

/// Like [`record`], but builds the event only inside a simulation.
pub fn record_with(event: impl FnOnce() -> String) {
    context::with(|ctx| ctx.record(&event()));
}

/// Appends a formatted event to the running simulation's trace, under the
/// current lane or task. Formats nothing outside a simulation.
///
/// ```
/// # livesim::executor::Simulation::new(livesim::Seed::new(1)).run(|| async {
/// let turn = 3;
/// livesim::record!("turn {turn} complete");
/// # }).unwrap();
/// ```
///
/// The text is what `format!` would make of the same arguments. A format
/// string whose placeholders are plain (`{}`, `{0}`, `{name}`) is written
/// piece by piece, each value the cheapest way its type allows (an
/// integer without the formatting machinery); any other goes through
/// `format_args!`.
#[macro_export]
macro_rules! record {
    ($($arg:tt)*) => {
        $crate::__record_pieces!($crate; $($arg)*)
    };
}

#[doc(hidden)]
pub mod record_args;

/// Draws from the simulation's stream named `label`; `None` outside one.
///
/// Components that make random choices (how to split a frame, how long a
/// simulated tool takes) call this, so their choices follow the seed and
/// never disturb another component's draws.
pub fn draw<T>(label: &str, f: impl FnOnce(&mut Stream) -> T) -> Option<T> {
    context::with(|ctx| ctx.draw(label, f))
}

/// Like [`record_with`], for an event that ends in a detail (a value, a
/// tool's arguments): `event` returns the head and the detail, which the
/// trace shows together and the [interleaving](Trace::interleaving)
/// fingerprint leaves out.
pub fn record_with_detail(event: impl FnOnce() -> (String, String)) {
    context::with(|ctx| {
        let (head, detail) = event();
        ctx.record_detailed(&head, &detail);
    });
}

/// Like [`record_with_detail`], `head` and `detail` writing the entry's
/// text straight into the trace (no text is built outside a simulation,
/// none is built twice inside one, and a caller that writes its pieces
/// with `push_str` skips the formatting machinery).
pub(crate) fn record_detailed_with(
    head: impl FnOnce(&mut String),
    detail: impl FnOnce(&mut String),
) {
    context::with(|ctx| ctx.record_detailed_with(head, detail));
}

/// Whether a seeded decision of `kind` goes ahead: `perturbed` says
/// whether the outcome the stream drew differs from the calm one (what
/// production does). Returns `perturbed` unless the run's
/// [`Schedule`] calms this decision; outside a simulation, `perturbed`.
///
/// Components above the executor that perturb runs from the seed (a link's
/// latency, a simulated tool's failures) pass each such draw through this,
/// so a shrinker can calm it:
///
/// ```
/// # livesim::executor::Simulation::new(livesim::Seed::new(1)).run(|| async {
/// let drawn = livesim::executor::draw("demo/latency", |s| s.range(0..=20)).unwrap_or(0);
/// let ms = if livesim::executor::decide("demo-latency", drawn > 0) { drawn } else { 0 };
/// # let _ = ms;
/// # }).unwrap();
/// ```
pub fn decide(kind: &'static str, perturbed: bool) -> bool {
    context::with(|ctx| ctx.decide(kind, perturbed)).unwrap_or(perturbed)
}

/// How many entries the running simulation's trace holds.
pub fn trace_len() -> usize {
    context::with(|ctx| ctx.trace_len()).unwrap_or(0)
}

/// Virtual durations are whole milliseconds (tokio's timer resolution).
pub const TICK: Duration = Duration::from_millis(1);
