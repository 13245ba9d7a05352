//! Final-state goals (tau-bench style): what the backend's state must be
//! once the conversation has settled, whatever faults the run had
//! (cancellations, goAway moves, resumption). Read from the run's state
//! journal, its tool runs and its trace, after the liveness phase; each is
//! checked like an invariant, named `final(…)`.

use std::fmt;

use serde_json::Value;

use crate::executor::format_time;
use crate::soak::agent::tools::SimTool;
use crate::soak::file_reader::{Decoded, Node};
use crate::soak::run::record::{ExecutionOutcome, RunRecord, ToolExecution};

/// One thing the state must hold at the end of every run.
///
/// ```
/// use livesim::Seed;
/// use livesim::soak::{Agent, FinalState, Soak};
///
/// let agent = Agent::load("sim/payment").unwrap();
/// let paid = FinalState::SetIffOk { key: "paid".into(), tool: "take_payment".into() };
/// assert_eq!(paid.name(), "final(paid set iff take_payment succeeded)");
/// let run = Soak::agent(&agent).run_seed(Seed::new(1));
/// assert_eq!(paid.check(run.record.as_ref().unwrap()), Ok(()));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FinalState {
    /// `{"key": "paid", "set_iff_ok": "take_payment"}`: at the end the key
    /// is set (not `null`, not `false`) exactly when a run of the tool
    /// succeeded.
    SetIffOk {
        /// The state key.
        key: String,
        /// The tool.
        tool: String,
    },
    /// `{"key": "paid", "equals_ok_arg": ["take_payment", "amount"]}`: when
    /// a run of the tool succeeded, the key's final value is the argument
    /// of the successful run that finished last (runs may overlap).
    EqualsOkArg {
        /// The state key.
        key: String,
        /// The tool.
        tool: String,
        /// Its argument.
        arg: String,
    },
    /// `{"key": "paid", "writes_at_most": 1}`: the key was written at most
    /// this many times in the whole run (one payment record, not two).
    WritesAtMost {
        /// The state key.
        key: String,
        /// The most writes.
        n: u64,
    },
    /// `{"key": "paid", "after_ok": "verify_identity"}`: the key was first
    /// written only once a run of the tool had succeeded (or by that run).
    AfterOk {
        /// The state key.
        key: String,
        /// The tool.
        tool: String,
    },
}

impl FinalState {
    /// The state key it is about.
    pub fn key(&self) -> &str {
        match self {
            FinalState::SetIffOk { key, .. }
            | FinalState::EqualsOkArg { key, .. }
            | FinalState::WritesAtMost { key, .. }
            | FinalState::AfterOk { key, .. } => key,
        }
    }

    /// Its name in reports: `final(paid set iff take_payment succeeded)`,
    /// `final(paid = take_payment.amount)`, `final(paid written at most 1
    /// time)`, `final(paid after verify_identity succeeded)`.
    pub fn name(&self) -> String {
        format!("final({self})")
    }

