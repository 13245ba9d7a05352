//! The simulated runtime: one seed, one tokio `current_thread` runtime with
//! paused time and a `LocalSet`, run until the test future finishes.
//!
//! Code written for tokio runs unchanged inside it: timers, `tokio::sync`,
//! `spawn_local`, `select!`. Because the clock is paused, tokio moves virtual
//! time straight to the next timer whenever every task is blocked, so a
//! 30-second wait costs microseconds. The runtime adds what tokio lacks for
//! simulation: a watchdog that tells a deadlock (nothing can run and no timer
//! is pending) from a run that overstays its virtual time limit, a poll limit
//! that catches livelocks, and the trace that fingerprints the run.
//!
//! It also notices tasks spawned around the facade. Tasks spawned with
//! [`spawn`](super::spawn) (and the run's own) live on the simulation's
//! `LocalSet`, which tokio's runtime metrics do not count; so any task the
//! metrics report alive was spawned with `tokio::spawn` (or a runtime
//! handle), where the seed cannot reorder it. The run warns once, in its
//! trace and in its outcome, naming what to use instead.

use std::cell::RefCell;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::{Arc, OnceLock};
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use futures::FutureExt;

use super::context::{self, Abort, Context};
use super::failure::{Failure, FailureKind};
use super::panics;
use super::schedule::Schedule;
use super::seed::Seed;
use super::spawn::Task;
use super::stalls::stall_report;
use super::swarm::Swarm;
use super::trace::Trace;

/// How a simulated run is set up: its limits and, optionally, a fixed swarm.
///
/// ```
/// use std::time::Duration;
/// use livesim::Seed;
/// use livesim::executor::Simulation;
///
/// let out = Simulation::new(Seed::new(1))
///     .time_limit(Duration::from_secs(60))
///     .run(|| async {
///         tokio::time::sleep(Duration::from_secs(30)).await;
///         livesim::executor::now()
///     })
///     .unwrap();
/// assert_eq!(out.value, Duration::from_secs(30));
/// ```
#[derive(Clone, Debug)]
pub struct Simulation {
    seed: Seed,
    /// Drawn from the seed when first needed: a run given its own swarm
    /// never draws one.
    swarm: OnceLock<Swarm>,
    time_limit: Duration,
    poll_limit: u64,
    schedule: Option<Schedule>,
}

/// What a run that finished returns: the test's value and its trace.
#[derive(Debug)]
pub struct Outcome<T> {
    /// What the test future returned.
    pub value: T,
    /// Everything recorded during the run.
    pub trace: Trace,
    /// Virtual time when the test future finished.
    pub elapsed: Duration,
    /// What the run noticed that weakens the seed's hold on it (a task
    /// spawned outside the facade), once each.
    pub warnings: Vec<String>,
}

/// A run longer than this much virtual time fails, unless configured.
pub const DEFAULT_TIME_LIMIT: Duration = Duration::from_secs(3600);

/// A run that polls its lanes and tasks more often than this without
/// finishing is reported as a livelock, unless configured.
pub const DEFAULT_POLL_LIMIT: u64 = 50_000_000;

/// How long the watchdog waits, past the time limit, for any pending timer
/// before it calls the run a deadlock. Virtual time, so free.
const DEADLOCK_PROBE: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

impl Simulation {
    /// A run of `seed`, with the swarm the seed draws and default limits.
    pub fn new(seed: Seed) -> Self {
        Simulation {
            seed,
            swarm: OnceLock::new(),
            time_limit: DEFAULT_TIME_LIMIT,
            poll_limit: DEFAULT_POLL_LIMIT,
            schedule: None,
        }
    }

    /// Numbers the run's decisions and lets `schedule` calm them (see
    /// [`Schedule`]); keep a clone to read what the run took. Give each
    /// run its own ([`Schedule::fresh`]).
    pub fn schedule(mut self, schedule: Schedule) -> Self {
        self.schedule = Some(schedule);
        self
    }

    /// The schedule in force, if any.
    pub fn schedule_options(&self) -> Option<&Schedule> {
        self.schedule.as_ref()
    }

    /// Replaces the drawn swarm, e.g. with [`Swarm::calm`].
    pub fn swarm(mut self, swarm: Swarm) -> Self {
        self.swarm = OnceLock::from(swarm);
        self
    }

    /// Fails the run if the test is still going at this virtual time.
    pub fn time_limit(mut self, limit: Duration) -> Self {
        self.time_limit = limit;
        self
    }

    /// Fails the run as a livelock after this many polls.
    pub fn poll_limit(mut self, limit: u64) -> Self {
        self.poll_limit = limit;
        self
    }

    /// The seed this simulation runs.
    pub fn seed(&self) -> Seed {
        self.seed
    }

