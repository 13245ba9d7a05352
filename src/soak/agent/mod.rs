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
//!   "faults": {"parallel-calls": 0.5},
//!   "resumable": false
//! }
//! ```
//!
//! `docs/formats/agent.md` (in the repository) says what each key means,
//! its default and its bounds.

pub(crate) mod file;
pub(crate) mod final_state;
mod folder;
pub(crate) mod phases;
mod pondering;
pub(crate) mod repertoire;
pub(crate) mod resolvers;
pub(crate) mod schema;
pub(crate) mod simulated_user;
pub(crate) mod state_guard;
pub(crate) mod temporal;
pub(crate) mod tool_file;
pub(crate) mod tools;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::executor::Seed;
use crate::flow::{Enforcement, Spec};
use crate::llm::LlmExtractor;
use crate::session::{Live, LiveBuilder};
use crate::soak::Faults;
use crate::soak::check::budget::Budget;
use crate::soak::check::spec_as_written::WrittenSpec;
use crate::soak::file_reader::{self, AgentFileError, Node};
use crate::soak::generate::faults::FaultKind;
use crate::soak::run::record::{ExecutionOutcome, RunRecord};
use crate::state::State;
use crate::tape::{
    FileTape, LLM_CALL, Tape, TapeEntry, TapeError, TapedLlm, canonical_json, model_output_problem,
};
use file::{Decoded2, decode};
pub use final_state::FinalState;
pub use phases::{PhasePlan, PhaseRule};
use pondering::Pondering;
use repertoire::Repertoire;
pub use resolvers::SimResolver;
pub use simulated_user::{Said, SimulatedUser, USER_CALL, USER_MODEL};
pub use temporal::Sustained;
use tools::SimTool;

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
            AgentGoal::State { key, .. } => run
                .journal
                .iter()
                .any(|m| &m.key == key && !m.value.is_null() && m.value != Value::Bool(false)),
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
    /// How long its model takes to answer (a draw of the seed's).
    pub latency: std::ops::RangeInclusive<std::time::Duration>,
    /// The tape file.
    pub tape_file: PathBuf,
    pub(crate) tape: Arc<StandingTape>,
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
    /// Its latency budgets (`"budgets"`), checked as invariants.
    pub budgets: Vec<Budget>,
    /// What its state must be when a run ends (`"final_state"`), checked
    /// as invariants.
    pub final_state: Vec<FinalState>,
    /// A user played by a model, from its tape (`"simulated_user"`).
    pub simulated_user: Option<SimulatedUser>,
    /// The phases of its conversations (`"phases"`), checked by
    /// `phases-follow-spec`.
    pub phases: Option<PhasePlan>,
    /// Its temporal patterns (`"temporal"`), checked by
    /// `patterns-follow-spec`.
    pub temporal: Vec<Sustained>,
    /// The resolvers of its conversation's resolved slots
    /// (`"resolvers"`), checked by `resolvers-follow-spec`.
    pub resolvers: Vec<SimResolver>,
    /// Its fault tuning: kinds on in every seed that is not calm.
    pub faults: Vec<(FaultKind, f64)>,
    /// The spec file as read apart from livesim's spec reader, checked
    /// against the flow each session enforces (`spec-as-written`).
    pub(crate) spec_as_written: Option<Arc<WrittenSpec>>,
    /// The planted bug the agent file names (test builds only).
    pub(crate) planted_bug: Option<String>,
}

