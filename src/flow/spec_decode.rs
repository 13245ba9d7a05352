//! Decoding spec documents from JSON values, with the path of every mistake.
//!
//! serde's derived decoders say "invalid type: integer, expected a string"
//! without saying where in the document. This decoder walks the value by
//! hand so every error carries its path (`steps[1].done.all[0]`) and says
//! what was expected there in the spec's own terms; [`Spec`](super::Spec)
//! adds the file name and line.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::conversation::{SlotSpec, StageSpec};
use super::guard::Guard;
use super::json_position::JsonPath;
use super::spec::{Escalation, StepSpec};

/// A mistake in a spec document: where, and what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DecodeError {
    pub(crate) path: JsonPath,
    pub(crate) problem: String,
}

type Decoded<T> = Result<T, DecodeError>;

/// The shape of a guard, quoted in every guard error.
const GUARD_SHAPES: &str = "a guard: an object with one key, such as {\"called_ok\": \"tool\"}, \
     {\"called\": \"tool\"}, {\"is_true\": \"key\"}, {\"exists\": \"key\"}, \
     {\"equals\": {\"key\": \"k\", \"value\": 1}}, {\"all\": [guards]}, {\"any\": [guards]} \
     or {\"not\": guard}";

/// A value and where it sits in the document.
#[derive(Clone, Copy)]
pub(crate) struct Node<'a> {
    value: &'a Value,
    path: &'a JsonPath,
}

impl<'a> Node<'a> {
    pub(crate) fn root(value: &'a Value, path: &'a JsonPath) -> Node<'a> {
        Node { value, path }
    }

    fn fail<T>(&self, problem: impl Into<String>) -> Decoded<T> {
        Err(DecodeError {
            path: self.path.clone(),
            problem: problem.into(),
        })
    }

    fn expected<T>(&self, what: &str) -> Decoded<T> {
        self.fail(format!("expected {what}, found {}", describe(self.value)))
    }

    /// The object here, refusing members not in `fields` (a typo in an
    /// optional field would otherwise be silently ignored).
    pub(crate) fn object(&self, what: &str, fields: &[&str]) -> Decoded<&'a Map<String, Value>> {
        let Some(map) = self.value.as_object() else {
            return self.expected(what);
        };
        if let Some(unknown) = map.keys().find(|k| !fields.contains(&k.as_str())) {
            let meant = crate::jsonl::nearest(unknown, fields)
                .map(|k| format!(" did you mean `{k}`?"))
                .unwrap_or_default();
            return self.fail(format!(
                "unknown field `{unknown}` in {what};{meant} expected one of: {}",
                fields.join(", ")
            ));
        }
        Ok(map)
    }

    pub(crate) fn string(&self, what: &str) -> Decoded<String> {
        match self.value.as_str() {
            Some(text) if !text.is_empty() => Ok(text.to_string()),
            Some(_) => self.fail(format!("expected {what}, found an empty string")),
            None => self.expected(what),
        }
    }

    fn strings(&self, what: &str) -> Decoded<Vec<String>> {
        let Some(items) = self.value.as_array() else {
            return self.expected(&format!("a list of {what}"));
        };
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let path = self.path.index(i);
            out.push(
                Node {
                    value: item,
                    path: &path,
                }
                .string(what)?,
            );
        }
        Ok(out)
    }

    fn positive(&self, what: &str) -> Decoded<u32> {
        match self.value.as_u64() {
            Some(n) if n >= 1 && n <= u64::from(u32::MAX) => Ok(n as u32),
            _ => self.expected(&format!("{what}: a whole number, 1 or more")),
        }
    }
}

/// Runs `decode` on member `key` of `map` (found at `at`), if present.
fn member<'a, T>(
    at: Node<'a>,
    map: &'a Map<String, Value>,
    key: &str,
    decode: impl FnOnce(Node<'_>) -> Decoded<T>,
) -> Decoded<Option<T>> {
    match map.get(key) {
        None => Ok(None),
        Some(value) => {
            let path = at.path.key(key);
            decode(Node { value, path: &path }).map(Some)
        }
    }
}

/// Like [`member`], but the member must be there.
fn required<'a, T>(
    at: Node<'a>,
    map: &'a Map<String, Value>,
    key: &str,
    what: &str,
    decode: impl FnOnce(Node<'_>) -> Decoded<T>,
) -> Decoded<T> {
    member(at, map, key, decode)?
        .map_or_else(|| at.fail(format!("missing field `{key}` ({what})")), Ok)
}

