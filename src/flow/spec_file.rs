//! Spec files ([`Spec`]): flows and conversations as `<name>.spec.json`.

use std::path::Path;

use serde_json::{Map, Value, json};

use super::conversation::CompiledConversation;
use super::error::FlowError;
use super::json_position::{JsonPath, position};
use super::spec::FlowSpec;
use super::spec_decode::{self, DecodeError, Kind, Node};

/// The spec file format version this livesim reads and writes.
pub const SPEC_VERSION: u64 = 1;

/// Why a spec file cannot be used: where, and what was wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.render())]
pub struct SpecFileError {
    /// The file (or the origin given for text).
    pub file: String,
    /// 1-based line and column, when known.
    pub position: Option<(usize, usize)>,
    /// The path of the wrong member, such as `steps[1].done`, when known.
    pub path: Option<String>,
    /// What was wrong and what was expected.
    pub problem: String,
}

impl SpecFileError {
    fn render(&self) -> String {
        let mut text = self.file.clone();
        if let Some((line, column)) = self.position {
            text.push_str(&format!(":{line}:{column}"));
        }
        if let Some(path) = &self.path {
            text.push_str(&format!(": at {}", crate::jsonl::shown(path)));
        }
        text.push_str(&format!(": {}", self.problem));
        text
    }

    fn plain(file: &str, problem: String) -> SpecFileError {
        SpecFileError {
            file: file.to_string(),
            position: None,
            path: None,
            problem,
        }
    }

    fn at(file: &str, text: &str, path: &JsonPath, problem: String) -> SpecFileError {
        SpecFileError {
            file: file.to_string(),
            position: position(text, path),
            path: (!path.0.is_empty()).then(|| path.to_string()),
            problem,
        }
    }
}

/// A spec file's contents: a flow or a conversation.
///
/// # Schema, version 1
///
/// Every spec file is one JSON object with a format version `"v": 1`, a
/// `"kind"`, and the steps or stages in declaration order. Optional members
/// may be left out; empty ones are not written.
///
/// A **flow** (`"kind": "flow"`):
///
/// ```json
/// {
///   "v": 1,
///   "kind": "flow",
///   "steps": [
///     {"id": "verify", "allow": ["verify_identity"], "done": {"called_ok": "verify_identity"}},
///     {"id": "pay", "after": ["verify"], "allow": ["take_payment"],
///      "gates": {"take_payment": {"is_true": "amount_confirmed"}},
///      "done": {"called_ok": "take_payment"},
///      "escalate": {"tool_failures": 3, "interruptions": 2}}
///   ]
/// }
/// ```
///
/// | step member | type | meaning |
/// |---|---|---|
/// | `id` | string, required | unique, non-empty |
/// | `after` | list of step ids, each once | active only once all of these are done |
/// | `allow` | list of tool names, each once | tools admitted while active |
/// | `gates` | object: tool → guard | an allowed tool admitted only while its guard holds |
/// | `done` | guard | done once it holds (latches); absent: never done |
/// | `escalate` | `{"tool_failures": n, "interruptions": n}`, n ≥ 1, at least one | when the step escalates |
///
/// A **conversation** (`"kind": "conversation"`) has `"stages"` instead,
/// each with `id`, `after`, `allow`, `done` and `escalate` as above, plus
/// `slots` (a list of `{"key": "party_size"}`, or
/// `{"key": "balance", "resolve_from": ["account_id"]}` for a slot a
/// resolver fills) and `commits` (an object of commit tool → guard). The
/// file stores each stage's `after` explicitly, so the implicit "after the
/// previous stage" of the builder is written out. Resolvers are code and are
/// not stored: attach them after reading with
/// [`CompiledConversation::attach_resolver`].
///
/// **Guards** are objects with one key: `{"called_ok": "tool"}`,
/// `{"called": "tool"}`, `{"is_true": "key"}`, `{"exists": "key"}`,
/// `{"equals": {"key": "k", "value": <any JSON>}}`, `{"all": [guards]}`,
/// `{"any": [guards]}` (both non-empty), `{"not": guard}`.
///
/// Unknown members are errors (a misspelt `"alow"` would otherwise silently
/// allow nothing), and so are a list naming one thing twice and an empty
/// `escalate` (which would never escalate). Output is deterministic: members in the order above,
/// lists and tool maps sorted, two-space indentation, a final newline;
/// reading a file and writing it back gives the same spec.
///
/// # Errors
///
/// A file that cannot be used gets a [`SpecFileError`] naming the file, the
/// line and column, the path of the wrong member (`steps[1].done.all[0]`)
/// and what was expected there, for a JSON syntax error, a member of the
/// wrong shape, and a spec that decodes but is invalid (an `after` naming no
/// step, a cycle).
///
/// The same, with examples checked by `tests/docs.rs`: `docs/formats/spec.md`.
///
/// ```
/// use livesim::flow::{Flow, Guard, Spec};
///
/// let spec = Flow::new()
///     .step("verify").allow(["verify_identity"]).done(Guard::called_ok("verify_identity"))
///     .build()
///     .unwrap();
/// let text = spec.to_json();
/// assert!(text.starts_with("{\n  \"v\": 1,\n  \"kind\": \"flow\","));
/// let read = Spec::from_json(&text, "verify.spec.json").unwrap();
/// assert_eq!(read.flow(), &spec);
///
/// let err = Spec::from_json(r#"{"v": 1, "kind": "flow", "steps": [{"id": "a", "alow": []}]}"#, "a.spec.json")
///     .unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     "a.spec.json:1:36: at steps[0]: unknown field `alow` in a step; did you mean \
///      `allow`? expected one of: id, after, allow, gates, done, escalate"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Spec {
    /// A `"kind": "flow"` file.
    Flow(FlowSpec),
    /// A `"kind": "conversation"` file.
    Conversation(CompiledConversation),
}

