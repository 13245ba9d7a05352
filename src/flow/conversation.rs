//! Conversations: stages with slots to fill and commit tools behind guards,
//! compiled to the same [`FlowSpec`] a [`Flow`](super::Flow) builds.
//!
//! A [`Conversation`] speaks the vocabulary of a dialogue: a *stage*
//! allows some tools, declares *slots* (state keys it must fill before it is
//! done; a slot may be filled by a [`Resolver`] from other keys), *commits*
//! (tools with an effect, admitted only while a guard holds, such as
//! `book_table` behind `is_true("confirmed")`), and when to *escalate*.
//!
//! [`Conversation::compile`] turns each stage into one flow step, so the
//! monitor has one code path:
//!
//! * `allow` is the stage's tools plus its commit tools;
//! * each commit becomes a gate on its tool;
//! * `done` is `all(exists(slot)…, called_ok(commit)…, done guard)`: every
//!   slot filled, every commit completed ok, and the stage's own `done`
//!   guard if it has one (one part alone stands by itself; a stage with none
//!   of them is never done);
//! * escalation thresholds carry over unchanged.
//!
//! Stages run in declaration order by default: a stage comes after the one
//! declared before it, unless it names its own `after`.
//!
//! Slots filled by a resolver are described in [`resolver`](super::resolver)
//! (`resolver.rs`): the spec records which slots are resolved and from which
//! input keys; the functions travel with the [`CompiledConversation`].

use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use super::decision::Enforcement;
use super::error::FlowError;
use super::guard::Guard;
use super::monitor::FlowMonitor;
use super::resolver::Resolver;
use super::spec::{Escalation, FlowSpec, StepSpec};

/// A slot: a state key a stage must fill before it is done.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SlotSpec {
    /// The state key.
    pub key: String,
    /// For a resolved slot, the state keys its resolver reads; `None` when
    /// the slot is filled by tools or the model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolve_from: Option<Vec<String>>,
}

/// One stage of a conversation, as declared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StageSpec {
    pub(crate) id: String,
    #[serde(skip_serializing_if = "BTreeSet::is_empty")]
    pub(crate) after: BTreeSet<String>,
    #[serde(skip_serializing_if = "BTreeSet::is_empty")]
    pub(crate) allow: BTreeSet<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) slots: Vec<SlotSpec>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) commits: BTreeMap<String, Guard>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) done: Option<Guard>,
    #[serde(skip_serializing_if = "Escalation::is_never")]
    pub(crate) escalate: Escalation,
}

impl StageSpec {
    pub(crate) fn new(id: impl Into<String>) -> StageSpec {
        StageSpec {
            id: id.into(),
            after: BTreeSet::new(),
            allow: BTreeSet::new(),
            slots: Vec::new(),
            commits: BTreeMap::new(),
            done: None,
            escalate: Escalation::default(),
        }
    }

    /// The stage's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The stages that must be done before this one is active.
    pub fn after(&self) -> &BTreeSet<String> {
        &self.after
    }

    /// The tools it allows (its commit tools not included).
    pub fn allow(&self) -> &BTreeSet<String> {
        &self.allow
    }

    /// Its slots, in declaration order.
    pub fn slots(&self) -> &[SlotSpec] {
        &self.slots
    }

    /// Its commit tools and the guard each waits behind.
    pub fn commits(&self) -> &BTreeMap<String, Guard> {
        &self.commits
    }

    /// Its own done guard, beyond slots and commits.
    pub fn done(&self) -> Option<&Guard> {
        self.done.as_ref()
    }

    /// When it escalates.
    pub fn escalate(&self) -> Escalation {
        self.escalate
    }

    /// The flow step this stage compiles to.
    fn to_step(&self) -> StepSpec {
        let mut parts: Vec<Guard> = self
            .slots
            .iter()
            .map(|slot| Guard::exists(slot.key.clone()))
            .collect();
        parts.extend(self.commits.keys().map(Guard::called_ok));
        parts.extend(self.done.clone());
        let done = match parts.len() {
            0 => None,
            1 => parts.pop(),
            _ => Some(Guard::All(parts)),
        };
        let mut allow = self.allow.clone();
        allow.extend(self.commits.keys().cloned());
        StepSpec {
            id: self.id.clone(),
            after: self.after.clone(),
            allow,
            gates: self.commits.clone(),
            done,
            escalate: self.escalate,
        }
    }
}

