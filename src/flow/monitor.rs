//! The flow monitor ([`FlowMonitor`]): the gate every tool call passes,
//! and the record of what the flow has seen.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::decision::{Decision, Enforcement, Verdict};
use super::error::CallError;
use super::guard::{Facts, Tallies, ToolTally};
use super::journal::FlowEntry;
use super::spec::FlowSpec;
use super::state_view::StateView;

/// Runs a [`FlowSpec`]: gates tool calls, observes outcomes, evaluates turns.
///
/// what the flow has seen.
///
/// The session's control lane owns one [`FlowMonitor`] and tells it about
/// four kinds of event, each with a view of the session state:
///
/// * [`gate`](FlowMonitor::gate): a tool call arrived; returns the
///   [`Decision`] (admitted, refused, or admitted under Observe with the
///   reason Enforce would refuse it) and its journal entries;
/// * [`record_result`](FlowMonitor::record_result): an admitted call
///   completed, ok or not;
/// * [`record_failure`](FlowMonitor::record_failure) and
///   [`record_interruption`](FlowMonitor::record_interruption): a failure
///   with no result of its own (a timeout) and a barge-in, which count
///   toward escalation;
/// * [`evaluate_turn`](FlowMonitor::evaluate_turn): a turn boundary;
///   returns the active step ids for `flow:active`.
///
/// It does no I/O, holds no clock and runs no tool: the session writes the
/// returned [`FlowEntry`] values to its journal, in order, and answers
/// refused calls with [`Decision::refusal`].
///
/// # Semantics
///
/// **Evaluation points.** Every event above is an evaluation point: before
/// acting, the monitor brings the flow up to date with the outcomes it has
/// seen and the state it is given. Walking steps in dependency order, a
/// step whose `after` steps are all done and whose `done` guard holds
/// becomes done, which may activate the next step in the same walk.
///
/// **Done latches.** A step that became done stays done, even if its guard
/// later stops holding (a state key reset, say). Progress is monotonic, so
/// a step never reopens and an explanation of a past point stays true. A
/// step cannot become done before it is active: its guard is only read once
/// everything it comes after is done. Read-only queries
/// ([`active_steps`](FlowMonitor::active_steps),
/// [`check`](FlowMonitor::check), [`explain`](FlowMonitor::explain)) answer
/// as if an evaluation happened now, without latching anything.
///
/// **Admission.** A call is admitted under Enforce iff some active step
/// allows its tool, that step has not escalated, and, if the step gates the
/// tool, the gate's guard holds now (gates are live conditions: they do not
/// latch). Under Observe every call is admitted; one Enforce would refuse is
/// recorded as [`Verdict::WouldDeny`] with the same reason. Admitted calls
/// count as `called(tool)`; refused ones never ran and count for nothing.
///
/// **Escalation.** A failed result, or a failure recorded on its own,
/// counts toward every active step that allows the tool (toward every
/// active step if none does); an interruption counts toward every active
/// step. When a count reaches the step's threshold the step escalates, once:
/// one `flow:escalated` entry, and from then on the step admits none of its
/// tools (the refusal says so). The step stays active and can still be
/// completed by its `done` guard.
///
/// ```
/// use std::collections::BTreeMap;
/// use livesim::flow::{Enforcement, Flow, FlowMonitor, Guard};
///
/// let spec = Flow::new()
///     .step("verify").allow(["verify_identity"]).done(Guard::called_ok("verify_identity"))
///     .step("pay").after("verify").allow(["take_payment"]).done(Guard::called_ok("take_payment"))
///     .build()
///     .unwrap();
/// let mut monitor = FlowMonitor::new(spec, Enforcement::Enforce);
/// let state = BTreeMap::new();
///
/// assert!(!monitor.gate("take_payment", "call-1", &state).unwrap().admitted());
/// assert!(monitor.gate("verify_identity", "call-2", &state).unwrap().admitted());
/// monitor.record_result("call-2", true, &state).unwrap();
/// assert!(monitor.gate("take_payment", "call-3", &state).unwrap().admitted());
/// assert_eq!(monitor.evaluate_turn(&state).active, ["pay"]);
/// ```
#[derive(Debug, Clone)]
pub struct FlowMonitor {
    /// Shared, so cloning a monitor (the simulator, a what-if) is cheap.
    spec: Arc<FlowSpec>,
    enforcement: Enforcement,
    /// Latched done flags, by step index.
    done: Vec<bool>,
    /// Every step before this position in the plan's order is done, so
    /// evaluations start here (done only grows, so this only moves on).
    settled: usize,
    /// Escalation counters, by step index.
    runs: Vec<StepRun>,
    tallies: Tallies,
    /// The current connection's calls, by id.
    calls: BTreeMap<String, Call>,
    /// Calls of connections the session has left, oldest connection
    /// first: their tools may still finish, and their results still count.
    left: Vec<BTreeMap<String, Call>>,
    turns: u64,
}