    /// The swarm options in force.
    pub fn swarm_options(&self) -> &Swarm {
        self.swarm.get_or_init(|| Swarm::draw(self.seed))
    }

    /// The virtual time limit a run of this simulation has.
    pub fn limit(&self) -> Duration {
        self.time_limit
    }

    /// Runs the future `test` makes to completion in a fresh runtime.
    ///
    /// Returns its value and trace, or a [`Failure`] naming the seed: the
    /// test panicked, deadlocked, ran past the time limit or livelocked.
    pub fn run<F, Fut>(&self, test: F) -> Result<Outcome<Fut::Output>, Box<Failure>>
    where
        F: FnOnce() -> Fut,
        Fut: Future + 'static,
        Fut::Output: 'static,
    {
        panics::install_hook();
        let ctx = Rc::new(
            Context::new(self.seed, self.swarm_options().clone(), self.poll_limit)
                .with_schedule(self.schedule.clone()),
        );
        let _entered = context::enter(ctx.clone());
        let runtime = match tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .on_thread_unpark(|| {
                context::with(|ctx| ctx.time_may_have_moved());
            })
            .build()
        {
            Ok(runtime) => runtime,
            Err(e) => {
                return Err(Box::new(Failure::new(
                    self.seed,
                    self.swarm_options().clone(),
                    FailureKind::Setup(format!("could not build the tokio runtime: {e}")),
                    Duration::ZERO,
                    Trace::default(),
                )));
            }
        };
        let local = tokio::task::LocalSet::new();
        let time_limit = self.time_limit;
        let header = format!("run seed={} swarm: {}", self.seed, self.swarm_options());
        let result = local.block_on(&runtime, async {
            ctx.start_clock();
            ctx.watch_runtime(tokio::runtime::Handle::current().metrics());
            ctx.record_as(ctx.runtime_label(), &header);
            let main = tokio::task::spawn_local(Task::new(
                Arc::from("main"),
                0.0,
                AssertUnwindSafe(test()).catch_unwind(),
            ));
            // The watch runs as its own task so that it is polled only when
            // woken, not on every turn of the local set.
            let (teller, ending) = ending();
            tokio::task::spawn_local(async move {
                let ended = Watch {
                    main,
                    watchdog: Box::pin(watchdog(time_limit)),
                }
                .await;
                context::with(|ctx| ctx.stop_clock());
                teller.tell(ended);
            });
            ending.await
        });
        // Tasks still alive are dropped with the runtime, inside the
        // simulation, so their destructors see the same context.
        drop(local);
        drop(runtime);
        let elapsed = ctx.now();
        let trace = ctx.take_trace();
        let warnings = ctx.take_warnings();
        let fail = |kind: FailureKind, at: Duration, trace: Trace| {
            let mut failure =
                Failure::new(self.seed, self.swarm_options().clone(), kind, at, trace);
            failure.warnings = warnings.clone();
            Err(Box::new(failure))
        };
        match result {
            Ended::Finished(Ok(value)) => Ok(Outcome {
                value,
                trace,
                elapsed,
                warnings,
            }),
            Ended::Finished(Err(payload)) => {
                let message = ctx
                    .take_last_panic()
                    .unwrap_or_else(|| panics::payload_message(&*payload));
                fail(FailureKind::Panic { message }, elapsed, trace)
            }
            Ended::MainCancelled => fail(
                FailureKind::Panic {
                    message: "the test future was cancelled".to_string(),
                },
                elapsed,
                trace,
            ),
            Ended::Deadlock { at, hint } => {
                fail(FailureKind::Deadlock, at, trace).map_err(|f| Box::new(f.with_hint(hint)))
            }
            Ended::TimeLimit { hint } => {
                fail(FailureKind::TimeLimit { limit: time_limit }, elapsed, trace)
                    .map_err(|f| Box::new(f.with_hint(hint)))
            }
            Ended::Aborted(Abort::Livelock { polls }) => {
                fail(FailureKind::Livelock { polls }, elapsed, trace)
            }
        }
    }
}

/// How the block_on future ended.
enum Ended<T> {
    Finished(Result<T, Box<dyn std::any::Any + Send>>),
    MainCancelled,
    /// `hint`: the likely cause, read while the run's tasks were still
    /// there ([`stall_report`](super::stall_report)).
    Deadlock {
        at: Duration,
        hint: Option<String>,
    },
    TimeLimit {
        hint: Option<String>,
    },
    Aborted(Abort),
}

/// How the watch task tells the runtime's own future that the run ended.
///
/// The runtime polls that future at every turn of the local set, so it
/// must cost next to nothing while the run goes on: a cell and a waker,
/// not a channel.
struct Ending<T> {
    shared: Rc<RefCell<EndingState<T>>>,
}

struct EndingState<T> {
    ended: Option<Ended<T>>,
    waker: Option<std::task::Waker>,
}