    /// Checks a finished run: `Err` says what the state was instead.
    pub fn check(&self, run: &RunRecord) -> Result<(), String> {
        let key = self.key();
        let end = final_value(run, key);
        match self {
            FinalState::SetIffOk { tool, .. } => {
                let ok = succeeded(run, tool).last();
                match (is_set(end), ok) {
                    (true, None) => Err(format!(
                        "{key} ends as {} though no run of {tool} succeeded",
                        shown(end)
                    )),
                    (false, Some(run)) => Err(format!(
                        "{key} ends {} though {tool} ({}) succeeded at t={}",
                        if end.is_none() {
                            "unset".to_string()
                        } else {
                            format!("as {}", shown(end))
                        },
                        run.call_id.as_deref().unwrap_or("?"),
                        run.finished.map(format_time).unwrap_or_default()
                    )),
                    _ => Ok(()),
                }
            }
            FinalState::EqualsOkArg { tool, arg, .. } => {
                let last = finished_last(run, tool);
                let Some(first) = last.first() else {
                    return Ok(());
                };
                if last.iter().any(|e| end == Some(argument(e, arg))) {
                    return Ok(());
                }
                let ids: Vec<&str> = last
                    .iter()
                    .map(|e| e.call_id.as_deref().unwrap_or("?"))
                    .collect();
                Err(format!(
                    "{key} ends as {}, but the last {tool} that succeeded ({}) had {arg} = {}",
                    shown(end),
                    ids.join(" or "),
                    argument(first, arg)
                ))
            }
            FinalState::WritesAtMost { n, .. } => {
                let writes: Vec<u64> = run
                    .journal
                    .iter()
                    .filter(|m| m.key == key)
                    .map(|m| m.seq)
                    .collect();
                if writes.len() as u64 <= *n {
                    return Ok(());
                }
                let seqs: Vec<String> = writes.iter().map(u64::to_string).collect();
                Err(format!(
                    "{key} was written {} times (journal seq {}); at most {n} allowed",
                    writes.len(),
                    seqs.join(", ")
                ))
            }
            FinalState::AfterOk { tool, .. } => {
                let Some(write) = first_write(run, key) else {
                    return Ok(());
                };
                let by_the_tool = write.1.starts_with(&format!("tool:{tool}("));
                let done = succeeded(run, tool).filter_map(|e| e.finished).min();
                if by_the_tool || done.is_some_and(|t| t <= write.0) {
                    return Ok(());
                }
                Err(format!(
                    "{key} was first written at t={} (by {}) before any {tool} had succeeded{}",
                    format_time(write.0),
                    write.1,
                    done.map(|t| format!(" (the first did at t={})", format_time(t)))
                        .unwrap_or_default()
                ))
            }
        }
    }
}

impl fmt::Display for FinalState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FinalState::SetIffOk { key, tool } => write!(f, "{key} set iff {tool} succeeded"),
            FinalState::EqualsOkArg { key, tool, arg } => write!(f, "{key} = {tool}.{arg}"),
            FinalState::WritesAtMost { key, n } => write!(
                f,
                "{key} written at most {n} time{}",
                if *n == 1 { "" } else { "s" }
            ),
            FinalState::AfterOk { key, tool } => write!(f, "{key} after {tool} succeeded"),
        }
    }
}

/// The key's value at the end: `None` when it was never written or the
/// last write removed it.
fn final_value<'a>(run: &'a RunRecord, key: &str) -> Option<&'a Value> {
    run.journal
        .iter()
        .rev()
        .find(|m| m.key == key)
        .filter(|m| !m.removed)
        .map(|m| &m.value)
}

fn is_set(value: Option<&Value>) -> bool {
    value.is_some_and(|v| !v.is_null() && *v != Value::Bool(false))
}

fn shown(value: Option<&Value>) -> String {
    value.map_or("unset".to_string(), Value::to_string)
}

fn succeeded<'a>(run: &'a RunRecord, tool: &'a str) -> impl Iterator<Item = &'a ToolExecution> {
    run.executions_of(tool)
        .filter(|e| matches!(e.outcome, ExecutionOutcome::Ok(_)))
}

/// The run's argument `arg`; one it was not given reads as null.
fn argument<'a>(run: &'a ToolExecution, arg: &str) -> &'a Value {
    static NULL: Value = Value::Null;
    run.args.get(arg).unwrap_or(&NULL)
}

/// The successful runs of `tool` whose write came last: runs of one tool
/// may overlap (parallel calls, or a flow that observes rather than
/// refuses), and each writes as it succeeds, so the last to finish wrote
/// last. Runs that finished at the same instant may have written in
/// either order, so all of them are returned (in the order they started).
fn finished_last<'a>(run: &'a RunRecord, tool: &'a str) -> Vec<&'a ToolExecution> {
    let Some(at) = succeeded(run, tool).filter_map(|e| e.finished).max() else {
        // No finishing time recorded: the order they started in.
        return succeeded(run, tool).last().into_iter().collect();
    };
    succeeded(run, tool)
        .filter(|e| e.finished == Some(at))
        .collect()
}

/// When the key was first written, and by which task (from the trace).
fn first_write(run: &RunRecord, key: &str) -> Option<(std::time::Duration, String)> {
    let written = format!("state {key} = ");
    run.trace
        .entries()
        .find(|e| e.event.starts_with(&written))
        .map(|e| (e.at, e.label.to_string()))
}

const FORMS: [&str; 4] = ["set_iff_ok", "equals_ok_arg", "writes_at_most", "after_ok"];

