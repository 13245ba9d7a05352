//! The state a run's journal builds, entry by entry, and the state guards
//! of an agent file evaluated on it: what `phases-follow-spec`,
//! `patterns-follow-spec` and `resolvers-follow-spec` read, apart from the session's own state store
//! and the flow's guard code.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::flow::Guard;
use crate::soak::check::flow_model::same;
use crate::state::StateMutation;

/// The state as of some journal entry: each key's last value, removed
/// keys and keys written `null` absent.
#[derive(Debug, Default)]
pub(crate) struct StateModel<'r> {
    values: BTreeMap<&'r str, &'r Value>,
}

impl<'r> StateModel<'r> {
    /// Applies one journal entry.
    pub(crate) fn apply(&mut self, entry: &'r StateMutation) {
        if entry.removed || entry.value.is_null() {
            self.values.remove(entry.key.as_str());
        } else {
            self.values.insert(&entry.key, &entry.value);
        }
    }

    /// A key's value, if it is set (and not `null`).
    pub(crate) fn value(&self, key: &str) -> Option<&'r Value> {
        self.values.get(key).copied()
    }

    /// Whether a state guard holds (a guard on tool outcomes never does:
    /// agent files refuse them where only state is read).
    pub(crate) fn holds(&self, guard: &Guard) -> bool {
        match guard {
            Guard::IsTrue(key) => self.values.get(key.as_str()) == Some(&&Value::Bool(true)),
            Guard::Exists(key) => self.values.contains_key(key.as_str()),
            Guard::Equals { key, value } => self
                .values
                .get(key.as_str())
                .is_some_and(|v| same(v, value)),
            Guard::All(parts) => parts.iter().all(|g| self.holds(g)),
            Guard::Any(parts) => parts.iter().any(|g| self.holds(g)),
            Guard::Not(inner) => !self.holds(inner),
            Guard::Called(_) | Guard::CalledOk(_) => false,
        }
    }
}
