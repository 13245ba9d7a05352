//! Exploration that follows coverage: besides fresh seeds, the soak runs
//! variants of the seeds that found something new.
//!
//! Every run leaves its **event orders**: the kinds of the events the
//! session delivered, in order (a run of one kind counted once, telemetry
//! left out), taken as pairs, each kind with the kind right after it and
//! how often that pair came, rounded up to a power of two. That is the
//! coverage map a fuzzer keeps of a program's branches, with the
//! session's events as the branches: a whole run's sequence is nearly
//! always new (a thousand seeds leave a thousand), its pairs are not. A
//! run is a *find* when it left an order no run of the soak had left
//! before, or when it reached a goal that at most one run in fifty
//! reached before it. A find's parent seed then gets
//! [`VARIANTS_PER_FIND`] variants queued (see
//! [`variant`](crate::soak::variant): its conversation, with faults and
//! scheduling perturbed), and a variant that is a find earns its parent
//! more.
//!
//! Runs go in batches of [`BATCH`] fresh seeds; the explorer looks at a
//! batch's runs in the plan's order once the batch is over, and the next
//! batch carries the variants it queued, at most one for every
//! [`SHARE`] fresh runs so far. So which variants run depends only on the
//! seeds, never on the number of jobs or on which run finished first.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use crate::executor::{Fnv64, Seed};
use crate::soak::generate::variant;
use crate::soak::run::record::TimedEvent;

/// Fresh runs per batch.
pub(crate) const BATCH: u64 = 256;

/// At most one explored run per this many fresh runs.
pub(crate) const SHARE: u64 = 4;

/// Variants queued for each find.
pub(crate) const VARIANTS_PER_FIND: u64 = 4;

/// Variants waiting at most; a find beyond it queues nothing (the queue
/// is already a few batches' worth).
const QUEUE_LIMIT: usize = 4 * BATCH as usize;

/// What the explorer learns from one run.
#[derive(Clone, Debug)]
pub(crate) struct Observation {
    pub agent: usize,
    pub seed: Seed,
    /// `None` when the run left no record (its simulation failed).
    pub orders: Option<Orders>,
    pub reached: Vec<String>,
}

/// One event order: a kind of event directly followed by another, and
/// how often (1, 2, 3–4, 5–8, … : the power of two at or above the
/// count).
pub(crate) type Order = (&'static str, &'static str, u32);

/// The event orders a run left, and its whole signature.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Orders {
    pub orders: BTreeSet<Order>,
    /// An FNV-1a hash of the whole sequence of kinds.
    pub signature: u64,
}

/// Telemetry, left out of the orders: when it lands says little about
/// what the session did.
const UNORDERED: [&str; 2] = ["usage", "resumption_update"];

/// The event orders of a run's events: the kinds of the events delivered,
/// in order, a run of one kind counted once, telemetry left out.
pub(crate) fn orders(events: &[TimedEvent]) -> Orders {
    let mut kinds: Vec<&'static str> = events
        .iter()
        .map(|e| e.event.kind())
        .filter(|kind| !UNORDERED.contains(kind))
        .collect();
    kinds.dedup();
    let mut signature = Fnv64::new();
    for kind in &kinds {
        signature.write(kind.as_bytes());
        signature.write(b";");
    }
    let signature = signature.finish();
    let mut counts: BTreeMap<(&'static str, &'static str), u32> = BTreeMap::new();
    for pair in kinds.windows(2) {
        *counts.entry((pair[0], pair[1])).or_insert(0) += 1;
    }
    let orders = counts
        .into_iter()
        .map(|((first, then), count)| (first, then, count.next_power_of_two()))
        .collect();
    Orders { orders, signature }
}

/// One agent's coverage so far.
#[derive(Default)]
struct Coverage {
    runs: u64,
    orders: BTreeSet<Order>,
    signatures: BTreeSet<u64>,
    goal_hits: BTreeMap<String, u64>,
    /// The next variant number of each parent seed.
    next_variant: BTreeMap<u64, u64>,
    /// Variants handed out to run.
    explored: u64,
}

