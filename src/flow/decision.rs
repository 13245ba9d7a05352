//! What the gate decides about one tool call, and how strictly.
//!
//! [`Enforcement`] says whether the flow refuses calls (Enforce) or only
//! records what it would have refused (Observe). A [`Decision`] is the
//! gate's answer for one call: its verdict, the journal entries the session
//! writes for it, and, for a refused call, the `{"error": reason}` answer
//! the session sends back in place of the tool's result.

use std::fmt;

use serde::Serialize;
use serde_json::{Value, json};

use super::journal::FlowEntry;

/// How the flow treats a call it does not allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Enforcement {
    /// Refuse it: the tool never runs and the call is answered
    /// `{"error": reason}`.
    Enforce,
    /// Admit it, and record why Enforce would have refused it
    /// (`flow:tool_would_deny`). For rolling a new flow out against live
    /// traffic before it is enforced.
    Observe,
}

impl fmt::Display for Enforcement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Enforcement::Enforce => "enforce",
            Enforcement::Observe => "observe",
        })
    }
}

/// The gate's verdict on one call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "verdict")]
pub enum Verdict {
    /// Admitted: the flow allows it now.
    Admitted,
    /// Refused (Enforce): the tool must not run.
    Denied {
        /// Why, in a sentence that names the tool and the active steps.
        reason: String,
    },
    /// Admitted under Observe, though Enforce would refuse it.
    WouldDeny {
        /// Why Enforce would refuse it.
        reason: String,
    },
}

/// The gate's answer for one call.
///
/// ```
/// use livesim::flow::{Enforcement, Flow, FlowMonitor, Guard, NoState};
///
/// let spec = Flow::new()
///     .step("verify").allow(["verify_identity"]).done(Guard::called_ok("verify_identity"))
///     .build()
///     .unwrap();
/// let mut monitor = FlowMonitor::new(spec, Enforcement::Enforce);
/// let decision = monitor.gate("take_payment", "call-1", &NoState).unwrap();
/// assert!(!decision.admitted());
/// assert_eq!(decision.entries()[0].key(), "flow:tool_denied");
/// assert_eq!(
///     decision.refusal().unwrap()["error"],
///     "take_payment is not allowed now: active steps are [verify], which allow \
///      [verify_identity]; no step of this flow allows take_payment"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Decision {
    /// The tool called.
    pub tool: String,
    /// The call id.
    pub call_id: String,
    /// The verdict.
    #[serde(flatten)]
    pub verdict: Verdict,
}

impl Decision {
    /// Whether the tool may run (Admitted, or admitted under Observe).
    pub fn admitted(&self) -> bool {
        !matches!(self.verdict, Verdict::Denied { .. })
    }

    /// Why Enforce refuses (or would refuse) this call; `None` when the flow
    /// allows it.
    pub fn reason(&self) -> Option<&str> {
        match &self.verdict {
            Verdict::Admitted => None,
            Verdict::Denied { reason } | Verdict::WouldDeny { reason } => Some(reason),
        }
    }

    /// The answer the session sends for a refused call, in place of the
    /// tool's result: `{"error": reason}`. `None` when the tool may run.
    pub fn refusal(&self) -> Option<Value> {
        match &self.verdict {
            Verdict::Denied { reason } => Some(json!({ "error": reason })),
            _ => None,
        }
    }

    /// The journal entries to write for this decision, in order: a
    /// `flow:tool_call` for an admitted call (followed by
    /// `flow:tool_would_deny` under Observe when Enforce would refuse), or
    /// one `flow:tool_denied`.
    pub fn entries(&self) -> Vec<FlowEntry> {
        let call = || FlowEntry::ToolCall {
            tool: self.tool.clone(),
            id: self.call_id.clone(),
        };
        match &self.verdict {
            Verdict::Admitted => vec![call()],
            Verdict::Denied { reason } => vec![FlowEntry::ToolDenied {
                tool: self.tool.clone(),
                id: self.call_id.clone(),
                reason: reason.clone(),
            }],
            Verdict::WouldDeny { reason } => vec![
                call(),
                FlowEntry::ToolWouldDeny {
                    tool: self.tool.clone(),
                    id: self.call_id.clone(),
                    reason: reason.clone(),
                },
            ],
        }
    }
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.verdict {
            Verdict::Admitted => write!(f, "{} ({}): admitted", self.tool, self.call_id),
            Verdict::Denied { reason } => {
                write!(f, "{} ({}): denied: {reason}", self.tool, self.call_id)
            }
            Verdict::WouldDeny { reason } => write!(
                f,
                "{} ({}): admitted (observe); enforce would deny: {reason}",
                self.tool, self.call_id
            ),
        }
    }
}
