//! The spawn facade: tasks whose place in the run queue the seed perturbs.
//!
//! tokio's `current_thread` queue is FIFO, so every run of a program polls
//! its tasks in the same order and races between them are never explored.
//! A task spawned here is polled through a wrapper that, at seeded points,
//! wakes itself and steps aside, going to the back of the queue, so
//! different seeds see different task orders. Outside a simulation it is a
//! plain `tokio::spawn`.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

use tokio::task::JoinHandle;

use super::context;
use super::trace::Label;

/// Spawns `future` as a task labelled `label`.
///
/// In a simulation the task runs on the simulation's `LocalSet`, its polls
/// are recorded under `label`, and it is perturbed as the seed's swarm
/// says. Outside one it is `tokio::spawn(future)`, so the future must be
/// `Send`.
///
/// ```
/// use livesim::Seed;
/// use livesim::executor::{Simulation, spawn};
///
/// let sum = Simulation::new(Seed::new(9)).run(|| async {
///     let a = spawn("a", async { 1 });
///     let b = spawn("b", async { 2 });
///     a.await.unwrap() + b.await.unwrap()
/// }).unwrap().value;
/// assert_eq!(sum, 3);
/// ```
pub fn spawn<F>(label: impl Into<Label>, future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    match context::with(|ctx| ctx.swarm.task_yield_chance) {
        Some(chance) => tokio::task::spawn_local(Task::new(label.into(), chance, future)),
        None => tokio::spawn(future),
    }
}

/// A simulated task: its polls count as activity and run under its label,
/// and with probability `chance` a poll steps aside instead.
pub(crate) struct Task<F> {
    label: Label,
    chance: f64,
    inner: Pin<Box<F>>,
    /// Its id in the simulation's table of live tasks (0 before the first
    /// poll), which keeps each task's last poll for stall reports.
    id: u64,
}

impl<F> Task<F> {
    pub(crate) fn new(label: Label, chance: f64, inner: F) -> Self {
        Task {
            label,
            chance,
            inner: Box::pin(inner),
            id: 0,
        }
    }
}

impl<F> Drop for Task<F> {
    fn drop(&mut self) {
        if self.id != 0 {
            context::with(|ctx| ctx.task_gone(self.id));
        }
    }
}

impl<F: Future> Future for Task<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<F::Output> {
        let this = &mut *self;
        let polled = context::with(|ctx| {
            let _unit = ctx.enter_unit(&this.label);
            this.id = ctx.task_polled(this.id, &this.label);
            if this.chance > 0.0
                && ctx.decide(
                    super::schedule::TASK,
                    ctx.draw_task(|s| s.chance(this.chance)),
                )
            {
                tracing::debug!(target: "livesim::executor", "task steps aside");
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            let polled = this.inner.as_mut().poll(cx);
            if polled.is_ready() {
                ctx.task_gone(this.id);
                this.id = 0;
            }
            polled
        });
        // Dropped by a runtime outside the simulation: just poll.
        polled.unwrap_or_else(|| this.inner.as_mut().poll(cx))
    }
}