#[derive(Debug, Clone, Default)]
struct StepRun {
    failures: u32,
    interruptions: u32,
    escalated: Option<String>,
}

#[derive(Debug, Clone)]
struct Call {
    tool: String,
    status: CallStatus,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CallStatus {
    Running,
    Completed,
    Refused,
    Cancelled,
}

/// The flow at a turn boundary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnEvaluation {
    /// Turn boundaries evaluated so far, this one included.
    pub turn: u64,
    /// The active step ids, in declaration order.
    pub active: Vec<String>,
}

impl TurnEvaluation {
    /// The `flow:active` entry to write.
    pub fn entry(&self) -> FlowEntry {
        FlowEntry::Active(self.active.clone())
    }
}

impl FlowMonitor {
    /// A monitor at the start of a session: nothing done, nothing called.
    /// Takes a [`FlowSpec`] or an `Arc<FlowSpec>` shared with others.
    pub fn new(spec: impl Into<Arc<FlowSpec>>, enforcement: Enforcement) -> FlowMonitor {
        let spec = spec.into();
        let n = spec.steps().len();
        FlowMonitor {
            spec,
            enforcement,
            done: vec![false; n],
            settled: 0,
            runs: vec![StepRun::default(); n],
            tallies: Tallies::new(),
            calls: BTreeMap::new(),
            left: Vec::new(),
            turns: 0,
        }
    }

    /// The session moved to a new connection: call ids start over, since
    /// they belong to their connection (a resumed server may issue an id
    /// an earlier connection used, and that is a new call). What the flow
    /// has learned (done steps, tallies, escalations) carries over; calls
    /// still running on the old connection are kept, so their results
    /// still count ([`record_left_result`](Self::record_left_result)).
    ///
    /// ```
    /// use livesim::flow::{Enforcement, Flow, FlowMonitor};
    ///
    /// let spec = Flow::new().step("look").allow(["lookup"]).build().unwrap();
    /// let mut monitor = FlowMonitor::new(spec, Enforcement::Enforce);
    /// let state = serde_json::json!({});
    /// assert!(monitor.gate("lookup", "call-1", &state).unwrap().admitted());
    /// monitor.new_connection();
    /// // The new connection's call-1 is another call.
    /// assert!(monitor.gate("lookup", "call-1", &state).unwrap().admitted());
    /// monitor.record_left_result("call-1", true, &state).unwrap();
    /// monitor.record_result("call-1", true, &state).unwrap();
    /// assert_eq!(monitor.tally("lookup").ok, 2);
    /// ```
    pub fn new_connection(&mut self) {
        let calls = std::mem::take(&mut self.calls);
        if !calls.is_empty() {
            self.left.push(calls);
        }
    }

    /// The spec being run.
    pub fn spec(&self) -> &FlowSpec {
        &self.spec
    }

    /// Enforce or Observe.
    pub fn enforcement(&self) -> Enforcement {
        self.enforcement
    }

    /// Turn boundaries evaluated so far.
    pub fn turns(&self) -> u64 {
        self.turns
    }

    /// What the monitor observed of `tool`.
    pub fn tally(&self, tool: &str) -> ToolTally {
        self.tallies.get(tool).copied().unwrap_or_default()
    }

