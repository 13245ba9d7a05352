//! Agents as data: `sim/<name>/agent.json` read into an [`Agent`], and
//! the session builder it makes for each seed.
//!
//! An agent folder holds the agent file, the spec that governs it
//! (`<name>.spec.json`, when it is governed), its scenario corpus
//! (`<name>.<label>.scenario.json`, for `livesim flow ci`) and the tapes
//! its extractor answers from. The format, version 1 (every key but `v`,
//! `user` and `model` optional):
//!
//! ```json
//! {
//!   "v": 1,
//!   "instruction": "You take card payments for the water company.",
//!   "spec": "payment.spec.json",
//!   "enforcement": "enforce",
//!   "turns": [1, 20],
//!   "pauses_ms": [200, 3000],
//!   "call_chance": 0.6,
//!   "user": ["I'd like to pay my bill."],
//!   "model": ["Let me check that for you."],
//!   "tools": [{
//!     "name": "verify_identity",
//!     "description": "Checks the caller's name and date of birth",
//!     "parameters": {"type": "OBJECT", "properties": {"dob": {"type": "STRING"}}, "required": ["dob"]},
//!     "examples": [{"dob": "1990-05-04"}],
//!     "latency_ms": [20, 300],
//!     "failure_rate": 0.1,
//!     "result": {"verified": true, "dob": "{args.dob}"},
//!     "writes": {"verified": true},
//!     "timeout_ms": 5000
//!   }],
//!   "extractor": {"name": "topic", "tape": "support.tape.jsonl", "prompt": "…", "window": 1},
//!   "invariants": [{"at_most_once": "take_payment"}, {"before": ["verify_identity", "take_payment"]}],
//!   "sometimes": [{"name": "paid", "tool_ok": "take_payment"}, {"name": "booked", "state": "booked"}],
//!   "faults": {"parallel-calls": 0.5}
//! }
//! ```
//!
//! See the README's *Soak* section for what each key means.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::agent_file::{self, AgentFileError, Decoded, Node};
use super::args;
use super::faults::FaultKind;
use super::generate::Repertoire;
use super::record::{ExecutionOutcome, RunRecord};
use super::tools::SimTool;
use crate::executor::Seed;
use crate::flow::{Enforcement, Spec};
use crate::llm::LlmExtractor;
use crate::session::{Live, LiveBuilder};
use crate::soak::Faults;
use crate::state::State;
use crate::tape::{FileTape, LLM_CALL, Tape, TapeEntry, TapeError, TapedLlm, canonical_json};

/// The agent file format version this livesim reads.
pub const AGENT_VERSION: u64 = 1;

/// What a seed gives an agent's builder: the seed, its faults, and the
/// session's state (with the soak's journal attached).
#[derive(Clone, Debug)]
pub struct RunContext {
    /// The seed.
    pub seed: Seed,
    /// The seed's conversation faults (simulated tools read them).
    pub faults: Faults,
    /// A fresh state for the session; give it to the builder.
    pub state: State,
}

/// An invariant an agent file declares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AgentInvariant {
    /// `{"at_most_once": "take_payment"}`: at most one run of the tool
    /// succeeds per session.
    AtMostOnce(String),
    /// `{"before": ["verify_identity", "take_payment"]}`: the second tool
    /// never starts before a run of the first has succeeded.
    Before(String, String),
}

impl AgentInvariant {
    /// The invariant's name in reports: `at-most-once(take_payment)`.
    pub fn name(&self) -> String {
        match self {
            AgentInvariant::AtMostOnce(tool) => format!("at-most-once({tool})"),
            AgentInvariant::Before(first, then) => format!("before({first}, {then})"),
        }
    }

    /// Checks it against a run.
    pub fn check(&self, run: &RunRecord) -> Result<(), String> {
        match self {
            AgentInvariant::AtMostOnce(tool) => {
                let ok: Vec<String> = run
                    .executions_of(tool)
                    .filter(|e| matches!(e.outcome, ExecutionOutcome::Ok(_)))
                    .map(|e| e.call_id.clone().unwrap_or_else(|| "?".into()))
                    .collect();
                if ok.len() > 1 {
                    return Err(format!(
                        "{tool} succeeded {} times in one session (calls {})",
                        ok.len(),
                        ok.join(", ")
                    ));
                }
                Ok(())
            }
            AgentInvariant::Before(first, then) => {
                let first_ok = run
                    .executions_of(first)
                    .filter(|e| matches!(e.outcome, ExecutionOutcome::Ok(_)))
                    .filter_map(|e| e.finished)
                    .min();
                for e in run.executions_of(then) {
                    if first_ok.is_none_or(|done| done > e.started) {
                        return Err(format!(
                            "{then} ({}) started at t={} before any {first} had succeeded{}",
                            e.call_id.as_deref().unwrap_or("?"),
                            crate::executor::format_time(e.started),
                            first_ok
                                .map(|t| format!(
                                    " (the first did at t={})",
                                    crate::executor::format_time(t)
                                ))
                                .unwrap_or_default()
                        ));
                    }
                }
                Ok(())
            }
        }
    }
}

