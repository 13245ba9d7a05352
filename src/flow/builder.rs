//! The `Flow` builder: steps declared in a chain, checked once at `build`.
//!
//! Each `.step(id)` opens a step; the calls after it (`allow`, `after`,
//! `done`, `gate`, `escalate_after_*`) configure that step until the next
//! `.step`. Mistakes are kept, not panicked on, and the first one is
//! reported by [`Flow::build`].

use super::error::FlowError;
use super::guard::Guard;
use super::spec::{FlowSpec, StepSpec};

/// Declares a flow: steps, which tools each admits, what each waits for and
/// when each is done.
///
/// ```
/// use livesim::flow::{Flow, FlowError, Guard};
///
/// let spec = Flow::new()
///     .step("verify").allow(["verify_identity"]).done(Guard::called_ok("verify_identity"))
///     .step("pay").after("verify").allow(["take_payment"]).done(Guard::called_ok("take_payment"))
///     .build()
///     .unwrap();
/// assert_eq!(spec.tools(), ["take_payment", "verify_identity"]);
///
/// let err = Flow::new().step("pay").after("verify").build().unwrap_err();
/// assert!(matches!(err, FlowError::UnknownAfter { .. }));
/// assert_eq!(
///     err.to_string(),
///     "step `pay` comes after `verify`, which is not a step (the steps are: pay)"
/// );
/// ```
#[derive(Debug, Clone, Default)]
#[must_use = "a flow does nothing until it is built"]
pub struct Flow {
    steps: Vec<StepSpec>,
    error: Option<FlowError>,
}

impl Flow {
    /// A flow with no steps.
    pub fn new() -> Flow {
        Flow::default()
    }

    /// Opens a step; the calls that follow configure it.
    pub fn step(mut self, id: impl Into<String>) -> Flow {
        self.steps.push(StepSpec::new(id));
        self
    }

    /// Tools this step admits while it is active.
    pub fn allow<I, S>(self, tools: I) -> Flow
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.edit("allow([..])", |step| {
            step.allow.extend(tools.into_iter().map(Into::into));
        })
    }

    /// This step is active only once step `id` is done. Call again to wait
    /// for several steps.
    pub fn after(self, id: impl Into<String>) -> Flow {
        self.edit("after(..)", |step| {
            step.after.insert(id.into());
        })
    }

    /// The step is done once `guard` holds at an evaluation point; it then
    /// stays done. Without `done`, the step never completes.
    pub fn done(self, guard: Guard) -> Flow {
        self.edit("done(..)", |step| step.done = Some(guard))
    }

    /// Admits `tool` in this step only while `guard` also holds (a commit
    /// gate: e.g. `book_table` only once `confirmed` is true). Allows the
    /// tool as well.
    pub fn gate(self, tool: impl Into<String>, guard: Guard) -> Flow {
        self.edit("gate(..)", |step| {
            let tool = tool.into();
            step.allow.insert(tool.clone());
            step.gates.insert(tool, guard);
        })
    }

    /// Escalates this step after `n` tool failures while it is active.
    pub fn escalate_after_tool_failures(self, n: u32) -> Flow {
        self.edit("escalate_after_tool_failures(..)", |step| {
            step.escalate.tool_failures = Some(n);
        })
    }

    /// Escalates this step after `n` interruptions while it is active.
    pub fn escalate_after_interruptions(self, n: u32) -> Flow {
        self.edit("escalate_after_interruptions(..)", |step| {
            step.escalate.interruptions = Some(n);
        })
    }

    /// Checks the flow and returns its spec, or the first thing wrong with
    /// it: a method called before any step, an empty or repeated id, an
    /// `after` naming no step, steps waiting on each other in a cycle, an
    /// empty tool or key name in a guard, a zero escalation threshold.
    pub fn build(self) -> Result<FlowSpec, FlowError> {
        match self.error {
            Some(error) => Err(error),
            None => FlowSpec::new(self.steps),
        }
    }

    fn edit(mut self, method: &'static str, change: impl FnOnce(&mut StepSpec)) -> Flow {
        match self.steps.last_mut() {
            Some(step) => change(step),
            None => {
                self.error.get_or_insert(FlowError::OutsideStep {
                    noun: "step",
                    method,
                });
            }
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configuration_before_a_step_is_reported() {
        let err = Flow::new().allow(["x"]).step("a").build().unwrap_err();
        assert_eq!(
            err.to_string(),
            "allow([..]) was called before any step: start with .step(\"id\")"
        );
    }

    #[test]
    fn gate_allows_its_tool() {
        let spec = Flow::new()
            .step("book")
            .gate("book_table", Guard::is_true("confirmed"))
            .build()
            .unwrap();
        assert!(spec.step("book").unwrap().allow().contains("book_table"));
    }
}