/// Declares a conversation: stages, slots, commits and escalation.
///
/// ```
/// use std::collections::BTreeMap;
/// use livesim::flow::{Conversation, Enforcement, Guard};
/// use serde_json::json;
///
/// let convo = Conversation::new()
///     .stage("party").allow(["set_party"]).slot("party_size")
///     .stage("book").allow(["confirm"]).commit("book_table", Guard::is_true("confirmed"))
///     .compile()
///     .unwrap();
/// let mut monitor = convo.monitor(Enforcement::Enforce);
/// let mut state = BTreeMap::new();
/// assert_eq!(monitor.evaluate_turn(&state).active, ["party"]);
/// state.insert("party_size".to_string(), json!(4));
/// assert_eq!(monitor.evaluate_turn(&state).active, ["book"]);
/// assert!(monitor.check("book_table", &state).is_err()); // not confirmed yet
/// state.insert("confirmed".to_string(), json!(true));
/// assert!(monitor.check("book_table", &state).is_ok());
/// ```
#[derive(Clone, Default)]
#[must_use = "a conversation does nothing until it is compiled"]
pub struct Conversation {
    stages: Vec<StageSpec>,
    /// Whether the last stage's `after` is still the implicit "the stage
    /// before it", to be replaced by its first explicit `after`.
    implicit_after: bool,
    resolvers: BTreeMap<String, Resolver>,
    error: Option<FlowError>,
}

impl fmt::Debug for Conversation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Conversation")
            .field("stages", &self.stages)
            .field("resolvers", &self.resolvers.keys().collect::<Vec<_>>())
            .field("error", &self.error)
            .finish()
    }
}

impl Conversation {
    /// A conversation with no stages.
    pub fn new() -> Conversation {
        Conversation::default()
    }

    /// Opens a stage; the calls that follow configure it. It comes after
    /// the stage declared before it unless it names its own `after`.
    pub fn stage(mut self, id: impl Into<String>) -> Conversation {
        let mut stage = StageSpec::new(id);
        if let Some(previous) = self.stages.last() {
            stage.after.insert(previous.id.clone());
        }
        self.implicit_after = !stage.after.is_empty();
        self.stages.push(stage);
        self
    }

    /// This stage is active only once stage `id` is done (replacing the
    /// implicit "after the previous stage"). Call again for several.
    pub fn after(mut self, id: impl Into<String>) -> Conversation {
        let implicit = std::mem::take(&mut self.implicit_after);
        self.edit("after(..)", |stage| {
            if implicit {
                stage.after.clear();
            }
            stage.after.insert(id.into());
        })
    }

    /// Tools this stage allows while active.
    pub fn allow<I, S>(self, tools: I) -> Conversation
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.edit("allow([..])", |stage| {
            stage.allow.extend(tools.into_iter().map(Into::into));
        })
    }

    /// A state key this stage must fill before it is done.
    pub fn slot(self, key: impl Into<String>) -> Conversation {
        self.edit("slot(..)", |stage| {
            stage.slots.push(SlotSpec {
                key: key.into(),
                resolve_from: None,
            });
        })
    }

    /// A slot of this stage filled by `resolver` from the state keys
    /// `inputs` (the session runs it once the inputs are set; see
    /// [`CompiledConversation::due_resolutions`]).
    pub fn resolve_slot<I, S>(
        mut self,
        slot: impl Into<String>,
        inputs: I,
        resolver: Resolver,
    ) -> Conversation
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let slot = slot.into();
        let inputs: Vec<String> = inputs.into_iter().map(Into::into).collect();
        if !self.stages.is_empty() {
            self.resolvers.insert(slot.clone(), resolver);
        }
        self.edit("resolve_slot(..)", |stage| {
            stage.slots.push(SlotSpec {
                key: slot,
                resolve_from: Some(inputs),
            });
        })
    }

    /// A commit tool of this stage: admitted only while the stage is active
    /// and `guard` holds; the stage is not done until it completed ok.
    pub fn commit(self, tool: impl Into<String>, guard: Guard) -> Conversation {
        self.edit("commit(..)", |stage| {
            stage.commits.insert(tool.into(), guard);
        })
    }

    /// A further condition for this stage to be done, beyond its slots and
    /// commits.
    pub fn done(self, guard: Guard) -> Conversation {
        self.edit("done(..)", |stage| stage.done = Some(guard))
    }

    /// Escalates this stage after `n` tool failures while it is active.
    pub fn escalate_after_tool_failures(self, n: u32) -> Conversation {
        self.edit("escalate_after_tool_failures(..)", |stage| {
            stage.escalate.tool_failures = Some(n);
        })
    }

    /// Escalates this stage after `n` interruptions while it is active.
    pub fn escalate_after_interruptions(self, n: u32) -> Conversation {
        self.edit("escalate_after_interruptions(..)", |stage| {
            stage.escalate.interruptions = Some(n);
        })
    }

    /// Checks the conversation and compiles it to a flow: everything
    /// [`Flow::build`](super::Flow::build) checks, in stage terms, plus a
    /// slot declared twice, an empty slot or input key, and a resolved slot
    /// that reads itself.
    pub fn compile(self) -> Result<CompiledConversation, FlowError> {
        if let Some(error) = self.error {
            return Err(error);
        }
        CompiledConversation::new(self.stages, self.resolvers)
    }

    fn edit(mut self, method: &'static str, change: impl FnOnce(&mut StageSpec)) -> Conversation {
        match self.stages.last_mut() {
            Some(stage) => change(stage),
            None => {
                self.error.get_or_insert(FlowError::OutsideStep {
                    noun: "stage",
                    method,
                });
            }
        }
        self
    }
}

