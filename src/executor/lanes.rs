//! Lane sets: several long-lived futures polled inside one task, in an order
//! the seed chooses.
//!
//! A Live session has lanes (fast, control, telemetry) that must each keep
//! their own order while interleaving with one another. Running them as one
//! task and choosing, at every step, which ready lane to poll next puts that
//! interleaving under the seed: random picks or PCT priorities in a
//! simulation, the order the lanes were added outside one. tokio alone
//! cannot do this: its `current_thread` run queue is FIFO and unseedable.
//!
//! Each lane has its own waker that marks it ready and wakes the task, so a
//! step polls only lanes that something actually woke.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context as TaskContext, Poll, Wake, Waker};

use futures::task::AtomicWaker;

use super::context::{self, Context};
use super::stream::Stream;
use super::swarm::LaneStrategy;
use super::trace::Label;

/// Most lanes one set can hold (one bit each in the ready mask).
pub const MAX_LANES: usize = 64;

/// Steps one poll of the set may take before it yields to other tasks.
const STEPS_PER_POLL: u32 = 128;

type LaneFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A group of lanes run as one future, interleaved by the seed.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use livesim::Seed;
/// use livesim::executor::{LaneSet, Simulation};
///
/// let order = Simulation::new(Seed::new(3)).run(|| async {
///     let log = Arc::new(Mutex::new(Vec::new()));
///     let mut lanes = LaneSet::new("demo");
///     for name in ["fast", "control", "telemetry"] {
///         let log = log.clone();
///         lanes.add(name, async move {
///             for i in 0..3 {
///                 log.lock().unwrap().push(format!("{name}{i}"));
///                 livesim::executor::yield_point("demo").await;
///             }
///         });
///     }
///     lanes.await;
///     log.lock().unwrap().clone()
/// }).unwrap().value;
/// assert_eq!(order.len(), 9); // every lane ran to the end, in its own order
/// ```
pub struct LaneSet {
    name: Label,
    lanes: Vec<Lane>,
    shared: Arc<Shared>,
    picker: Option<Picker>,
    live: usize,
}

struct Lane {
    label: Label,
    future: Option<LaneFuture>,
    waker: Waker,
}

struct Shared {
    ready: AtomicU64,
    task: AtomicWaker,
}

struct LaneWaker {
    bit: u64,
    shared: Arc<Shared>,
}

impl Wake for LaneWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.shared.ready.fetch_or(self.bit, Ordering::AcqRel);
        self.shared.task.wake();
    }
}

impl LaneSet {
    /// An empty set; `name` labels its scheduling decisions in the trace.
    pub fn new(name: impl Into<Label>) -> Self {
        LaneSet {
            name: name.into(),
            lanes: Vec::new(),
            shared: Arc::new(Shared {
                ready: AtomicU64::new(0),
                task: AtomicWaker::new(),
            }),
            picker: None,
            live: 0,
        }
    }

    /// Adds a lane. Its events are recorded under `label`.
    ///
    /// # Panics
    /// When the set already holds [`MAX_LANES`] lanes.
    pub fn add<F>(&mut self, label: impl Into<Label>, future: F) -> &mut Self
    where
        F: Future<Output = ()> + Send + 'static,
    {
        assert!(
            self.lanes.len() < MAX_LANES,
            "a lane set holds at most {MAX_LANES} lanes"
        );
        let bit = 1u64 << self.lanes.len();
        let label = label.into();
        let waker = Waker::from(Arc::new(LaneWaker {
            bit,
            shared: self.shared.clone(),
        }));
        self.lanes.push(Lane {
            label,
            future: Some(Box::pin(future)),
            waker,
        });
        self.shared.ready.fetch_or(bit, Ordering::AcqRel);
        self.live += 1;
        self
    }

    /// How many lanes have not finished yet.
    pub fn live(&self) -> usize {
        self.live
    }
}

impl Future for LaneSet {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<()> {
        let this = &mut *self;
        this.shared.task.register(cx.waker());
        // One look-up of the simulation per poll, not one per step.
        context::with(|ctx| this.run_steps(Some(ctx), cx))
            .unwrap_or_else(|| this.run_steps(None, cx))
    }
}

