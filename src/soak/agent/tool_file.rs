//! A tool as an agent file declares it: its name (one the Live API takes
//! for a function), its parameter schema and examples, its latency and
//! failure rate, and the templates of its result and state writes, each
//! checked where it is written.

use std::ops::RangeInclusive;
use std::time::Duration;

use crate::soak::agent::schema;
use crate::soak::agent::tools::{self, SimTool};
use crate::soak::file_reader::{Decoded, Fields, Node};
use crate::soak::generate::args;

const TOOL_KEYS: [&str; 9] = [
    "name",
    "description",
    "parameters",
    "examples",
    "latency_ms",
    "failure_rate",
    "result",
    "writes",
    "timeout_ms",
];

/// Why the Live API would refuse `name` as a function's: it starts with
/// a letter or `_`, holds only letters, digits, `_`, `.`, `:` and `-`,
/// and is at most 64 long.
fn function_name_problem(name: &str) -> Option<String> {
    let starts = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_');
    let rest = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-'));
    (!(starts && rest && name.len() <= 64)).then(|| {
        format!(
            "{name:?} is not a name the Live API takes for a function: it starts with a letter or `_` and holds only letters, digits, `_`, `.`, `:` and `-`, at most 64"
        )
    })
}

/// A tool of an agent file's `tools`.
pub(crate) fn decode(node: &Node<'_>) -> Decoded<SimTool> {
    let fields = node.object("a tool", &TOOL_KEYS)?;
    let name_node = fields.require("name", "the tool's name")?;
    let name = name_node.string("a tool name")?;
    if let Some(problem) = function_name_problem(&name) {
        return name_node.fail(problem);
    }
    let description = match fields.get("description") {
        Some(n) => n.string("a description")?,
        None => String::new(),
    };
    let parameters = match fields.get("parameters") {
        Some(n) if n.value.is_object() => {
            schema::check(&n)?;
            Some(n.value.clone())
        }
        Some(n) => return n.fail("expected a parameter schema: an object such as {\"type\": \"OBJECT\", \"properties\": {…}}"),
        None => None,
    };
    let mut examples = Vec::new();
    if let Some(list) = fields.get("examples") {
        for example in list.list("a list of argument objects")? {
            if !example.value.is_object() {
                return example.fail("expected an argument object");
            }
            if let Some(problem) = args::misfit(parameters.as_ref(), example.value) {
                return example.fail(format!(
                    "this example does not fit the parameters: {problem}"
                ));
            }
            examples.push(example.value.clone());
        }
    }
    let (latency, failure_rate) = latency_and_failures(&fields)?;
    let result = match fields.get("result") {
        Some(n) => {
            if let Some(problem) = tools::template_problem(n.value, parameters.as_ref()) {
                return n.fail(problem);
            }
            n.value.clone()
        }
        None => serde_json::json!({ "ok": true }),
    };
    let mut writes = Vec::new();
    if let Some(n) = fields.get("writes") {
        let Some(object) = n.value.as_object() else {
            return n.fail("expected state writes: an object of key → value template");
        };
        for (key, template) in object {
            if key.trim().is_empty() {
                return n.fail("a state key cannot be empty");
            }
            if let Some(problem) = tools::template_problem(template, parameters.as_ref()) {
                return n.fail(format!("the write of `{key}`: {problem}"));
            }
            writes.push((key.clone(), template.clone()));
        }
    }
    let timeout = match fields.get("timeout_ms") {
        Some(n) => Some(Duration::from_millis(n.whole("timeout_ms", 1..=3_600_000)?)),
        None => None,
    };
    Ok(SimTool {
        name,
        description,
        parameters,
        examples,
        latency,
        failure_rate,
        result,
        writes,
        timeout,
    })
}

/// A simulated tool's, resolver's or extractor's `latency_ms` (default
/// `[10, 100]`).
pub(crate) fn latency(fields: &Fields<'_>) -> Decoded<RangeInclusive<Duration>> {
    Ok(match fields.get("latency_ms") {
        Some(n) => {
            let (lo, hi) = n.span("latency_ms", 0..=600_000)?;
            Duration::from_millis(lo)..=Duration::from_millis(hi)
        }
        None => Duration::from_millis(10)..=Duration::from_millis(100),
    })
}

/// A simulated tool's or resolver's `latency_ms` (default `[10, 100]`)
/// and `failure_rate` (default 0).
pub(crate) fn latency_and_failures(
    fields: &Fields<'_>,
) -> Decoded<(RangeInclusive<Duration>, f64)> {
    let latency = latency(fields)?;
    let failure_rate = match fields.get("failure_rate") {
        Some(n) => n.rate("failure_rate")?,
        None => 0.0,
    };
    Ok((latency, failure_rate))
}