impl Spec {
    /// Decodes spec text; `origin` names it in errors (usually the path).
    pub fn from_json(text: &str, origin: &str) -> Result<Spec, SpecFileError> {
        if let Some(problem) = crate::jsonl::bom(text.as_bytes()) {
            return Err(SpecFileError::plain(origin, problem));
        }
        let value: Value = serde_json::from_str(text).map_err(|e| SpecFileError {
            file: origin.to_string(),
            position: Some((e.line(), e.column())),
            path: None,
            problem: format!("not valid JSON: {e}"),
        })?;
        // `Value` keeps the last of two equal keys; a spec that says a
        // thing twice is refused instead.
        if let Some(problem) = crate::jsonl::duplicate_key(text) {
            return Err(SpecFileError::plain(origin, problem));
        }
        let root = JsonPath::default();
        let decode_error = |e: DecodeError| SpecFileError::at(origin, text, &e.path, e.problem);
        let (map, kind) = spec_decode::header(Node::root(&value, &root)).map_err(decode_error)?;
        let list_path = root.key(kind.list());
        let list = Node::root(&map[kind.list()], &list_path);
        let invalid = |e: FlowError| {
            let path = subject_path(&e, kind, &map[kind.list()]);
            SpecFileError::at(origin, text, &path, e.to_string())
        };
        match kind {
            Kind::Flow => {
                let steps =
                    spec_decode::each(list, "steps", spec_decode::step).map_err(decode_error)?;
                FlowSpec::new(steps).map(Spec::Flow).map_err(invalid)
            }
            Kind::Conversation => {
                let stages =
                    spec_decode::each(list, "stages", spec_decode::stage).map_err(decode_error)?;
                CompiledConversation::new(stages, Default::default())
                    .map(Spec::Conversation)
                    .map_err(invalid)
            }
        }
    }

    /// Reads a spec file.
    pub fn read(path: impl AsRef<Path>) -> Result<Spec, SpecFileError> {
        let (text, origin) = spec_text(path.as_ref())?;
        Spec::from_json(&text, &origin)
    }

    /// Writes the spec as `path` (conventionally `<name>.spec.json`).
    pub fn write(&self, path: impl AsRef<Path>) -> Result<(), SpecFileError> {
        let path = path.as_ref();
        std::fs::write(path, self.to_json()).map_err(|e| {
            SpecFileError::plain(&path.display().to_string(), format!("cannot write it: {e}"))
        })
    }

    /// The spec as file text.
    pub fn to_json(&self) -> String {
        match self {
            Spec::Flow(flow) => flow.to_json(),
            Spec::Conversation(convo) => convo.to_json(),
        }
    }

    /// The flow the monitor runs (a conversation's compiled flow).
    pub fn flow(&self) -> &FlowSpec {
        match self {
            Spec::Flow(flow) => flow,
            Spec::Conversation(convo) => convo.flow(),
        }
    }
}

impl AsRef<FlowSpec> for Spec {
    fn as_ref(&self) -> &FlowSpec {
        self.flow()
    }
}

fn document(kind: Kind, items: Value) -> String {
    let mut document = Map::new();
    document.insert("v".into(), json!(SPEC_VERSION));
    document.insert("kind".into(), json!(kind.name()));
    document.insert(kind.list().into(), items);
    let mut text = serde_json::to_string_pretty(&document).unwrap_or_default();
    text.push('\n');
    text
}