/// The soak's coverage and the variants it has yet to run.
pub(crate) struct Explorer {
    /// Whether each agent's finds are explored (its coverage is counted
    /// either way).
    explores: Vec<bool>,
    agents: Vec<Coverage>,
    queue: VecDeque<(usize, Seed)>,
    fresh: u64,
    explored: u64,
}

impl Explorer {
    pub(crate) fn new(explores: Vec<bool>) -> Explorer {
        let agents = explores.iter().map(|_| Coverage::default()).collect();
        Explorer {
            explores,
            agents,
            queue: VecDeque::new(),
            fresh: 0,
            explored: 0,
        }
    }

    /// Takes in one finished run, in plan order; queues variants of its
    /// parent if it is a find.
    pub(crate) fn observe(&mut self, run: &Observation) {
        let Some(coverage) = self.agents.get_mut(run.agent) else {
            return;
        };
        let (parent, number) = variant::split(run.seed);
        if number == 0 {
            self.fresh += 1;
        }
        let mut new_order = false;
        if let Some(orders) = &run.orders {
            coverage.signatures.insert(orders.signature);
            for order in &orders.orders {
                new_order |= coverage.orders.insert(*order);
            }
        }
        let before = coverage.runs;
        coverage.runs += 1;
        let mut rare = false;
        for goal in &run.reached {
            let hits = coverage.goal_hits.entry(goal.clone()).or_insert(0);
            rare |= *hits * 50 <= before;
            *hits += 1;
        }
        let explores = self.explores.get(run.agent).copied().unwrap_or(false);
        if !(explores && (new_order || rare)) || self.queue.len() >= QUEUE_LIMIT {
            return;
        }
        let next = coverage.next_variant.entry(parent.value()).or_insert(1);
        *next = (*next).max(number + 1);
        for _ in 0..VARIANTS_PER_FIND {
            if *next > variant::MAX {
                break;
            }
            self.queue
                .push_back((run.agent, variant::of(parent, *next)));
            *next += 1;
        }
    }

    /// The variants the next batch carries: as many as are queued, up to
    /// one for every [`SHARE`] fresh runs seen so far.
    pub(crate) fn take(&mut self) -> Vec<(usize, Seed)> {
        let allowed = (self.fresh / SHARE).saturating_sub(self.explored);
        let count = (allowed as usize).min(self.queue.len());
        self.explored += count as u64;
        let taken: Vec<(usize, Seed)> = self.queue.drain(..count).collect();
        for (agent, _) in &taken {
            if let Some(coverage) = self.agents.get_mut(*agent) {
                coverage.explored += 1;
            }
        }
        taken
    }

    /// Variants of agent `agent` handed out to run.
    pub(crate) fn explored(&self, agent: usize) -> u64 {
        self.agents.get(agent).map_or(0, |c| c.explored)
    }

    /// Whether variants wait that the budget allows now.
    pub(crate) fn has_more(&self) -> bool {
        !self.queue.is_empty() && self.fresh / SHARE > self.explored
    }

    /// Distinct event orders agent `agent`'s runs left.
    pub(crate) fn orders(&self, agent: usize) -> u64 {
        self.agents.get(agent).map_or(0, |c| c.orders.len() as u64)
    }

