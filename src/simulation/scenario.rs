//! Scenarios: a named list of steps, run against a flow spec.
//!
//! A scenario is data (`{"name": ..., "steps": [...]}`, saved as
//! `<name>.<label>.scenario.json` beside the spec), so an incident recorded
//! from a live session becomes a regression test that needs no model, no
//! network and no session.
//!
//! Every step, and what a damaged file gives: `docs/formats/scenario.md`.

use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::sim::Sim;
use super::step::Step;
use crate::flow::json_position::{JsonPath, position};
use crate::flow::{Enforcement, FlowSpec};

/// A named list of steps.
///
/// ```
/// use livesim::flow::{Conversation, Enforcement, Guard};
/// use livesim::simulation::Scenario;
///
/// let convo = Conversation::new()
///     .stage("party").allow(["set_party"]).slot("party_size")
///     .stage("book").allow(["confirm"]).commit("book_table", Guard::is_true("confirmed"))
///     .compile()
///     .unwrap();
/// let scenario = Scenario::from_json(r#"{"name": "booking", "steps": [
///     {"expect_allowed": "set_party"}, {"set": {"key": "party_size", "value": 4}},
///     {"tool_result": {"tool": "set_party", "ok": true}},
///     "turn", {"expect_active": ["book"]},
///     {"expect_denied": "book_table"}
/// ]}"#, "booking.scenario.json").unwrap();
/// futures::executor::block_on(scenario.run(&convo, Enforcement::Enforce)).unwrap();
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Scenario {
    /// The scenario's name, used in failure messages.
    pub name: String,
    /// The steps, applied in order.
    pub steps: Vec<Step>,
}

/// Where and why a scenario stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("scenario `{scenario}` failed at steps[{index}] {step}: {reason}")]
pub struct ScenarioFailure {
    /// The scenario's name.
    pub scenario: String,
    /// The failing step's index (0-based, as in the file).
    pub index: usize,
    /// The failing step (boxed: a step can hold a large JSON value).
    pub step: Box<Step>,
    /// Why it failed.
    pub reason: String,
}

/// Why a scenario file cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}{}: {problem}", self.location())]
pub struct ScenarioFileError {
    /// The file (or the origin given for text).
    pub file: String,
    /// 1-based line and column, when known.
    pub position: Option<(usize, usize)>,
    /// The path of the wrong member (`steps[3]`), when known.
    pub path: Option<String>,
    /// What was wrong.
    pub problem: String,
}

impl ScenarioFileError {
    fn location(&self) -> String {
        let mut text = String::new();
        if let Some((line, column)) = self.position {
            text.push_str(&format!(":{line}:{column}"));
        }
        if let Some(path) = &self.path {
            text.push_str(&format!(": at {}", crate::jsonl::shown(path)));
        }
        text
    }
}

impl Scenario {
    /// A scenario with these steps.
    pub fn new(name: impl Into<String>, steps: Vec<Step>) -> Scenario {
        Scenario {
            name: name.into(),
            steps,
        }
    }

    /// Runs every step against `spec` (a [`FlowSpec`], a
    /// `CompiledConversation` or a `Spec`), stopping at the first that does
    /// not hold. Returns the simulator at the end, to inspect.
    ///
    /// Async to fit the test kit's shape; it does no I/O and never awaits
    /// anything. [`run_now`](Self::run_now) is the same, synchronous.
    pub async fn run(
        &self,
        spec: &impl AsRef<FlowSpec>,
        enforcement: Enforcement,
    ) -> Result<Sim, ScenarioFailure> {
        self.run_now(spec, enforcement)
    }

    /// [`run`](Self::run), without the `async`.
    pub fn run_now(
        &self,
        spec: &impl AsRef<FlowSpec>,
        enforcement: Enforcement,
    ) -> Result<Sim, ScenarioFailure> {
        let mut sim = Sim::new(spec.as_ref().clone(), enforcement);
        for (index, step) in self.steps.iter().enumerate() {
            sim.apply(step).map_err(|reason| ScenarioFailure {
                scenario: self.name.clone(),
                index,
                step: Box::new(step.clone()),
                reason,
            })?;
        }
        Ok(sim)
    }