/// The watch task's half: dropped before it tells (the task panicked or
/// was dropped), the run reads as cancelled.
struct Teller<T> {
    shared: Option<Rc<RefCell<EndingState<T>>>>,
}

fn ending<T>() -> (Teller<T>, Ending<T>) {
    let shared = Rc::new(RefCell::new(EndingState {
        ended: None,
        waker: None,
    }));
    (
        Teller {
            shared: Some(shared.clone()),
        },
        Ending { shared },
    )
}

impl<T> Teller<T> {
    fn tell(mut self, ended: Ended<T>) {
        self.deliver(ended);
    }

    fn deliver(&mut self, ended: Ended<T>) {
        let Some(shared) = self.shared.take() else {
            return;
        };
        let waker = {
            let mut state = shared.borrow_mut();
            state.ended = Some(ended);
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl<T> Drop for Teller<T> {
    fn drop(&mut self) {
        self.deliver(Ended::MainCancelled);
    }
}

impl<T> Future for Ending<T> {
    type Output = Ended<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Ended<T>> {
        let mut state = self.shared.borrow_mut();
        if let Some(ended) = state.ended.take() {
            return Poll::Ready(ended);
        }
        if !state
            .waker
            .as_ref()
            .is_some_and(|w| w.will_wake(cx.waker()))
        {
            state.waker = Some(cx.waker().clone());
        }
        Poll::Pending
    }
}

/// Waits for the main task, unless the watchdog or an abort comes first.
struct Watch<T: 'static> {
    main: tokio::task::JoinHandle<Result<T, Box<dyn std::any::Any + Send>>>,
    watchdog: Pin<Box<dyn Future<Output = Ended<T>>>>,
}

impl<T> Future for Watch<T> {
    type Output = Ended<T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Ended<T>> {
        if let Some(abort) = context::with(|ctx| ctx.abort()).flatten() {
            return Poll::Ready(Ended::Aborted(abort));
        }
        // Aborts are raised from inside other polls; make sure one wakes us.
        context::with(|ctx| ctx.set_runner_waker(cx.waker()));
        // The watchdog first: once the limit has passed, the run has failed
        // even if the test finishes while the watchdog is probing.
        if let Poll::Ready(ended) = self.watchdog.as_mut().poll(cx) {
            return Poll::Ready(ended);
        }
        match Pin::new(&mut self.main).poll(cx) {
            Poll::Ready(Ok(result)) => Poll::Ready(Ended::Finished(result)),
            Poll::Ready(Err(e)) if e.is_panic() => {
                Poll::Ready(Ended::Finished(Err(e.into_panic())))
            }
            Poll::Ready(Err(_)) => Poll::Ready(Ended::MainCancelled),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// Fires at the time limit and decides whether the run was stuck.
///
/// Its sleep is a timer like any other, so tokio jumps to it only once no
/// earlier timer is pending. At the limit it arms a probe: if any lane or
/// task is polled before a very long further sleep ends, something was
/// still scheduled and the run simply overstayed its limit; if nothing is,
/// no timer was pending and nothing could run: a deadlock, dated at the
/// last moment anything ran.
async fn watchdog<T>(limit: Duration) -> Ended<T> {
    tokio::time::sleep(limit).await;
    let before = context::with(|ctx| ctx.polls()).unwrap_or(0);
    let activity = std::future::poll_fn(|cx| {
        let moved = context::with(|ctx| {
            if ctx.polls() != before {
                true
            } else {
                ctx.set_runner_waker(cx.waker());
                ctx.watch_activity();
                false
            }
        })
        .unwrap_or(true);
        if moved {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    });
    tokio::select! {
        biased;
        _ = activity => Ended::TimeLimit { hint: stall_report() },
        _ = tokio::time::sleep(DEADLOCK_PROBE) => {
            let at = context::with(|ctx| ctx.last_activity()).unwrap_or_default();
            Ended::Deadlock { at, hint: stall_report() }
        }
    }
}

#[cfg(test)]
mod tests {
    use futures::FutureExt;

    use super::*;

    #[test]
    fn the_ending_told_is_the_ending_read() {
        let (teller, mut ending) = ending::<u8>();
        assert!((&mut ending).now_or_never().is_none(), "nothing told yet");
        teller.tell(Ended::Finished(Ok(7)));
        assert!(matches!(
            ending.now_or_never(),
            Some(Ended::Finished(Ok(7)))
        ));
    }

    /// A watch task dropped before it tells (it panicked) must not leave
    /// the runtime waiting for ever.
    #[test]
    fn a_teller_dropped_untold_reads_as_cancelled() {
        let (teller, ending) = ending::<u8>();
        drop(teller);
        assert!(matches!(ending.now_or_never(), Some(Ended::MainCancelled)));
    }
}
