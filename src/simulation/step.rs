//! Scenario steps: one event or expectation each, in the JSON shape
//! scenario files use.
//!
//! Externally tagged, snake_case: `"turn"`, `"interrupt"`,
//! `{"expect_allowed": "set_party"}`, `{"expect_denied": "book_table"}`,
//! `{"expect_active": ["book"]}`, `{"tool_ok": "confirm"}`,
//! `{"tool_failed": "lookup"}`, `{"tool_cancelled": "pay"}`, `{"set": {"key": "party_size", "value": 4}}`,
//! `{"tool_result": {"tool": "set_party", "ok": true}}`.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One step of a [`Scenario`](super::Scenario).
///
/// ```
/// use livesim::simulation::Step;
/// use serde_json::json;
///
/// let steps: Vec<Step> = serde_json::from_value(json!([
///     {"expect_allowed": "set_party"},
///     {"set": {"key": "party_size", "value": 4}},
///     {"tool_result": {"tool": "set_party", "ok": true}},
///     "turn",
///     {"expect_active": ["book"]}
/// ]))
/// .unwrap();
/// assert_eq!(steps[3], Step::Turn);
/// assert_eq!(steps[0].to_string(), r#"{"expect_allowed":"set_party"}"#);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Step {
    /// A call of this tool arrives; the flow must admit it (under Observe,
    /// every call is admitted). The call stays running until a
    /// `ToolResult` for the tool.
    ExpectAllowed(String),
    /// A call of this tool arrives; the flow must object to it: refuse it
    /// under Enforce, or record that Enforce would refuse it under Observe.
    ExpectDenied(String),
    /// The oldest running call of `tool` completes. Counts as a failure
    /// toward escalation when not `ok`. Does not end the turn.
    ToolResult {
        /// The tool.
        tool: String,
        /// Whether it completed ok.
        ok: bool,
    },
    /// A turn boundary: the flow is evaluated (`flow:active`).
    Turn,
    /// The active steps must be exactly these (in any order).
    ExpectActive(Vec<String>),
    /// A state write; `null` removes the key.
    Set {
        /// The state key.
        key: String,
        /// Its new value.
        value: Value,
    },
    /// The server cancelled the oldest running call of this tool: it has
    /// no result, counts toward no escalation, and no longer holds its
    /// tool.
    ToolCancelled(String),
    /// A tool failed or timed out without a result; counts toward the
    /// active step's `escalate_after_tool_failures`.
    ToolFailed(String),
    /// The user barged in; counts toward `escalate_after_interruptions`.
    Interrupt,
    /// Shorthand for a call of this tool that must be admitted, completes
    /// ok, and ends the turn.
    ToolOk(String),
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match serde_json::to_string(self) {
            Ok(text) => f.write_str(&text),
            Err(_) => write!(f, "{self:?}"),
        }
    }
}
