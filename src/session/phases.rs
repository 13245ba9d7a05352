//! The phase machine: named phases of a conversation and the conditions
//! that move it from one to the next, timed by the session's clock.
//!
//! The control lane evaluates transitions at turn boundaries and after
//! state changes; the first transition (in declaration order) out of the
//! current phase whose condition holds is taken. Time in phase and the
//! timestamps in the transition history come from the [`Clock`], so a
//! [`ManualClock`](crate::clock::ManualClock) makes them exact.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use crate::clock::{SharedClock, Timestamp};
use crate::state::State;

type Condition = Arc<dyn Fn(&State) -> bool + Send + Sync>;

/// The phases a session moves through, as the builder takes them.
///
/// ```
/// use livesim::session::Phases;
///
/// let phases = Phases::new("greet")
///     .transition("greet", "collect", |s| s.contains("name"))
///     .transition("collect", "confirm", |s| s.contains("party_size"));
/// assert_eq!(phases.initial(), "greet");
/// ```
#[derive(Clone)]
pub struct Phases {
    initial: String,
    transitions: Vec<Transition>,
}

#[derive(Clone)]
struct Transition {
    from: String,
    to: String,
    when: Condition,
}

impl fmt::Debug for Phases {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let edges: Vec<String> = self
            .transitions
            .iter()
            .map(|t| format!("{} -> {}", t.from, t.to))
            .collect();
        f.debug_struct("Phases")
            .field("initial", &self.initial)
            .field("transitions", &edges)
            .finish()
    }
}

impl Phases {
    /// Phases starting in `initial`.
    pub fn new(initial: impl Into<String>) -> Self {
        Phases {
            initial: initial.into(),
            transitions: Vec::new(),
        }
    }

    /// Moves from `from` to `to` once `when` holds on the state.
    pub fn transition(
        mut self,
        from: impl Into<String>,
        to: impl Into<String>,
        when: impl Fn(&State) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.transitions.push(Transition {
            from: from.into(),
            to: to.into(),
            when: Arc::new(when),
        });
        self
    }

    /// The phase a session starts in.
    pub fn initial(&self) -> &str {
        &self.initial
    }
}

/// One move from a phase to the next.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PhaseTransition {
    /// The phase left.
    pub from: String,
    /// The phase entered.
    pub to: String,
    /// When, by the session's clock.
    pub at: Timestamp,
}

/// A running phase machine.
pub struct PhaseMachine {
    phases: Phases,
    current: String,
    entered_at: Timestamp,
    history: Vec<PhaseTransition>,
    clock: SharedClock,
}

impl PhaseMachine {
    /// Starts `phases` in its initial phase now.
    pub fn start(phases: Phases, clock: SharedClock) -> Self {
        let entered_at = clock.now();
        PhaseMachine {
            current: phases.initial.clone(),
            phases,
            entered_at,
            history: Vec::new(),
            clock,
        }
    }

    /// The current phase.
    pub fn current(&self) -> &str {
        &self.current
    }

    /// How long the session has been in the current phase.
    pub fn time_in_phase(&self) -> Duration {
        self.clock.now() - self.entered_at
    }

    /// Every transition so far, oldest first.
    pub fn history(&self) -> &[PhaseTransition] {
        &self.history
    }

    /// Takes transitions while one out of the current phase holds (a chain
    /// `a -> b -> c` can complete in one evaluation), at most one per phase
    /// so a cycle cannot spin. Returns the transitions taken.
    pub fn evaluate(&mut self, state: &State) -> Vec<PhaseTransition> {
        let mut taken = Vec::new();
        for _ in 0..=self.phases.transitions.len() {
            let next = self
                .phases
                .transitions
                .iter()
                .find(|t| t.from == self.current && (t.when)(state))
                .map(|t| t.to.clone());
            let Some(to) = next else { break };
            if taken
                .iter()
                .any(|t: &PhaseTransition| t.from == self.current)
            {
                break;
            }
            let at = self.clock.now();
            let transition = PhaseTransition {
                from: std::mem::replace(&mut self.current, to.clone()),
                to,
                at,
            };
            self.entered_at = at;
            self.history.push(transition.clone());
            taken.push(transition);
        }
        taken
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    #[test]
    fn transitions_follow_state_and_are_timed_by_the_clock() {
        let clock = Arc::new(ManualClock::starting_at(Timestamp::from_unix_millis(0)));
        let state = State::new().with_clock(clock.clone());
        let phases = Phases::new("greet")
            .transition("greet", "collect", |s| s.contains("name"))
            .transition("collect", "confirm", |s| s.contains("size"));
        let mut machine = PhaseMachine::start(phases, clock.clone());
        clock.advance(Duration::from_secs(3));
        assert!(machine.evaluate(&state).is_empty());
        assert_eq!(machine.time_in_phase(), Duration::from_secs(3));
        state.set("name", "Ada");
        state.set("size", 4);
        let taken = machine.evaluate(&state);
        assert_eq!(taken.len(), 2, "a chain completes in one evaluation");
        assert_eq!(machine.current(), "confirm");
        assert_eq!(machine.history()[0].at, Timestamp::from_unix_millis(3000));
        clock.advance(Duration::from_millis(500));
        assert_eq!(machine.time_in_phase(), Duration::from_millis(500));
    }

    #[test]
    fn a_cycle_does_not_spin() {
        let clock: SharedClock = Arc::new(ManualClock::new());
        let phases = Phases::new("a")
            .transition("a", "b", |_| true)
            .transition("b", "a", |_| true);
        let mut machine = PhaseMachine::start(phases, clock);
        let taken = machine.evaluate(&State::new());
        assert_eq!(taken.len(), 2);
        assert_eq!(machine.current(), "a");
    }
}
