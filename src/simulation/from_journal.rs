//! Scenarios from recorded journals: what a governed session did, as steps.
//!
//! The mapping, entry by entry in sequence-number order:
//!
//! | journal key | steps |
//! |---|---|
//! | `flow:tool_call` | `ExpectAllowed(tool)` |
//! | `flow:tool_denied` | `ExpectDenied(tool)` |
//! | `flow:tool_result` | `ToolResult { tool, ok }` |
//! | `flow:tool_cancelled` | `ToolCancelled(tool)` |
//! | `flow:active` | `Turn`, then `ExpectActive(ids)` |
//! | `flow:tool_failed` | `ToolFailed(tool)` |
//! | `flow:interrupted` | `Interrupt` |
//! | other `flow:` keys, and keys with a runtime-owned prefix | skipped |
//! | any other key | `Set { key, value }`: the latest value per key, emitted before the next step above |
//!
//! The runtime-owned prefixes ([`RUNTIME_PREFIXES`]) are skipped because
//! the simulator reaches those keys itself. `flow:tool_cancelled`,
//! `flow:tool_failed` and `flow:interrupted` are livesim's additions to the
//! ADK's set of keys, so recorded decisions and escalations replay.
//!
//! Entries are read through the small [`JournalRecord`] trait, implemented
//! for the state layer's `StateMutation`, for a journal file's lines, and
//! for `(seq, key, value)` triples (handy in tests).

use std::fmt;

use serde_json::Value;

use super::scenario::Scenario;
use super::step::Step;
use crate::flow::FlowEntry;

/// Key prefixes owned by the runtime, never turned into `Set` steps.
pub const RUNTIME_PREFIXES: [&str; 11] = [
    "session:",
    "flow:",
    "derived:",
    "repair:",
    "correction:",
    "state_meta:",
    "idempotency:",
    "compensated:",
    "verbatim:",
    "turn:",
    "bg:",
];

/// One journaled state write: its sequence number, key and value.
pub trait JournalRecord {
    /// The sequence number; entries are replayed in its order.
    fn seq(&self) -> u64;
    /// The state key written.
    fn key(&self) -> &str;
    /// The value written.
    fn value(&self) -> &Value;
}

impl JournalRecord for (u64, String, Value) {
    fn seq(&self) -> u64 {
        self.0
    }
    fn key(&self) -> &str {
        &self.1
    }
    fn value(&self) -> &Value {
        &self.2
    }
}

impl JournalRecord for crate::state::StateMutation {
    fn seq(&self) -> u64 {
        self.seq
    }
    fn key(&self) -> &str {
        &self.key
    }
    fn value(&self) -> &Value {
        &self.value
    }
}

impl<T: JournalRecord> JournalRecord for &T {
    fn seq(&self) -> u64 {
        (**self).seq()
    }
    fn key(&self) -> &str {
        (**self).key()
    }
    fn value(&self) -> &Value {
        (**self).value()
    }
}

/// A `flow:*` journal entry whose value does not have the documented shape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("journal entry {seq} ({key}): {problem}")]
pub struct JournalError {
    /// Its sequence number.
    pub seq: u64,
    /// Its key.
    pub key: String,
    /// What is wrong with its value.
    pub problem: String,
}

impl Scenario {
    /// The scenario a recorded journal implies (see the module docs for the
    /// mapping). A malformed `flow:*` entry is skipped; use
    /// [`try_from_journal`](Self::try_from_journal) to have it reported.
    ///
    /// ```
    /// use livesim::simulation::{Scenario, Step};
    /// use serde_json::json;
    ///
    /// let journal = vec![
    ///     (1, "flow:tool_call".to_string(), json!({"tool": "set_party", "id": "call-1"})),
    ///     (2, "party_size".to_string(), json!(2)),
    ///     (3, "party_size".to_string(), json!(4)),
    ///     (4, "session:elapsed_ms".to_string(), json!(900)),
    ///     (5, "flow:tool_result".to_string(), json!({"tool": "set_party", "id": "call-1", "ok": true})),
    ///     (6, "flow:active".to_string(), json!(["book"])),
    /// ];
    /// let scenario = Scenario::from_journal("booking-incident", &journal);
    /// assert_eq!(scenario.steps, [
    ///     Step::ExpectAllowed("set_party".into()),
    ///     Step::Set { key: "party_size".into(), value: json!(4) },
    ///     Step::ToolResult { tool: "set_party".into(), ok: true },
    ///     Step::Turn,
    ///     Step::ExpectActive(vec!["book".into()]),
    /// ]);
    /// ```
    pub fn from_journal<E: JournalRecord>(name: impl Into<String>, entries: &[E]) -> Scenario {
        map_journal(name.into(), entries).0
    }

