//! The flow spec: validated steps, and the plan the monitor runs them by.
//!
//! A [`FlowSpec`] is what [`Flow::build`](super::Flow::build) and
//! [`Conversation::compile`](super::Conversation::compile) produce and what
//! [`FlowMonitor`](super::FlowMonitor) runs; it is also what a spec file
//! holds. It is only ever constructed through validation, so a spec in hand
//! has unique, non-empty ids, `after` links to existing steps, no cycles and
//! no empty names in its guards.
//!
//! Alongside the steps it keeps a plan derived from them (a topological
//! order with declaration order breaking ties, each step's `after` as
//! indices, and which steps allow each tool), so evaluating a turn or gating
//! a call never searches by name.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::error::FlowError;
use super::guard::Guard;

/// One step of a flow, as declared.
///
/// A step is *active* when every step in its `after` is done and it is not
/// done itself. While active it admits the tools in `allow`; a tool with a
/// gate is admitted only while that gate's guard also holds. A step is done
/// once its `done` guard holds at an evaluation point, and stays done; a
/// step without a `done` guard stays active for the rest of the session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StepSpec {
    pub(crate) id: String,
    #[serde(skip_serializing_if = "BTreeSet::is_empty")]
    pub(crate) after: BTreeSet<String>,
    #[serde(skip_serializing_if = "BTreeSet::is_empty")]
    pub(crate) allow: BTreeSet<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) gates: BTreeMap<String, Guard>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) done: Option<Guard>,
    #[serde(skip_serializing_if = "Escalation::is_never")]
    pub(crate) escalate: Escalation,
}

impl StepSpec {
    /// A step with this id that allows nothing and is never done.
    pub(crate) fn new(id: impl Into<String>) -> StepSpec {
        StepSpec {
            id: id.into(),
            after: BTreeSet::new(),
            allow: BTreeSet::new(),
            gates: BTreeMap::new(),
            done: None,
            escalate: Escalation::default(),
        }
    }

    /// The step's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The steps that must be done before this one is active.
    pub fn after(&self) -> &BTreeSet<String> {
        &self.after
    }

    /// The tools this step admits while active (gated tools included).
    pub fn allow(&self) -> &BTreeSet<String> {
        &self.allow
    }

    /// Tools admitted only while their guard also holds.
    pub fn gates(&self) -> &BTreeMap<String, Guard> {
        &self.gates
    }

    /// When the step is done; `None` means never.
    pub fn done(&self) -> Option<&Guard> {
        self.done.as_ref()
    }

    /// When the step escalates.
    pub fn escalate(&self) -> Escalation {
        self.escalate
    }
}

/// When an active step escalates: after this many tool failures, or this
/// many interruptions, counted while it is active. `None` never escalates.
///
/// An escalated step stays active (its `done` guard can still complete it),
/// but it admits none of its tools any more; the monitor produces one
/// `flow:escalated` entry when it escalates.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Escalation {
    /// Escalate at this many failed or timed-out tool calls.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_failures: Option<u32>,
    /// Escalate at this many user interruptions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interruptions: Option<u32>,
}

impl Escalation {
    /// Whether no threshold is set.
    pub fn is_never(&self) -> bool {
        self.tool_failures.is_none() && self.interruptions.is_none()
    }
}

/// A validated flow: steps the [`FlowMonitor`](super::FlowMonitor) runs.
///
/// Build one with [`Flow`](super::Flow) or
/// [`Conversation`](super::Conversation), or read one from a spec file
/// (see [`Spec`](super::Spec)).
///
/// ```
/// use livesim::flow::{Flow, Guard};
///
/// let spec = Flow::new()
///     .step("verify").allow(["verify_identity"]).done(Guard::called_ok("verify_identity"))
///     .step("pay").after("verify").allow(["take_payment"]).done(Guard::called_ok("take_payment"))
///     .build()
///     .unwrap();
/// assert_eq!(spec.steps().len(), 2);
/// assert_eq!(spec.step("pay").unwrap().after().len(), 1);
/// assert_eq!(spec.steps_allowing("take_payment"), ["pay"]);
/// ```
#[derive(Debug, Clone)]
pub struct FlowSpec {
    steps: Vec<StepSpec>,
    plan: Plan,
    noun: &'static str,
}

/// Equal when the steps are equal; the plan is derived from them, and the
/// noun only changes how messages read.
impl PartialEq for FlowSpec {
    fn eq(&self, other: &Self) -> bool {
        self.steps == other.steps
    }
}

