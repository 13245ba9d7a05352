//! Explanations: where a flow stands and why, for people and for tools.
//!
//! An [`Explanation`] is a snapshot of a monitor at one point of a run, as
//! if the flow were evaluated then: the steps done, the active steps with
//! what each waits for (its `done` guard and the failing leaves of it), the
//! state of each gate, the steps still waiting for others, and for every
//! tool the spec names whether it would be admitted and, if not, why.
//! It serializes to JSON (`livesim flow why` prints it) and displays as
//! indented text.

use std::fmt;

use serde::Serialize;

use super::decision::Enforcement;
use super::guard::Unmet;
use super::monitor::FlowMonitor;
use super::state_view::StateView;

/// Where a flow stands at one point of a run.
///
/// ```
/// use livesim::flow::{Enforcement, Flow, FlowMonitor, Guard, NoState};
///
/// let spec = Flow::new()
///     .step("verify").allow(["verify_identity"]).done(Guard::called_ok("verify_identity"))
///     .step("pay").after("verify").allow(["take_payment"]).done(Guard::called_ok("take_payment"))
///     .build()
///     .unwrap();
/// let monitor = FlowMonitor::new(spec, Enforcement::Enforce);
/// let why = monitor.explain(&NoState);
/// assert_eq!(why.active[0].id, "verify");
/// assert_eq!(
///     why.active[0].waits_for[0].why,
///     "verify_identity has not completed ok (it has not been called)"
/// );
/// assert_eq!(why.waiting[0].waits_for_steps, ["verify"]);
/// assert!(!monitor.explain_tool("take_payment", &NoState).admitted);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Explanation {
    /// Enforce or Observe.
    pub enforcement: Enforcement,
    /// Turn boundaries evaluated so far.
    pub turns: u64,
    /// Done steps, in declaration order.
    pub done: Vec<String>,
    /// Active steps, in declaration order.
    pub active: Vec<ActiveStep>,
    /// Steps not yet active, with the steps they wait for.
    pub waiting: Vec<WaitingStep>,
    /// Every tool some step allows, with the gate's answer now.
    pub tools: Vec<ToolAnswer>,
}

/// An active step: what it allows and what it waits for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ActiveStep {
    /// The step id.
    pub id: String,
    /// The tools it allows.
    pub allow: Vec<String>,
    /// Its done guard as it prints; `None` when it is never done.
    pub done_when: Option<String>,
    /// The failing leaves of its done guard.
    pub waits_for: Vec<Unmet>,
    /// Its gated tools and whether each gate holds.
    pub gates: Vec<GateState>,
    /// Why it escalated, if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub escalated: Option<String>,
}

/// A gated tool of an active step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GateState {
    /// The tool.
    pub tool: String,
    /// The gate's guard as it prints.
    pub guard: String,
    /// The failing leaves; empty when the gate holds.
    pub unmet: Vec<Unmet>,
}

/// A step that is not active yet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WaitingStep {
    /// The step id.
    pub id: String,
    /// The steps it comes after that are not done.
    pub waits_for_steps: Vec<String>,
}

