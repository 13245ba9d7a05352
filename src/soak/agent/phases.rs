//! An agent file's `"phases"`: the phases of its conversations and the
//! state conditions that move it from one to the next, read into the
//! session's [`Phases`] and checked by `phases-follow-spec`.
//!
//! ```json
//! "phases": {
//!   "initial": "greet",
//!   "transitions": [
//!     {"from": "greet", "to": "sized", "when": {"exists": "party_size"}},
//!     {"from": "sized", "to": "booked", "when": {"is_true": "booked"}}
//!   ]
//! }
//! ```
//!
//! A condition is a flow guard over state (`is_true`, `exists`, `equals`,
//! and `all`, `any`, `not` of them) on keys the agent's tools write: the
//! phase machine sees the state, not the tools' outcomes, and `session:`
//! keys change on every telemetry tick, which does not move phases.

use std::collections::BTreeMap;

use crate::flow::Guard;
use crate::session::Phases;
use crate::soak::agent::tools::SimTool;
use crate::soak::agent::{final_state, state_guard};
use crate::soak::check;
use crate::soak::file_reader::{Decoded, Node};
use crate::soak::run::record::RunRecord;

/// The phases an agent file declares; in Rust, the same plan gives a
/// session its [`Phases`] and a soak its `phases-follow-spec` check.
///
/// ```
/// use livesim::flow::Guard;
/// use livesim::soak::{PhasePlan, PhaseRule};
///
/// let plan = PhasePlan {
///     initial: "greet".into(),
///     transitions: vec![PhaseRule {
///         from: "greet".into(),
///         to: "sized".into(),
///         when: Guard::Exists("party_size".into()),
///     }],
/// };
/// let builder = livesim::prelude::Live::builder().phases(plan.phases());
/// # let _ = builder;
/// assert!(!plan.has_cycle());
/// // And in a soak:
/// // soak.invariant("phases-follow-spec", move |run| plan.check(run))
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct PhasePlan {
    /// The phase every session starts in.
    pub initial: String,
    /// The transitions, in declaration order: out of a phase, the first
    /// whose condition holds is taken.
    pub transitions: Vec<PhaseRule>,
}

/// One transition of a [`PhasePlan`].
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseRule {
    /// The phase it leaves.
    pub from: String,
    /// The phase it enters.
    pub to: String,
    /// The state condition that takes it.
    pub when: Guard,
}

impl PhasePlan {
    /// The session's phase machine: each condition evaluated on the
    /// session's state by the flow's guards.
    pub fn phases(&self) -> Phases {
        let mut phases = Phases::new(self.initial.clone());
        for rule in &self.transitions {
            let when = rule.when.clone();
            phases = phases.transition(rule.from.clone(), rule.to.clone(), move |state| {
                state_guard::holds(&when, state)
            });
        }
        phases
    }

    /// `phases-follow-spec` on one run: `Ok` when the phases its session
    /// moved through are this plan's, or what went wrong.
    pub fn check(&self, run: &RunRecord) -> Result<(), String> {
        check::phases::check(self, run)
    }

    /// Whether a phase can be reached again once left: then the session
    /// may stop in a phase whose way out holds (at most one move out of
    /// each phase per evaluation), and `phases-follow-spec` does not ask
    /// where a run ends.
    pub fn has_cycle(&self) -> bool {
        // Peel off phases nothing left enters (Kahn's order): a cycle is
        // what cannot be peeled.
        let mut entering: BTreeMap<&str, usize> = BTreeMap::new();
        let mut out: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        entering.entry(self.initial.as_str()).or_default();
        for t in &self.transitions {
            entering.entry(t.from.as_str()).or_default();
            *entering.entry(t.to.as_str()).or_default() += 1;
            out.entry(t.from.as_str()).or_default().push(t.to.as_str());
        }
        let mut free: Vec<&str> = entering
            .iter()
            .filter(|(_, n)| **n == 0)
            .map(|(phase, _)| *phase)
            .collect();
        let mut peeled = 0;
        while let Some(phase) = free.pop() {
            peeled += 1;
            for to in out.get(phase).into_iter().flatten() {
                if let Some(n) = entering.get_mut(to) {
                    *n -= 1;
                    if *n == 0 {
                        free.push(to);
                    }
                }
            }
        }
        peeled < entering.len()
    }
}

/// `"phases"`, checked against the state keys `tools` (and `others`: the
/// extractor, the resolvers) write.
pub(crate) fn decode(node: &Node<'_>, tools: &[SimTool], others: &[&str]) -> Decoded<PhasePlan> {
    let fields = node.object("`phases`", &["initial", "transitions"])?;
    let initial = fields
        .require("initial", "the phase every session starts in")?
        .string("a phase name")?;
    let keys = final_state::state_keys(tools, others);
    let mut transitions = Vec::new();
    let list = fields.require("transitions", "a list of transitions")?;
    for item in list.list("a list of {\"from\", \"to\", \"when\"}")? {
        let rule = item.object("a transition", &["from", "to", "when"])?;
        let from = rule
            .require("from", "the phase it leaves")?
            .string("a phase name")?;
        let to = rule
            .require("to", "the phase it enters")?
            .string("a phase name")?;
        let when = state_guard::decode(
            &rule.require("when", "the state condition that takes it")?,
            "a phase's condition",
            &keys,
        )?;
        transitions.push((item, PhaseRule { from, to, when }));
    }
    if transitions.is_empty() {
        return list.fail("expected at least one transition, found an empty list");
    }
    // A transition out of a phase nothing enters never runs.
    let entered: Vec<&str> = std::iter::once(initial.as_str())
        .chain(transitions.iter().map(|(_, t)| t.to.as_str()))
        .collect();
    for (item, rule) in &transitions {
        if !entered.contains(&rule.from.as_str()) {
            let hint = crate::jsonl::did_you_mean(&rule.from, &entered);
            return item.fail(format!(
                "no transition enters the phase {:?} and it is not the initial one{hint}",
                rule.from
            ));
        }
    }
    Ok(PhasePlan {
        initial,
        transitions: transitions.into_iter().map(|(_, t)| t).collect(),
    })
}