    /// An admitted call of `tool` that has not completed yet, if any.
    /// A call of an earlier connection still running counts: its tool has
    /// not finished either.
    pub(crate) fn running_call_of(&self, tool: &str) -> Option<&str> {
        std::iter::once(&self.calls)
            .chain(&self.left)
            .flat_map(|calls| calls.iter())
            .find(|(_, call)| call.tool == tool && call.status == CallStatus::Running)
            .map(|(id, _)| id.as_str())
    }

    /// Decides one tool call, and remembers the decision.
    ///
    /// Returns the [`Decision`] whose [`entries`](Decision::entries) the
    /// session writes before running (or refusing) the tool. Each call id is
    /// gated once; a repeated id is a [`CallError`] and changes nothing.
    pub fn gate(
        &mut self,
        tool: &str,
        call_id: &str,
        state: &dyn StateView,
    ) -> Result<Decision, CallError> {
        if let Some(call) = self.calls.get(call_id) {
            return Err(CallError::AlreadyDecided {
                id: call_id.to_string(),
                tool: call.tool.clone(),
            });
        }
        self.advance(state);
        let verdict = match (self.judge(tool, &self.done, state), self.enforcement) {
            (Ok(()), _) => Verdict::Admitted,
            (Err(reason), Enforcement::Enforce) => Verdict::Denied { reason },
            (Err(reason), Enforcement::Observe) => Verdict::WouldDeny { reason },
        };
        let decision = Decision {
            tool: tool.to_string(),
            call_id: call_id.to_string(),
            verdict,
        };
        let status = if decision.admitted() {
            self.count(tool, |t| t.calls += 1);
            CallStatus::Running
        } else {
            CallStatus::Refused
        };
        self.calls.insert(
            call_id.to_string(),
            Call {
                tool: tool.to_string(),
                status,
            },
        );
        Ok(decision)
    }

    /// Records that an admitted call completed, `ok` or not.
    ///
    /// Returns the entries to write: the `flow:tool_result`, then a
    /// `flow:escalated` if this failure made a step escalate. A result that
    /// is not ok counts as one tool failure; do not also call
    /// [`record_failure`](Self::record_failure) for it.
    pub fn record_result(
        &mut self,
        call_id: &str,
        ok: bool,
        state: &dyn StateView,
    ) -> Result<Vec<FlowEntry>, CallError> {
        let call = self
            .calls
            .get_mut(call_id)
            .ok_or_else(|| CallError::UnknownCall {
                id: call_id.to_string(),
            })?;
        let tool = Self::complete(call, call_id)?;
        Ok(self.result_entries(tool, call_id, ok, state))
    }

    /// Records that a call admitted on a connection the session has since
    /// left completed (see [`new_connection`](Self::new_connection)): the
    /// tool ran, so its result counts as [`record_result`](Self::record_result)'s
    /// does, though its answer is never sent. The oldest connection's
    /// running call with this id is the one that finished.
    pub fn record_left_result(
        &mut self,
        call_id: &str,
        ok: bool,
        state: &dyn StateView,
    ) -> Result<Vec<FlowEntry>, CallError> {
        self.finish_left(None, call_id, ok, state)
    }

    /// [`record_left_result`](Self::record_left_result) for a call of
    /// `tool`: when the server reused an id on several connections the
    /// session has left, the call of that tool is the one that finished.
    ///
    /// ```
    /// use livesim::flow::{Enforcement, Flow, FlowMonitor};
    ///
    /// let spec = Flow::new().step("look").allow(["lookup", "list"]).build().unwrap();
    /// let mut monitor = FlowMonitor::new(spec, Enforcement::Enforce);
    /// let state = serde_json::json!({});
    /// monitor.gate("lookup", "call-1", &state).unwrap();
    /// monitor.new_connection();
    /// monitor.gate("list", "call-1", &state).unwrap();
    /// monitor.new_connection();
    /// // Both left connections' call-1 still run; list's finishes first.
    /// monitor.record_left_result_of("list", "call-1", false, &state).unwrap();
    /// assert_eq!(monitor.tally("list").failed, 1);
    /// assert_eq!(monitor.tally("lookup").failed, 0);
    /// ```
    pub fn record_left_result_of(
        &mut self,
        tool: &str,
        call_id: &str,
        ok: bool,
        state: &dyn StateView,
    ) -> Result<Vec<FlowEntry>, CallError> {
        self.finish_left(Some(tool), call_id, ok, state)
    }