/// Whether the gate would admit a tool now, and why not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolAnswer {
    /// The tool.
    pub tool: String,
    /// Whether a call now would be admitted under the monitor's enforcement.
    pub admitted: bool,
    /// Why Enforce refuses it (under Observe: why it would); `None` when
    /// the flow allows it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl FlowMonitor {
    /// Explains the flow as if it were evaluated now. Latches nothing.
    pub fn explain(&self, state: &dyn StateView) -> Explanation {
        let done = self.progress(state);
        let facts = self.facts(state);
        let steps = self.spec().steps();
        let plan = self.spec().plan();
        let active_indices = self.active_indices(&done);
        let active = active_indices
            .iter()
            .map(|&i| {
                let step = &steps[i];
                ActiveStep {
                    id: step.id().to_string(),
                    allow: step.allow().iter().cloned().collect(),
                    done_when: step.done().map(ToString::to_string),
                    waits_for: step.done().map(|g| g.unmet(&facts)).unwrap_or_default(),
                    gates: step
                        .gates()
                        .iter()
                        .map(|(tool, guard)| GateState {
                            tool: tool.clone(),
                            guard: guard.to_string(),
                            unmet: guard.unmet(&facts),
                        })
                        .collect(),
                    escalated: self.escalation_of(i).map(str::to_string),
                }
            })
            .collect();
        let waiting = (0..steps.len())
            .filter(|i| !done[*i] && !active_indices.contains(i))
            .map(|i| WaitingStep {
                id: steps[i].id().to_string(),
                waits_for_steps: plan.after[i]
                    .iter()
                    .filter(|&&j| !done[j])
                    .map(|&j| steps[j].id().to_string())
                    .collect(),
            })
            .collect();
        let tools = self
            .spec()
            .tools()
            .into_iter()
            .map(|tool| self.answer(tool, &done, state))
            .collect();
        Explanation {
            enforcement: self.enforcement(),
            turns: self.turns(),
            done: (0..steps.len())
                .filter(|&i| done[i])
                .map(|i| steps[i].id().to_string())
                .collect(),
            active,
            waiting,
            tools,
        }
    }

    /// Whether a call of `tool` would be admitted now, and if not, why.
    /// Works for any tool name, including ones the spec never mentions.
    pub fn explain_tool(&self, tool: &str, state: &dyn StateView) -> ToolAnswer {
        let done = self.progress(state);
        self.answer(tool, &done, state)
    }

    fn answer(&self, tool: &str, done: &[bool], state: &dyn StateView) -> ToolAnswer {
        let reason = self.judge(tool, done, state).err();
        ToolAnswer {
            tool: tool.to_string(),
            admitted: reason.is_none() || self.enforcement() == Enforcement::Observe,
            reason,
        }
    }
}

impl fmt::Display for Explanation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "flow ({}), after {} turn{}",
            self.enforcement,
            self.turns,
            if self.turns == 1 { "" } else { "s" }
        )?;
        writeln!(f, "done: [{}]", self.done.join(", "))?;
        if self.active.is_empty() {
            writeln!(f, "active: none")?;
        }
        for step in &self.active {
            write!(f, "active {}: allows [{}]", step.id, step.allow.join(", "))?;
            if let Some(escalated) = &step.escalated {
                write!(f, "; {escalated}, so it admits none of them")?;
            }
            writeln!(f)?;
            match &step.done_when {
                None => writeln!(f, "  never done (no done guard)")?,
                Some(guard) if step.waits_for.is_empty() => {
                    writeln!(f, "  done when {guard}: holds now")?
                }
                Some(guard) => {
                    writeln!(f, "  done when {guard}; waits for:")?;
                    for unmet in &step.waits_for {
                        writeln!(f, "    {unmet}")?;
                    }
                }
            }
            for gate in &step.gates {
                if gate.unmet.is_empty() {
                    writeln!(f, "  gate {} when {}: open", gate.tool, gate.guard)?;
                } else {
                    writeln!(f, "  gate {} when {}: closed", gate.tool, gate.guard)?;
                    for unmet in &gate.unmet {
                        writeln!(f, "    {unmet}")?;
                    }
                }
            }
        }
        for step in &self.waiting {
            writeln!(
                f,
                "waiting {}: for [{}]",
                step.id,
                step.waits_for_steps.join(", ")
            )?;
        }
        for answer in &self.tools {
            writeln!(f, "{answer}")?;
        }
        Ok(())
    }
}

impl fmt::Display for ToolAnswer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.reason, self.admitted) {
            (None, _) => write!(f, "tool {}: admitted", self.tool),
            (Some(reason), true) => write!(
                f,
                "tool {}: admitted (observe); enforce would refuse: {reason}",
                self.tool
            ),
            (Some(reason), false) => write!(f, "tool {}: refused: {reason}", self.tool),
        }
    }
}
