//! The admission rule, and the sentence that explains a refusal.
//!
//! Under Enforce a call is admitted iff some active step allows its tool,
//! that step has not escalated, the step's gate on the tool (if any)
//! holds now, and, when the tool commits the step (its `done` guard needs
//! the tool to succeed), no admitted call of the tool is still running:
//! the gate reserves a committing tool for the call it admitted, so two
//! calls of it in one message are not both admitted. When none does, the reason names what stands in the way: the
//! escalated or closed-gated steps that allow the tool, or else the active
//! steps and what they allow, and where the tool belongs instead. The same
//! rule serves the gate, [`FlowMonitor::check`] and explanations, so they
//! can never disagree.

use std::collections::BTreeSet;

use super::monitor::FlowMonitor;
use super::state_view::StateView;

impl FlowMonitor {
    /// The Enforce rule for `tool` under these done flags: `Ok` to admit,
    /// `Err` with a sentence saying why not.
    pub(crate) fn judge(
        &self,
        tool: &str,
        done: &[bool],
        state: &dyn StateView,
    ) -> Result<(), String> {
        let steps = self.spec().steps();
        let noun = self.spec().noun();
        let facts = self.facts(state);
        let after = &self.spec().plan().after;
        let is_active = |i: usize| !done[i] && after[i].iter().all(|&j| done[j]);
        let allowing: &[usize] = self
            .spec()
            .plan()
            .allowing
            .get(tool)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let mut objections = Vec::new();
        for &i in allowing.iter().filter(|&&i| is_active(i)) {
            let step = &steps[i];
            if let Some(escalation) = self.escalation_of(i) {
                objections.push(format!("{noun} {} {escalation}", step.id));
            } else if let Some(gate) = step.gates.get(tool).filter(|g| !g.holds(&facts)) {
                let unmet: Vec<String> = gate.unmet(&facts).into_iter().map(|u| u.why).collect();
                objections.push(format!(
                    "{noun} {} allows it only when {gate}, and {}",
                    step.id,
                    unmet.join(" and ")
                ));
            } else if self.running_call_of(tool).is_some()
                && step
                    .done
                    .as_ref()
                    .is_some_and(|done| done.requires_ok(tool))
            {
                // No call id in the reason: a replay of the journal numbers
                // calls its own way, and must give the same reason.
                objections.push(format!(
                    "{tool} completes {noun} {} and a call of it is still running; a second \
                     call is refused until that one has answered",
                    step.id
                ));
            } else {
                return Ok(());
            }
        }
        if !objections.is_empty() {
            return Err(format!(
                "{tool} is not allowed now: {}",
                objections.join("; ")
            ));
        }
        // No active step allows it: say what is active and where it belongs.
        let active = self.active_indices(done);
        let now = if active.is_empty() {
            if steps.is_empty() {
                "the flow has no steps".to_string()
            } else {
                format!("no {noun} is active (every {noun} is done)")
            }
        } else {
            let ids: Vec<&str> = active.iter().map(|&i| steps[i].id()).collect();
            let tools: BTreeSet<&str> = active
                .iter()
                .flat_map(|&i| steps[i].allow.iter().map(String::as_str))
                .collect();
            let tools: Vec<&str> = tools.into_iter().collect();
            if tools.is_empty() {
                format!(
                    "active {noun}s are [{}], which allow no tools",
                    ids.join(", ")
                )
            } else {
                format!(
                    "active {noun}s are [{}], which allow [{}]",
                    ids.join(", "),
                    tools.join(", ")
                )
            }
        };
        let elsewhere = if allowing.is_empty() {
            format!("no {noun} of this flow allows {tool}")
        } else {
            let places: Vec<String> = allowing
                .iter()
                .map(|&i| {
                    if done[i] {
                        format!("{noun} {}, which is done", steps[i].id)
                    } else {
                        let waits: Vec<&str> = self.spec().plan().after[i]
                            .iter()
                            .filter(|&&j| !done[j])
                            .map(|&j| steps[j].id())
                            .collect();
                        format!(
                            "{noun} {}, which waits for [{}]",
                            steps[i].id,
                            waits.join(", ")
                        )
                    }
                })
                .collect();
            format!("{tool} is allowed only in {}", places.join(" and "))
        };
        Err(format!("{tool} is not allowed now: {now}; {elsewhere}"))
    }
}
