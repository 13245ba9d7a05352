//! Guards: the conditions a flow waits for, and why one does not hold yet.
//!
//! A [`Guard`] is a small boolean expression over two kinds of fact:
//!
//! * **tool outcomes the monitor observed**: `called(tool)` holds once the
//!   monitor has admitted a call of `tool` (it ran, or is running);
//!   `called_ok(tool)` holds once a call of `tool` completed with `ok`;
//! * **state values**: `is_true(key)` holds when the value is JSON `true`
//!   (not `"true"`, not `1`); `exists(key)` when the key is set and not
//!   `null`; `equals(key, value)` when the value equals `value`, numbers
//!   compared by value (`4` equals `4.0`).
//!
//! `all`, `any` and `not` combine them. Guards are data: they print as
//! `all(called_ok(verify_identity), is_true(confirmed))` and are stored in
//! spec files as JSON (`{"all": [{"called_ok": "verify_identity"}, ...]}`).
//!
//! Besides holding or not, a guard can say *why* it does not hold: the
//! failing leaves of its tree, each with a sentence about the fact that is
//! missing. Explanations and refusal reasons are built from those.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;
use serde_json::Value;

use super::state_view::StateView;

/// A condition over observed tool outcomes and state values.
///
/// ```
/// use livesim::flow::Guard;
///
/// let ready = Guard::all([Guard::called_ok("verify_identity"), Guard::is_true("confirmed")]);
/// assert_eq!(ready.to_string(), "all(called_ok(verify_identity), is_true(confirmed))");
/// assert_eq!(
///     serde_json::to_string(&ready).unwrap(),
///     r#"{"all":[{"called_ok":"verify_identity"},{"is_true":"confirmed"}]}"#
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Guard {
    /// A call of this tool completed with `ok`.
    CalledOk(String),
    /// A call of this tool was admitted (it ran or is running).
    Called(String),
    /// This state key holds JSON `true`.
    IsTrue(String),
    /// This state key holds this value (numbers compared by value).
    Equals {
        /// The state key.
        key: String,
        /// The value it must hold.
        value: Value,
    },
    /// This state key is set and not `null`.
    Exists(String),
    /// Every guard holds.
    All(Vec<Guard>),
    /// At least one guard holds.
    Any(Vec<Guard>),
    /// The guard does not hold.
    Not(Box<Guard>),
}

impl Guard {
    /// Holds once a call of `tool` completed with `ok`.
    pub fn called_ok(tool: impl Into<String>) -> Guard {
        Guard::CalledOk(tool.into())
    }

    /// Holds once a call of `tool` was admitted, whatever its outcome.
    pub fn called(tool: impl Into<String>) -> Guard {
        Guard::Called(tool.into())
    }

    /// Holds while state `key` is JSON `true`.
    pub fn is_true(key: impl Into<String>) -> Guard {
        Guard::IsTrue(key.into())
    }

    /// Holds while state `key` equals `value`.
    pub fn equals(key: impl Into<String>, value: impl Into<Value>) -> Guard {
        Guard::Equals {
            key: key.into(),
            value: value.into(),
        }
    }

    /// Holds while state `key` is set and not `null`.
    pub fn exists(key: impl Into<String>) -> Guard {
        Guard::Exists(key.into())
    }

    /// Holds when every guard holds. Must not be empty.
    pub fn all(guards: impl IntoIterator<Item = Guard>) -> Guard {
        Guard::All(guards.into_iter().collect())
    }

    /// Holds when at least one guard holds. Must not be empty.
    pub fn any(guards: impl IntoIterator<Item = Guard>) -> Guard {
        Guard::Any(guards.into_iter().collect())
    }

    /// Holds when `guard` does not.
    #[allow(clippy::should_implement_trait)] // a guard constructor, read as Guard::not(g)
    pub fn not(guard: Guard) -> Guard {
        Guard::Not(Box::new(guard))
    }

    /// Whether the guard can only hold once `tool` has succeeded: it is
    /// `called_ok(tool)`, or an `all` of which one part is. A step whose
    /// `done` guard requires a tool this way is *committed* by that tool.
    pub(crate) fn requires_ok(&self, tool: &str) -> bool {
        match self {
            Guard::CalledOk(name) => name == tool,
            Guard::All(guards) => guards.iter().any(|g| g.requires_ok(tool)),
            _ => false,
        }
    }

    /// Whether the guard holds for these facts.
    pub(crate) fn holds(&self, facts: &Facts<'_>) -> bool {
        match self {
            Guard::CalledOk(tool) => facts.tally(tool).ok > 0,
            Guard::Called(tool) => facts.tally(tool).calls > 0,
            Guard::IsTrue(key) => facts.state.value(key) == Some(Value::Bool(true)),
            Guard::Equals { key, value } => facts
                .state
                .value(key)
                .is_some_and(|actual| same_value(&actual, value)),
            Guard::Exists(key) => facts.state.value(key).is_some_and(|v| !v.is_null()),
            Guard::All(guards) => guards.iter().all(|g| g.holds(facts)),
            Guard::Any(guards) => guards.iter().any(|g| g.holds(facts)),
            Guard::Not(guard) => !guard.holds(facts),
        }
    }

