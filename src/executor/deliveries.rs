//! The delivery queue: things scheduled to arrive at a virtual instant.
//!
//! Frames from a scripted server, completions of simulated tools, anything
//! a harness hands to the system under test at a chosen time goes through
//! one of these. Items come out ordered by (delivery time, seeded
//! tie-break, sequence number): items due at the same instant are permuted
//! by the seed, which plain FIFO channels never do. Outside a simulation the
//! tie-break is 0, so same-instant items keep their push order.
//!
//! Under simulation each push may also be delayed by up to the swarm's
//! delivery jitter.

use std::cmp::Ordering as CmpOrdering;
use std::collections::BinaryHeap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use super::context;
use super::stream::Stream;

/// A queue of items that become available at a virtual instant.
///
/// Clone it to push from several places; pop from one. Create it inside
/// the simulation it serves: that is where it takes its stream from.
///
/// ```
/// use std::time::Duration;
/// use livesim::Seed;
/// use livesim::executor::{Deliveries, Simulation, Swarm};
///
/// let got = Simulation::new(Seed::new(2)).swarm(Swarm::calm()).run(|| async {
///     let queue = Deliveries::new("frames");
///     queue.push_after(Duration::from_millis(20), "late");
///     queue.push_after(Duration::from_millis(10), "early");
///     queue.close();
///     let mut got = Vec::new();
///     while let Some(item) = queue.pop().await {
///         got.push((item, livesim::executor::now().as_millis()));
///     }
///     got
/// }).unwrap().value;
/// assert_eq!(got, vec![("early", 10), ("late", 20)]);
/// ```
pub struct Deliveries<T> {
    shared: Arc<Shared<T>>,
}

impl<T> Clone for Deliveries<T> {
    fn clone(&self) -> Self {
        Deliveries {
            shared: self.shared.clone(),
        }
    }
}

struct Shared<T> {
    label: String,
    state: Mutex<State<T>>,
    changed: Notify,
}

struct State<T> {
    heap: BinaryHeap<Pending<T>>,
    next_seq: u64,
    closed: bool,
    /// Jitter and tie-breaks under simulation; `None` outside one.
    stream: Option<(Stream, Duration)>,
}

struct Pending<T> {
    at: Instant,
    tiebreak: u64,
    seq: u64,
    item: T,
}

impl<T> Pending<T> {
    fn key(&self) -> (Instant, u64, u64) {
        (self.at, self.tiebreak, self.seq)
    }
}

impl<T> PartialEq for Pending<T> {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl<T> Eq for Pending<T> {}

impl<T> PartialOrd for Pending<T> {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}

impl<T> Ord for Pending<T> {
    // Reversed: `BinaryHeap` is a max-heap and we want the earliest first.
    fn cmp(&self, other: &Self) -> CmpOrdering {
        other.key().cmp(&self.key())
    }
}

impl<T> Deliveries<T> {
    /// An empty queue; `label` names its stream and its trace entries.
    pub fn new(label: impl Into<String>) -> Self {
        let label = label.into();
        Deliveries {
            shared: Arc::new(Shared {
                label: label.clone(),
                state: Mutex::new(State {
                    heap: BinaryHeap::new(),
                    next_seq: 0,
                    closed: false,
                    stream: context::with(|ctx| {
                        (ctx.stream("deliveries/", &label), ctx.swarm.delivery_jitter)
                    }),
                }),
                changed: Notify::new(),
            }),
        }
    }

    fn state(&self) -> MutexGuard<'_, State<T>> {
        // A panic while holding the lock cannot leave the heap half-built,
        // so a poisoned lock is still a valid queue.
        self.shared
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Schedules `item` for `delay` from now (plus any seeded jitter).
    pub fn push_after(&self, delay: Duration, item: T) {
        self.push_at(Instant::now() + delay, item);
    }

    /// Schedules `item` for the instant `at` (plus any seeded jitter).
    pub fn push_at(&self, at: Instant, item: T) {
        let mut state = self.state();
        let (jitter, tiebreak) = match state.stream.as_mut() {
            Some((stream, max)) => {
                let jitter = if max.is_zero() {
                    Duration::ZERO
                } else {
                    stream.millis(Duration::ZERO..=*max)
                };
                let tiebreak = stream.next_u64();
                let perturbs = !jitter.is_zero() || tiebreak != 0;
                // Calm: on time, in push order.
                if context::with(|ctx| ctx.decide(super::schedule::DELIVERY, perturbs))
                    .unwrap_or(perturbs)
                {
                    (jitter, tiebreak)
                } else {
                    (Duration::ZERO, 0)
                }
            }
            None => (Duration::ZERO, 0),
        };
        let seq = state.next_seq;
        state.next_seq += 1;
        state.heap.push(Pending {
            at: at + jitter,
            tiebreak,
            seq,
            item,
        });
        drop(state);
        self.shared.changed.notify_one();
    }

    /// No more pushes will come: `pop` returns `None` once the queue drains.
    pub fn close(&self) {
        self.state().closed = true;
        self.shared.changed.notify_one();
    }

    /// How many items are waiting, due or not.
    pub fn len(&self) -> usize {
        self.state().heap.len()
    }

    /// Whether nothing is waiting.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Waits for the next item to come due and returns it; `None` when the
    /// queue is closed and empty.
    pub async fn pop(&self) -> Option<T> {
        loop {
            let changed = self.shared.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let due = {
                let mut state = self.state();
                match state.heap.peek() {
                    Some(next) if next.at <= Instant::now() => {
                        let next = state.heap.pop().expect("peeked");
                        drop(state);
                        let label = &self.shared.label;
                        context::with(|ctx| {
                            ctx.record_scheduling(ctx.label(), |event| {
                                event.push_str("deliver ");
                                event.push_str(label);
                                event.push_str(" #");
                                event.push_str(itoa::Buffer::new().format(next.seq));
                            })
                        });
                        tracing::debug!(target: "livesim::executor", queue = %label, seq = next.seq, "delivery");
                        return Some(next.item);
                    }
                    Some(next) => Some(next.at),
                    None if state.closed => return None,
                    None => None,
                }
            };
            match due {
                Some(at) => {
                    tokio::select! {
                        biased;
                        _ = &mut changed => {}
                        _ = tokio::time::sleep_until(at) => {}
                    }
                }
                None => changed.await,
            }
        }
    }
}
