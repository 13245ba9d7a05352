//! Reading JSON files with every mistake located: the file, the line and
//! column, the path of the member (`tools[1].latency_ms`) and what was
//! expected there; an unknown key names the nearest valid one.
//!
//! The decoder walks a `serde_json::Value` by hand, like the spec file
//! decoder, so errors speak the agent file's terms rather than serde's.

use std::fmt;

use serde_json::{Map, Value};

use crate::flow::json_position::{JsonPath, position};

/// The most bytes one line a user or a model says may hold in an agent
/// file (64 KiB: pages of text, far past a spoken turn).
pub(crate) const MAX_UTTERANCE: usize = 64 * 1024;

/// Why an agent file (or a file it names), or a seeds-corpus entry, cannot
/// be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.render())]
pub struct AgentFileError {
    /// The file.
    pub file: String,
    /// 1-based line and column, when known.
    pub position: Option<(usize, usize)>,
    /// The path of the wrong member (`tools[1].latency_ms`), when known.
    pub path: Option<String>,
    /// What was wrong, and what was expected.
    pub problem: String,
}

impl AgentFileError {
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

    /// An error about the whole file (it cannot be read, say).
    pub(crate) fn plain(file: impl fmt::Display, problem: impl Into<String>) -> Self {
        AgentFileError {
            file: file.to_string(),
            position: None,
            path: None,
            problem: problem.into(),
        }
    }
}

/// A mistake at a path, before the file and position are added.
#[derive(Debug)]
pub(crate) struct Mistake {
    path: JsonPath,
    problem: String,
}

pub(crate) type Decoded<T> = Result<T, Mistake>;

impl Mistake {
    /// The error for this mistake in `text`, read from `file`.
    pub(crate) fn locate(self, file: &str, text: &str) -> AgentFileError {
        AgentFileError {
            file: file.to_string(),
            position: position(text, &self.path),
            path: (!self.path.0.is_empty()).then(|| self.path.to_string()),
            problem: self.problem,
        }
    }
}

/// Parses agent file text as JSON, a syntax error located.
/// A key given twice in one object is refused: the `Value` would keep the
/// last and drop the first without a word. A byte-order mark is named as
/// such (serde would say "expected value at line 1 column 1" of a file
/// that looks fine in an editor), as every reader of livesim's files
/// names it. Agent files, corpus entries and triage files are read here.
pub(crate) fn parse(file: &str, text: &str) -> Result<Value, AgentFileError> {
    if let Some(problem) = crate::jsonl::bom(text.as_bytes()) {
        return Err(AgentFileError::plain(file, problem));
    }
    let value = serde_json::from_str(text).map_err(|e| AgentFileError {
        file: file.to_string(),
        position: Some((e.line(), e.column())),
        path: None,
        problem: format!("not valid JSON: {e}"),
    })?;
    if let Some((key, position)) = crate::jsonl::duplicate_key_at(text) {
        return Err(AgentFileError {
            file: file.to_string(),
            position,
            path: None,
            problem: format!("the key `{key}` is given twice in one object; give it once"),
        });
    }
    Ok(value)
}

/// A value and where it sits in the file.
#[derive(Clone)]
pub(crate) struct Node<'a> {
    pub value: &'a Value,
    pub path: JsonPath,
}

impl<'a> Node<'a> {
    pub fn root(value: &'a Value) -> Self {
        Node {
            value,
            path: JsonPath::default(),
        }
    }

    pub fn fail<T>(&self, problem: impl Into<String>) -> Decoded<T> {
        Err(Mistake {
            path: self.path.clone(),
            problem: problem.into(),
        })
    }

    fn expected<T>(&self, what: &str) -> Decoded<T> {
        self.fail(format!("expected {what}, found {}", describe(self.value)))
    }