    /// The failing leaves of the guard tree, each with why it fails; empty
    /// when the guard holds.
    pub(crate) fn unmet(&self, facts: &Facts<'_>) -> Vec<Unmet> {
        let mut out = Vec::new();
        if !self.holds(facts) {
            self.collect_unmet(facts, &mut out);
        }
        out
    }

    /// Appends the reasons this (failing) guard fails.
    fn collect_unmet(&self, facts: &Facts<'_>, out: &mut Vec<Unmet>) {
        match self {
            // Every failing child is a reason; for `any`, all children fail.
            Guard::All(guards) | Guard::Any(guards) => {
                for guard in guards {
                    if !guard.holds(facts) {
                        guard.collect_unmet(facts, out);
                    }
                }
            }
            leaf => out.push(Unmet {
                guard: leaf.to_string(),
                why: leaf.why_not(facts),
            }),
        }
    }

    /// One sentence saying why this leaf (or `not`) does not hold.
    fn why_not(&self, facts: &Facts<'_>) -> String {
        match self {
            Guard::CalledOk(tool) => {
                let tally = facts.tally(tool);
                let detail = match (tally.failed, tally.calls) {
                    (0, 0) => "it has not been called".to_string(),
                    (0, _) => "its call has not completed yet".to_string(),
                    (1, _) => "it failed once".to_string(),
                    (n, _) => format!("it failed {n} times"),
                };
                format!("{tool} has not completed ok ({detail})")
            }
            Guard::Called(tool) => format!("{tool} has not been called"),
            Guard::IsTrue(key) => match facts.state.value(key) {
                None | Some(Value::Null) => format!("{key} is not set"),
                Some(other) => format!("{key} is {other}, not true"),
            },
            Guard::Equals { key, value } => match facts.state.value(key) {
                None | Some(Value::Null) => format!("{key} is not set (it must be {value})"),
                Some(other) => format!("{key} is {other}, not {value}"),
            },
            Guard::Exists(key) => format!("{key} is not set"),
            Guard::Not(inner) => format!("{inner} holds, and it must not"),
            Guard::All(_) | Guard::Any(_) => format!("{self} does not hold"),
        }
    }

    /// The first thing clearly wrong with this guard (an empty tool or key
    /// name, an empty `all`/`any`), if any.
    pub(crate) fn problem(&self) -> Option<String> {
        match self {
            Guard::CalledOk(name) | Guard::Called(name) if name.is_empty() => {
                Some(format!("{self} names no tool"))
            }
            Guard::IsTrue(name) | Guard::Exists(name) | Guard::Equals { key: name, .. }
                if name.is_empty() =>
            {
                Some(format!("{self} names no state key"))
            }
            Guard::All(guards) if guards.is_empty() => {
                Some("all() has no guards, so it would always hold; drop it".to_string())
            }
            Guard::Any(guards) if guards.is_empty() => {
                Some("any() has no guards, so it could never hold; drop it".to_string())
            }
            Guard::All(guards) | Guard::Any(guards) => guards.iter().find_map(Guard::problem),
            Guard::Not(guard) => guard.problem(),
            _ => None,
        }
    }
}

impl fmt::Display for Guard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |f: &mut fmt::Formatter<'_>, name: &str, guards: &[Guard]| {
            write!(f, "{name}(")?;
            for (i, guard) in guards.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{guard}")?;
            }
            f.write_str(")")
        };
        match self {
            Guard::CalledOk(tool) => write!(f, "called_ok({tool})"),
            Guard::Called(tool) => write!(f, "called({tool})"),
            Guard::IsTrue(key) => write!(f, "is_true({key})"),
            Guard::Equals { key, value } => write!(f, "equals({key}, {value})"),
            Guard::Exists(key) => write!(f, "exists({key})"),
            Guard::All(guards) => list(f, "all", guards),
            Guard::Any(guards) => list(f, "any", guards),
            Guard::Not(guard) => write!(f, "not({guard})"),
        }
    }
}

/// One failing leaf of a guard: the leaf, and why it does not hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unmet {
    /// The leaf, as it prints (`called_ok(verify_identity)`).
    pub guard: String,
    /// Why it does not hold (`verify_identity has not completed ok (...)`).
    pub why: String,
}

impl fmt::Display for Unmet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.guard, self.why)
    }
}

/// How often the monitor saw a tool admitted, completed ok, and failed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ToolTally {
    /// Calls admitted (under Observe, including those Enforce would refuse).
    pub calls: u32,
    /// Calls that completed with `ok`.
    pub ok: u32,
    /// Calls that completed without `ok`, plus failures reported on their own.
    pub failed: u32,
}