impl Agent {
    /// Reads the agent in folder `dir` (its `agent.json` and the files it
    /// names). Every mistake is an error naming the file, the line and
    /// column, and the key. The folder's name is the agent's name: one a
    /// corpus cannot keep (a space, a leading `.`) is an error too.
    pub fn load(dir: impl AsRef<Path>) -> Result<Agent, AgentFileError> {
        let dir = dir.as_ref();
        let file = dir.join(folder::AGENT_FILE);
        let origin = file.display().to_string();
        if let Some(problem) = folder::not_a_file(&file) {
            return Err(AgentFileError::plain(&origin, problem));
        }
        let text = crate::jsonl::read_text(&file)
            .map_err(|problem| AgentFileError::plain(&origin, problem))?;
        let name = dir
            .canonicalize()
            .unwrap_or_else(|_| dir.to_path_buf())
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "agent".to_string());
        // Said before anything runs: the name becomes a folder of the
        // seeds corpus and a field of its entries, which `sim replay`
        // reads with this same rule.
        if let Some(problem) = crate::soak::keep::corpus::agent_name_problem(&name) {
            return Err(AgentFileError::plain(
                dir.display(),
                format!("the folder's name is the agent's name, and {problem}; rename the folder"),
            ));
        }
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
        let value = file_reader::parse(origin, text)?;
        let decoded = decode(name, dir, &value).map_err(|m| m.locate(origin, text))?;
        let Decoded2 {
            mut agent,
            spec_file,
            tape_file,
        } = decoded;
        if let Some(file) = spec_file {
            // Read once: livesim's reader and the soak's own both take the text.
            let text = crate::jsonl::read_text(&file)
                .map_err(|problem| AgentFileError::plain(file.display(), problem))?;
            let spec = Spec::from_json(&text, &file.display().to_string()).map_err(|e| {
                AgentFileError {
                    file: e.file,
                    position: e.position,
                    path: e.path,
                    problem: e.problem,
                }
            })?;
            let written = WrittenSpec::read(&text).map_err(|problem| {
                AgentFileError::plain(
                    file.display(),
                    format!("the soak's own reading of this spec failed: {problem}"),
                )
            })?;
            agent.spec = Some((Arc::new(spec), file));
            agent.spec_as_written = Some(Arc::new(written));
        }
        let spec = agent.spec.as_ref().map(|(spec, file)| {
            let name = file.file_name().unwrap_or(file.as_os_str());
            (spec.as_ref(), name.to_string_lossy())
        });
        resolvers::fit(&Node::root(&value), &agent.resolvers, spec)
            .map_err(|m| m.locate(origin, text))?;
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
    /// spec, the extractor over its tape and, for a resumable agent,
    /// resumption (transparent or not, as its file says).
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
                Spec::Conversation(convo) => builder.converse_with(
                    &resolvers::attached(convo, &self.resolvers, &ctx.faults),
                    self.enforcement,
                ),
            };
        }
        if let Some(extractor) = &self.extractor {
            let tape = Arc::new(NotingTape {
                tape: extractor.tape.clone(),
                state: ctx.state.clone(),
            });
            let model = Pondering::new(
                TapedLlm::replaying(extractor.model.clone(), tape),
                &extractor.name,
                extractor.latency.clone(),
            );
            builder = builder.extract(LlmExtractor::new(
                extractor.name.clone(),
                Arc::new(model),
                extractor.prompt.clone(),
                extractor.window,
            ));
        }
        if let Some(plan) = &self.phases {
            builder = builder.phases(plan.phases());
        }
        for pattern in &self.temporal {
            builder = builder.temporal(pattern.pattern());
        }
        // An agent that reacts to its state watches it: each key a tool
        // writes, so `watchers-follow-journal` checks the watch path.
        let extractor = self.extractor.as_ref().map(|e| e.name.as_str());
        for key in final_state::state_keys(&self.tools, extractor.as_slice()) {
            builder = builder.watch(key, |_, _, _, _| {});
        }
        if self.repertoire.resumption.is_on() {
            builder = builder.resumption(self.repertoire.resumption.clone());
        }
        if self.repertoire.manual_activity {
            builder.inner = builder.inner.setup_field(
                "realtimeInputConfig",
                serde_json::json!({ "automaticActivityDetection": { "disabled": true } }),
            );
        }
        if let Some(bug) = &self.planted_bug {
            builder = with_planted_bug(builder, bug);
        }
        builder
    }

    /// Whether the agent file turned resumption on (`"resumable": true`,
    /// or `{"transparent": false}`): its sessions resume on new
    /// connections.
    pub fn resumable(&self) -> bool {
        self.repertoire.resumption.is_on()
    }

    /// Whether the agent file turned a planted bug on.
    pub fn planted_bug(&self) -> bool {
        self.planted_bug.is_some()
    }

    /// The same agent with the first planted bug on or off (builds with
    /// the `planted-bug` feature only).
    #[cfg(feature = "planted-bug")]
    #[doc(hidden)]
    pub fn with_planted_bug(mut self, on: bool) -> Agent {
        self.planted_bug = on.then(|| "refused-call-runs".to_string());
        self
    }

    /// The same agent with planted bug `bug` (builds with the
    /// `planted-bug` feature only).
    #[cfg(feature = "planted-bug")]
    #[doc(hidden)]
    pub fn with_planted(mut self, bug: crate::session::PlantedBug) -> Agent {
        self.planted_bug = Some(bug.name().to_string());
        self
    }
}

