//! `decisions-follow-spec`: every call the flow admitted or refused, every
//! turn's active steps and every escalation in a governed run's journal are
//! what the flow's rules give, worked out by a small model of those rules
//! over the journal's own state writes and tool outcomes.
//!
//! The model is written from the rules as the monitor's documentation
//! states them, not from `flow::FlowMonitor`: it reads the spec's steps as
//! data and does the latching, admission and escalation itself.
//! `journal-replays-clean` asks whether a recorded journal replays through
//! the monitor; this check asks whether the monitor decided right. The
//! rules, as the model applies them:
//!
//! - An *evaluation point* is a gate (`flow:tool_call`, `flow:tool_denied`),
//!   a result (`flow:tool_result`), a failure (`flow:tool_failed`), an
//!   interruption (`flow:interrupted`) or a turn (`flow:active`). At each,
//!   before the event itself counts, every step whose `after` steps are
//!   done and whose `done` guard holds becomes done, until nothing changes.
//!   Done never goes back. A cancellation is not an evaluation point.
//! - A step is *active* when it is not done and its `after` steps are.
//! - Under Enforce a call is admitted iff some active step allows its tool,
//!   has not escalated, its gate on the tool (if any) holds now, and, when
//!   the step's `done` guard needs the tool to succeed (`called_ok(tool)`,
//!   or an `all` with such a part), no admitted call of the tool is still
//!   running. Under Observe every call runs, and one Enforce would refuse
//!   is followed by its `flow:tool_would_deny`.
//! - An admitted call counts as `called`; an ok result as `called_ok`.
//! - A failed result or a failure counts toward the active steps that allow
//!   the tool (all active steps if none does); an interruption toward every
//!   active step. At its threshold a step escalates, once, and its
//!   `flow:escalated` entries follow the event in declaration order.
//! - A refusal says why: for each active step that allows the tool and
//!   whose gate on it does not hold, the reason, after the gate, names
//!   every condition of the gate that fails (the tool or key of each
//!   failing leaf; a `not` names what it wraps).

use std::collections::BTreeMap;

use serde_json::Value;

use super::results_journaled;
use crate::flow::{Enforcement, FlowSpec, Guard};
use crate::soak::run::record::RunRecord;
use crate::state::StateMutation;

/// The check: `Ok` when the journal's decisions are the model's, the
/// flow evaluated every turn the session completed, and the journal
/// counts every tool run ([`results_journaled`]).
pub(crate) fn check(run: &RunRecord) -> Result<(), String> {
    match &run.governance {
        Some(governance) => {
            every_turn_evaluated(run)?;
            results_journaled::check(run)?;
            follows(&governance.spec, governance.enforcement, &run.journal)
        }
        None => Ok(()),
    }
}

/// A governed session's control lane hands every `turn_complete` it
/// emits to the flow at once, which writes the turn's active steps: so
/// the stored log's turn completions and the journal's `flow:active`
/// entries come in the same number.
fn every_turn_evaluated(run: &RunRecord) -> Result<(), String> {
    let turns = run.turns_completed();
    let evaluated = run
        .journal
        .iter()
        .filter(|e| e.key == "flow:active")
        .count();
    if turns != evaluated {
        return Err(format!(
            "the session completed {turns} turns (turn_complete in its stored log), but the \
             flow evaluated {evaluated} (flow:active entries in the journal): every turn's end \
             is an evaluation point"
        ));
    }
    Ok(())
}

/// Whether a journal's decisions are what the rules give for `spec`.
pub(crate) fn follows(
    spec: &FlowSpec,
    enforcement: Enforcement,
    journal: &[StateMutation],
) -> Result<(), String> {
    let mut model = Model::new(spec, enforcement);
    let mut entries = journal.iter().peekable();
    while let Some(entry) = entries.next() {
        let Some(kind) = entry.key.strip_prefix("flow:") else {
            model.write(entry);
            continue;
        };
        if kind != "escalated" {
            model.no_escalation_owed(entry)?;
        }
        match kind {
            "tool_call" => {
                let owed_would_deny = model.call(entry, entries.peek().copied())?;
                if owed_would_deny {
                    // Read with its call.
                    entries.next();
                }
            }
            "tool_denied" => model.denied(entry)?,
            "tool_would_deny" => {
                return Err(format!(
                    "journal entry {} says Enforce would refuse {}, but it does not follow that \
                     call's flow:tool_call, or the spec's rules admit the call",
                    entry.seq,
                    member(entry, "tool")?
                ));
            }
            "tool_result" => model.result(entry)?,
            "tool_cancelled" => model.finish(member(entry, "tool")?),
            "tool_failed" => {
                model.latch();
                model.count_failure(member(entry, "tool")?);
            }
            "interrupted" => {
                model.latch();
                model.count_interruption();
            }
            "active" => model.turn(entry)?,
            "escalated" => model.escalated(entry)?,
            // Keys this model does not know are not decisions.
            _ => {}
        }
    }
    match model.owed.first() {
        Some(&i) => Err(format!(
            "by the spec's rules step {} escalates at the journal's last event, but no \
             flow:escalated says so",
            model.spec.steps()[i].id()
        )),
        None => Ok(()),
    }
}