/// `"final_state"` in an agent file: a list of `{"key": K, FORM: …}`,
/// each key one a tool, the extractor or a resolver writes, each tool declared,
/// each argument one the tool's parameters name.
pub(crate) fn decode(
    node: &Node<'_>,
    tools: &[SimTool],
    others: &[&str],
) -> Decoded<Vec<FinalState>> {
    let keys = state_keys(tools, others);
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    let tool_of = |node: &Node<'_>| -> Decoded<&SimTool> {
        let name = node.string("a tool name")?;
        match tools.iter().find(|t| t.name == name) {
            Some(tool) => Ok(tool),
            None => node.fail(format!(
                "no tool named {name:?} is declared{} (tools: {})",
                hint(&name, &names),
                names.join(", ")
            )),
        }
    };
    let mut goals = Vec::new();
    let mut allowed = vec!["key"];
    allowed.extend(FORMS);
    for item in node.list("a list of final-state goals")? {
        let fields = item.object("a final-state goal", &allowed)?;
        let key_node = fields.require("key", "the state key it is about")?;
        let key = key_node.string("a state key")?;
        known_key(&key_node, &key, &keys)?;
        let forms: Vec<(&str, Node<'_>)> = FORMS
            .iter()
            .filter_map(|form| fields.get(form).map(|n| (*form, n)))
            .collect();
        let [(form, value)] = forms.as_slice() else {
            return item.fail(format!(
                "expected a key and exactly one of {}",
                FORMS.map(|f| format!("`{f}`")).join(", ")
            ));
        };
        let goal = match *form {
            "set_iff_ok" => FinalState::SetIffOk {
                key,
                tool: tool_of(value)?.name.clone(),
            },
            "after_ok" => FinalState::AfterOk {
                key,
                tool: tool_of(value)?.name.clone(),
            },
            "writes_at_most" => FinalState::WritesAtMost {
                key,
                n: value.whole("how many writes", 0..=u64::MAX)?,
            },
            _ => {
                let pair = value.list("[\"tool\", \"argument\"]")?;
                let [tool_node, arg_node] = pair.as_slice() else {
                    return value.fail(
                        "expected [\"tool\", \"argument\"]: a tool and one of its arguments",
                    );
                };
                let tool = tool_of(tool_node)?;
                let arg = arg_node.string("an argument name")?;
                let params: Vec<&str> = tool
                    .parameters
                    .as_ref()
                    .and_then(|p| p.get("properties"))
                    .and_then(Value::as_object)
                    .map(|props| props.keys().map(String::as_str).collect())
                    .unwrap_or_default();
                if !params.is_empty() && !params.contains(&arg.as_str()) {
                    return arg_node.fail(format!(
                        "{} has no argument {arg:?}{} (its arguments: {})",
                        tool.name,
                        hint(&arg, &params),
                        params.join(", ")
                    ));
                }
                FinalState::EqualsOkArg {
                    key,
                    tool: tool.name.clone(),
                    arg,
                }
            }
        };
        goals.push(goal);
    }
    Ok(goals)
}

/// The state keys an agent's tools write, with `others` (what its
/// extractor and its slot resolvers write), sorted.
pub(crate) fn state_keys<'a>(tools: &'a [SimTool], others: &[&'a str]) -> Vec<&'a str> {
    let mut keys: Vec<&str> = tools
        .iter()
        .flat_map(|t| t.writes.iter().map(|(key, _)| key.as_str()))
        .chain(others.iter().copied())
        .collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// `Ok` when `key` is one of `keys` (or one the runtime writes, `flow:…`
/// and `session:…`); else an error at `node` naming the nearest.
pub(crate) fn known_key(node: &Node<'_>, key: &str, keys: &[&str]) -> Decoded<()> {
    if keys.contains(&key) || key.starts_with("flow:") || key.starts_with("session:") {
        return Ok(());
    }
    node.fail(format!(
        "no tool, extractor or resolver writes the state key {key:?}{} (keys written: {})",
        hint(key, keys),
        keys.join(", ")
    ))
}

fn hint(word: &str, valid: &[&str]) -> String {
    crate::jsonl::did_you_mean(word, valid)
}