    /// The oldest left connection's call `call_id` (of `tool`, when
    /// given) finished: running if any is, else the oldest, for the error.
    fn finish_left(
        &mut self,
        tool: Option<&str>,
        call_id: &str,
        ok: bool,
        state: &dyn StateView,
    ) -> Result<Vec<FlowEntry>, CallError> {
        let calls = self
            .left
            .iter_mut()
            .filter_map(|calls| calls.get_mut(call_id))
            .filter(|call| tool.is_none_or(|tool| call.tool == tool));
        let mut found = None;
        for call in calls {
            let running = call.status == CallStatus::Running;
            found = Some(call);
            if running {
                break;
            }
        }
        let call = found.ok_or_else(|| CallError::UnknownCall {
            id: call_id.to_string(),
        })?;
        let tool = Self::complete(call, call_id)?;
        Ok(self.result_entries(tool, call_id, ok, state))
    }

    /// Records that the server cancelled an admitted call of the current
    /// connection before it completed: it will have no result, and it no
    /// longer holds its tool (a committing tool is free for the next call).
    /// A cancellation is the server's choice, not a tool failure, so it
    /// counts toward no escalation.
    ///
    /// Returns the `flow:tool_cancelled` entry to write.
    ///
    /// ```
    /// use livesim::flow::{Enforcement, Flow, FlowMonitor, Guard};
    ///
    /// let spec = Flow::new()
    ///     .step("pay").allow(["take_payment"]).done(Guard::called_ok("take_payment"))
    ///     .build()
    ///     .unwrap();
    /// let mut monitor = FlowMonitor::new(spec, Enforcement::Enforce);
    /// let state = serde_json::json!({});
    /// assert!(monitor.gate("take_payment", "call-1", &state).unwrap().admitted());
    /// // While call-1 runs, a second payment is refused...
    /// assert!(!monitor.gate("take_payment", "call-2", &state).unwrap().admitted());
    /// monitor.record_cancelled("call-1").unwrap();
    /// // ...and once the server cancelled it, the next one is admitted.
    /// assert!(monitor.gate("take_payment", "call-3", &state).unwrap().admitted());
    /// assert!(monitor.record_result("call-1", true, &state).is_err());
    /// ```
    pub fn record_cancelled(&mut self, call_id: &str) -> Result<Vec<FlowEntry>, CallError> {
        let call = self
            .calls
            .get_mut(call_id)
            .ok_or_else(|| CallError::UnknownCall {
                id: call_id.to_string(),
            })?;
        let tool = Self::finish(call, call_id, CallStatus::Cancelled)?;
        Ok(vec![FlowEntry::ToolCancelled {
            tool,
            id: call_id.to_string(),
        }])
    }

    /// Marks `call` completed; its tool, or why it cannot complete.
    fn complete(call: &mut Call, call_id: &str) -> Result<String, CallError> {
        Self::finish(call, call_id, CallStatus::Completed)
    }

    /// Ends a running call as `end` (completed or cancelled); its tool, or
    /// why it cannot end.
    fn finish(call: &mut Call, call_id: &str, end: CallStatus) -> Result<String, CallError> {
        let tool = call.tool.clone();
        match call.status {
            CallStatus::Running => {
                call.status = end;
                Ok(tool)
            }
            CallStatus::Cancelled => Err(CallError::Cancelled {
                id: call_id.to_string(),
                tool,
            }),
            CallStatus::Refused => Err(CallError::Refused {
                id: call_id.to_string(),
                tool,
            }),
            CallStatus::Completed => Err(CallError::AlreadyCompleted {
                id: call_id.to_string(),
                tool,
            }),
        }
    }

    /// The entries a completed call of `tool` writes, counted.
    fn result_entries(
        &mut self,
        tool: String,
        call_id: &str,
        ok: bool,
        state: &dyn StateView,
    ) -> Vec<FlowEntry> {
        self.advance(state);
        let mut entries = vec![FlowEntry::ToolResult {
            tool: tool.clone(),
            id: call_id.to_string(),
            ok,
        }];
        if ok {
            self.count(&tool, |t| t.ok += 1);
        } else {
            self.count(&tool, |t| t.failed += 1);
            entries.extend(self.count_failure(&tool));
        }
        entries
    }

