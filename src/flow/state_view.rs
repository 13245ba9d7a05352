//! What the flow reads from session state: a value per key, nothing more.
//!
//! Guards such as `is_true("confirmed")` read state, but the flow does not
//! depend on any concrete state type: the session passes whatever it keeps
//! its values in, through [`StateView`]. Plain maps implement it, so tests
//! and the scenario simulator need no session at all.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// Read access to state values by key.
///
/// A missing key and a key holding `null` both read as "not set" for
/// [`Guard::exists`](super::Guard::exists); implementations may return
/// either.
///
/// ```
/// use std::collections::BTreeMap;
/// use livesim::flow::StateView;
/// use serde_json::json;
///
/// let mut state = BTreeMap::new();
/// state.insert("confirmed".to_string(), json!(true));
/// assert_eq!(state.value("confirmed"), Some(json!(true)));
/// assert_eq!(state.value("party_size"), None);
/// ```
pub trait StateView {
    /// The value stored under `key`, if any.
    fn value(&self, key: &str) -> Option<Value>;
}

impl StateView for crate::state::State {
    fn value(&self, key: &str) -> Option<Value> {
        self.get(key)
    }
}

impl StateView for BTreeMap<String, Value> {
    fn value(&self, key: &str) -> Option<Value> {
        self.get(key).cloned()
    }
}

impl StateView for Map<String, Value> {
    fn value(&self, key: &str) -> Option<Value> {
        self.get(key).cloned()
    }
}

/// A JSON object reads as its members; any other JSON value holds no keys.
impl StateView for Value {
    fn value(&self, key: &str) -> Option<Value> {
        self.as_object().and_then(|map| map.get(key)).cloned()
    }
}

impl<T: StateView + ?Sized> StateView for &T {
    fn value(&self, key: &str) -> Option<Value> {
        (**self).value(key)
    }
}

/// State with no keys, for flows whose guards only look at tool outcomes.
///
/// ```
/// use livesim::flow::{NoState, StateView};
///
/// assert_eq!(NoState.value("anything"), None);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NoState;

impl StateView for NoState {
    fn value(&self, _key: &str) -> Option<Value> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn maps_and_objects_read_their_members() {
        let object = json!({"a": 1});
        assert_eq!(object.value("a"), Some(json!(1)));
        assert_eq!(json!([1]).value("a"), None);
        let map = object.as_object().unwrap().clone();
        assert_eq!(map.value("a"), Some(json!(1)));
        let by_ref: &dyn StateView = &&map;
        assert_eq!(by_ref.value("a"), Some(json!(1)));
        assert_eq!(by_ref.value("b"), None);
    }
}