impl Eq for FlowSpec {}

/// Indices derived from the steps, so the monitor never searches by name.
#[derive(Debug, Clone, Default)]
pub(crate) struct Plan {
    /// Step indices, each after every step it comes after; ties in
    /// declaration order.
    pub(crate) order: Vec<usize>,
    /// Each step's `after` as indices.
    pub(crate) after: Vec<Vec<usize>>,
    /// Step index by id.
    pub(crate) index: BTreeMap<String, usize>,
    /// For each tool, the steps that allow it, in declaration order.
    pub(crate) allowing: BTreeMap<String, Vec<usize>>,
}

impl FlowSpec {
    /// Validates steps declared as a flow.
    pub(crate) fn new(steps: Vec<StepSpec>) -> Result<FlowSpec, FlowError> {
        FlowSpec::with_noun(steps, "step")
    }

    /// Validates steps; `noun` ("step" or "stage") is what messages call
    /// them.
    pub(crate) fn with_noun(
        steps: Vec<StepSpec>,
        noun: &'static str,
    ) -> Result<FlowSpec, FlowError> {
        let plan = validate(&steps, noun)?;
        Ok(FlowSpec { steps, plan, noun })
    }

    /// A flow with no steps: it admits no tool.
    pub fn empty() -> FlowSpec {
        FlowSpec {
            steps: Vec::new(),
            plan: Plan::default(),
            noun: "step",
        }
    }

    /// The steps, in declaration order.
    pub fn steps(&self) -> &[StepSpec] {
        &self.steps
    }

    /// The step with this id.
    pub fn step(&self, id: &str) -> Option<&StepSpec> {
        self.plan.index.get(id).map(|&i| &self.steps[i])
    }

    /// The ids of the steps that allow `tool`, in declaration order.
    pub fn steps_allowing(&self, tool: &str) -> Vec<&str> {
        self.plan
            .allowing
            .get(tool)
            .map(|steps| steps.iter().map(|&i| self.steps[i].id()).collect())
            .unwrap_or_default()
    }

    /// Every tool some step allows, sorted.
    pub fn tools(&self) -> Vec<&str> {
        self.plan.allowing.keys().map(String::as_str).collect()
    }

    /// What messages call a step: "step", or "stage" for a conversation.
    pub fn noun(&self) -> &'static str {
        self.noun
    }

    pub(crate) fn plan(&self) -> &Plan {
        &self.plan
    }
}

impl AsRef<FlowSpec> for FlowSpec {
    fn as_ref(&self) -> &FlowSpec {
        self
    }
}

/// Checks the steps and derives their plan.
fn validate(steps: &[StepSpec], noun: &'static str) -> Result<Plan, FlowError> {
    let mut index = BTreeMap::new();
    for (i, step) in steps.iter().enumerate() {
        if step.id.is_empty() {
            return Err(FlowError::EmptyId {
                noun,
                position: i + 1,
            });
        }
        if index.insert(step.id.clone(), i).is_some() {
            return Err(FlowError::DuplicateId {
                noun,
                id: step.id.clone(),
            });
        }
    }
    let invalid = |step: &StepSpec, problem: String| FlowError::Invalid {
        noun,
        step: step.id.clone(),
        problem,
    };
    let mut after = Vec::with_capacity(steps.len());
    let mut allowing: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, step) in steps.iter().enumerate() {
        let mut links = Vec::with_capacity(step.after.len());
        for target in &step.after {
            if target == &step.id {
                return Err(FlowError::Cycle {
                    noun,
                    cycle: vec![step.id.clone()],
                });
            }
            match index.get(target) {
                Some(&j) => links.push(j),
                None => {
                    return Err(FlowError::UnknownAfter {
                        noun,
                        step: step.id.clone(),
                        target: target.clone(),
                        known: steps
                            .iter()
                            .map(|s| s.id.as_str())
                            .collect::<Vec<_>>()
                            .join(", "),
                    });
                }
            }
        }
        after.push(links);
        if step.allow.iter().any(String::is_empty) {
            return Err(invalid(step, "allow lists an empty tool name".into()));
        }
        for (tool, guard) in &step.gates {
            if !step.allow.contains(tool) {
                return Err(invalid(
                    step,
                    format!("{tool} has a gate but is not in allow: allow it too"),
                ));
            }
            if let Some(problem) = guard.problem() {
                return Err(invalid(step, format!("the gate of {tool}: {problem}")));
            }
        }
        if let Some(problem) = step.done.as_ref().and_then(Guard::problem) {
            return Err(invalid(step, format!("done guard: {problem}")));
        }
        for (what, limit) in [
            ("tool failures", step.escalate.tool_failures),
            ("interruptions", step.escalate.interruptions),
        ] {
            if limit == Some(0) {
                return Err(invalid(
                    step,
                    format!("escalate after 0 {what} would escalate at once: use 1 or more"),
                ));
            }
        }
        for tool in &step.allow {
            allowing.entry(tool.clone()).or_default().push(i);
        }
    }
    let order = topological_order(steps, &after, noun)?;
    Ok(Plan {
        order,
        after,
        index,
        allowing,
    })
}

