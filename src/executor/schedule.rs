//! Seeded decisions, numbered, and the schedule that can calm them.
//!
//! Every place where the seed perturbs a run makes a **decision**: a lane
//! set picks a lane other than the first ready one, a yield point yields
//! or sleeps, a spawned task steps aside, a delivery gets jitter or a
//! tie-break, and, above this layer, a frame of an in-memory link is
//! delayed or a simulated tool is slowed or fails. Each decision has a
//! *calm* outcome: what production does (the first ready lane, no yield,
//! push order, the shortest latency, no failure).
//!
//! A run normally takes every decision as its streams draw it. Given a
//! [`Schedule`], it also numbers them: the `n`-th time the run reaches a
//! decision of one kind is `kind#n` (`yield#40`: the fortieth pass through
//! a yield point). A recording schedule notes which decisions perturbed
//! the run; a restricting one lets only the listed decisions perturb and
//! makes every other one calm. The streams are drawn the same way either
//! way, so calming one decision never changes another's draw: only what
//! follows from it in time.
//!
//! This is how a failing run is shrunk below the swarm's switches
//! (`livesim::soak`): keep only the perturbations it needs.

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, Mutex, MutexGuard};

/// A lane set picked a lane other than the first ready one.
pub const LANE: &str = "lane";
/// A yield point yielded or slept.
pub const YIELD: &str = "yield";
/// A spawned task stepped aside.
pub const TASK: &str = "task";
/// A delivery got jitter or a seeded tie-break (calm: on time, in push
/// order).
pub const DELIVERY: &str = "delivery";

/// One numbered decision: the `n`-th (from 1) decision of `kind` the run
/// reached. Written `kind#n`.
///
/// ```
/// use livesim::executor::Decision;
///
/// let d: Decision = "yield#40".parse().unwrap();
/// assert_eq!((d.kind.as_str(), d.n), ("yield", 40));
/// assert_eq!(d.to_string(), "yield#40");
/// assert!("yield".parse::<Decision>().is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Decision {
    /// The kind (`lane`, `yield`, `task`, `delivery`, or a kind of a layer
    /// above, such as `tool-failure`).
    pub kind: String,
    /// Which one of its kind, from 1.
    pub n: u64,
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}#{}", self.kind, self.n)
    }
}

impl FromStr for Decision {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || format!("`{s}` is not a decision: write kind#n, such as yield#40");
        let (kind, n) = s.split_once('#').ok_or_else(bad)?;
        let n: u64 = n.parse().map_err(|_| bad())?;
        let well_formed = !kind.is_empty()
            && kind
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !well_formed || n == 0 {
            return Err(bad());
        }
        Ok(Decision {
            kind: kind.to_string(),
            n,
        })
    }
}

/// Numbers a run's decisions, notes those that perturbed it, and may
/// restrict which may. Give one to
/// [`Simulation::schedule`](super::Simulation::schedule); the clone you
/// keep reads what the run did.
///
/// ```
/// use livesim::Seed;
/// use livesim::executor::{Schedule, Simulation, yield_point};
///
/// let program = || async {
///     for _ in 0..50 {
///         yield_point("demo").await;
///     }
///     livesim::executor::now()
/// };
/// let seed = (0..100).map(Seed::new).find(|&s| {
///     let swarm = Simulation::new(s).swarm_options().clone();
///     swarm.sleep_chance > 0.0 && swarm.yield_chance == 0.0
/// }).unwrap();
/// let recording = Schedule::recording();
/// let slept = Simulation::new(seed).schedule(recording.clone()).run(program).unwrap().value;
/// // Only the sleeps moved time: calm them all, and no time passes.
/// let calm = Simulation::new(seed).schedule(Schedule::only([])).run(program).unwrap().value;
/// assert_eq!(calm, std::time::Duration::ZERO);
/// assert_eq!(slept.is_zero(), recording.taken().is_empty());
/// // Keep exactly the perturbations the first run took: the same run.
/// let again = Simulation::new(seed).schedule(Schedule::only(recording.taken())).run(program);
/// assert_eq!(again.unwrap().value, slept);
/// ```
#[derive(Clone, Default)]
pub struct Schedule {
    state: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    /// `None`: every decision as drawn. `Some`: only these may perturb.
    only: Option<BTreeSet<Decision>>,
    /// How many decisions of each kind the run has reached.
    counts: Vec<(&'static str, u64)>,
    /// The decisions that perturbed the run, in the order taken.
    taken: Vec<Decision>,
}

impl fmt::Debug for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.state();
        f.debug_struct("Schedule")
            .field("only", &state.only.as_ref().map(BTreeSet::len))
            .field("taken", &state.taken.len())
            .finish()
    }
}

