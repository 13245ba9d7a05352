//! One recorded call, and the [`Tape`] trait that stores them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::canonical::canonical_json;

/// The kind of a model call on a tape. Resolver calls are
/// `resolver:<name>`.
pub const LLM_CALL: &str = "llm";

/// The kind of a simulated user's answer on a tape (the user an agent
/// file's `"simulated_user"` plays).
pub const USER_CALL: &str = "simulated-user";

/// What a resolver call's kind starts with: `resolver:<name>`.
const RESOLVER: &str = "resolver:";

/// Why `kind` is no kind of call a tape holds, if it is not: a tape is
/// matched on kinds, so an entry of a misspelt kind (`lm`) would never
/// answer, and its call would miss the tape with no word of why. The
/// message names the kinds there are and the one most likely meant.
fn unknown_kind(kind: &str) -> Option<String> {
    if kind == LLM_CALL || kind == USER_CALL || kind.starts_with(RESOLVER) {
        return None;
    }
    // A misspelt prefix is measured against the resolver it names.
    let resolver = format!(
        "{RESOLVER}{}",
        kind.split_once(':').map_or("", |(_, name)| name)
    );
    let hint = crate::jsonl::did_you_mean(kind, &[LLM_CALL, USER_CALL, &resolver]);
    Some(format!(
        "unknown kind `{}`{hint} (a tape holds calls of kind `{LLM_CALL}`, `{USER_CALL}` and \
         `{RESOLVER}<name>`)",
        crate::jsonl::shown(kind)
    ))
}

/// One recorded call: what went in and what came out. Unknown keys are
/// refused when a tape is read (a typo'd `outptu` would otherwise replay
/// as a call that returned nothing).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct TapeEntry {
    /// [`LLM_CALL`], [`USER_CALL`] or `resolver:<name>`; a file holding
    /// another is refused when it is read.
    pub kind: String,
    /// The call's input (a request, or a resolver's arguments).
    pub input: Value,
    /// What it returned, when it succeeded (`null` too).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub output: Option<Value>,
    /// How it failed, when it failed.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub error: Option<Value>,
}

/// A key that is there holds a value, `null` included: a resolver that
/// returned `null` replays `null`, not a call that returned nothing.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// Why `entry` could never be replayed, if it could not: its kind is no
/// call's ([`unknown_kind`]), or it says neither or both of what the call
/// returned and how it failed. Said when the tape is read, naming the
/// line, rather than when a session asks for the entry, where it would be
/// one more failed call.
pub(crate) fn entry_problem(entry: &TapeEntry) -> Option<String> {
    if let Some(problem) = unknown_kind(&entry.kind) {
        return Some(problem);
    }
    match (&entry.output, &entry.error) {
        (None, None) => Some(
            "the entry holds neither an `output` (what the call returned) nor an `error` (how \
             it failed): a recorded call has one of them"
                .to_string(),
        ),
        (Some(_), Some(_)) => Some(
            "the entry holds both an `output` and an `error`: a recorded call has one of them \
             (a replay would take the error and drop the output)"
                .to_string(),
        ),
        _ => None,
    }
}

/// Why `entry`, a model call, could not be replayed by
/// [`TapedLlm`](super::TapedLlm), if it could not: its output is no model
/// response. (A tape is a plain store, so reading one does not ask this;
/// a reader that knows a model will replay it does.)
#[cfg(feature = "simulation")]
pub(crate) fn model_output_problem(entry: &TapeEntry) -> Option<String> {
    let output = entry.output.as_ref().filter(|_| entry.kind == LLM_CALL)?;
    let e = serde_json::from_value::<crate::llm::LlmResponse>(output.clone()).err()?;
    Some(format!(
        "the model call's `output` is not a model response ({e}); record the tape again with \
         TapedLlm::recording"
    ))
}

// Read from an object only, never from an array of its fields.
crate::jsonl::object_record!(TapeEntry, "a tape entry");

impl TapeEntry {
    /// A successful call.
    pub fn ok(kind: impl Into<String>, input: Value, output: Value) -> Self {
        TapeEntry {
            kind: kind.into(),
            input,
            output: Some(output),
            error: None,
        }
    }

    /// A failed call.
    pub fn failed(kind: impl Into<String>, input: Value, error: Value) -> Self {
        TapeEntry {
            kind: kind.into(),
            input,
            output: None,
            error: Some(error),
        }
    }

    /// Whether this entry answers a call of `kind` with `input`.
    pub fn matches(&self, kind: &str, canonical_input: &str) -> bool {
        self.kind == kind && canonical_json(&self.input) == canonical_input
    }
}

/// Why a tape could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum TapeError {
    /// The tape file could not be opened, read or written.
    #[error("tape {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// What the system said.
        source: std::io::Error,
    },
    /// A line of the tape file is not a tape entry.
    #[error("tape {path}, line {line}: {message}")]
    BadLine {
        /// The file.
        path: String,
        /// The 1-based line number.
        line: u64,
        /// What was wrong.
        message: String,
    },
}

/// Where recorded calls are kept.
///
/// Implement it for other storage; [`MemoryTape`](super::MemoryTape) and
/// [`FileTape`](super::FileTape) are the built-in ones.
pub trait Tape: Send + Sync {
    /// Keeps a call that just happened.
    fn record(&self, entry: TapeEntry) -> Result<(), TapeError>;

    /// The first not-yet-replayed entry of `kind` whose input has the
    /// canonical form `canonical_input`, marking it replayed.
    fn next(&self, kind: &str, canonical_input: &str) -> Option<TapeEntry>;
}

impl<T: Tape + ?Sized> Tape for std::sync::Arc<T> {
    fn record(&self, entry: TapeEntry) -> Result<(), TapeError> {
        (**self).record(entry)
    }

    fn next(&self, kind: &str, canonical_input: &str) -> Option<TapeEntry> {
        (**self).next(kind, canonical_input)
    }
}
