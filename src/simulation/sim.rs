//! The simulator: a flow monitor driven by scenario steps, with state kept
//! in a map and call ids made up as the steps need them.
//!
//! [`Sim::apply`] is the one place scenario semantics live; `Scenario::run`
//! and any other driver (the soak, `flow replay`) share it. The simulator
//! does not run resolvers or tools: state changes arrive as `Set` steps.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use serde_json::Value;

use super::step::Step;
use crate::flow::{
    Enforcement, Explanation, FlowEntry, FlowMonitor, FlowSpec, ToolAnswer, Verdict,
};

/// A flow monitor, its state, and the journal a session would have written.
///
/// ```
/// use livesim::flow::{Enforcement, Flow, Guard};
/// use livesim::simulation::{Sim, Step};
///
/// let spec = Flow::new()
///     .step("verify").allow(["verify_identity"]).done(Guard::called_ok("verify_identity"))
///     .step("pay").after("verify").allow(["take_payment"])
///     .build()
///     .unwrap();
/// let mut sim = Sim::new(spec, Enforcement::Enforce);
/// sim.apply(&Step::ExpectDenied("take_payment".into())).unwrap();
/// sim.apply(&Step::ToolOk("verify_identity".into())).unwrap();
/// sim.apply(&Step::ExpectActive(vec!["pay".into()])).unwrap();
/// let err = sim.apply(&Step::ExpectDenied("take_payment".into())).unwrap_err();
/// assert_eq!(err, "expected take_payment to be denied, but the flow admitted it (active steps: [pay])");
/// ```
#[derive(Debug, Clone)]
pub struct Sim {
    monitor: FlowMonitor,
    state: BTreeMap<String, Value>,
    /// Running calls per tool, oldest first.
    running: BTreeMap<String, VecDeque<String>>,
    calls: u64,
    journal: Vec<(String, Value)>,
}

impl Sim {
    /// A simulator at the start of a session, for a [`FlowSpec`] or an
    /// `Arc<FlowSpec>`.
    pub fn new(spec: impl Into<Arc<FlowSpec>>, enforcement: Enforcement) -> Sim {
        Sim {
            monitor: FlowMonitor::new(spec, enforcement),
            state: BTreeMap::new(),
            running: BTreeMap::new(),
            calls: 0,
            journal: Vec::new(),
        }
    }

    /// The monitor.
    pub fn monitor(&self) -> &FlowMonitor {
        &self.monitor
    }

    /// The state the steps have written.
    pub fn state(&self) -> &BTreeMap<String, Value> {
        &self.state
    }

    /// What a session would have journaled, in order: state writes from
    /// `Set` steps and the monitor's `flow:*` entries.
    pub fn journal(&self) -> &[(String, Value)] {
        &self.journal
    }

    /// The flow explained at this point.
    pub fn explain(&self) -> Explanation {
        self.monitor.explain(&self.state)
    }

    /// Whether a call of `tool` would be admitted now under the monitor's
    /// enforcement, and if not, why.
    pub fn explain_tool(&self, tool: &str) -> ToolAnswer {
        self.monitor.explain_tool(tool, &self.state)
    }

    /// What the active steps wait for now, one sentence per step that
    /// waits (`book waits for called_ok(book_table): …`).
    pub fn waits(&self) -> Vec<String> {
        self.explain()
            .active
            .iter()
            .filter(|step| !step.waits_for.is_empty())
            .map(|step| {
                let unmet: Vec<String> = step.waits_for.iter().map(ToString::to_string).collect();
                format!("{} waits for {}", step.id, unmet.join(" and "))
            })
            .collect()
    }

