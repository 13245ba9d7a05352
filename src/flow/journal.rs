//! The journal vocabulary of flow governance ([`FlowEntry`] and the
//! `flow:*` keys).

use serde_json::{Value, json};

/// Key of an admitted call, written before the tool runs.
pub const TOOL_CALL: &str = "flow:tool_call";
/// Key of a call refused under Enforce.
pub const TOOL_DENIED: &str = "flow:tool_denied";
/// Key of a call Observe admitted but Enforce would have refused.
pub const TOOL_WOULD_DENY: &str = "flow:tool_would_deny";
/// Key of an admitted call's completion.
pub const TOOL_RESULT: &str = "flow:tool_result";
/// Key of the active step ids at a turn boundary.
pub const ACTIVE: &str = "flow:active";
/// Key of an admitted call the server cancelled before it completed.
pub const TOOL_CANCELLED: &str = "flow:tool_cancelled";
/// Key of a tool failure that has no result of its own.
pub const TOOL_FAILED: &str = "flow:tool_failed";
/// Key of a user interruption.
pub const INTERRUPTED: &str = "flow:interrupted";
/// Key of a step's escalation.
pub const ESCALATED: &str = "flow:escalated";

/// Every `flow:*` key, so a reader can tell a misspelt one from a state
/// key.
pub const ALL: [&str; 9] = [
    TOOL_CALL,
    TOOL_DENIED,
    TOOL_WOULD_DENY,
    TOOL_RESULT,
    ACTIVE,
    TOOL_CANCELLED,
    TOOL_FAILED,
    INTERRUPTED,
    ESCALATED,
];

/// One `flow:*` journal entry.
///
/// the session writes to its state journal, in both directions.
///
/// The monitor produces [`FlowEntry`] values; the session writes each as
/// one state mutation (`entry.key()`, `entry.value()`) in the order given.
/// [`FlowEntry::parse`] reads them back, which is how
/// `Scenario::from_journal` turns a recorded session into steps.
///
/// | key | value | written when |
/// |---|---|---|
/// | `flow:tool_call` | `{"tool", "id"}` | a call is admitted, before it runs |
/// | `flow:tool_denied` | `{"tool", "id", "reason"}` | a call is refused (Enforce); it never runs |
/// | `flow:tool_would_deny` | `{"tool", "id", "reason"}` | Observe admitted a call Enforce would refuse (written right after its `flow:tool_call`) |
/// | `flow:tool_result` | `{"tool", "id", "ok"}` | an admitted call completes |
/// | `flow:tool_cancelled` | `{"tool", "id"}` | the server cancels an admitted call before it completes; it has no result |
/// | `flow:active` | `["step", ...]` | a turn boundary: the active step ids |
/// | `flow:tool_failed` | `{"tool"}` | a failure with no result of its own (a timeout) |
/// | `flow:interrupted` | `{}` | the user interrupted |
/// | `flow:escalated` | `{"stage", "reason"}` | a step escalates (once per step) |
///
/// `flow:tool_cancelled`, `flow:tool_failed` and `flow:interrupted` are
/// livesim's own additions to the ADK's set of keys: they are written so
/// that a recorded session's decisions and escalations replay
/// (`Scenario::from_journal` maps them to `ToolCancelled`, `ToolFailed`
/// and `Interrupt`).
///
/// ```
/// use livesim::flow::FlowEntry;
/// use serde_json::json;
///
/// let entry = FlowEntry::ToolCall { tool: "verify_identity".into(), id: "call-1".into() };
/// assert_eq!(entry.key(), "flow:tool_call");
/// assert_eq!(entry.value(), json!({"tool": "verify_identity", "id": "call-1"}));
/// assert_eq!(FlowEntry::parse(entry.key(), &entry.value()), Ok(Some(entry)));
/// assert_eq!(FlowEntry::parse("party_size", &json!(4)), Ok(None));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlowEntry {
    /// `flow:tool_call`: the call was admitted and is about to run.
    ToolCall {
        /// The tool.
        tool: String,
        /// The call id.
        id: String,
    },
    /// `flow:tool_denied`: the call was refused and never runs.
    ToolDenied {
        /// The tool.
        tool: String,
        /// The call id.
        id: String,
        /// Why, as the call's `{"error": reason}` answer says it.
        reason: String,
    },
    /// `flow:tool_would_deny`: admitted under Observe; Enforce would refuse.
    ToolWouldDeny {
        /// The tool.
        tool: String,
        /// The call id.
        id: String,
        /// Why Enforce would refuse it.
        reason: String,
    },
    /// `flow:tool_result`: an admitted call completed.
    ToolResult {
        /// The tool.
        tool: String,
        /// The call id.
        id: String,
        /// Whether it completed ok.
        ok: bool,
    },
    /// `flow:tool_cancelled`: the server cancelled an admitted call before
    /// it completed. It has no result, and no longer holds its tool.
    ToolCancelled {
        /// The tool.
        tool: String,
        /// The call id.
        id: String,
    },
    /// `flow:active`: the active step ids at a turn boundary.
    Active(Vec<String>),
    /// `flow:tool_failed`: a failure with no result (a timeout).
    ToolFailed {
        /// The tool.
        tool: String,
    },
    /// `flow:interrupted`: the user interrupted.
    Interrupted,
    /// `flow:escalated`: a step escalated.
    Escalated {
        /// The step (a conversation's stage).
        stage: String,
        /// Why.
        reason: String,
    },
}

