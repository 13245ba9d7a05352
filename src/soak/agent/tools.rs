//! Tools in a soak: simulated ones built from an agent file, and the
//! record every tool run leaves.
//!
//! A simulated tool takes a seeded time drawn from a heavy-tailed
//! distribution over its declared latency (stream `soak/tool/<name>`): a
//! log-normal whose median is the middle of the range and whose 95th
//! percentile is its end, so one call in twenty runs longer, up to five
//! times the end; when a `latency-spike` fires, a Pareto tail instead, up
//! to fifteen times the end. A declared timeout cuts a long call short.
//! It fails at its declared rate (more often under `tool-failure`), checks its arguments against its parameters, writes
//! the state keys it declares and answers with its result template, where
//! `"{args.city}"` stands for the call's `city` argument.
//!
//! Every tool of a soaked session, simulated or the user's own, runs
//! inside a recorder that notes which call it answered (via
//! [`call_id`]), when it started and ended, and how: what the
//! "a refused tool never runs" and "at most once" invariants read.

use std::ops::RangeInclusive;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::FutureExt;
use serde_json::{Map, Value};

use crate::compose::tools::{T, ToolComposite, ToolResult, call_id};
use crate::executor;
use crate::soak::agent::repertoire::ToolModel;
use crate::soak::generate::args;
use crate::soak::generate::faults::{FaultKind, Faults};
use crate::soak::run::record::{ExecutionOutcome, ToolExecution};
use crate::state::State;

/// A simulated tool (or slot resolver, or an extractor's model) ran
/// longer than its shortest latency (a seeded decision; see
/// [`Schedule`](crate::executor::Schedule)).
pub const TOOL_LATENCY: &str = "tool-latency";
/// A simulated tool failed (its declared rate, or `tool-failure` faults).
pub const TOOL_FAILURE: &str = "tool-failure";
/// A simulated tool took a latency spike: a Pareto tail past its longest
/// latency.
pub const LATENCY_SPIKE: &str = "latency-spike";

/// A simulated tool, as an agent file declares it.
#[derive(Clone, Debug, PartialEq)]
pub struct SimTool {
    /// Its name.
    pub name: String,
    /// What the model is told it does.
    pub description: String,
    /// Its parameter schema, if it declares one.
    pub parameters: Option<Value>,
    /// Arguments the generated model calls it with (drawn from the schema
    /// when there are none).
    pub examples: Vec<Value>,
    /// How long a call takes, drawn per call.
    pub latency: RangeInclusive<Duration>,
    /// The chance that a call fails.
    pub failure_rate: f64,
    /// The result template.
    pub result: Value,
    /// State keys written when a call succeeds, and their value templates,
    /// in order.
    pub writes: Vec<(String, Value)>,
    /// A per-call deadline, if any.
    pub timeout: Option<Duration>,
}

impl SimTool {
    /// How the script generator sees it.
    pub fn model(&self) -> ToolModel {
        ToolModel {
            name: self.name.clone(),
            parameters: self.parameters.clone(),
            examples: self.examples.clone(),
            latency: self.latency.clone(),
        }
    }

    /// The tool, writing to `state`, under the seed's `faults`.
    pub fn build(&self, state: &State, faults: &Faults) -> ToolComposite {
        let spec = Arc::new(self.clone());
        let state = state.clone();
        let label = format!("soak/tool/{}", self.name);
        let spike = faults.rate(FaultKind::LatencySpike);
        let extra_failures = faults.rate(FaultKind::ToolFailure);
        let mut tool = T::simple(self.name.clone(), self.description.clone(), move |args| {
            let (spec, state, label) = (spec.clone(), state.clone(), label.clone());
            async move {
                if let Some(problem) = args::misfit(spec.parameters.as_ref(), &args) {
                    return Err(format!("invalid arguments for {}: {problem}", spec.name).into());
                }
                let lo = spec.latency.start().as_millis() as u64;
                let hi = spec.latency.end().as_millis() as u64;
                let (mut ms, tail, spiked, failed) = executor::draw(&label, |s| {
                    (
                        heavy_tailed(s, lo, hi),
                        pareto(s, hi),
                        s.chance(spike),
                        s.chance(spec.failure_rate) || s.chance(extra_failures),
                    )
                })
                .unwrap_or((lo, hi, false, false));
                // Each draw is a decision a shrinker may calm.
                if !executor::decide(TOOL_LATENCY, ms > lo) {
                    ms = lo;
                }
                let spiked = executor::decide(LATENCY_SPIKE, spiked);
                let failed = executor::decide(TOOL_FAILURE, failed);
                if spiked {
                    ms = tail;
                }
                tokio::time::sleep(Duration::from_millis(ms)).await;
                if failed {
                    return Err(format!("{} failed (simulated)", spec.name).into());
                }
                for (key, template) in &spec.writes {
                    state.set(key, render(template, &args));
                }
                Ok(render(&spec.result, &args))
            }
        });
        if let Some(schema) = &self.parameters {
            tool = tool.parameters(schema.clone());
        }
        if let Some(deadline) = self.timeout {
            tool = tool.timeout(deadline);
        }
        tool
    }
}