/// A "sometimes" goal an agent file declares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AgentGoal {
    /// `{"name": "paid", "tool_ok": "take_payment"}`: a run of the tool
    /// succeeded.
    ToolOk {
        /// The goal's name.
        name: String,
        /// The tool.
        tool: String,
    },
    /// `{"name": "booked", "state": "booked"}`: the state key was written
    /// with a value that is not `false` or `null`.
    State {
        /// The goal's name.
        name: String,
        /// The key.
        key: String,
    },
}

impl AgentGoal {
    /// The goal's name.
    pub fn name(&self) -> &str {
        match self {
            AgentGoal::ToolOk { name, .. } | AgentGoal::State { name, .. } => name,
        }
    }

    /// Whether a run reached it.
    pub fn reached(&self, run: &RunRecord) -> bool {
        match self {
            AgentGoal::ToolOk { tool, .. } => run
                .executions_of(tool)
                .any(|e| matches!(e.outcome, ExecutionOutcome::Ok(_))),
            AgentGoal::State { key, .. } => run.journal.iter().any(|m| {
                &m.key == key && !m.value.is_null() && m.value != Value::Bool(false)
            }),
        }
    }
}

/// An LLM extractor answering from a tape in the agent's folder.
#[derive(Clone, Debug)]
pub struct ExtractorSpec {
    /// Its name: the state key it writes.
    pub name: String,
    /// The system instruction it gives the model.
    pub prompt: String,
    /// How many transcript lines it reads (0: all).
    pub window: usize,
    /// The model id on the tape.
    pub model: String,
    /// The tape file.
    pub tape_file: PathBuf,
    tape: Arc<StandingTape>,
}

/// An agent read from its folder.
#[derive(Clone, Debug)]
pub struct Agent {
    /// The agent's name: its folder's name.
    pub name: String,
    /// The folder.
    pub dir: PathBuf,
    /// The system instruction.
    pub instruction: String,
    /// The spec that governs it, and its file.
    pub spec: Option<(Arc<Spec>, PathBuf)>,
    /// How strictly the spec is enforced.
    pub enforcement: Enforcement,
    /// Its simulated tools.
    pub tools: Vec<SimTool>,
    /// What its conversations are made of.
    pub repertoire: Repertoire,
    /// Its extractor, if it has one.
    pub extractor: Option<ExtractorSpec>,
    /// Its own invariants.
    pub invariants: Vec<AgentInvariant>,
    /// Its own "sometimes" goals.
    pub sometimes: Vec<AgentGoal>,
    /// Its fault tuning: kinds on in every seed that is not calm.
    pub faults: Vec<(FaultKind, f64)>,
    planted_bug: bool,
}

const TOP_KEYS: [&str; 15] = [
    "v",
    "instruction",
    "spec",
    "enforcement",
    "turns",
    "pauses_ms",
    "call_chance",
    "user",
    "model",
    "tools",
    "extractor",
    "invariants",
    "sometimes",
    "faults",
    "planted_bug",
];

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