impl FlowEntry {
    /// The journal key.
    pub fn key(&self) -> &'static str {
        match self {
            FlowEntry::ToolCall { .. } => TOOL_CALL,
            FlowEntry::ToolDenied { .. } => TOOL_DENIED,
            FlowEntry::ToolWouldDeny { .. } => TOOL_WOULD_DENY,
            FlowEntry::ToolResult { .. } => TOOL_RESULT,
            FlowEntry::ToolCancelled { .. } => TOOL_CANCELLED,
            FlowEntry::Active(_) => ACTIVE,
            FlowEntry::ToolFailed { .. } => TOOL_FAILED,
            FlowEntry::Interrupted => INTERRUPTED,
            FlowEntry::Escalated { .. } => ESCALATED,
        }
    }

    /// The journal value, keys in the documented order.
    pub fn value(&self) -> Value {
        match self {
            FlowEntry::ToolCall { tool, id } | FlowEntry::ToolCancelled { tool, id } => {
                json!({"tool": tool, "id": id})
            }
            FlowEntry::ToolDenied { tool, id, reason }
            | FlowEntry::ToolWouldDeny { tool, id, reason } => {
                json!({"tool": tool, "id": id, "reason": reason})
            }
            FlowEntry::ToolResult { tool, id, ok } => json!({"tool": tool, "id": id, "ok": ok}),
            FlowEntry::Active(steps) => json!(steps),
            FlowEntry::ToolFailed { tool } => json!({"tool": tool}),
            FlowEntry::Interrupted => json!({}),
            FlowEntry::Escalated { stage, reason } => json!({"stage": stage, "reason": reason}),
        }
    }

    /// The `(key, value)` pair to write.
    pub fn to_pair(&self) -> (String, Value) {
        (self.key().to_string(), self.value())
    }

    /// The call id this entry is about, if it is about a call.
    pub fn call_id(&self) -> Option<&str> {
        match self {
            FlowEntry::ToolCall { id, .. }
            | FlowEntry::ToolDenied { id, .. }
            | FlowEntry::ToolWouldDeny { id, .. }
            | FlowEntry::ToolResult { id, .. }
            | FlowEntry::ToolCancelled { id, .. } => Some(id),
            FlowEntry::Active(_)
            | FlowEntry::ToolFailed { .. }
            | FlowEntry::Interrupted
            | FlowEntry::Escalated { .. } => None,
        }
    }

    /// Reads a journal entry back: `Ok(None)` for a key that is not one of
    /// the keys above, `Err` saying what is wrong for one of them whose
    /// value does not have the documented shape.
    pub fn parse(key: &str, value: &Value) -> Result<Option<FlowEntry>, String> {
        let text = |field: &str| -> Result<String, String> {
            value
                .get(field)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| format!("{key} needs a string `{field}`, got {value}"))
        };
        let entry = match key {
            TOOL_CALL => FlowEntry::ToolCall {
                tool: text("tool")?,
                id: text("id")?,
            },
            TOOL_DENIED => FlowEntry::ToolDenied {
                tool: text("tool")?,
                id: text("id")?,
                reason: text("reason")?,
            },
            TOOL_WOULD_DENY => FlowEntry::ToolWouldDeny {
                tool: text("tool")?,
                id: text("id")?,
                reason: text("reason")?,
            },
            TOOL_RESULT => FlowEntry::ToolResult {
                tool: text("tool")?,
                id: text("id")?,
                ok: value
                    .get("ok")
                    .and_then(Value::as_bool)
                    .ok_or_else(|| format!("{key} needs a boolean `ok`, got {value}"))?,
            },
            TOOL_CANCELLED => FlowEntry::ToolCancelled {
                tool: text("tool")?,
                id: text("id")?,
            },
            ACTIVE => FlowEntry::Active(
                value
                    .as_array()
                    .and_then(|ids| {
                        ids.iter()
                            .map(|id| id.as_str().map(str::to_string))
                            .collect()
                    })
                    .ok_or_else(|| format!("{key} needs a list of step ids, got {value}"))?,
            ),
            TOOL_FAILED => FlowEntry::ToolFailed {
                tool: text("tool")?,
            },
            INTERRUPTED => FlowEntry::Interrupted,
            ESCALATED => FlowEntry::Escalated {
                stage: text("stage")?,
                reason: text("reason")?,
            },
            _ => return Ok(None),
        };
        Ok(Some(entry))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_reads_back() {
        let entries = [
            FlowEntry::ToolCall {
                tool: "t".into(),
                id: "1".into(),
            },
            FlowEntry::ToolDenied {
                tool: "t".into(),
                id: "1".into(),
                reason: "r".into(),
            },
            FlowEntry::ToolWouldDeny {
                tool: "t".into(),
                id: "1".into(),
                reason: "r".into(),
            },
            FlowEntry::ToolResult {
                tool: "t".into(),
                id: "1".into(),
                ok: false,
            },
            FlowEntry::ToolCancelled {
                tool: "t".into(),
                id: "1".into(),
            },
            FlowEntry::Active(vec!["a".into(), "b".into()]),
            FlowEntry::ToolFailed { tool: "t".into() },
            FlowEntry::Interrupted,
            FlowEntry::Escalated {
                stage: "s".into(),
                reason: "r".into(),
            },
        ];
        for entry in entries {
            let (key, value) = entry.to_pair();
            assert_eq!(FlowEntry::parse(&key, &value), Ok(Some(entry)));
        }
    }

    #[test]
    fn a_malformed_value_says_what_is_missing() {
        assert_eq!(
            FlowEntry::parse(TOOL_RESULT, &json!({"tool": "t", "id": "1"})),
            Err("flow:tool_result needs a boolean `ok`, got {\"tool\":\"t\",\"id\":\"1\"}".into())
        );
    }
}