    /// Distinct whole-run signatures agent `agent`'s runs left.
    pub(crate) fn signatures(&self, agent: usize) -> u64 {
        self.agents
            .get(agent)
            .map_or(0, |c| c.signatures.len() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run whose one order is `order` (a pair seen `order` times).
    fn run(agent: usize, seed: u64, order: u32, reached: &[&str]) -> Observation {
        Observation {
            agent,
            seed: Seed::new(seed),
            orders: Some(Orders {
                orders: [("tool_call", "tool_response", order)]
                    .into_iter()
                    .collect(),
                signature: u64::from(order),
            }),
            reached: reached.iter().map(ToString::to_string).collect(),
        }
    }

    // A run with an order no run had before queues variants of its
    // parent, numbered from 1, and a run of seen orders does not.
    #[test]
    fn a_new_order_queues_variants_of_its_parent() {
        let mut explorer = Explorer::new(vec![true]);
        for seed in 0..8 {
            explorer.observe(&run(0, seed, 7, &[]));
        }
        // Only seed 0 was new; 8 fresh runs allow 2 variants now.
        assert_eq!(
            explorer.take(),
            vec![
                (0, variant::of(Seed::new(0), 1)),
                (0, variant::of(Seed::new(0), 2))
            ]
        );
        assert!(!explorer.has_more());
        for seed in 8..16 {
            explorer.observe(&run(0, seed, 7, &[]));
        }
        assert_eq!(
            explorer.take(),
            vec![
                (0, variant::of(Seed::new(0), 3)),
                (0, variant::of(Seed::new(0), 4))
            ]
        );
        assert_eq!((explorer.orders(0), explorer.signatures(0)), (1, 1));
    }

    // A goal at most one run in fifty reached before is a find; one
    // reached more often is not.
    #[test]
    fn a_rare_goal_is_a_find_and_a_common_one_is_not() {
        let mut explorer = Explorer::new(vec![true]);
        for seed in 0..200 {
            // "four" is reached by 4 runs in 200 (one in fifty), "five" by 5.
            let goal: &[&str] = match seed {
                0..4 => &["common", "four", "five"],
                4 => &["common", "five"],
                _ if seed % 2 == 0 => &["common"],
                _ => &[],
            };
            explorer.observe(&run(0, seed, 1, goal));
        }
        explorer.take();
        explorer.observe(&run(0, 200, 1, &["common", "five"]));
        assert!(explorer.queue.is_empty());
        explorer.observe(&run(0, 201, 1, &["four"]));
        assert_eq!(explorer.queue.len() as u64, VARIANTS_PER_FIND);
        assert_eq!(explorer.queue[0], (0, variant::of(Seed::new(201), 1)));
    }

    // A variant that finds something queues more variants of its parent,
    // not of itself; an agent that does not explore queues nothing.
    #[test]
    fn variants_stay_children_of_the_parent_and_exploring_is_per_agent() {
        let mut explorer = Explorer::new(vec![true, false]);
        explorer.observe(&run(0, variant::of(Seed::new(9), 2).value(), 5, &[]));
        assert_eq!(explorer.queue[0], (0, variant::of(Seed::new(9), 3)));
        explorer.observe(&run(1, 3, 6, &[]));
        assert_eq!(explorer.queue.len() as u64, VARIANTS_PER_FIND);
        assert_eq!(explorer.orders(1), 1);
    }

    // Repeats collapse; the orders are the pairs of kinds that follow
    // each other, counted to the power of two; telemetry is left out.
    #[test]
    fn orders_are_pairs_of_kinds_counted_in_powers_of_two() {
        use crate::session::LiveEvent;
        use std::time::Duration;
        let at = |event| TimedEvent {
            at: Duration::ZERO,
            event,
        };
        let (i, g) = (LiveEvent::Interrupted, LiveEvent::GenerationComplete);
        let usage = || {
            at(LiveEvent::Usage {
                usage: serde_json::json!({}),
            })
        };
        let a = orders(&[at(i.clone()), at(g.clone()), at(i.clone()), at(g.clone())]);
        let b = orders(&[
            at(i.clone()),
            at(i.clone()),
            usage(),
            at(g.clone()),
            at(i.clone()),
            at(g.clone()),
        ]);
        let c = orders(&[at(g.clone()), at(i.clone())]);
        assert_eq!(a, b);
        let pair = |count| ("interrupted", "generation_complete", count);
        let back = ("generation_complete", "interrupted", 1);
        assert_eq!(a.orders, [pair(2), back].into_iter().collect());
        assert_eq!(c.orders, [back].into_iter().collect());
        assert_ne!(a.signature, c.signature);
        let three = orders(&[
            at(i.clone()),
            at(g.clone()),
            at(i.clone()),
            at(g.clone()),
            at(i),
            at(g),
        ]);
        assert!(three.orders.contains(&pair(4)));
    }
}