/// A string member of a flow entry's value, or why it is missing.
pub(super) fn member<'a>(entry: &'a StateMutation, name: &str) -> Result<&'a str, String> {
    entry
        .value
        .get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| {
            format!(
                "journal entry {} ({}) has no string \"{name}\": {}",
                entry.seq, entry.key, entry.value
            )
        })
}

/// The flow as the rules say it stands after the journal's entries so far.
struct Model<'a> {
    spec: &'a FlowSpec,
    enforce: bool,
    /// Each step's `after` steps, as indices.
    after: Vec<Vec<usize>>,
    state: BTreeMap<String, Value>,
    called: BTreeMap<String, u32>,
    ok: BTreeMap<String, u32>,
    /// Admitted calls of each tool with no result and no cancellation yet.
    running: BTreeMap<String, u32>,
    done: Vec<bool>,
    failures: Vec<u32>,
    interruptions: Vec<u32>,
    escalated: Vec<bool>,
    /// Steps that escalated at the last event, whose entries must follow.
    owed: Vec<usize>,
}

impl<'a> Model<'a> {
    fn new(spec: &'a FlowSpec, enforcement: Enforcement) -> Model<'a> {
        let steps = spec.steps();
        let position = |id: &String| steps.iter().position(|s| s.id() == id);
        let after = steps
            .iter()
            .map(|s| s.after().iter().filter_map(position).collect())
            .collect();
        let n = steps.len();
        Model {
            spec,
            enforce: enforcement == Enforcement::Enforce,
            after,
            state: BTreeMap::new(),
            called: BTreeMap::new(),
            ok: BTreeMap::new(),
            running: BTreeMap::new(),
            done: vec![false; n],
            failures: vec![0; n],
            interruptions: vec![0; n],
            escalated: vec![false; n],
            owed: Vec::new(),
        }
    }

    /// A state write (a removal leaves the key unset; a `null` written is
    /// kept, and is not `exists`).
    fn write(&mut self, entry: &StateMutation) {
        if entry.removed {
            self.state.remove(&entry.key);
        } else {
            self.state.insert(entry.key.clone(), entry.value.clone());
        }
    }

    /// An admitted call (`flow:tool_call`); `next` is the entry after it.
    /// `Ok(true)` when `next` is the call's `flow:tool_would_deny`, which
    /// Observe owes for a call Enforce would refuse.
    fn call(
        &mut self,
        entry: &StateMutation,
        next: Option<&StateMutation>,
    ) -> Result<bool, String> {
        let (tool, id) = (member(entry, "tool")?, member(entry, "id")?);
        self.latch();
        let said_would_deny = match self.refusal(tool) {
            Some(why) if self.enforce => {
                return Err(format!(
                    "journal entry {} admitted {tool} ({id}), but the spec's rules refuse it: \
                     {why}",
                    entry.seq
                ));
            }
            Some(why) => {
                let said = next.is_some_and(|n| {
                    n.key == "flow:tool_would_deny"
                        && n.value.get("id").and_then(Value::as_str) == Some(id)
                });
                if !said {
                    return Err(format!(
                        "journal entry {} admitted {tool} ({id}) under Observe, and Enforce \
                         would refuse it ({why}), but no flow:tool_would_deny follows",
                        entry.seq
                    ));
                }
                true
            }
            None => false,
        };
        *self.called.entry(tool.to_string()).or_default() += 1;
        *self.running.entry(tool.to_string()).or_default() += 1;
        Ok(said_would_deny)
    }

    /// A refused call (`flow:tool_denied`).
    fn denied(&mut self, entry: &StateMutation) -> Result<(), String> {
        let (tool, id) = (member(entry, "tool")?, member(entry, "id")?);
        if !self.enforce {
            return Err(format!(
                "journal entry {} refused {tool} ({id}), but the flow only observes",
                entry.seq
            ));
        }
        self.latch();
        match self.refusal(tool) {
            Some(_) => self.reason_says_why(entry, tool),
            None => Err(format!(
                "journal entry {} refused {tool} ({id}), but the spec's rules admit it: {}",
                entry.seq,
                self.admitted_by(tool)
            )),
        }
    }

    /// A completed call (`flow:tool_result`).
    fn result(&mut self, entry: &StateMutation) -> Result<(), String> {
        let tool = member(entry, "tool")?;
        let ok = entry
            .value
            .get("ok")
            .and_then(Value::as_bool)
            .ok_or_else(|| {
                format!(
                    "journal entry {} has no boolean \"ok\": {}",
                    entry.seq, entry.value
                )
            })?;
        self.latch();
        self.finish(tool);
        if ok {
            *self.ok.entry(tool.to_string()).or_default() += 1;
        } else {
            self.count_failure(tool);
        }
        Ok(())
    }

    /// A turn's active steps (`flow:active`).
    fn turn(&mut self, entry: &StateMutation) -> Result<(), String> {
        self.latch();
        let written: Vec<&str> = entry
            .value
            .as_array()
            .map(|ids| ids.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let expected = self.active_ids();
        if written == expected {
            return Ok(());
        }
        Err(format!(
            "journal entry {} says the active steps are [{}], but by the spec's rules they are \
             [{}]{}",
            entry.seq,
            written.join(", "),
            expected.join(", "),
            self.done_note()
        ))
    }

    /// An escalation (`flow:escalated`): the next one the rules owe.
    fn escalated(&mut self, entry: &StateMutation) -> Result<(), String> {
        let stage = member(entry, "stage")?;
        let steps = self.spec.steps();
        match self.owed.first() {
            Some(&i) if steps[i].id() == stage => {
                self.owed.remove(0);
                Ok(())
            }
            owed => Err(format!(
                "journal entry {} escalates {stage}, but by the spec's rules {}",
                entry.seq,
                match owed {
                    Some(&i) => format!("{} escalates here first", steps[i].id()),
                    None => "no step escalates here".to_string(),
                }
            )),
        }
    }

    fn no_escalation_owed(&self, entry: &StateMutation) -> Result<(), String> {
        match self.owed.first() {
            Some(&i) => Err(format!(
                "by the spec's rules step {} escalated before journal entry {} ({}), but no \
                 flow:escalated says so",
                self.spec.steps()[i].id(),
                entry.seq,
                entry.key
            )),
            None => Ok(()),
        }
    }

    fn opened(&self, i: usize) -> bool {
        self.after[i].iter().all(|&j| self.done[j])
    }

    fn is_active(&self, i: usize) -> bool {
        !self.done[i] && self.opened(i)
    }

    fn active(&self) -> Vec<usize> {
        (0..self.done.len())
            .filter(|&i| self.is_active(i))
            .collect()
    }

    fn active_ids(&self) -> Vec<&str> {
        self.ids(self.active())
    }

    /// The ids of these steps.
    fn ids(&self, steps: impl IntoIterator<Item = usize>) -> Vec<&str> {
        steps
            .into_iter()
            .map(|i| self.spec.steps()[i].id())
            .collect()
    }

    /// Marks done every opened step whose guard holds, until nothing changes.
    fn latch(&mut self) {
        loop {
            let ready: Vec<usize> = (0..self.done.len())
                .filter(|&i| self.is_active(i))
                .filter(|&i| self.spec.steps()[i].done().is_some_and(|g| self.holds(g)))
                .collect();
            if ready.is_empty() {
                return;
            }
            for i in ready {
                self.done[i] = true;
            }
        }
    }

    fn holds(&self, guard: &Guard) -> bool {
        let count =
            |tally: &BTreeMap<String, u32>, tool: &String| tally.get(tool).copied().unwrap_or(0);
        match guard {
            Guard::CalledOk(tool) => count(&self.ok, tool) > 0,
            Guard::Called(tool) => count(&self.called, tool) > 0,
            Guard::IsTrue(key) => self.state.get(key) == Some(&Value::Bool(true)),
            Guard::Exists(key) => self.state.get(key).is_some_and(|v| !v.is_null()),
            Guard::Equals { key, value } => self.state.get(key).is_some_and(|v| same(v, value)),
            Guard::All(parts) => parts.iter().all(|g| self.holds(g)),
            Guard::Any(parts) => parts.iter().any(|g| self.holds(g)),
            Guard::Not(inner) => !self.holds(inner),
        }
    }

    /// Why Enforce refuses `tool` now, or `None` if it admits it.
    fn refusal(&self, tool: &str) -> Option<String> {
        let mut blocked = Vec::new();
        for i in self.active() {
            let step = &self.spec.steps()[i];
            if !step.allow().contains(tool) {
                continue;
            }
            if self.escalated[i] {
                blocked.push(format!("step {} escalated", step.id()));
            } else if step.gates().get(tool).is_some_and(|g| !self.holds(g)) {
                blocked.push(format!("step {}'s gate on it does not hold", step.id()));
            } else if self.running.get(tool).is_some_and(|&n| n > 0)
                && step.done().is_some_and(|g| needs_ok(g, tool))
            {
                blocked.push(format!(
                    "it completes step {} and a call of it is still running",
                    step.id()
                ));
            } else {
                return None;
            }
        }
        if blocked.is_empty() {
            Some(format!(
                "no active step allows it (active: [{}]){}",
                self.active_ids().join(", "),
                self.done_note()
            ))
        } else {
            Some(blocked.join("; "))
        }
    }

    /// Whether a refusal's reason names, after each failing gate on
    /// `tool`, every condition of that gate that fails.
    fn reason_says_why(&self, entry: &StateMutation, tool: &str) -> Result<(), String> {
        let reason = member(entry, "reason")?;
        for i in self.active() {
            let step = &self.spec.steps()[i];
            if !step.allow().contains(tool) || self.escalated[i] {
                continue;
            }
            let Some(gate) = step.gates().get(tool).filter(|g| !self.holds(g)) else {
                continue;
            };
            let shown = gate.to_string();
            let said = reason
                .find(&shown)
                .map_or("", |at| &reason[at + shown.len()..]);
            let mut failing = Vec::new();
            self.failing_names(gate, &mut failing);
            if let Some(name) = failing.iter().find(|name| !said.contains(name.as_str())) {
                return Err(format!(
                    "journal entry {} refused {tool} on step {}'s gate {shown}, which {name} fails, \
                     but the reason does not say so after the gate: {reason:?}",
                    entry.seq,
                    step.id()
                ));
            }
        }
        Ok(())
    }

    /// The tools and keys of the leaves that make `guard` (which fails)
    /// fail: every failing part of an `all` or `any`; a leaf's own (a
    /// `not` is a leaf, naming everything it wraps).
    fn failing_names(&self, guard: &Guard, out: &mut Vec<String>) {
        match guard {
            Guard::All(parts) | Guard::Any(parts) => {
                for part in parts.iter().filter(|g| !self.holds(g)) {
                    self.failing_names(part, out);
                }
            }
            leaf => names_in(leaf, out),
        }
    }

    /// Which active steps allow `tool`, said for a failure message.
    fn admitted_by(&self, tool: &str) -> String {
        let allowing = self
            .active()
            .into_iter()
            .filter(|&i| self.spec.steps()[i].allow().contains(tool));
        let ids = self.ids(allowing);
        format!(
            "active step(s) [{}] allow it, not escalated, gate open, no call of it running{}",
            ids.join(", "),
            self.done_note()
        )
    }

    fn done_note(&self) -> String {
        let done = self.ids((0..self.done.len()).filter(|&i| self.done[i]));
        format!("; done: [{}]", done.join(", "))
    }

    /// A call of `tool` is over (answered or cancelled).
    fn finish(&mut self, tool: &str) {
        if let Some(n) = self.running.get_mut(tool) {
            *n = n.saturating_sub(1);
        }
    }

    fn count_failure(&mut self, tool: &str) {
        let active = self.active();
        let owners: Vec<usize> = active
            .iter()
            .copied()
            .filter(|&i| self.spec.steps()[i].allow().contains(tool))
            .collect();
        let targets = if owners.is_empty() { active } else { owners };
        for i in targets {
            self.failures[i] += 1;
            let limit = self.spec.steps()[i].escalate().tool_failures;
            self.escalate_at(i, self.failures[i], limit);
        }
    }

    fn count_interruption(&mut self) {
        for i in self.active() {
            self.interruptions[i] += 1;
            let limit = self.spec.steps()[i].escalate().interruptions;
            self.escalate_at(i, self.interruptions[i], limit);
        }
    }

    fn escalate_at(&mut self, i: usize, count: u32, limit: Option<u32>) {
        if !self.escalated[i] && limit.is_some_and(|limit| count >= limit) {
            self.escalated[i] = true;
            self.owed.push(i);
        }
    }
}

/// Every tool and key `guard` mentions.
fn names_in(guard: &Guard, out: &mut Vec<String>) {
    match guard {
        Guard::CalledOk(name)
        | Guard::Called(name)
        | Guard::IsTrue(name)
        | Guard::Exists(name)
        | Guard::Equals { key: name, .. } => out.push(name.clone()),
        Guard::All(parts) | Guard::Any(parts) => parts.iter().for_each(|g| names_in(g, out)),
        Guard::Not(inner) => names_in(inner, out),
    }
}

/// Whether `guard` can only hold once `tool` succeeded.
fn needs_ok(guard: &Guard, tool: &str) -> bool {
    match guard {
        Guard::CalledOk(name) => name == tool,
        Guard::All(parts) => parts.iter().any(|g| needs_ok(g, tool)),
        _ => false,
    }
}

/// JSON equality with numbers compared by value (`4` equals `4.0`).
pub(crate) fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(xs), Value::Array(ys)) => {
            xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| same(x, y))
        }
        (Value::Object(xs), Value::Object(ys)) => {
            xs.len() == ys.len()
                && xs
                    .iter()
                    .all(|(k, x)| ys.get(k).is_some_and(|y| same(x, y)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Timestamp;
    use crate::flow::{Flow, Guard};
    use serde_json::json;

    /// The checkout shape: an address, then a basket that must hold
    /// something, then the order (gated on the basket, committed by
    /// `place_order`); the first step escalates after two failures.
    fn checkout() -> FlowSpec {
        Flow::new()
            .step("address")
            .allow(["set_address", "add_item", "remove_item"])
            .done(Guard::called_ok("set_address"))
            .escalate_after_tool_failures(2)
            .step("basket")
            .after("address")
            .allow(["add_item", "remove_item"])
            .done(Guard::exists("basket"))
            .step("order")
            .after("basket")
            .allow(["add_item", "remove_item", "place_order"])
            .gate("place_order", Guard::exists("basket"))
            .done(Guard::called_ok("place_order"))
            .build()
            .unwrap()
    }

    fn journal(entries: &[(&str, Value)]) -> Vec<StateMutation> {
        entries
            .iter()
            .zip(1..)
            .map(|((key, value), seq)| StateMutation {
                seq,
                key: key.to_string(),
                value: value.clone(),
                timestamp: Timestamp::EPOCH,
                removed: false,
            })
            .collect()
    }

    fn call(tool: &str, id: &str) -> (&'static str, Value) {
        ("flow:tool_call", json!({"tool": tool, "id": id}))
    }

    fn denied(tool: &str, id: &str) -> (&'static str, Value) {
        (
            "flow:tool_denied",
            json!({"tool": tool, "id": id, "reason": "not now"}),
        )
    }

    fn result(tool: &str, id: &str, ok: bool) -> (&'static str, Value) {
        (
            "flow:tool_result",
            json!({"tool": tool, "id": id, "ok": ok}),
        )
    }

    fn active(ids: &[&str]) -> (&'static str, Value) {
        ("flow:active", json!(ids))
    }

    fn enforce(entries: &[(&str, Value)]) -> Result<(), String> {
        follows(&checkout(), Enforcement::Enforce, &journal(entries))
    }

    /// A basket filled and emptied before the address is known leaves the
    /// basket step active once the address is: a guard is read only once
    /// the steps it comes after are done.
    #[test]
    fn a_guard_that_held_before_its_step_opened_does_not_complete_it() {
        let prefix = [
            call("add_item", "c1"),
            ("basket", json!("lavender")),
            result("add_item", "c1", true),
            call("remove_item", "c2"),
            ("basket", Value::Null),
            result("remove_item", "c2", true),
            call("set_address", "c3"),
            ("address", json!("12 Rue des Lilas")),
            result("set_address", "c3", true),
        ];
        let right = [
            prefix.to_vec(),
            vec![active(&["basket"]), denied("place_order", "c4")],
        ];
        assert_eq!(enforce(&right.concat()), Ok(()));
        let early = [prefix.to_vec(), vec![active(&["order"])]].concat();
        let err = enforce(&early).unwrap_err();
        assert!(
            err.contains("active steps are [order]") && err.contains("[basket]"),
            "{err}"
        );
        let admitted = [prefix.to_vec(), vec![call("place_order", "c4")]].concat();
        let err = enforce(&admitted).unwrap_err();
        assert!(err.contains("admitted place_order (c4)"), "{err}");
    }

    /// A call no active step allows must be refused, and one that is
    /// allowed must be admitted.
    #[test]
    fn admission_follows_the_active_steps() {
        assert!(enforce(&[call("place_order", "c1")]).is_err());
        let err = enforce(&[denied("add_item", "c1")]).unwrap_err();
        assert!(err.contains("the spec's rules admit it"), "{err}");
        assert_eq!(
            enforce(&[call("add_item", "c1"), active(&["address"])]),
            Ok(())
        );
    }

    /// The address set and a rosemary in the basket: the `order` step is
    /// active (calls c1 and c2).
    fn filled() -> Vec<(&'static str, Value)> {
        vec![
            call("set_address", "c1"),
            result("set_address", "c1", true),
            call("add_item", "c2"),
            ("basket", json!("rosemary")),
            result("add_item", "c2", true),
        ]
    }

    /// A committing tool is held by its running call: a second call is
    /// refused until the first is answered or cancelled.
    #[test]
    fn a_running_commit_holds_its_tool() {
        let ready = [filled(), vec![call("place_order", "c3")]].concat();
        let twice = [ready.clone(), vec![call("place_order", "c4")]].concat();
        assert!(enforce(&twice).unwrap_err().contains("still running"));
        let refused = [ready.clone(), vec![denied("place_order", "c4")]].concat();
        assert_eq!(enforce(&refused), Ok(()));
        let freed = [
            ready,
            vec![
                (
                    "flow:tool_cancelled",
                    json!({"tool": "place_order", "id": "c3"}),
                ),
                call("place_order", "c4"),
            ],
        ]
        .concat();
        assert_eq!(enforce(&freed), Ok(()));
    }

    /// A refusal on a gate names what fails it: the gate's key, after
    /// the gate.
    #[test]
    fn a_gate_refusal_says_which_condition_fails() {
        let emptied = [
            filled(),
            vec![
                call("remove_item", "c3"),
                ("basket", Value::Null),
                result("remove_item", "c3", true),
            ],
        ]
        .concat();
        let refused = |reason: &str| {
            let entry = (
                "flow:tool_denied",
                json!({"tool": "place_order", "id": "c4", "reason": reason}),
            );
            enforce(&[emptied.clone(), vec![entry]].concat())
        };
        let err = refused("step order allows it only when exists(basket), and ").unwrap_err();
        assert!(err.contains("which basket fails"), "{err}");
        assert_eq!(
            refused("step order allows it only when exists(basket), and basket is not set"),
            Ok(())
        );
    }

    /// The second failure of a step's tool escalates it, once, and its
    /// entry must follow at once; an escalated step admits none of its tools.
    #[test]
    fn escalation_is_owed_right_after_the_failure_that_reaches_it() {
        let failures = vec![
            call("set_address", "c1"),
            result("set_address", "c1", false),
            call("set_address", "c2"),
            result("set_address", "c2", false),
        ];
        let escalated = (
            "flow:escalated",
            json!({"stage": "address", "reason": "escalated after 2 tool failures"}),
        );
        let said = [
            failures.clone(),
            vec![escalated.clone(), denied("set_address", "c3")],
        ];
        assert_eq!(enforce(&said.concat()), Ok(()));
        let unsaid = [failures.clone(), vec![denied("set_address", "c3")]].concat();
        assert!(enforce(&unsaid).unwrap_err().contains("no flow:escalated"));
        let silent_end = enforce(&failures).unwrap_err();
        assert!(
            silent_end.contains("step address escalates"),
            "{silent_end}"
        );
        let early = [failures[..2].to_vec(), vec![escalated]].concat();
        assert!(
            enforce(&early)
                .unwrap_err()
                .contains("no step escalates here")
        );
    }

    /// Under Observe a call Enforce would refuse runs, and its
    /// `flow:tool_would_deny` follows it.
    #[test]
    fn observe_says_what_enforce_would_refuse() {
        let spec = checkout();
        let would = (
            "flow:tool_would_deny",
            json!({"tool": "place_order", "id": "c1"}),
        );
        let said = journal(&[call("place_order", "c1"), would.clone()]);
        assert_eq!(follows(&spec, Enforcement::Observe, &said), Ok(()));
        let unsaid = journal(&[call("place_order", "c1")]);
        assert!(follows(&spec, Enforcement::Observe, &unsaid).is_err());
        let invented = journal(&[call("add_item", "c1"), would]);
        assert!(follows(&spec, Enforcement::Observe, &invented).is_err());
    }
}
