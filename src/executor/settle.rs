//! Quiescence: wait until nothing else in the run can move without time
//! passing (Go's `synctest.Wait`).

use super::context;

/// Consecutive quiet rounds that count as settled. One quiet round can be a
/// coincidence of queue order; two in a row cannot.
const QUIET_ROUNDS: u32 = 2;

/// Returns once every other lane and task of the simulation is parked on a
/// timer or a resource (a channel, a lock, a delivery queue), without
/// moving virtual time.
///
/// It works by yielding to the scheduler and counting polls of the
/// simulation's lanes and tasks: once a full round passes in which nothing
/// but the caller itself was polled, nothing else was runnable. Tasks
/// started with a raw `tokio::spawn_local` are not counted; spawn through
/// [`spawn`](super::spawn) to have them seen.
///
/// Outside a simulation there is no way to know, so it yields a few times
/// and returns.
///
/// ```
/// use std::time::Duration;
/// use livesim::Seed;
/// use livesim::executor::{Simulation, settle, spawn};
///
/// let out = Simulation::new(Seed::new(5)).run(|| async {
///     let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
///     spawn("echo", async move { tx.send(42).unwrap() });
///     settle().await; // the echo task has run; no time has passed
///     (rx.try_recv().unwrap(), livesim::executor::now())
/// }).unwrap().value;
/// assert_eq!(out, (42, Duration::ZERO));
/// ```
pub async fn settle() {
    let Some(own) = context::with(|ctx| u64::from(ctx.depth())) else {
        for _ in 0..4 {
            tokio::task::yield_now().await;
        }
        return;
    };
    let mut quiet = 0;
    while quiet < QUIET_ROUNDS {
        let before = context::with(|ctx| ctx.polls()).unwrap_or(0);
        tokio::task::yield_now().await;
        let after = context::with(|ctx| ctx.polls()).unwrap_or(0);
        // Resuming us polls each unit on our own path once; anything more
        // was someone else running.
        if after.saturating_sub(before) <= own {
            quiet += 1;
        } else {
            quiet = 0;
        }
    }
}