/// Kahn's algorithm, always taking the earliest-declared ready step, so the
/// order is a function of the declaration alone. A leftover step means a
/// cycle, which is then traced for the message.
fn topological_order(
    steps: &[StepSpec],
    after: &[Vec<usize>],
    noun: &'static str,
) -> Result<Vec<usize>, FlowError> {
    let n = steps.len();
    let mut waiting: Vec<usize> = after.iter().map(Vec::len).collect();
    let mut unlocks: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, links) in after.iter().enumerate() {
        for &j in links {
            unlocks[j].push(i);
        }
    }
    let mut ready: BTreeSet<usize> = (0..n).filter(|&i| waiting[i] == 0).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(i) = ready.pop_first() {
        order.push(i);
        for &k in &unlocks[i] {
            waiting[k] -= 1;
            if waiting[k] == 0 {
                ready.insert(k);
            }
        }
    }
    if order.len() == n {
        return Ok(order);
    }
    // Walk `after` links from the first stuck step until one repeats: every
    // stuck step waits on some other stuck step, so the walk finds a cycle.
    let start = (0..n).find(|&i| waiting[i] > 0).unwrap_or(0);
    let mut path = vec![start];
    let mut current = start;
    loop {
        let next = after[current]
            .iter()
            .copied()
            .find(|&j| waiting[j] > 0)
            .unwrap_or(start);
        if let Some(pos) = path.iter().position(|&p| p == next) {
            let cycle = path[pos..].iter().map(|&i| steps[i].id.clone()).collect();
            return Err(FlowError::Cycle { noun, cycle });
        }
        path.push(next);
        current = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(id: &str, after: &[&str]) -> StepSpec {
        let mut s = StepSpec::new(id);
        s.after = after.iter().map(|a| a.to_string()).collect();
        s
    }

    #[test]
    fn order_respects_after_and_declaration() {
        let spec = FlowSpec::new(vec![
            step("c", &["b"]),
            step("a", &[]),
            step("b", &["a"]),
            step("d", &[]),
        ])
        .unwrap();
        let ids: Vec<&str> = spec
            .plan()
            .order
            .iter()
            .map(|&i| spec.steps()[i].id())
            .collect();
        assert_eq!(ids, ["a", "b", "c", "d"]);
    }

    /// Two specs are equal when their steps are, whatever they are called
    /// in messages; a step more, or one that differs, makes them unequal.
    #[test]
    fn specs_compare_by_their_steps() {
        let spec = |steps: Vec<StepSpec>, noun| FlowSpec::with_noun(steps, noun).unwrap();
        let two = || vec![step("a", &[]), step("b", &["a"])];
        assert_eq!(spec(two(), "step"), spec(two(), "stage"));
        assert_ne!(spec(two(), "step"), spec(vec![step("a", &[])], "step"));
        assert_ne!(
            spec(two(), "step"),
            spec(vec![step("a", &[]), step("b", &[])], "step")
        );
        assert_ne!(spec(two(), "step"), FlowSpec::empty());
    }

    /// A cycle is named by walking from its first stuck step along the
    /// links to other stuck steps only: `c` also comes after `start`,
    /// which is not in the cycle, whichever of its links comes first.
    #[test]
    fn a_cycle_is_traced() {
        for c_after in [["b", "start"], ["start", "b"]] {
            let err = FlowSpec::new(vec![
                step("start", &[]),
                step("a", &["c"]),
                step("b", &["a"]),
                step("c", &c_after),
            ])
            .unwrap_err();
            assert_eq!(
                err,
                FlowError::Cycle {
                    noun: "step",
                    cycle: vec!["a".into(), "c".into(), "b".into()]
                },
                "c after {c_after:?}"
            );
        }
    }
}