    /// Records a tool failure that has no result of its own (a timeout, a
    /// call abandoned). Returns the entries to write: `flow:tool_failed`,
    /// then a `flow:escalated` if a step escalated.
    pub fn record_failure(&mut self, tool: &str, state: &dyn StateView) -> Vec<FlowEntry> {
        self.advance(state);
        self.count(tool, |t| t.failed += 1);
        let mut entries = vec![FlowEntry::ToolFailed {
            tool: tool.to_string(),
        }];
        entries.extend(self.count_failure(tool));
        entries
    }

    /// Records that the user interrupted. Returns the entries to write:
    /// `flow:interrupted`, then the `flow:escalated` entries of the steps
    /// this made escalate.
    pub fn record_interruption(&mut self, state: &dyn StateView) -> Vec<FlowEntry> {
        self.advance(state);
        let mut entries = vec![FlowEntry::Interrupted];
        for i in self.active_indices(&self.done) {
            self.runs[i].interruptions += 1;
            let (count, limit) = (
                self.runs[i].interruptions,
                self.spec.steps()[i].escalate.interruptions,
            );
            if limit.is_some_and(|limit| count >= limit) {
                entries.extend(self.escalate(i, format!("{count} interruptions")));
            }
        }
        entries
    }

    /// Evaluates the flow at a turn boundary and returns the active steps
    /// (write [`TurnEvaluation::entry`] as `flow:active`).
    pub fn evaluate_turn(&mut self, state: &dyn StateView) -> TurnEvaluation {
        self.advance(state);
        self.turns += 1;
        TurnEvaluation {
            turn: self.turns,
            active: self.ids(self.active_indices(&self.done)),
        }
    }

    /// The steps that would be active if the flow were evaluated now, in
    /// declaration order. Latches nothing.
    pub fn active_steps(&self, state: &dyn StateView) -> Vec<String> {
        let done = self.progress(state);
        self.ids(self.active_indices(&done))
    }

    /// The steps that would be done if the flow were evaluated now, in
    /// declaration order. Latches nothing.
    ///
    /// ```
    /// use livesim::flow::{Enforcement, Flow, FlowMonitor, Guard};
    /// use serde_json::json;
    ///
    /// let spec = Flow::new()
    ///     .step("party").done(Guard::is_true("party_set"))
    ///     .step("book").after("party").done(Guard::is_true("booked"))
    ///     .build()
    ///     .unwrap();
    /// let monitor = FlowMonitor::new(spec, Enforcement::Enforce);
    /// assert!(monitor.done_steps(&json!({})).is_empty());
    /// assert_eq!(monitor.done_steps(&json!({"party_set": true})), ["party"]);
    /// assert_eq!(monitor.done_steps(&json!({"party_set": true, "booked": true})), ["party", "book"]);
    /// // It latched nothing: the flow is where it started.
    /// assert_eq!(monitor.active_steps(&json!({})), ["party"]);
    /// ```
    pub fn done_steps(&self, state: &dyn StateView) -> Vec<String> {
        let done = self.progress(state);
        self.ids((0..done.len()).filter(|&i| done[i]).collect())
    }

    /// The escalated steps and why, in declaration order.
    pub fn escalations(&self) -> Vec<(&str, &str)> {
        self.spec
            .steps()
            .iter()
            .zip(&self.runs)
            .filter_map(|(step, run)| Some((step.id(), run.escalated.as_deref()?)))
            .collect()
    }

    /// Whether Enforce would admit `tool` now: `Err` holds the reason it
    /// would refuse. Latches nothing and records nothing.
    pub fn check(&self, tool: &str, state: &dyn StateView) -> Result<(), String> {
        let done = self.progress(state);
        self.judge(tool, &done, state)
    }

    /// Updates the tally of `tool`, creating it on first use (looked up
    /// first, so the common case allocates no key).
    fn count(&mut self, tool: &str, change: impl Fn(&mut ToolTally)) {
        match self.tallies.get_mut(tool) {
            Some(tally) => change(tally),
            None => change(self.tallies.entry(tool.to_string()).or_default()),
        }
    }