    /// Like [`from_journal`](Self::from_journal), but a malformed `flow:*`
    /// entry is an error naming its sequence number and key (the first one,
    /// in sequence order).
    pub fn try_from_journal<E: JournalRecord>(
        name: impl Into<String>,
        entries: &[E],
    ) -> Result<Scenario, JournalError> {
        let (scenario, mut malformed) = map_journal(name.into(), entries);
        match malformed.is_empty() {
            true => Ok(scenario),
            false => Err(malformed.swap_remove(0)),
        }
    }
}

/// The mapping, and the malformed `flow:*` entries it skipped.
fn map_journal<E: JournalRecord>(name: String, entries: &[E]) -> (Scenario, Vec<JournalError>) {
    let mut order: Vec<&E> = entries.iter().collect();
    order.sort_by_key(|entry| entry.seq());
    let mut steps = Vec::new();
    let mut malformed = Vec::new();
    let mut pending = PendingSets::default();
    for entry in order {
        let (key, value) = (entry.key(), entry.value());
        let flow = match FlowEntry::parse(key, value) {
            Ok(flow) => flow,
            Err(problem) => {
                malformed.push(JournalError {
                    seq: entry.seq(),
                    key: key.to_string(),
                    problem,
                });
                continue;
            }
        };
        let mapped = match flow {
            Some(FlowEntry::ToolCall { tool, .. }) => vec![Step::ExpectAllowed(tool)],
            Some(FlowEntry::ToolDenied { tool, .. }) => vec![Step::ExpectDenied(tool)],
            Some(FlowEntry::ToolResult { tool, ok, .. }) => vec![Step::ToolResult { tool, ok }],
            Some(FlowEntry::ToolCancelled { tool, .. }) => vec![Step::ToolCancelled(tool)],
            Some(FlowEntry::Active(ids)) => vec![Step::Turn, Step::ExpectActive(ids)],
            Some(FlowEntry::ToolFailed { tool }) => vec![Step::ToolFailed(tool)],
            Some(FlowEntry::Interrupted) => vec![Step::Interrupt],
            Some(FlowEntry::ToolWouldDeny { .. } | FlowEntry::Escalated { .. }) => continue,
            // Every `flow:` key is one of the flow's own: another is a
            // typo, and skipping it would lose a decision unseen.
            None => {
                if let Some(problem) = not_a_flow_key(key) {
                    malformed.push(JournalError {
                        seq: entry.seq(),
                        key: key.to_string(),
                        problem,
                    });
                } else if !RUNTIME_PREFIXES.iter().any(|p| key.starts_with(p)) {
                    pending.set(key, value);
                }
                continue;
            }
        };
        pending.flush(&mut steps);
        steps.extend(mapped);
    }
    pending.flush(&mut steps);
    (Scenario::new(name, steps), malformed)
}

/// Why `key` is no key of a journal entry, when it is a `flow:` key the
/// flow does not write (a typo): every `flow:` key is one of the flow's
/// own, and skipping another would lose a decision unseen. The one rule,
/// for scenarios made from journals and for `sim import`.
pub(crate) fn not_a_flow_key(key: &str) -> Option<String> {
    let known = &crate::flow::keys::ALL;
    (key.starts_with("flow:") && !known.contains(&key)).then(|| {
        format!(
            "`{key}` is not a flow key (the flow writes {}){}",
            known.join(", "),
            crate::jsonl::did_you_mean(key, known)
        )
    })
}

/// State writes since the last flow step: the latest value per key, keys in
/// the order they were first written.
#[derive(Default)]
struct PendingSets(Vec<(String, Value)>);

impl PendingSets {
    fn set(&mut self, key: &str, value: &Value) {
        match self.0.iter_mut().find(|(k, _)| k == key) {
            Some((_, latest)) => *latest = value.clone(),
            None => self.0.push((key.to_string(), value.clone())),
        }
    }

    fn flush(&mut self, steps: &mut Vec<Step>) {
        steps.extend(
            self.0
                .drain(..)
                .map(|(key, value)| Step::Set { key, value }),
        );
    }
}

impl fmt::Debug for PendingSets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(k, _)| k))
            .finish()
    }
}