#[cfg(feature = "planted-bug")]
fn with_planted_bug(mut builder: LiveBuilder, bug: &str) -> LiveBuilder {
    if let Ok(bug) = bug.parse() {
        builder.inner = builder.inner.plant(bug);
    }
    builder
}

#[cfg(not(feature = "planted-bug"))]
fn with_planted_bug(builder: LiveBuilder, _bug: &str) -> LiveBuilder {
    builder
}

/// A tape that answers each recorded model call as often as it is asked:
/// one recording, replayed by thousands of seeded sessions, each of which
/// may ask the same question more than once.
#[derive(Debug, Default)]
pub(crate) struct StandingTape {
    answers: Vec<(String, TapeEntry)>,
}

impl StandingTape {
    pub(crate) fn open(file: &Path) -> Result<StandingTape, AgentFileError> {
        // Every model call on it is answered by the extractor's model.
        let tape = FileTape::open_checked(file, model_output_problem).map_err(|e| match e {
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
                format!(
                    "line {} is torn ({}): record the tape again",
                    torn.line, torn.problem
                ),
            ));
        }
        let answers: Vec<_> = tape
            .entries()
            .into_iter()
            .filter(|e| e.kind == LLM_CALL)
            .map(|e| (canonical_json(&e.input), e))
            .collect();
        // An extractor with nothing to answer from misses every question:
        // its goals go unreached with no word of why.
        if answers.is_empty() {
            return Err(AgentFileError::plain(
                file.display(),
                format!(
                    "the tape holds no model calls (entries of kind `{LLM_CALL}`), so the \
                     extractor could answer nothing: record it with TapedLlm::recording"
                ),
            ));
        }
        Ok(StandingTape { answers })
    }
}

/// The state key a run's extractor writes when its question is not on
/// its tape (the `tape-miss` goal reads it).
pub(crate) const TAPE_MISS: &str = "soak:tape_miss";

/// The state key a run's extractor writes every question it asks to (the
/// `extractor-input` invariant reads them from the journal).
pub(crate) const EXTRACTOR_ASKED: &str = "soak:extractor_asked";

/// One run's view of its agent's tape: every question is noted in the
/// session's state (and so its journal), and so is a question the tape
/// does not hold.
struct NotingTape {
    tape: Arc<StandingTape>,
    state: State,
}

impl Tape for NotingTape {
    fn record(&self, entry: TapeEntry) -> Result<(), TapeError> {
        self.tape.record(entry)
    }

    fn next(&self, kind: &str, canonical_input: &str) -> Option<TapeEntry> {
        self.state.set(EXTRACTOR_ASKED, canonical_input.to_string());
        let found = self.tape.next(kind, canonical_input);
        if found.is_none() {
            self.state.set(TAPE_MISS, canonical_input.to_string());
        }
        found
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