    /// Latches every step that is done now.
    fn advance(&mut self, state: &dyn StateView) {
        let mut done = std::mem::take(&mut self.done);
        self.latch(&mut done, state);
        self.done = done;
        let order = &self.spec.plan().order;
        while self.settled < order.len() && self.done[order[self.settled]] {
            self.settled += 1;
        }
    }

    /// The done flags an evaluation now would produce, without latching.
    pub(crate) fn progress(&self, state: &dyn StateView) -> Vec<bool> {
        let mut done = self.done.clone();
        self.latch(&mut done, state);
        done
    }

    /// Marks done, in dependency order, every step whose `after` steps are
    /// done and whose guard holds; a step completed here can open the next
    /// one in the same pass.
    fn latch(&self, done: &mut [bool], state: &dyn StateView) {
        let facts = self.facts(state);
        let plan = self.spec.plan();
        for &i in &plan.order[self.settled..] {
            if done[i] || !plan.after[i].iter().all(|&j| done[j]) {
                continue;
            }
            if self.spec.steps()[i]
                .done
                .as_ref()
                .is_some_and(|guard| guard.holds(&facts))
            {
                done[i] = true;
            }
        }
    }

    pub(crate) fn facts<'a>(&'a self, state: &'a dyn StateView) -> Facts<'a> {
        Facts {
            tallies: &self.tallies,
            state,
        }
    }

    /// Active step indices under these done flags, in declaration order.
    pub(crate) fn active_indices(&self, done: &[bool]) -> Vec<usize> {
        let after = &self.spec.plan().after;
        (0..done.len())
            .filter(|&i| !done[i] && after[i].iter().all(|&j| done[j]))
            .collect()
    }

    pub(crate) fn escalation_of(&self, step: usize) -> Option<&str> {
        self.runs[step].escalated.as_deref()
    }

    fn ids(&self, indices: Vec<usize>) -> Vec<String> {
        indices
            .into_iter()
            .map(|i| self.spec.steps()[i].id.clone())
            .collect()
    }

    /// Counts a failure of `tool` toward the steps it belongs to and
    /// escalates those that reach their threshold.
    fn count_failure(&mut self, tool: &str) -> Vec<FlowEntry> {
        let active = self.active_indices(&self.done);
        let owners: Vec<usize> = active
            .iter()
            .copied()
            .filter(|&i| self.spec.steps()[i].allow.contains(tool))
            .collect();
        let targets = if owners.is_empty() { active } else { owners };
        let mut entries = Vec::new();
        for i in targets {
            self.runs[i].failures += 1;
            let (count, limit) = (
                self.runs[i].failures,
                self.spec.steps()[i].escalate.tool_failures,
            );
            if limit.is_some_and(|limit| count >= limit) {
                let plural = if count == 1 { "failure" } else { "failures" };
                entries.extend(self.escalate(i, format!("{count} tool {plural}")));
            }
        }
        entries
    }