impl Agent {
    /// Reads the agent in folder `dir` (its `agent.json` and the files it
    /// names). Every mistake is an error naming the file, the line and
    /// column, and the key.
    pub fn load(dir: impl AsRef<Path>) -> Result<Agent, AgentFileError> {
        let dir = dir.as_ref();
        let file = dir.join("agent.json");
        let origin = file.display().to_string();
        let text = std::fs::read_to_string(&file)
            .map_err(|e| AgentFileError::plain(&origin, format!("cannot read it: {e}")))?;
        let name = dir
            .canonicalize()
            .unwrap_or_else(|_| dir.to_path_buf())
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "agent".to_string());
        Agent::from_json(&name, dir, &text, &origin)
    }

    /// Reads agent file text; `dir` is where the files it names are, and
    /// `origin` names it in errors.
    pub fn from_json(
        name: &str,
        dir: &Path,
        text: &str,
        origin: &str,
    ) -> Result<Agent, AgentFileError> {
        let value = agent_file::parse(origin, text)?;
        let decoded = decode(name, dir, &value).map_err(|m| m.locate(origin, text))?;
        let Decoded2 {
            mut agent,
            spec_file,
            tape_file,
        } = decoded;
        if let Some(file) = spec_file {
            let spec = Spec::read(&file).map_err(|e| AgentFileError {
                file: e.file,
                position: e.position,
                path: e.path,
                problem: e.problem,
            })?;
            agent.spec = Some((Arc::new(spec), file));
        }
        if let Some((file, extractor)) = tape_file {
            let tape = StandingTape::open(&file)?;
            agent.extractor = Some(ExtractorSpec {
                tape_file: file,
                tape: Arc::new(tape),
                ..extractor
            });
        }
        Ok(agent)
    }

    /// The session builder for one seed: the instruction, the simulated
    /// tools (writing to `ctx.state`, under `ctx.faults`), the governing
    /// spec and the extractor over its tape.
    pub fn builder(&self, ctx: &RunContext) -> LiveBuilder {
        let mut builder = Live::builder()
            .instruction(self.instruction.clone())
            .state(ctx.state.clone());
        for tool in &self.tools {
            builder = builder.tools(tool.build(&ctx.state, &ctx.faults));
        }
        if let Some((spec, _)) = &self.spec {
            builder = match spec.as_ref() {
                Spec::Flow(flow) => builder.govern_with(flow.clone(), self.enforcement),
                Spec::Conversation(convo) => builder.converse_with(convo, self.enforcement),
            };
        }
        if let Some(extractor) = &self.extractor {
            let model = TapedLlm::replaying(extractor.model.clone(), extractor.tape.clone());
            builder = builder.extract(LlmExtractor::new(
                extractor.name.clone(),
                Arc::new(model),
                extractor.prompt.clone(),
                extractor.window,
            ));
        }
        if self.planted_bug {
            builder = with_planted_bug(builder);
        }
        builder
    }

    /// Whether the agent file turned the planted bug on.
    pub fn planted_bug(&self) -> bool {
        self.planted_bug
    }

    /// The same agent with the planted bug on or off (builds with the
    /// `planted-bug` feature only).
    #[cfg(feature = "planted-bug")]
    #[doc(hidden)]
    pub fn with_planted_bug(mut self, on: bool) -> Agent {
        self.planted_bug = on;
        self
    }
}

#[cfg(feature = "planted-bug")]
fn with_planted_bug(mut builder: LiveBuilder) -> LiveBuilder {
    builder.inner = builder.inner.planted_bug();
    builder
}

#[cfg(not(feature = "planted-bug"))]
fn with_planted_bug(builder: LiveBuilder) -> LiveBuilder {
    builder
}

/// A decoded agent, before the files it names are read.
struct Decoded2 {
    agent: Agent,
    spec_file: Option<PathBuf>,
    tape_file: Option<(PathBuf, ExtractorSpec)>,
}