/// The text of the spec file at `path`, and its name for errors.
fn spec_text(path: &Path) -> Result<(String, String), SpecFileError> {
    let origin = path.display().to_string();
    crate::jsonl::read_text(path)
        .map(|text| (text, origin.clone()))
        .map_err(|problem| SpecFileError::plain(&origin, problem))
}

/// A good spec of the other kind than `wanted`, pointing at its `kind`.
fn wrong_kind(origin: &str, text: &str, found: &Spec, wanted: &str) -> SpecFileError {
    let found = match found {
        Spec::Flow(_) => "flow",
        Spec::Conversation(_) => "conversation",
    };
    SpecFileError::at(
        origin,
        text,
        &JsonPath::default().key("kind"),
        format!("this is a {found} spec, and a {wanted} spec was expected"),
    )
}

impl FlowSpec {
    /// The flow as spec file text (see the module docs for the schema).
    pub fn to_json(&self) -> String {
        document(Kind::Flow, json!(self.steps()))
    }

    /// Decodes a `"kind": "flow"` spec; `origin` names it in errors.
    pub fn from_json(text: &str, origin: &str) -> Result<FlowSpec, SpecFileError> {
        match Spec::from_json(text, origin)? {
            Spec::Flow(flow) => Ok(flow),
            other => Err(wrong_kind(origin, text, &other, "flow")),
        }
    }

    /// Reads a `"kind": "flow"` spec file.
    pub fn read(path: impl AsRef<Path>) -> Result<FlowSpec, SpecFileError> {
        let (text, origin) = spec_text(path.as_ref())?;
        FlowSpec::from_json(&text, &origin)
    }

    /// Writes the flow as a spec file.
    pub fn write(&self, path: impl AsRef<Path>) -> Result<(), SpecFileError> {
        Spec::Flow(self.clone()).write(path)
    }
}

impl CompiledConversation {
    /// The conversation as spec file text (see the module docs).
    pub fn to_json(&self) -> String {
        document(Kind::Conversation, json!(self.stages()))
    }

    /// Decodes a `"kind": "conversation"` spec; `origin` names it in errors.
    pub fn from_json(text: &str, origin: &str) -> Result<CompiledConversation, SpecFileError> {
        match Spec::from_json(text, origin)? {
            Spec::Conversation(convo) => Ok(convo),
            other => Err(wrong_kind(origin, text, &other, "conversation")),
        }
    }

    /// Reads a `"kind": "conversation"` spec file.
    pub fn read(path: impl AsRef<Path>) -> Result<CompiledConversation, SpecFileError> {
        let (text, origin) = spec_text(path.as_ref())?;
        CompiledConversation::from_json(&text, &origin)
    }

    /// Writes the conversation as a spec file.
    pub fn write(&self, path: impl AsRef<Path>) -> Result<(), SpecFileError> {
        Spec::Conversation(self.clone()).write(path)
    }
}

/// Where in the document a validation error points: the member of the step
/// (or stage) it names, found by id in the raw list.
fn subject_path(error: &FlowError, kind: Kind, list: &Value) -> JsonPath {
    let root = JsonPath::default().key(kind.list());
    let items = list.as_array().map(Vec::as_slice).unwrap_or_default();
    let index_of = |id: &str, last: bool| {
        let mut matches = items
            .iter()
            .enumerate()
            .filter(|(_, item)| item.get("id").and_then(Value::as_str) == Some(id))
            .map(|(i, _)| i);
        if last {
            matches.next_back()
        } else {
            matches.next()
        }
    };
    let (index, member) = match error {
        FlowError::EmptyId { position, .. } => (Some(position - 1), Some("id")),
        FlowError::DuplicateId { id, .. } => (index_of(id, true), Some("id")),
        FlowError::UnknownAfter { step, .. } => (index_of(step, false), Some("after")),
        FlowError::Cycle { cycle, .. } => (
            cycle.first().and_then(|id| index_of(id, false)),
            Some("after"),
        ),
        FlowError::Invalid { step, .. } => (index_of(step, false), None),
        FlowError::DuplicateSlot { second, .. } => (index_of(second, false), Some("slots")),
        FlowError::OutsideStep { .. } | FlowError::UnknownResolvedSlot { .. } => (None, None),
    };
    match (index, member) {
        (Some(i), Some(member)) => root.index(i).key(member),
        (Some(i), None) => root.index(i),
        (None, _) => root,
    }
}