    /// The scenario as file text: one step per line.
    pub fn to_json(&self) -> String {
        let steps: Vec<String> = self.steps.iter().map(|s| format!("    {s}")).collect();
        format!(
            "{{\n  \"name\": {},\n  \"steps\": [\n{}\n  ]\n}}\n",
            Value::String(self.name.clone()),
            steps.join(",\n")
        )
    }

    /// Decodes scenario text; `origin` names it in errors.
    pub fn from_json(text: &str, origin: &str) -> Result<Scenario, ScenarioFileError> {
        let fail = |path: JsonPath, problem: String| ScenarioFileError {
            file: origin.to_string(),
            position: position(text, &path),
            path: (!path.0.is_empty()).then(|| path.to_string()),
            problem,
        };
        let plain = |problem: String, position| ScenarioFileError {
            file: origin.to_string(),
            position,
            path: None,
            problem,
        };
        // Named as what it is: serde would say "expected value at line 1
        // column 1" of a file that looks fine in an editor.
        if let Some(problem) = crate::jsonl::bom(text.as_bytes()) {
            return Err(plain(problem, None));
        }
        let value: Value = serde_json::from_str(text)
            .map_err(|e| plain(format!("not valid JSON: {e}"), Some((e.line(), e.column()))))?;
        // `Value` keeps the last of two equal keys: a scenario that says a
        // thing twice (two names, a `set` of two keys) would run one of
        // them without a word, so it is refused, as a spec is.
        if let Some((key, position)) = crate::jsonl::duplicate_key_at(text) {
            return Err(plain(
                format!(
                    "the key `{}` is given twice in one object; give it once",
                    crate::jsonl::shown(&key)
                ),
                position,
            ));
        }
        let root = JsonPath::default();
        let expected = "a scenario: {\"name\": \"...\", \"steps\": [...]}";
        let Some(map) = value.as_object() else {
            return Err(fail(root, format!("expected {expected}")));
        };
        if let Some(unknown) = map.keys().find(|k| *k != "name" && *k != "steps") {
            return Err(fail(
                root,
                format!("unknown field `{unknown}`; expected {expected}"),
            ));
        }
        let name = match map.get("name") {
            Some(Value::String(name)) => name.clone(),
            Some(_) => return Err(fail(root.key("name"), "expected a string".into())),
            None => {
                return Err(fail(
                    root,
                    format!("missing field `name`; expected {expected}"),
                ));
            }
        };
        let Some(Value::Array(items)) = map.get("steps") else {
            return Err(fail(
                root.key("steps"),
                "expected `steps`: a list of steps".into(),
            ));
        };
        let mut steps = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let step = serde_json::from_value(item.clone()).map_err(|e| {
                fail(
                    root.key("steps").index(i),
                    format!(
                        "{e}; a step is \"turn\", \"interrupt\", {{\"expect_allowed\": tool}}, \
                         {{\"expect_denied\": tool}}, {{\"expect_active\": [steps]}}, \
                         {{\"tool_ok\": tool}}, {{\"tool_cancelled\": tool}}, \
                         {{\"tool_failed\": tool}}, \
                         {{\"set\": {{\"key\": k, \"value\": v}}}} or \
                         {{\"tool_result\": {{\"tool\": t, \"ok\": bool}}}}"
                    ),
                )
            })?;
            steps.push(step);
        }
        Ok(Scenario { name, steps })
    }

    /// Reads a scenario file.
    pub fn read(path: impl AsRef<Path>) -> Result<Scenario, ScenarioFileError> {
        let path = path.as_ref();
        let origin = path.display().to_string();
        let text = crate::jsonl::read_text(path).map_err(|problem| ScenarioFileError {
            file: origin.clone(),
            position: None,
            path: None,
            problem,
        })?;
        Scenario::from_json(&text, &origin)
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_json())
    }
}