    /// Marks step `i` escalated, once; returns its `flow:escalated` entry
    /// the first time only.
    fn escalate(&mut self, i: usize, cause: String) -> Option<FlowEntry> {
        if self.runs[i].escalated.is_some() {
            return None;
        }
        let reason = format!("escalated after {cause}");
        self.runs[i].escalated = Some(reason.clone());
        Some(FlowEntry::Escalated {
            stage: self.spec.steps()[i].id.clone(),
            reason,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::{Flow, Guard, NoState};
    use serde_json::json;

    fn two_steps() -> FlowSpec {
        Flow::new()
            .step("verify")
            .allow(["verify_identity"])
            .done(Guard::called_ok("verify_identity"))
            .step("pay")
            .after("verify")
            .allow(["take_payment"])
            .done(Guard::called_ok("take_payment"))
            .build()
            .unwrap()
    }

    #[test]
    fn done_latches_when_the_guard_stops_holding() {
        let spec = Flow::new()
            .step("confirm")
            .done(Guard::is_true("confirmed"))
            .step("book")
            .after("confirm")
            .allow(["book_table"])
            .build()
            .unwrap();
        let mut monitor = FlowMonitor::new(spec, Enforcement::Enforce);
        let on = json!({"confirmed": true});
        assert_eq!(monitor.evaluate_turn(&on).active, ["book"]);
        let off = json!({"confirmed": false});
        assert_eq!(monitor.evaluate_turn(&off).active, ["book"]);
        assert!(monitor.gate("book_table", "c1", &off).unwrap().admitted());
    }

    #[test]
    fn read_only_queries_do_not_latch() {
        let spec = Flow::new()
            .step("confirm")
            .done(Guard::is_true("confirmed"))
            .build()
            .unwrap();
        let monitor = FlowMonitor::new(spec, Enforcement::Enforce);
        assert!(monitor.active_steps(&json!({"confirmed": true})).is_empty());
        assert_eq!(
            monitor.active_steps(&json!({"confirmed": false})),
            ["confirm"]
        );
    }

    #[test]
    fn a_step_is_not_done_before_it_is_active() {
        let spec = Flow::new()
            .step("a")
            .done(Guard::is_true("a"))
            .step("b")
            .after("a")
            .done(Guard::is_true("b"))
            .build()
            .unwrap();
        let mut monitor = FlowMonitor::new(spec, Enforcement::Enforce);
        // b's guard holds first, then stops; a completes later: b is open.
        assert_eq!(monitor.evaluate_turn(&json!({"b": true})).active, ["a"]);
        assert_eq!(monitor.evaluate_turn(&json!({"a": true})).active, ["b"]);
    }

    #[test]
    fn call_bookkeeping_mistakes_are_errors() {
        let mut monitor = FlowMonitor::new(two_steps(), Enforcement::Enforce);
        monitor.gate("take_payment", "c1", &NoState).unwrap();
        assert!(matches!(
            monitor.gate("verify_identity", "c1", &NoState),
            Err(CallError::AlreadyDecided { .. })
        ));
        assert!(matches!(
            monitor.record_result("c1", true, &NoState),
            Err(CallError::Refused { .. })
        ));
        assert!(matches!(
            monitor.record_result("c9", true, &NoState),
            Err(CallError::UnknownCall { .. })
        ));
        monitor.gate("verify_identity", "c2", &NoState).unwrap();
        monitor.record_result("c2", true, &NoState).unwrap();
        assert!(matches!(
            monitor.record_result("c2", true, &NoState),
            Err(CallError::AlreadyCompleted { .. })
        ));
    }

    #[test]
    fn a_failure_reported_on_its_own_counts_toward_its_tool() {
        let mut monitor = FlowMonitor::new(two_steps(), Enforcement::Enforce);
        for _ in 0..2 {
            assert_eq!(
                monitor.record_failure("verify_identity", &NoState),
                [FlowEntry::ToolFailed {
                    tool: "verify_identity".to_string()
                }]
            );
        }
        let tally = monitor.tally("verify_identity");
        assert_eq!((tally.calls, tally.ok, tally.failed), (0, 0, 2));
        assert_eq!(monitor.tally("take_payment").failed, 0);
    }

    #[test]
    fn the_refusal_names_where_the_tool_belongs() {
        let mut monitor = FlowMonitor::new(two_steps(), Enforcement::Enforce);
        assert_eq!(
            monitor.check("take_payment", &NoState).unwrap_err(),
            "take_payment is not allowed now: active steps are [verify], which allow \
             [verify_identity]; take_payment is allowed only in step pay, which waits for [verify]"
        );
        monitor.gate("verify_identity", "c1", &NoState).unwrap();
        monitor.record_result("c1", true, &NoState).unwrap();
        assert_eq!(
            monitor.check("verify_identity", &NoState).unwrap_err(),
            "verify_identity is not allowed now: active steps are [pay], which allow \
             [take_payment]; verify_identity is allowed only in step verify, which is done"
        );
        monitor.gate("take_payment", "c2", &NoState).unwrap();
        monitor.record_result("c2", true, &NoState).unwrap();
        assert_eq!(
            monitor.check("take_payment", &NoState).unwrap_err(),
            "take_payment is not allowed now: no step is active (every step is done); \
             take_payment is allowed only in step pay, which is done"
        );
    }
}
