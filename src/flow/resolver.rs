//! Resolved slots: slots a resolver fills from other state keys.
//!
//! A [`Resolver`] is code, not data: the spec (and its file) records which
//! slots are resolved and from which input keys, and the
//! [`CompiledConversation`] carries the functions. Neither the monitor nor
//! the simulator runs them; the session asks
//! [`due_resolutions`](CompiledConversation::due_resolutions) which can run
//! now, runs them, and writes their values into state like any other.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Map, Value};

use super::conversation::{CompiledConversation, SlotSpec};
use super::error::FlowError;
use super::state_view::StateView;

/// Fills a slot: takes an object of the slot's input keys and their
/// values, returns the slot's value or an error message.
pub type Resolver = Arc<dyn Fn(Value) -> BoxFuture<'static, Result<Value, String>> + Send + Sync>;

/// Wraps an async function as a [`Resolver`].
///
/// ```
/// use livesim::flow::resolver;
/// use serde_json::json;
///
/// let balance = resolver(|args| async move { Ok(json!({"account": args["account_id"], "cents": 1200})) });
/// let value = futures::executor::block_on(balance(json!({"account_id": "a-1"}))).unwrap();
/// assert_eq!(value["cents"], 1200);
/// ```
pub fn resolver<F, Fut>(f: F) -> Resolver
where
    F: Fn(Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, String>> + Send + 'static,
{
    Arc::new(move |args| Box::pin(f(args)))
}

/// A resolver that can run now: its slot, and the arguments to call it with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DueResolution {
    /// The slot to fill with the resolver's value.
    pub slot: String,
    /// An object of the slot's input keys and their current values.
    pub args: Value,
}

impl CompiledConversation {
    /// The resolver of a resolved slot, if attached.
    pub fn resolver(&self, slot: &str) -> Option<&Resolver> {
        self.resolvers.get(slot)
    }

    /// Attaches the resolver of a resolved slot (a conversation read from a
    /// spec file has the slot's inputs but not its code).
    pub fn attach_resolver(&mut self, slot: &str, resolver: Resolver) -> Result<(), FlowError> {
        let resolved: Vec<&str> = self.resolved_slots().map(|s| s.key.as_str()).collect();
        if !resolved.contains(&slot) {
            return Err(FlowError::UnknownResolvedSlot {
                slot: slot.to_string(),
                known: if resolved.is_empty() {
                    "none".to_string()
                } else {
                    resolved.join(", ")
                },
            });
        }
        self.resolvers.insert(slot.to_string(), resolver);
        Ok(())
    }

    /// Resolved slots with no resolver attached, in declaration order.
    pub fn missing_resolvers(&self) -> Vec<&str> {
        self.resolved_slots()
            .map(|slot| slot.key.as_str())
            .filter(|key| !self.resolvers.contains_key(*key))
            .collect()
    }

    /// Resolvers that should run now: resolved slots of the `active` stages
    /// that are not set yet and whose inputs all are, with their arguments.
    pub fn due_resolutions(&self, active: &[String], state: &dyn StateView) -> Vec<DueResolution> {
        let mut due = Vec::new();
        for stage in self.stages.iter().filter(|s| active.contains(&s.id)) {
            for slot in &stage.slots {
                let Some(inputs) = &slot.resolve_from else {
                    continue;
                };
                if state.value(&slot.key).is_some_and(|v| !v.is_null()) {
                    continue;
                }
                let args: Option<Map<String, Value>> = inputs
                    .iter()
                    .map(|key| {
                        let value = state.value(key).filter(|v| !v.is_null())?;
                        Some((key.clone(), value))
                    })
                    .collect();
                if let Some(args) = args {
                    due.push(DueResolution {
                        slot: slot.key.clone(),
                        args: Value::Object(args),
                    });
                }
            }
        }
        due
    }

    /// Every resolved slot with the id of its stage, in declaration order.
    #[cfg(feature = "simulation")]
    pub(crate) fn resolved_slots_by_stage(&self) -> impl Iterator<Item = (&str, &SlotSpec)> {
        self.stages.iter().flat_map(|stage| {
            stage
                .slots
                .iter()
                .filter(|slot| slot.resolve_from.is_some())
                .map(move |slot| (stage.id.as_str(), slot))
        })
    }

    /// Replaces each attached resolver with what `wrap` makes of it (the
    /// soak wraps them to record their runs).
    #[cfg(feature = "simulation")]
    pub(crate) fn wrap_resolvers(&mut self, mut wrap: impl FnMut(&str, Resolver) -> Resolver) {
        for (slot, resolver) in self.resolvers.iter_mut() {
            *resolver = wrap(slot, resolver.clone());
        }
    }

    fn resolved_slots(&self) -> impl Iterator<Item = &SlotSpec> {
        self.stages
            .iter()
            .flat_map(|stage| &stage.slots)
            .filter(|slot| slot.resolve_from.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::Conversation;
    use serde_json::json;

    fn noop() -> Resolver {
        resolver(|_| async { Ok(Value::Null) })
    }

    #[test]
    fn resolutions_are_due_once_inputs_are_set() {
        let mut convo = Conversation::new()
            .stage("account")
            .slot("account_id")
            .resolve_slot("balance", ["account_id"], noop())
            .compile()
            .unwrap();
        let active = vec!["account".to_string()];
        assert!(convo.due_resolutions(&active, &json!({})).is_empty());
        let due = convo.due_resolutions(&active, &json!({"account_id": "a-1"}));
        assert_eq!(
            due,
            [DueResolution {
                slot: "balance".into(),
                args: json!({"account_id": "a-1"})
            }]
        );
        assert!(
            convo
                .due_resolutions(&active, &json!({"account_id": "a-1", "balance": 3}))
                .is_empty()
        );
        assert!(convo.missing_resolvers().is_empty());
        let err = convo.attach_resolver("account_id", noop()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "slot `account_id` is not resolved by a resolver in this conversation (resolved slots: balance)"
        );
    }
}
