//! Yield points: explicit hand-offs where the seed may let others run first.
//!
//! Every cross-lane hand-off in the session runtime passes through one.
//! Under simulation each pass draws, from the stream `yield/<label>`,
//! whether to go on at once, to yield to the scheduler a few times, or to
//! sleep a short virtual delay: FoundationDB's BUGGIFY idea, applied to
//! scheduling. Outside simulation a yield point completes at once.
//!
//! The decisions are logged (`livesim::executor` at debug level) rather
//! than traced: the trace shows their effect, the events that follow, and
//! a hot path stays free of formatting.

use std::time::Duration;

use super::context;

/// What one pass through a yield point does.
enum Action {
    Continue,
    Yield(u32),
    Sleep(Duration),
}

/// A hand-off point named `label`: free outside simulation, a seeded
/// pause inside one.
///
/// ```
/// # livesim::executor::Simulation::new(livesim::Seed::new(1)).run(|| async {
/// livesim::executor::yield_point("after-send").await;
/// # }).unwrap();
/// ```
pub async fn yield_point(label: &'static str) {
    let action = context::with(|ctx| {
        let swarm = &ctx.swarm;
        if swarm.yield_chance <= 0.0 && swarm.sleep_chance <= 0.0 {
            return Action::Continue;
        }
        let (yield_chance, yield_max) = (swarm.yield_chance, swarm.yield_max);
        let (sleep_chance, sleep_max) = (swarm.sleep_chance, swarm.sleep_max);
        let action = ctx.draw_yield(label, |s| {
            if s.chance(yield_chance) {
                Action::Yield(s.range(1..=u64::from(yield_max.max(1))) as u32)
            } else if s.chance(sleep_chance) {
                Action::Sleep(s.millis(Duration::from_millis(1)..=sleep_max))
            } else {
                Action::Continue
            }
        });
        let perturbs = !matches!(action, Action::Continue);
        if ctx.decide(super::schedule::YIELD, perturbs) {
            action
        } else {
            Action::Continue
        }
    })
    .unwrap_or(Action::Continue);
    match action {
        Action::Continue => {}
        Action::Yield(n) => {
            tracing::debug!(target: "livesim::executor", label, yields = n, "yield point yields");
            for _ in 0..n {
                StepAside::default().await;
            }
        }
        Action::Sleep(d) => {
            tracing::debug!(target: "livesim::executor", label, sleep_ms = d.as_millis() as u64, "yield point sleeps");
            tokio::time::sleep(d).await;
        }
    }
}

/// Returns `Pending` once after waking itself at once. Inside a lane set
/// the lane goes back into the ready set and the seed picks again; in a
/// task, the task goes to the back of the run queue. Unlike
/// `tokio::task::yield_now`, it does not wait for the driver to turn, which
/// keeps a perturbed step cheap.
#[derive(Default)]
struct StepAside {
    stepped: bool,
}

impl std::future::Future for StepAside {
    type Output = ();

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        if self.stepped {
            return std::task::Poll::Ready(());
        }
        self.stepped = true;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    }
}