impl LaneSet {
    /// Polls ready lanes, one pick at a time, until none is ready.
    fn run_steps(&mut self, ctx: Option<&Context>, cx: &mut TaskContext<'_>) -> Poll<()> {
        let picker = self
            .picker
            .get_or_insert_with(|| Picker::new(ctx, &self.name, self.lanes.len()));
        for _ in 0..STEPS_PER_POLL {
            if self.live == 0 {
                return Poll::Ready(());
            }
            let ready = self.shared.ready.load(Ordering::Acquire);
            if ready == 0 {
                return Poll::Pending;
            }
            let mut index = picker.pick(ready);
            if ready.count_ones() > 1
                && let Some(ctx) = ctx
            {
                // The calm pick is production's: the first ready lane.
                let calm = ready.trailing_zeros() as usize;
                if !ctx.decide(super::schedule::LANE, index != calm) {
                    index = calm;
                }
            }
            self.shared
                .ready
                .fetch_and(!(1u64 << index), Ordering::AcqRel);
            let lane = &mut self.lanes[index];
            let Some(future) = lane.future.as_mut() else {
                continue;
            };
            if ready.count_ones() > 1 {
                // A real choice between lanes: part of the interleaving.
                if let Some(ctx) = ctx {
                    ctx.record_scheduling(lane.label.clone(), |event| event.push_str("picked"));
                }
                tracing::debug!(target: "livesim::executor", lane = %lane.label, ready = ready.count_ones(), "lane picked");
            }
            let mut lane_cx = TaskContext::from_waker(&lane.waker);
            let finished = match ctx {
                Some(ctx) => {
                    let _unit = ctx.enter_unit(&lane.label);
                    future.as_mut().poll(&mut lane_cx).is_ready()
                }
                None => future.as_mut().poll(&mut lane_cx).is_ready(),
            };
            if finished {
                lane.future = None;
                self.live -= 1;
            }
        }
        if self.live == 0 {
            return Poll::Ready(());
        }
        // Out of steps with work left: let other tasks run, then come back.
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// Chooses the next lane among the ready ones.
enum Picker {
    Fixed,
    Random {
        stream: Box<Stream>,
    },
    Pct {
        priorities: Vec<u64>,
        change_points: Vec<u64>,
        step: u64,
        next_low: u64,
    },
}

/// How many steps PCT spreads its priority changes over.
const PCT_HORIZON: u64 = 1000;

impl Picker {
    fn new(ctx: Option<&Context>, name: &Label, lanes: usize) -> Self {
        let Some(ctx) = ctx else {
            return Picker::Fixed;
        };
        match ctx.swarm.lanes {
            LaneStrategy::Fixed => Picker::Fixed,
            LaneStrategy::Random => Picker::Random {
                stream: Box::new(ctx.stream("lanes/", name)),
            },
            LaneStrategy::Pct { depth } => {
                let (priorities, change_points) = {
                    let s = &mut ctx.stream("lanes/", name);
                    // Distinct starting priorities above every demoted one.
                    let mut priorities: Vec<u64> =
                        (0..lanes as u64).map(|i| PCT_HORIZON + 1 + i).collect();
                    s.shuffle(&mut priorities);
                    let mut points: Vec<u64> =
                        (0..depth).map(|_| s.range(1..=PCT_HORIZON)).collect();
                    points.sort_unstable();
                    (priorities, points)
                };
                Picker::Pct {
                    priorities,
                    change_points,
                    step: 0,
                    next_low: PCT_HORIZON,
                }
            }
        }
    }

    fn pick(&mut self, ready: u64) -> usize {
        debug_assert!(ready != 0);
        match self {
            Picker::Fixed => ready.trailing_zeros() as usize,
            Picker::Random { stream } => {
                let count = ready.count_ones();
                if count == 1 {
                    return ready.trailing_zeros() as usize;
                }
                nth_set_bit(ready, stream.below(count.into()) as u32)
            }
            Picker::Pct {
                priorities,
                change_points,
                step,
                next_low,
                ..
            } => {
                let chosen = (0..priorities.len())
                    .filter(|i| ready & (1u64 << i) != 0)
                    .max_by_key(|&i| priorities[i])
                    .unwrap_or(0);
                *step += 1;
                while change_points.first() == Some(step) {
                    change_points.remove(0);
                    priorities[chosen] = *next_low;
                    *next_low = next_low.saturating_sub(1);
                }
                chosen
            }
        }
    }
}

/// The index of the `nth` (0-based) set bit of `mask`.
fn nth_set_bit(mut mask: u64, nth: u32) -> usize {
    for _ in 0..nth {
        mask &= mask - 1;
    }
    mask.trailing_zeros() as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nth_set_bit_walks_the_mask() {
        assert_eq!(nth_set_bit(0b1011, 0), 0);
        assert_eq!(nth_set_bit(0b1011, 1), 1);
        assert_eq!(nth_set_bit(0b1011, 2), 3);
    }
}