fn decode(name: &str, dir: &Path, value: &Value) -> Decoded<Decoded2> {
    let root = Node::root(value);
    let top = root.object("an agent file", &TOP_KEYS)?;
    let version = top
        .require("v", "the format version, 1")?
        .whole("the format version", 0..=u64::MAX)?;
    if version != AGENT_VERSION {
        return top.require("v", "")?.fail(format!(
            "version {version} is not supported (this livesim reads version {AGENT_VERSION})"
        ));
    }
    let instruction = match top.get("instruction") {
        Some(node) => node.string("the system instruction")?,
        None => String::new(),
    };
    let spec_file = match top.get("spec") {
        Some(node) => {
            let file = dir.join(node.string("a spec file name, beside agent.json")?);
            if !file.is_file() {
                return node.fail(format!("no spec file at {}", file.display()));
            }
            Some(file)
        }
        None => None,
    };
    let enforcement = match top.get("enforcement") {
        None => Enforcement::Enforce,
        Some(node) => match node.string("\"enforce\" or \"observe\"")?.as_str() {
            "enforce" => Enforcement::Enforce,
            "observe" => Enforcement::Observe,
            other => return node.fail(format!("expected \"enforce\" or \"observe\", found {other:?}")),
        },
    };
    let defaults = Repertoire::default();
    let turns = match top.get("turns") {
        Some(node) => {
            let (lo, hi) = node.span("turns", 1..=200)?;
            lo as u32..=hi as u32
        }
        None => defaults.turns.clone(),
    };
    let pauses = match top.get("pauses_ms") {
        Some(node) => {
            let (lo, hi) = node.span("pauses_ms", 0..=3_600_000)?;
            Duration::from_millis(lo)..=Duration::from_millis(hi)
        }
        None => defaults.pauses.clone(),
    };
    let call_chance = match top.get("call_chance") {
        Some(node) => node.rate("call_chance")?,
        None => defaults.call_chance,
    };
    let user_lines = top.require("user", "what the user says")?.lines("user lines")?;
    let model_lines = top.require("model", "what the model says")?.lines("model lines")?;
    let mut tools: Vec<SimTool> = Vec::new();
    if let Some(list) = top.get("tools") {
        for node in list.list("a list of tools")? {
            let tool = decode_tool(&node)?;
            if tools.iter().any(|t| t.name == tool.name) {
                return node.fail(format!("a second tool named {:?}", tool.name));
            }
            tools.push(tool);
        }
    }
    let known = |node: &Node<'_>, tool: &str| -> Decoded<()> {
        if tools.iter().any(|t| t.name == tool) {
            return Ok(());
        }
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        let hint = agent_file::nearest(tool, &names)
            .map(|n| format!("; did you mean `{n}`?"))
            .unwrap_or_default();
        node.fail(format!(
            "no tool named {tool:?} is declared{hint} (tools: {})",
            names.join(", ")
        ))
    };
    let mut invariants = Vec::new();
    if let Some(list) = top.get("invariants") {
        for node in list.list("a list of invariants")? {
            let fields = node.object("an invariant", &["at_most_once", "before"])?;
            if fields.len() != 1 {
                return node.fail(
                    "expected an invariant: {\"at_most_once\": \"tool\"} or {\"before\": [\"tool\", \"tool\"]}",
                );
            }
            if let Some(tool) = fields.get("at_most_once") {
                let name = tool.string("a tool name")?;
                known(&tool, &name)?;
                invariants.push(AgentInvariant::AtMostOnce(name));
            }
            if let Some(pair) = fields.get("before") {
                let items = pair.list("[\"first tool\", \"then tool\"]")?;
                let [first, then] = items.as_slice() else {
                    return pair.fail("expected [\"first tool\", \"then tool\"]: two tool names");
                };
                let (a, b) = (first.string("a tool name")?, then.string("a tool name")?);
                known(first, &a)?;
                known(then, &b)?;
                invariants.push(AgentInvariant::Before(a, b));
            }
        }
    }
    let mut sometimes = Vec::new();
    if let Some(list) = top.get("sometimes") {
        for node in list.list("a list of goals")? {
            let fields = node.object("a goal", &["name", "tool_ok", "state"])?;
            let goal_name = fields.require("name", "the goal's name")?.string("a name")?;
            match (fields.get("tool_ok"), fields.get("state")) {
                (Some(tool), None) => {
                    let tool_name = tool.string("a tool name")?;
                    known(&tool, &tool_name)?;
                    sometimes.push(AgentGoal::ToolOk {
                        name: goal_name,
                        tool: tool_name,
                    });
                }
                (None, Some(key)) => sometimes.push(AgentGoal::State {
                    name: goal_name,
                    key: key.string("a state key")?,
                }),
                _ => {
                    return node.fail(
                        "expected a goal with a name and one of `tool_ok` (a tool) or `state` (a key)",
                    );
                }
            }
        }
    }
    let mut faults = Vec::new();
    if let Some(node) = top.get("faults") {
        let names: Vec<&str> = FaultKind::ALL.iter().map(|k| k.name()).collect();
        let fields = node.object("fault tuning (fault kind → rate)", &names)?;
        for (key, rate) in fields.members() {
            let kind = match key.parse::<FaultKind>() {
                Ok(kind) => kind,
                Err(problem) => return rate.fail(problem),
            };
            faults.push((kind, rate.rate("a fault rate")?));
        }
    }
    let tape_file = match top.get("extractor") {
        Some(node) => Some(decode_extractor(dir, &node)?),
        None => None,
    };
    let planted_bug = match top.get("planted_bug") {
        Some(node) => {
            let on = node.boolean("true or false")?;
            if on && !cfg!(feature = "planted-bug") {
                return node.fail(
                    "`planted_bug` turns on a deliberately broken governance gate, which exists \
                     only in a livesim built with `--features planted-bug` (livesim's own test of \
                     the soak); remove the key",
                );
            }
            on
        }
        None => false,
    };
    let repertoire = Repertoire {
        tools: tools.iter().map(SimTool::model).collect(),
        user_lines,
        model_lines,
        turns,
        pauses,
        call_chance,
    };
    Ok(Decoded2 {
        agent: Agent {
            name: name.to_string(),
            dir: dir.to_path_buf(),
            instruction,
            spec: None,
            enforcement,
            tools,
            repertoire,
            extractor: None,
            invariants,
            sometimes,
            faults,
            planted_bug,
        },
        spec_file,
        tape_file,
    })
}