/// The tool outcomes the monitor has observed, per tool name.
pub(crate) type Tallies = BTreeMap<String, ToolTally>;

/// Everything a guard reads: observed tool outcomes and state.
pub(crate) struct Facts<'a> {
    pub(crate) tallies: &'a Tallies,
    pub(crate) state: &'a dyn StateView,
}

impl Facts<'_> {
    fn tally(&self, tool: &str) -> ToolTally {
        self.tallies.get(tool).copied().unwrap_or_default()
    }
}

/// JSON equality, except that numbers compare by value at any depth, so a
/// state value written as `4.0` still equals a guard's `4`.
fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            x == y || matches!((x.as_f64(), y.as_f64()), (Some(p), Some(q)) if p == q)
        }
        (Value::Array(xs), Value::Array(ys)) => {
            xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| same_value(x, y))
        }
        (Value::Object(xs), Value::Object(ys)) => {
            xs.len() == ys.len()
                && xs
                    .iter()
                    .all(|(k, x)| ys.get(k).is_some_and(|y| same_value(x, y)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn facts_with<'a>(tallies: &'a Tallies, state: &'a Value) -> Facts<'a> {
        Facts { tallies, state }
    }

    #[test]
    fn leaves_read_outcomes_and_state() {
        let mut tallies = Tallies::new();
        tallies.insert(
            "verify".into(),
            ToolTally {
                calls: 2,
                ok: 1,
                failed: 1,
            },
        );
        let state = json!({"confirmed": true, "size": 4.0, "gone": null, "flag": "true"});
        let facts = facts_with(&tallies, &state);
        assert!(Guard::called_ok("verify").holds(&facts));
        assert!(Guard::called("verify").holds(&facts));
        assert!(!Guard::called("pay").holds(&facts));
        assert!(Guard::is_true("confirmed").holds(&facts));
        assert!(!Guard::is_true("flag").holds(&facts));
        assert!(Guard::equals("size", 4).holds(&facts));
        assert!(!Guard::exists("gone").holds(&facts));
        assert!(Guard::exists("size").holds(&facts));
        assert!(Guard::not(Guard::called("pay")).holds(&facts));
        assert!(Guard::any([Guard::called("pay"), Guard::called("verify")]).holds(&facts));
    }

    /// `equals` compares numbers by value at any depth, and arrays and
    /// objects member by member: same length, same keys, nothing more.
    #[test]
    fn equals_compares_numbers_by_value_inside_arrays_and_objects() {
        let tallies = Tallies::new();
        let state = json!({
            "sizes": [1, 2.0],
            "seat": {"row": 4.0, "col": 2},
        });
        let facts = facts_with(&tallies, &state);
        let equals = |key: &str, value: Value| Guard::equals(key, value).holds(&facts);
        assert!(equals("sizes", json!([1.0, 2])));
        assert!(!equals("sizes", json!([1, 2, 3])));
        assert!(!equals("sizes", json!([1])));
        assert!(!equals("sizes", json!([2, 1])));
        assert!(equals("seat", json!({"col": 2.0, "row": 4})));
        assert!(!equals("seat", json!({"row": 4})));
        assert!(!equals("seat", json!({"row": 4, "col": 2, "side": "left"})));
        assert!(!equals("seat", json!({"row": 4, "column": 2})));
    }

    #[test]
    fn unmet_walks_to_the_failing_leaves() {
        let mut tallies = Tallies::new();
        tallies.insert(
            "lookup".into(),
            ToolTally {
                calls: 1,
                ok: 0,
                failed: 1,
            },
        );
        let state = json!({"tier": "silver"});
        let facts = facts_with(&tallies, &state);
        let guard = Guard::all([
            Guard::called_ok("lookup"),
            Guard::any([Guard::equals("tier", "gold"), Guard::is_true("vip")]),
            Guard::exists("tier"),
        ]);
        let unmet: Vec<String> = guard.unmet(&facts).iter().map(|u| u.to_string()).collect();
        assert_eq!(
            unmet,
            [
                "called_ok(lookup): lookup has not completed ok (it failed once)",
                "equals(tier, \"gold\"): tier is \"silver\", not \"gold\"",
                "is_true(vip): vip is not set",
            ]
        );
        assert!(Guard::exists("tier").unmet(&facts).is_empty());
    }

    #[test]
    fn problems_name_what_is_wrong() {
        assert_eq!(
            Guard::called_ok("").problem().unwrap(),
            "called_ok() names no tool"
        );
        assert!(Guard::any([]).problem().unwrap().contains("never hold"));
        assert!(
            Guard::not(Guard::all([Guard::exists("")]))
                .problem()
                .unwrap()
                .contains("names no state key")
        );
        assert_eq!(Guard::is_true("x").problem(), None);
    }
}