/// Runs `decode` on every element of the array here.
pub(crate) fn each<T>(
    at: Node<'_>,
    what: &str,
    mut decode: impl FnMut(Node<'_>) -> Decoded<T>,
) -> Decoded<Vec<T>> {
    let Some(items) = at.value.as_array() else {
        return at.expected(&format!("a list of {what}"));
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let path = at.path.index(i);
        out.push(decode(Node {
            value: item,
            path: &path,
        })?);
    }
    Ok(out)
}

/// A guard (see [`GUARD_SHAPES`]).
pub(crate) fn guard(at: Node<'_>) -> Decoded<Guard> {
    let Some(map) = at.value.as_object() else {
        return at.expected(GUARD_SHAPES);
    };
    let mut members = map.iter();
    let (Some((kind, value)), None) = (members.next(), members.next()) else {
        let keys: Vec<&str> = map.keys().map(String::as_str).collect();
        return at.fail(format!(
            "expected {GUARD_SHAPES}; found an object with keys [{}]",
            keys.join(", ")
        ));
    };
    let path = at.path.key(kind);
    let inner = Node { value, path: &path };
    Ok(match kind.as_str() {
        "called_ok" => Guard::CalledOk(inner.string("a tool name")?),
        "called" => Guard::Called(inner.string("a tool name")?),
        "is_true" => Guard::IsTrue(inner.string("a state key")?),
        "exists" => Guard::Exists(inner.string("a state key")?),
        "equals" => {
            let what = "{\"key\": \"state key\", \"value\": any JSON value}";
            let fields = inner.object(what, &["key", "value"])?;
            Guard::Equals {
                key: required(inner, fields, "key", "the state key", |n| {
                    n.string("a state key")
                })?,
                value: required(inner, fields, "value", "the value it must equal", |n| {
                    Ok(n.value.clone())
                })?,
            }
        }
        "all" | "any" => {
            let guards = each(inner, "guards", guard)?;
            if guards.is_empty() {
                return inner.fail(format!(
                    "expected at least one guard in `{kind}`: an empty `{kind}` is always {}",
                    if kind == "all" { "true" } else { "false" }
                ));
            }
            if kind == "all" {
                Guard::All(guards)
            } else {
                Guard::Any(guards)
            }
        }
        "not" => Guard::Not(Box::new(guard(inner)?)),
        other => {
            return at.fail(format!("unknown guard `{other}`; expected {GUARD_SHAPES}"));
        }
    })
}

/// Guards read from any serde format go through the same decoder as spec
/// files, so the error names the path inside the guard and the shapes.
impl<'de> serde::Deserialize<'de> for Guard {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Guard, D::Error> {
        let value = Value::deserialize(deserializer)?;
        let path = JsonPath::default();
        guard(Node::root(&value, &path)).map_err(|e| {
            serde::de::Error::custom(if e.path.0.is_empty() {
                e.problem
            } else {
                format!("at {}: {}", e.path, e.problem)
            })
        })
    }
}

/// A list read as a set: an entry given twice is refused, since it is
/// most often a slip for another name.
fn id_list(at: Node<'_>, what: &str) -> Decoded<BTreeSet<String>> {
    let mut out = BTreeSet::new();
    for (i, id) in at.strings(what)?.into_iter().enumerate() {
        if out.contains(&id) {
            let path = at.path.index(i);
            return Node {
                value: &at.value[i],
                path: &path,
            }
            .fail(format!("`{id}` is listed twice"));
        }
        out.insert(id);
    }
    Ok(out)
}

fn guard_map(at: Node<'_>, what: &str) -> Decoded<BTreeMap<String, Guard>> {
    let Some(map) = at.value.as_object() else {
        return at.expected(what);
    };
    let mut out = BTreeMap::new();
    for (tool, value) in map {
        let path = at.path.key(tool);
        out.insert(tool.clone(), guard(Node { value, path: &path })?);
    }
    Ok(out)
}

fn escalation(at: Node<'_>) -> Decoded<Escalation> {
    let what = "{\"tool_failures\": n, \"interruptions\": n}";
    let map = at.object(what, &["tool_failures", "interruptions"])?;
    let escalation = Escalation {
        tool_failures: member(at, map, "tool_failures", |n| n.positive("tool_failures"))?,
        interruptions: member(at, map, "interruptions", |n| n.positive("interruptions"))?,
    };
    if escalation.is_never() {
        return at.fail(format!(
            "expected {what} with at least one of them: an empty `escalate` never escalates"
        ));
    }
    Ok(escalation)
}

/// One step of a flow file.
pub(crate) fn step(at: Node<'_>) -> Decoded<StepSpec> {
    let map = at.object(
        "a step",
        &["id", "after", "allow", "gates", "done", "escalate"],
    )?;
    Ok(StepSpec {
        id: required(at, map, "id", "the step's id", |n| n.string("a step id"))?,
        after: member(at, map, "after", |n| id_list(n, "step ids"))?.unwrap_or_default(),
        allow: member(at, map, "allow", |n| id_list(n, "tool names"))?.unwrap_or_default(),
        gates: member(at, map, "gates", |n| {
            guard_map(n, "an object of tool names to guards")
        })?
        .unwrap_or_default(),
        done: member(at, map, "done", guard)?,
        escalate: member(at, map, "escalate", escalation)?.unwrap_or_default(),
    })
}

fn slot(at: Node<'_>) -> Decoded<SlotSpec> {
    let map = at.object(
        "a slot ({\"key\": \"state key\"}, plus \"resolve_from\": [input keys] for a resolved slot)",
        &["key", "resolve_from"],
    )?;
    Ok(SlotSpec {
        key: required(at, map, "key", "the slot's state key", |n| {
            n.string("a state key")
        })?,
        resolve_from: member(at, map, "resolve_from", |n| n.strings("state keys"))?,
    })
}

/// One stage of a conversation file.
pub(crate) fn stage(at: Node<'_>) -> Decoded<StageSpec> {
    let map = at.object(
        "a stage",
        &[
            "id", "after", "allow", "slots", "commits", "done", "escalate",
        ],
    )?;
    Ok(StageSpec {
        id: required(at, map, "id", "the stage's id", |n| n.string("a stage id"))?,
        after: member(at, map, "after", |n| id_list(n, "stage ids"))?.unwrap_or_default(),
        allow: member(at, map, "allow", |n| id_list(n, "tool names"))?.unwrap_or_default(),
        slots: member(at, map, "slots", |n| each(n, "slots", slot))?.unwrap_or_default(),
        commits: member(at, map, "commits", |n| {
            guard_map(n, "an object of commit tool names to guards")
        })?
        .unwrap_or_default(),
        done: member(at, map, "done", guard)?,
        escalate: member(at, map, "escalate", escalation)?.unwrap_or_default(),
    })
}

/// Reads the `v` and `kind` header of a spec document and returns the
/// kind, checking that only that kind's members are present.
pub(crate) fn header<'a>(at: Node<'a>) -> Decoded<(&'a Map<String, Value>, Kind)> {
    let Some(map) = at.value.as_object() else {
        return at.expected("a spec: an object with \"v\", \"kind\" and \"steps\" or \"stages\"");
    };
    let version = required(at, map, "v", "the spec format version, 1", |n| {
        n.value.as_u64().map_or_else(|| n.expected("1"), Ok)
    })?;
    if version != 1 {
        let path = at.path.key("v");
        return Node {
            value: &map["v"],
            path: &path,
        }
        .fail(format!(
            "this is a version {version} spec, and this livesim reads version 1"
        ));
    }
    let kind = required(
        at,
        map,
        "kind",
        "\"flow\" or \"conversation\"",
        |n| match n.value.as_str() {
            Some("flow") => Ok(Kind::Flow),
            Some("conversation") => Ok(Kind::Conversation),
            _ => n.expected("\"flow\" or \"conversation\""),
        },
    )?;
    let list = kind.list();
    at.object(&format!("a {} spec", kind.name()), &["v", "kind", list])?;
    if !map.contains_key(list) {
        return at.fail(format!(
            "missing field `{list}` (the {list} of this {})",
            kind.name()
        ));
    }
    Ok((map, kind))
}