    /// The object here; a key not in `keys` is an error naming the nearest
    /// valid key (a misspelt optional key would otherwise do nothing).
    pub fn object(&self, what: &str, keys: &[&str]) -> Decoded<Fields<'a>> {
        let Some(map) = self.value.as_object() else {
            return self.expected(what);
        };
        if let Some(unknown) = map.keys().find(|k| !keys.contains(&k.as_str())) {
            let at = Node {
                value: &map[unknown],
                path: self.path.key(unknown),
            };
            return at.fail(unknown_key(unknown, what, keys));
        }
        Ok(Fields {
            map,
            path: self.path.clone(),
        })
    }

    /// The object here, whatever its keys (an object keyed by name).
    pub fn map(&self, what: &str) -> Decoded<Fields<'a>> {
        let Some(map) = self.value.as_object() else {
            return self.expected(what);
        };
        Ok(Fields {
            map,
            path: self.path.clone(),
        })
    }

    pub fn string(&self, what: &str) -> Decoded<String> {
        match self.value.as_str() {
            Some(text) if !text.trim().is_empty() => Ok(text.to_string()),
            Some(_) => self.fail(format!("expected {what}, found an empty string")),
            None => self.expected(what),
        }
    }

    /// A non-empty list of non-empty strings, each at most
    /// [`MAX_UTTERANCE`] bytes.
    pub fn lines(&self, what: &str) -> Decoded<Vec<String>> {
        let items = self.list(&format!("a list of {what}"))?;
        if items.is_empty() {
            return self.fail(format!(
                "expected at least one of {what}, found an empty list"
            ));
        }
        items
            .iter()
            .map(|item| {
                let line = item.string(what)?;
                if line.len() > MAX_UTTERANCE {
                    return item.fail(format!(
                        "one of the {what} holds {} bytes, past the {} KiB an utterance may \
                         hold: a session copies it into every frame, event and trace entry \
                         it makes, so a document here costs a hundred times its size",
                        crate::jsonl::thousands(line.len() as u64),
                        MAX_UTTERANCE / 1024
                    ));
                }
                Ok(line)
            })
            .collect()
    }

    pub fn list(&self, what: &str) -> Decoded<Vec<Node<'a>>> {
        let Some(items) = self.value.as_array() else {
            return self.expected(what);
        };
        Ok(items
            .iter()
            .enumerate()
            .map(|(i, value)| Node {
                value,
                path: self.path.index(i),
            })
            .collect())
    }

    pub fn boolean(&self, what: &str) -> Decoded<bool> {
        self.value.as_bool().map_or_else(|| self.expected(what), Ok)
    }

    /// A whole number in `range`.
    pub fn whole(&self, what: &str, range: std::ops::RangeInclusive<u64>) -> Decoded<u64> {
        match self.value.as_u64() {
            Some(n) if range.contains(&n) => Ok(n),
            _ => self.expected(&format!(
                "{what}: a whole number from {} to {}",
                range.start(),
                range.end()
            )),
        }
    }

    /// A rate: a number from 0 to 1.
    pub fn rate(&self, what: &str) -> Decoded<f64> {
        match self.value.as_f64() {
            Some(r) if (0.0..=1.0).contains(&r) => Ok(r),
            _ => self.expected(&format!("{what}: a number from 0 to 1")),
        }
    }

    /// `[low, high]`, whole numbers in `range`, low ≤ high.
    pub fn span(&self, what: &str, range: std::ops::RangeInclusive<u64>) -> Decoded<(u64, u64)> {
        let shape = format!(
            "{what}: [low, high], whole numbers from {} to {}",
            range.start(),
            range.end()
        );
        let items = self.list(&shape)?;
        let [low, high] = items.as_slice() else {
            return self.expected(&shape);
        };
        let low = low.whole(what, range.clone())?;
        let high = high.whole(what, range)?;
        if low > high {
            return self.fail(format!(
                "{what}: the low end {low} is above the high end {high}"
            ));
        }
        Ok((low, high))
    }
}

/// An object's members, each decoded on demand.
pub(crate) struct Fields<'a> {
    map: &'a Map<String, Value>,
    path: JsonPath,
}

impl<'a> Fields<'a> {
    /// Member `key`, if present.
    pub fn get(&self, key: &str) -> Option<Node<'a>> {
        self.map.get(key).map(|value| Node {
            value,
            path: self.path.key(key),
        })
    }

    /// Member `key`, which must be present.
    pub fn require(&self, key: &str, what: &str) -> Decoded<Node<'a>> {
        self.get(key).map_or_else(
            || {
                Err(Mistake {
                    path: self.path.clone(),
                    problem: format!("missing key `{key}` ({what})"),
                })
            },
            Ok,
        )
    }

    /// The members, in file order.
    pub fn members(&self) -> impl Iterator<Item = (&'a String, Node<'a>)> + '_ {
        self.map.iter().map(|(key, value)| {
            (
                key,
                Node {
                    value,
                    path: self.path.key(key),
                },
            )
        })
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }
}

/// The message for a key that is not one of `keys`.
pub(crate) fn unknown_key(key: &str, what: &str, keys: &[&str]) -> String {
    let mut message = format!("unknown key `{}` in {what}", crate::jsonl::shown(key));
    message.push_str(&crate::jsonl::did_you_mean(key, keys));
    message.push_str(&format!(" (valid keys: {})", keys.join(", ")));
    message
}

/// A value as a message names it: `the number 5`, `a list of 2`.
pub(crate) fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("{b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => format!("the string {s:?}"),
        Value::Array(a) => format!("a list of {}", a.len()),
        Value::Object(_) => "an object".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An unknown key names the nearest valid one when it is a typo, and
    /// every valid key either way.
    #[test]
    fn typos_find_their_key() {
        let keys = ["latency_ms", "failure_rate", "name", "writes"];
        let said = |key| unknown_key(key, "a tool", &keys);
        for (typo, meant) in [
            ("latncy_ms", "latency_ms"),
            ("failure-rate", "failure_rate"),
            ("Name", "name"),
            ("wirtes", "writes"),
        ] {
            assert_eq!(
                said(typo),
                format!(
                    "unknown key `{typo}` in a tool; did you mean `{meant}`? \
                     (valid keys: latency_ms, failure_rate, name, writes)"
                )
            );
        }
        assert_eq!(
            said("colour"),
            "unknown key `colour` in a tool (valid keys: latency_ms, failure_rate, name, writes)"
        );
    }
}