/// A template with `"{args.<path>}"` placeholders filled from `args`: a
/// string that is exactly one placeholder becomes the argument's value
/// (any JSON, `null` when absent); placeholders inside longer text become
/// the argument's text.
///
/// ```
/// use livesim::soak::render;
/// use serde_json::json;
///
/// let args = json!({"city": "Paris", "days": 3, "where": {"zip": "75001"}});
/// assert_eq!(
///     render(&json!({"city": "{args.city}", "days": "{args.days}", "note": "{args.days} days in {args.city} ({args.where.zip})"}), &args),
///     json!({"city": "Paris", "days": 3, "note": "3 days in Paris (75001)"}),
/// );
/// ```
pub fn render(template: &Value, args: &Value) -> Value {
    match template {
        Value::String(text) => render_text(text, args),
        Value::Array(items) => Value::Array(items.iter().map(|v| render(v, args)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), render(v, args)))
                .collect::<Map<String, Value>>(),
        ),
        other => other.clone(),
    }
}

/// Why `template` cannot be filled as its author meant: a placeholder
/// left open (it would be copied as text), or one naming an argument
/// `parameters` does not declare (it would always be empty).
pub(crate) fn template_problem(template: &Value, parameters: Option<&Value>) -> Option<String> {
    match template {
        Value::String(text) => text_problem(text, parameters),
        Value::Array(items) => items.iter().find_map(|v| template_problem(v, parameters)),
        Value::Object(map) => map.values().find_map(|v| template_problem(v, parameters)),
        _ => None,
    }
}

fn text_problem(text: &str, parameters: Option<&Value>) -> Option<String> {
    let declared = parameters
        .and_then(|p| p.get("properties"))
        .and_then(Value::as_object);
    let mut rest = text;
    while let Some(start) = rest.find("{args.") {
        let after = &rest[start + "{args.".len()..];
        let Some(end) = after.find('}') else {
            return Some(format!(
                "`{}` opens a placeholder and never closes it (write {{args.name}})",
                &rest[start..]
            ));
        };
        let path = &after[..end];
        let name = path.split('.').next().unwrap_or_default();
        if let Some(declared) = declared
            && !declared.contains_key(name)
        {
            let names: Vec<&str> = declared.keys().map(String::as_str).collect();
            let hint = crate::jsonl::nearest(name, &names)
                .map(|n| format!("; did you mean `{{args.{n}}}`?"))
                .unwrap_or_default();
            return Some(format!(
                "`{{args.{path}}}` names no parameter of the tool (it declares {}){hint}",
                names.join(", ")
            ));
        }
        rest = &after[end + 1..];
    }
    None
}

fn lookup<'a>(args: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(args, |value, key| value.get(key))
}