/// The two kinds of spec document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Flow,
    Conversation,
}

impl Kind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Flow => "flow",
            Kind::Conversation => "conversation",
        }
    }

    /// The member holding the steps or stages.
    pub(crate) fn list(self) -> &'static str {
        match self {
            Kind::Flow => "steps",
            Kind::Conversation => "stages",
        }
    }
}

/// A JSON value described for an error message.
fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::Bool(b) => format!("a boolean ({b})"),
        Value::Number(n) => format!("a number ({n})"),
        Value::String(s) => format!("a string ({})", Value::String(s.clone())),
        Value::Array(items) => format!("a list of {} items", items.len()),
        Value::Object(map) => {
            let keys: Vec<&str> = map.keys().map(String::as_str).collect();
            format!("an object with keys [{}]", keys.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn decode_guard(value: Value) -> Decoded<Guard> {
        let path = JsonPath::default();
        guard(Node::root(&value, &path))
    }

    #[test]
    fn guards_decode_from_their_json_shapes() {
        let g = decode_guard(json!({"all": [
            {"called_ok": "a"}, {"not": {"called": "b"}},
            {"any": [{"is_true": "c"}, {"exists": "d"}, {"equals": {"key": "e", "value": [1]}}]}
        ]}))
        .unwrap();
        assert_eq!(
            g.to_string(),
            "all(called_ok(a), not(called(b)), any(is_true(c), exists(d), equals(e, [1])))"
        );
        assert_eq!(
            serde_json::from_value::<Value>(json!(g)).unwrap()["all"][0]["called_ok"],
            "a"
        );
    }

    #[test]
    fn a_bad_guard_names_its_path_and_the_shapes() {
        let err = decode_guard(json!({"all": [{"called_ok": "a"}, {"called_ok": 3}]})).unwrap_err();
        assert_eq!(err.path.to_string(), "all[1].called_ok");
        assert_eq!(err.problem, "expected a tool name, found a number (3)");
        let err = decode_guard(json!({"is": "x"})).unwrap_err();
        assert!(
            err.problem
                .starts_with("unknown guard `is`; expected a guard: an object")
        );
        let err = decode_guard(json!({"any": []})).unwrap_err();
        assert_eq!(
            err.problem,
            "expected at least one guard in `any`: an empty `any` is always false"
        );
    }
}