impl Schedule {
    /// Every decision as the seed draws it; each one that perturbs the run
    /// is noted ([`taken`](Self::taken)).
    pub fn recording() -> Self {
        Schedule::default()
    }

    /// Only `decisions` may perturb the run; every other decision takes
    /// its calm outcome. `Schedule::only([])` calms them all.
    pub fn only(decisions: impl IntoIterator<Item = Decision>) -> Self {
        Schedule {
            state: Arc::new(Mutex::new(State {
                only: Some(decisions.into_iter().collect()),
                ..State::default()
            })),
        }
    }

    /// The decisions this schedule lets perturb the run; `None` when it
    /// lets every one.
    pub fn allowed(&self) -> Option<Vec<Decision>> {
        self.state()
            .only
            .as_ref()
            .map(|only| only.iter().cloned().collect())
    }

    /// The decisions that perturbed the run so far, in the order taken.
    pub fn taken(&self) -> Vec<Decision> {
        self.state().taken.clone()
    }

    /// A fresh schedule with the same restriction and nothing counted, for
    /// another run.
    pub fn fresh(&self) -> Self {
        match self.allowed() {
            Some(only) => Schedule::only(only),
            None => Schedule::recording(),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // Counting cannot leave the state half-updated.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Numbers a decision of `kind` whose drawn outcome perturbs the run
    /// (`perturbed`) or not, and says whether the perturbation goes ahead.
    pub(crate) fn decide(&self, kind: &'static str, perturbed: bool) -> bool {
        let mut state = self.state();
        let n = match state
            .counts
            .iter_mut()
            .find(|(k, _)| std::ptr::eq(*k, kind) || *k == kind)
        {
            Some((_, count)) => {
                *count += 1;
                *count
            }
            None => {
                state.counts.push((kind, 1));
                1
            }
        };
        if !perturbed {
            return false;
        }
        let decision = Decision {
            kind: kind.to_string(),
            n,
        };
        let allowed = state
            .only
            .as_ref()
            .is_none_or(|only| only.contains(&decision));
        if allowed {
            state.taken.push(decision);
        }
        allowed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions_are_numbered_by_kind_and_filtered() {
        let schedule = Schedule::only(["yield#2".parse().unwrap()]);
        assert!(!schedule.decide(YIELD, true)); // yield#1: calmed
        assert!(!schedule.decide(LANE, true)); // lane#1: calmed
        assert!(schedule.decide(YIELD, true)); // yield#2: kept
        assert!(!schedule.decide(YIELD, false)); // yield#3: calm anyway
        assert_eq!(schedule.taken(), vec!["yield#2".parse().unwrap()]);
        let recording = Schedule::recording();
        assert!(recording.decide(TASK, true));
        assert!(!recording.decide(TASK, false));
        assert!(recording.decide(TASK, true));
        assert_eq!(
            recording
                .taken()
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            ["task#1", "task#3"]
        );
    }

    #[test]
    fn bad_decisions_do_not_parse() {
        for bad in ["", "#3", "yield#", "yield#0", "Yield#1", "yield#x", "a b#1"] {
            assert!(bad.parse::<Decision>().is_err(), "{bad}");
        }
    }
}