fn render_text(text: &str, args: &Value) -> Value {
    if let Some(path) = text
        .strip_prefix("{args.")
        .and_then(|rest| rest.strip_suffix('}'))
        .filter(|path| !path.contains('}'))
    {
        return lookup(args, path).cloned().unwrap_or(Value::Null);
    }
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("{args.") {
        out.push_str(&rest[..start]);
        let after = &rest[start + "{args.".len()..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return Value::String(out);
        };
        match lookup(args, &after[..end]) {
            Some(Value::String(s)) => out.push_str(s),
            Some(other) => out.push_str(&other.to_string()),
            None => {}
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Value::String(out)
}

/// The tool runs of one session, shared with the recorders.
#[derive(Clone, Debug, Default)]
pub(crate) struct ExecutionLog {
    runs: Arc<Mutex<Runs>>,
    /// Woken each time a run ends (finished, or dropped unfinished).
    ended: Arc<tokio::sync::Notify>,
}

#[derive(Debug, Default)]
struct Runs {
    runs: Vec<ToolExecution>,
    /// Runs started and not yet ended.
    live: usize,
}

impl ExecutionLog {
    fn lock(&self) -> MutexGuard<'_, Runs> {
        self.runs.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn start(&self, tool: &str, args: Value) -> usize {
        let mut runs = self.lock();
        runs.live += 1;
        runs.runs.push(ToolExecution {
            call_id: call_id(),
            tool: tool.to_string(),
            args,
            started: executor::now(),
            finished: None,
            dropped: None,
            outcome: ExecutionOutcome::Unfinished,
        });
        runs.runs.len() - 1
    }

    fn finish(&self, index: usize, outcome: ExecutionOutcome) {
        let mut runs = self.lock();
        if let Some(run) = runs.runs.get_mut(index) {
            run.finished = Some(executor::now());
            run.outcome = outcome;
        }
        runs.live = runs.live.saturating_sub(1);
        drop(runs);
        self.ended.notify_waiters();
    }

    /// A run dropped before it finished: aborted, or cut by a timeout.
    fn dropped(&self, index: usize) {
        let mut runs = self.lock();
        if let Some(run) = runs.runs.get_mut(index) {
            run.dropped = Some(executor::now());
        }
        runs.live = runs.live.saturating_sub(1);
        drop(runs);
        self.ended.notify_waiters();
    }

    /// Waits until every run that started has ended, or until `deadline`.
    /// After a session ends this is how long its tools are watched: one
    /// still running must be seen to finish (it should have been stopped).
    pub async fn ended_by(&self, deadline: tokio::time::Instant) {
        loop {
            let ended = self.ended.notified();
            tokio::pin!(ended);
            // Registered before the check, so an end in between wakes us.
            ended.as_mut().enable();
            if self.lock().live == 0 {
                return;
            }
            tokio::select! {
                biased;
                _ = &mut ended => {}
                _ = tokio::time::sleep_until(deadline) => return,
            }
        }
    }

    /// Every run so far, in the order they started.
    pub fn runs(&self) -> Vec<ToolExecution> {
        self.lock().runs.clone()
    }
}

/// Marks a run that is dropped before it finishes, or panics.
struct Running {
    log: ExecutionLog,
    index: usize,
    done: bool,
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        if std::thread::panicking() {
            self.log.finish(
                self.index,
                ExecutionOutcome::Failed("the tool panicked".to_string()),
            );
        } else {
            self.log.dropped(self.index);
        }
    }
}

/// A latency in `lo..=hi` ms, heavy-tailed: log-normal with its median
/// in the middle of the range and its 95th percentile at `hi`, never
/// under `lo`, at most five times `hi`.
fn heavy_tailed(s: &mut executor::Stream, lo: u64, hi: u64) -> u64 {
    let (u1, u2) = (s.unit().max(f64::MIN_POSITIVE), s.unit());
    let normal = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
    let median = ((lo + hi) as f64 / 2.0).max(1.0);
    let sigma = ((hi as f64).max(median) / median).ln() / 1.645;
    let ms = median * (sigma * normal).exp();
    (ms.round() as u64).clamp(lo, hi.saturating_mul(5).max(lo))
}

/// A spike past `hi` ms: Pareto with shape 1.5 from `hi`, at most fifteen
/// times it (the liveness bound allows twenty).
fn pareto(s: &mut executor::Stream, hi: u64) -> u64 {
    let u = s.unit().min(1.0 - f64::EPSILON);
    let ms = hi.max(1) as f64 * (1.0 - u).powf(-1.0 / 1.5);
    (ms.round() as u64).min(hi.max(1).saturating_mul(15))
}

/// `tools`, each run recorded in `log`.
pub(crate) fn recorded(tools: &ToolComposite, log: &ExecutionLog) -> ToolComposite {
    tools
        .tools()
        .iter()
        .map(|tool| {
            let (log, name) = (log.clone(), tool.name().to_string());
            tool.around(move |args, run| {
                let (log, name) = (log.clone(), name.clone());
                async move {
                    let index = log.start(&name, args);
                    let mut running = Running {
                        log: log.clone(),
                        index,
                        done: false,
                    };
                    let outcome: ToolResult = run.await;
                    running.done = true;
                    log.finish(
                        index,
                        match &outcome {
                            Ok(value) => ExecutionOutcome::Ok(value.clone()),
                            Err(e) => ExecutionOutcome::Failed(e.to_string()),
                        },
                    );
                    outcome
                }
                .boxed()
            })
        })
        .collect()
}