    /// Applies one step; `Err` says why an expectation does not hold (or a
    /// step cannot apply, such as a result with no running call).
    pub fn apply(&mut self, step: &Step) -> Result<(), String> {
        match step {
            Step::ExpectAllowed(tool) => self.call(tool, true),
            Step::ExpectDenied(tool) => self.call(tool, false),
            Step::ToolResult { tool, ok } => self.complete(tool, *ok),
            Step::ToolCancelled(tool) => self.cancel(tool),
            Step::Turn => {
                let turn = self.monitor.evaluate_turn(&self.state);
                self.write(vec![turn.entry()]);
                Ok(())
            }
            Step::ExpectActive(expected) => self.expect_active(expected),
            Step::Set { key, value } => {
                if value.is_null() {
                    self.state.remove(key);
                } else {
                    self.state.insert(key.clone(), value.clone());
                }
                self.journal.push((key.clone(), value.clone()));
                Ok(())
            }
            Step::ToolFailed(tool) => {
                let entries = self.monitor.record_failure(tool, &self.state);
                self.write(entries);
                Ok(())
            }
            Step::Interrupt => {
                let entries = self.monitor.record_interruption(&self.state);
                self.write(entries);
                Ok(())
            }
            Step::ToolOk(tool) => {
                self.call(tool, true)?;
                self.complete(tool, true)?;
                self.apply(&Step::Turn)
            }
        }
    }

    /// A call of `tool` arrives; `expect_admit` says which way it must go.
    fn call(&mut self, tool: &str, expect_admit: bool) -> Result<(), String> {
        self.calls += 1;
        let id = format!("call-{}", self.calls);
        let decision = self
            .monitor
            .gate(tool, &id, &self.state)
            .map_err(|e| e.to_string())?;
        self.write(decision.entries());
        if decision.admitted() {
            self.running
                .entry(tool.to_string())
                .or_default()
                .push_back(id);
        }
        match (&decision.verdict, expect_admit) {
            (Verdict::Admitted | Verdict::WouldDeny { .. }, true) => Ok(()),
            (Verdict::Denied { .. } | Verdict::WouldDeny { .. }, false) => Ok(()),
            (Verdict::Denied { reason }, true) => Err(format!(
                "expected {tool} to be allowed, but the flow refused it: {reason}"
            )),
            (Verdict::Admitted, false) => Err(format!(
                "expected {tool} to be denied, but the flow admitted it (active steps: [{}])",
                self.monitor.active_steps(&self.state).join(", ")
            )),
        }
    }

    /// The oldest running call of `tool`, no longer running.
    fn oldest_running(&mut self, tool: &str, what: &str) -> Result<String, String> {
        self.running
            .get_mut(tool)
            .and_then(VecDeque::pop_front)
            .ok_or_else(|| {
                format!(
                    "{what} for {tool}, but no call of {tool} is running: \
                     an admitted call (expect_allowed) must come first"
                )
            })
    }

    fn cancel(&mut self, tool: &str) -> Result<(), String> {
        let id = self.oldest_running(tool, "a cancellation")?;
        let entries = self
            .monitor
            .record_cancelled(&id)
            .map_err(|e| e.to_string())?;
        self.write(entries);
        Ok(())
    }

    fn complete(&mut self, tool: &str, ok: bool) -> Result<(), String> {
        let id = self.oldest_running(tool, "a result")?;
        let entries = self
            .monitor
            .record_result(&id, ok, &self.state)
            .map_err(|e| e.to_string())?;
        self.write(entries);
        Ok(())
    }

    fn expect_active(&self, expected: &[String]) -> Result<(), String> {
        let mut actual = self.monitor.active_steps(&self.state);
        let mut wanted = expected.to_vec();
        actual.sort();
        wanted.sort();
        wanted.dedup();
        if actual == wanted {
            return Ok(());
        }
        let waits = self.waits();
        let mut message = format!(
            "expected active steps [{}], but they are [{}]",
            wanted.join(", "),
            actual.join(", ")
        );
        if !waits.is_empty() {
            message.push_str(&format!(": {}", waits.join("; ")));
        }
        Err(message)
    }

    fn write(&mut self, entries: Vec<FlowEntry>) {
        self.journal.extend(entries.iter().map(FlowEntry::to_pair));
    }
}
