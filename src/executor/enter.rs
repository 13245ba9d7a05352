//! Enter mode: livesim's context on a thread whose runtimes someone else
//! drives.
//!
//! [`Simulation::run`] builds its own tokio runtime, so it cannot run
//! inside another simulator's runtime, nor host one (tokio refuses a
//! runtime within a runtime). A network simulator such as turmoil gives
//! every simulated host its own runtime and steps them all from one
//! thread; [`Simulation::enter`] installs the seed, swarm, named streams
//! and trace on that thread instead, so every host sees them: lane sets,
//! spawned tasks, yield points and draws follow the seed there as they do
//! under `run`. Virtual time is read from the clock given (the network
//! simulator's), on every call.
//!
//! What enter mode lacks: the deadlock and livelock watchdog (the driver
//! cannot tell a stuck run from a slow one; its own time limit ends both).

use std::rc::Rc;
use std::time::Duration;

use super::context::{self, Context, EnterGuard, ExternalClock};
use super::failure::{Failure, FailureKind};
use super::panics;
use super::runtime::{Outcome, Simulation};
use super::trace::Label;

/// A simulation's context, installed on this thread until dropped or
/// [`finish`](Entered::finish)ed.
///
/// ```
/// use std::time::Duration;
/// use livesim::Seed;
/// use livesim::executor::{FailureKind, Simulation};
///
/// let now = std::rc::Rc::new(std::cell::Cell::new(Duration::ZERO));
/// let clock = now.clone();
/// let entered = Simulation::new(Seed::new(5)).enter(move || Some(clock.get()));
/// assert_eq!(livesim::executor::seed(), Some(Seed::new(5)));
/// now.set(Duration::from_millis(40));
/// entered.record("driver", "step");
/// let outcome = entered.finish(Ok::<_, FailureKind>(7)).unwrap();
/// assert_eq!((outcome.value, outcome.elapsed), (7, Duration::from_millis(40)));
/// assert!(!livesim::executor::is_simulated());
/// ```
pub struct Entered {
    simulation: Simulation,
    ctx: Rc<Context>,
    _guard: EnterGuard,
}

impl Simulation {
    /// Installs this simulation's context on the current thread, reading
    /// virtual time from `clock` (`None` keeps the last reading), until
    /// the returned guard is finished or dropped. Runtimes stepped on this
    /// thread meanwhile run under the seed.
    ///
    /// # Panics
    /// When a simulation is already running on this thread.
    pub fn enter(&self, clock: impl Fn() -> Option<Duration> + 'static) -> Entered {
        panics::install_hook();
        let ctx = Rc::new(
            Context::new(self.seed(), self.swarm_options().clone(), u64::MAX)
                .with_schedule(self.schedule_options().cloned())
                .with_clock(ExternalClock::new(clock)),
        );
        let guard = context::enter(ctx.clone());
        ctx.record_as(
            ctx.runtime_label(),
            &format!(
                "run seed={} swarm: {} (entered)",
                self.seed(),
                self.swarm_options()
            ),
        );
        Entered {
            simulation: self.clone(),
            ctx,
            _guard: guard,
        }
    }
}

impl Entered {
    /// Virtual time, by the clock given to [`Simulation::enter`].
    pub fn now(&self) -> Duration {
        self.ctx.now()
    }

    /// Appends `event` to the trace under `label` (what the driver does
    /// between steps: faults, restarts).
    pub fn record(&self, label: &str, event: &str) {
        let label: Label = std::sync::Arc::from(label);
        self.ctx.record_as(label, event);
    }

    /// Ends the run: the value, or why it failed (a panic caught inside
    /// wins over the kind given), with the trace, as
    /// [`Simulation::run`] returns them.
    pub fn finish<T>(self, ended: Result<T, FailureKind>) -> Result<Outcome<T>, Box<Failure>> {
        let elapsed = self.ctx.now();
        self.ctx.stop_clock();
        let panic = self.ctx.take_last_panic();
        let trace = self.ctx.take_trace();
        let warnings = self.ctx.take_warnings();
        let kind = match (ended, panic) {
            (Ok(value), None) => {
                return Ok(Outcome {
                    value,
                    trace,
                    elapsed,
                    warnings,
                });
            }
            (_, Some(message)) => FailureKind::Panic { message },
            (Err(kind), None) => kind,
        };
        let mut failure = Failure::new(
            self.simulation.seed(),
            self.simulation.swarm_options().clone(),
            kind,
            elapsed,
            trace,
        );
        failure.warnings = warnings;
        Err(Box::new(failure))
    }
}