fn decode_tool(node: &Node<'_>) -> Decoded<SimTool> {
    let fields = node.object("a tool", &TOOL_KEYS)?;
    let name = fields.require("name", "the tool's name")?.string("a tool name")?;
    let description = match fields.get("description") {
        Some(n) => n.string("a description")?,
        None => String::new(),
    };
    let parameters = match fields.get("parameters") {
        Some(n) if n.value.is_object() => Some(n.value.clone()),
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
                return example.fail(format!("this example does not fit the parameters: {problem}"));
            }
            examples.push(example.value.clone());
        }
    }
    let latency = match fields.get("latency_ms") {
        Some(n) => {
            let (lo, hi) = n.span("latency_ms", 0..=600_000)?;
            Duration::from_millis(lo)..=Duration::from_millis(hi)
        }
        None => Duration::from_millis(10)..=Duration::from_millis(100),
    };
    let failure_rate = match fields.get("failure_rate") {
        Some(n) => n.rate("failure_rate")?,
        None => 0.0,
    };
    let result = fields
        .get("result")
        .map(|n| n.value.clone())
        .unwrap_or_else(|| serde_json::json!({ "ok": true }));
    let mut writes = Vec::new();
    if let Some(n) = fields.get("writes") {
        let Some(object) = n.value.as_object() else {
            return n.fail("expected state writes: an object of key → value template");
        };
        for (key, template) in object {
            if key.trim().is_empty() {
                return n.fail("a state key cannot be empty");
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

fn decode_extractor(dir: &Path, node: &Node<'_>) -> Decoded<(PathBuf, ExtractorSpec)> {
    let fields = node.object("an extractor", &["name", "tape", "prompt", "window", "model"])?;
    let name = fields.require("name", "the state key it writes")?.string("a name")?;
    let tape = fields.require("tape", "the tape file it answers from")?;
    let file = dir.join(tape.string("a tape file name, beside agent.json")?);
    if !file.is_file() {
        return tape.fail(format!("no tape file at {}", file.display()));
    }
    let prompt = fields.require("prompt", "the extractor's instruction")?.string("a prompt")?;
    let window = match fields.get("window") {
        Some(n) => n.whole("window", 0..=1000)? as usize,
        None => 1,
    };
    let model = match fields.get("model") {
        Some(n) => n.string("a model id")?,
        None => "gemini-2.5-flash".to_string(),
    };
    Ok((
        file.clone(),
        ExtractorSpec {
            name,
            prompt,
            window,
            model,
            tape_file: file,
            tape: Arc::new(StandingTape::default()),
        },
    ))
}

/// A tape that answers each recorded model call as often as it is asked:
/// one recording, replayed by thousands of seeded sessions, each of which
/// may ask the same question more than once.
#[derive(Debug, Default)]
struct StandingTape {
    answers: Vec<(String, TapeEntry)>,
}

impl StandingTape {
    fn open(file: &Path) -> Result<StandingTape, AgentFileError> {
        let tape = FileTape::open(file).map_err(|e| match e {
            TapeError::BadLine {
                path,
                line,
                message,
            } => AgentFileError {
                file: path,
                position: Some((usize::try_from(line).unwrap_or(usize::MAX), 1)),
                path: None,
                problem: message,
            },
            TapeError::Io { path, source } => {
                AgentFileError::plain(path, format!("cannot read the tape: {source}"))
            }
        })?;
        if let Some(torn) = tape.torn_line() {
            return Err(AgentFileError::plain(
                file.display(),
                format!("line {} is torn ({}): record the tape again", torn.line, torn.problem),
            ));
        }
        Ok(StandingTape {
            answers: tape
                .entries()
                .into_iter()
                .filter(|e| e.kind == LLM_CALL)
                .map(|e| (canonical_json(&e.input), e))
                .collect(),
        })
    }
}

impl Tape for StandingTape {
    fn record(&self, _entry: TapeEntry) -> Result<(), TapeError> {
        Err(TapeError::Io {
            path: "a soak's tape".to_string(),
            source: std::io::Error::other("it only replays"),
        })
    }

    fn next(&self, kind: &str, canonical_input: &str) -> Option<TapeEntry> {
        self.answers
            .iter()
            .find(|(input, entry)| entry.kind == kind && input == canonical_input)
            .map(|(_, entry)| entry.clone())
    }
}