/// A validated conversation and the flow it compiles to.
///
/// Equality compares the stages (and so the flow); resolvers are code and
/// are not compared, which is what lets a conversation read back from its
/// spec file equal the one that wrote it.
#[derive(Clone)]
pub struct CompiledConversation {
    pub(crate) stages: Vec<StageSpec>,
    flow: FlowSpec,
    pub(crate) resolvers: BTreeMap<String, Resolver>,
}

impl PartialEq for CompiledConversation {
    fn eq(&self, other: &Self) -> bool {
        self.stages == other.stages
    }
}

impl Eq for CompiledConversation {}

impl fmt::Debug for CompiledConversation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompiledConversation")
            .field("stages", &self.stages)
            .field("resolvers", &self.resolvers.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl AsRef<FlowSpec> for CompiledConversation {
    fn as_ref(&self) -> &FlowSpec {
        &self.flow
    }
}

impl CompiledConversation {
    /// Validates stages and compiles them.
    pub(crate) fn new(
        stages: Vec<StageSpec>,
        resolvers: BTreeMap<String, Resolver>,
    ) -> Result<CompiledConversation, FlowError> {
        let mut owner: BTreeMap<&str, &str> = BTreeMap::new();
        for stage in &stages {
            for slot in &stage.slots {
                let invalid = |problem: String| FlowError::Invalid {
                    noun: "stage",
                    step: stage.id.clone(),
                    problem,
                };
                if slot.key.is_empty() {
                    return Err(invalid("a slot has an empty key".into()));
                }
                if let Some(first) = owner.insert(&slot.key, &stage.id) {
                    return Err(FlowError::DuplicateSlot {
                        slot: slot.key.clone(),
                        first: first.to_string(),
                        second: stage.id.clone(),
                    });
                }
                let inputs = slot.resolve_from.as_deref().unwrap_or_default();
                if inputs.iter().any(String::is_empty) {
                    return Err(invalid(format!(
                        "slot {} is resolved from an empty key",
                        slot.key
                    )));
                }
                if inputs.contains(&slot.key) {
                    return Err(invalid(format!(
                        "slot {} is resolved from itself: its resolver could never run",
                        slot.key
                    )));
                }
            }
        }
        let steps = stages.iter().map(StageSpec::to_step).collect();
        let flow = FlowSpec::with_noun(steps, "stage")?;
        Ok(CompiledConversation {
            stages,
            flow,
            resolvers,
        })
    }

    /// The stages, in declaration order.
    pub fn stages(&self) -> &[StageSpec] {
        &self.stages
    }

    /// The stage with this id.
    pub fn stage(&self, id: &str) -> Option<&StageSpec> {
        self.stages.iter().find(|stage| stage.id == id)
    }

    /// The flow the monitor runs.
    pub fn flow(&self) -> &FlowSpec {
        &self.flow
    }

    /// A monitor running this conversation's flow.
    pub fn monitor(&self, enforcement: Enforcement) -> FlowMonitor {
        FlowMonitor::new(self.flow.clone(), enforcement)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::resolver;

    fn noop() -> Resolver {
        resolver(|_| async { Ok(serde_json::Value::Null) })
    }

    #[test]
    fn stages_follow_each_other_unless_told_otherwise() {
        let convo = Conversation::new()
            .stage("a")
            .stage("b")
            .stage("c")
            .after("a")
            .compile()
            .unwrap();
        assert_eq!(convo.stage("b").unwrap().after().len(), 1);
        assert!(convo.stage("c").unwrap().after().contains("a"));
        assert!(!convo.stage("c").unwrap().after().contains("b"));
    }

    #[test]
    fn a_stage_compiles_to_one_step() {
        let convo = Conversation::new()
            .stage("book")
            .allow(["confirm"])
            .slot("party_size")
            .commit("book_table", Guard::is_true("confirmed"))
            .escalate_after_interruptions(2)
            .compile()
            .unwrap();
        let step = convo.flow().step("book").unwrap();
        assert_eq!(
            step.allow().iter().collect::<Vec<_>>(),
            ["book_table", "confirm"]
        );
        assert_eq!(
            step.done().unwrap().to_string(),
            "all(exists(party_size), called_ok(book_table))"
        );
        assert_eq!(step.gates()["book_table"], Guard::is_true("confirmed"));
        assert_eq!(step.escalate().interruptions, Some(2));
        assert_eq!(convo.flow().noun(), "stage");
    }

    #[test]
    fn slot_mistakes_are_named() {
        let err = Conversation::new()
            .stage("a")
            .slot("x")
            .stage("b")
            .slot("x")
            .compile()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "slot `x` is declared by stage `a` and again by stage `b`: a slot belongs to one stage"
        );
        let err = Conversation::new()
            .stage("a")
            .resolve_slot("x", ["x"], noop())
            .compile()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "stage `a`: slot x is resolved from itself: its resolver could never run"
        );
    }
}
