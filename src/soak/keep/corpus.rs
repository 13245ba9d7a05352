//! The seeds corpus: every failure a soak found, kept as a file and
//! replayed by every later run, so a fixed bug stays fixed.
//!
//! An entry is `seeds/<agent>/<seed>.json`. It is a script file (what
//! `ScriptedServer::load` and `livesim serve` read) with one more member,
//! `regression`, saying which agent, seed, swarm, faults and decisions the
//! script failed under, which invariant it broke and how:
//!
//! ```json
//! {
//!   "v": 1,
//!   "name": "payment-0xf",
//!   "settle_ms": 200,
//!   "regression": {
//!     "v": 1,
//!     "agent": "payment",
//!     "seed": "0xf",
//!     "invariant": "refused-never-runs",
//!     "message": "get_balance (call-2) was refused (…) but ran, from t=0.000s to t=0.010s",
//!     "swarm": {"lanes": "fixed", "yield_chance": 0.0, "yield_max": 0, "sleep_chance": 0.0,
//!               "sleep_max_ms": 0, "task_yield_chance": 0.0, "delivery_jitter_ms": 0},
//!     "faults": {"weather": "calm"},
//!     "decisions": [],
//!     "shrunk": {"actions_before": 110, "runs": 45, "finished": true}
//!   },
//!   "actions": [
//!     {"call": {"id": "call-1", "name": "verify_identity", "args": {"name": "Ana Silva", "dob": "1990-05-04"}, "wait": false}},
//!     {"call": {"id": "call-2", "name": "get_balance", "args": {}}}
//!   ]
//! }
//! ```
//!
//! `faults` names the weather and each fault kind that is on with its rate
//! (`"tool-failure": 0.2`; `"close": "1011"` for the close). `decisions`,
//! when present, lists the only seeded decisions that perturb the run
//! (`lane#3`, `tool-latency#1`: see
//! [`Schedule`](crate::executor::Schedule)); every other one is calm. When
//! absent, every decision is as the seed and swarm draw it. `shrunk` is
//! absent for a failure saved as found.
//!
//! Entries are read strictly: an unknown key is an error naming the
//! nearest valid one, with the file, line and column.
//!
//! Every key, and what a damaged entry gives: `docs/formats/corpus-entry.md`.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::soak::case::Case;
use crate::soak::check::report::Failure;
use crate::soak::file_reader::{self, AgentFileError};
use crate::soak::keep::corpus_decode::{decode, faults_json, swarm_json};
use crate::soak::keep::shrink::Shrunk;
use crate::testing::ScriptedServer;

/// The version of the `regression` member this livesim reads.
pub const CORPUS_VERSION: u64 = 1;

/// How a saved case was shrunk.
#[derive(Clone, Debug, PartialEq)]
pub struct ShrinkNote {
    /// Script actions before shrinking.
    pub actions_before: usize,
    /// Candidate runs made.
    pub runs: u64,
    /// Wall time taken, in seconds. Not saved: it depends on the
    /// machine, and a kept case must be the same file on any machine (an
    /// entry read from a file says 0, or what an older file said).
    pub seconds: f64,
    /// Whether shrinking finished before its budget ran out.
    pub finished: bool,
}

/// One failure kept in the corpus.
#[derive(Clone, Debug, PartialEq)]
pub struct CorpusEntry {
    /// The agent it failed: a folder name under `sim/`, or the name a
    /// Rust user's `Soak` was given.
    pub agent: String,
    /// The invariant it broke.
    pub invariant: String,
    /// What the run said about it.
    pub message: String,
    /// Everything the run was a function of.
    pub case: Case,
    /// How it was shrunk; `None` when saved as found.
    pub shrunk: Option<ShrinkNote>,
}

impl CorpusEntry {
    /// The entry for a shrunk failure.
    pub fn from_shrunk(shrunk: &Shrunk) -> Self {
        CorpusEntry {
            agent: shrunk.agent.clone(),
            invariant: shrunk.invariant.clone(),
            message: shrunk.message.clone(),
            case: shrunk.case.clone(),
            shrunk: Some(ShrinkNote {
                actions_before: shrunk.actions_before,
                runs: shrunk.runs,
                seconds: (shrunk.elapsed.as_secs_f64() * 10.0).round() / 10.0,
                finished: shrunk.finished,
            }),
        }
    }

    /// The entry for a failure as a soak found it (not shrunk).
    pub fn from_failure(failure: &Failure) -> Self {
        CorpusEntry {
            agent: failure.agent.clone(),
            invariant: failure.invariant.clone(),
            message: failure.message.clone(),
            case: Case::from(failure),
            shrunk: None,
        }
    }

    /// Where the entry goes in corpus folder `dir`:
    /// `dir/<agent>/<seed>.json`.
    pub fn path_in(&self, dir: impl AsRef<Path>) -> PathBuf {
        dir.as_ref()
            .join(&self.agent)
            .join(format!("{}.json", self.case.seed))
    }

    /// The entry as JSON: the script file's members, `regression` before
    /// the actions.
    pub fn to_json(&self) -> Value {
        let script = self.case.script.to_json();
        let mut regression = Map::new();
        regression.insert("v".into(), json!(CORPUS_VERSION));
        regression.insert("agent".into(), json!(self.agent));
        regression.insert("seed".into(), json!(self.case.seed.to_string()));
        regression.insert("invariant".into(), json!(self.invariant));
        regression.insert("message".into(), json!(self.message));
        regression.insert("swarm".into(), swarm_json(&self.case.swarm));
        regression.insert("faults".into(), faults_json(&self.case.faults));
        if let Some(decisions) = &self.case.decisions {
            let names: Vec<String> = decisions.iter().map(ToString::to_string).collect();
            regression.insert("decisions".into(), json!(names));
        }
        if let Some(note) = &self.shrunk {
            regression.insert(
                "shrunk".into(),
                json!({
                    "actions_before": note.actions_before,
                    "runs": note.runs,
                    "finished": note.finished,
                }),
            );
        }
        let mut out = Map::new();
        // Every member of the script file but its actions, which follow
        // the regression.
        for key in ["v", "name", "settle_ms", "session_id"] {
            if let Some(value) = script.get(key) {
                out.insert(key.into(), value.clone());
            }
        }
        out.insert("regression".into(), Value::Object(regression));
        out.insert("actions".into(), script["actions"].clone());
        Value::Object(out)
    }

    /// Writes the entry to `dir/<agent>/<seed>.json` (folders made as
    /// needed) and returns the path.
    ///
    /// The file is written beside the entry and renamed over it, so
    /// whatever is at the path is replaced, never written through: a
    /// symbolic link there (one to nowhere, or out of the corpus) is
    /// replaced by the entry and what it points to is left alone, and a
    /// crash leaves the old entry or the new one, never half of one. An
    /// agent whose name is not a plain folder name (letters, digits, `-`,
    /// `_` and `.`, not starting with `.`) is refused: its entries would
    /// land outside the corpus, or where `sim replay` refuses them.
    pub fn save(&self, dir: impl AsRef<Path>) -> std::io::Result<PathBuf> {
        let dir = dir.as_ref();
        if let Some(problem) = agent_name_problem(&self.agent) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("{}: {problem}", dir.display()),
            ));
        }
        let path = self.path_in(dir);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| located(parent, e))?;
        }
        let mut text = serde_json::to_string_pretty(&self.to_json()).unwrap_or_default();
        text.push('\n');
        crate::jsonl::write_replacing(&path, text.as_bytes()).map_err(|e| located(&path, e))?;
        Ok(path)
    }

    /// Reads an entry file. A path that is not a regular file (a folder,
    /// a device, a pipe) is refused unread, as the agent's own files are;
    /// one that is a symbolic link that cannot be followed (to nowhere,
    /// or to itself) is named as such, with where it points.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, AgentFileError> {
        let path = path.as_ref();
        let origin = path.display().to_string();
        let link = std::fs::read_link(path).ok();
        let problem = match (std::fs::metadata(path), &link) {
            (Ok(meta), _) if meta.is_file() => None,
            (Ok(_), _) => Some(
                "not a regular file: a corpus entry is one (<seed>.json, as a soak saves it)"
                    .to_string(),
            ),
            (Err(e), Some(target)) => Some(format!(
                "a symbolic link to {}, which cannot be read: {e}",
                target.display()
            )),
            // Not there, or not readable: the read says why.
            (Err(_), None) => None,
        };
        if let Some(problem) = problem {
            return Err(AgentFileError::plain(&origin, problem));
        }
        let text = crate::jsonl::read_text(path)
            .map_err(|problem| AgentFileError::plain(&origin, problem))?;
        Self::from_json_str(&text, &origin)
    }

    /// Reads entry text; `origin` names it in errors.
    pub fn from_json_str(text: &str, origin: &str) -> Result<Self, AgentFileError> {
        let value = file_reader::parse(origin, text)?;
        let script =
            ScriptedServer::from_json_str(text, origin).map_err(|e| script_error(origin, e));
        let decoded = decode(&value).map_err(|m| m.locate(origin, text))?;
        let script = script?;
        Ok(CorpusEntry {
            agent: decoded.agent,
            invariant: decoded.invariant,
            message: decoded.message,
            case: Case {
                seed: decoded.seed,
                swarm: decoded.swarm,
                faults: decoded.faults,
                script,
                decisions: decoded.decisions,
            },
            shrunk: decoded.shrunk,
        })
    }
}

/// A script reader's error as this file's: its words, its place moved to
/// the front (`file:line:column: …`).
fn script_error(origin: &str, error: crate::testing::ScriptError) -> AgentFileError {
    let text = error.to_string();
    let message = text
        .strip_prefix(&format!("script {origin}: "))
        .unwrap_or(&text);
    let place = message.find(" at line ").and_then(|at| {
        let rest = &message[at + " at line ".len()..];
        let (line, rest) = rest.split_once(", column ")?;
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let end = at + " at line ".len() + line.len() + ", column ".len() + digits;
        Some(((line.parse().ok()?, rest[..digits].parse().ok()?), at..end))
    });
    match place {
        Some((position, cut)) => AgentFileError {
            file: origin.to_string(),
            position: Some(position),
            path: None,
            problem: format!("{}{}", &message[..cut.start], &message[cut.end..]),
        },
        None => AgentFileError::plain(origin, message),
    }
}

fn located(path: &Path, e: std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

/// Why `name` cannot be an agent's name in a corpus, if it cannot. The
/// name is the agent's folder in the corpus (`<corpus>/<name>/`) and the
/// `agent` of each of its entries, and the replay lines a soak prints
/// name the entry's path: letters, digits, `-`, `_` and `.`, not starting
/// with `.` (no folder above, no hidden folder, nothing a shell splits).
/// Entries are read with the same rule.
pub(crate) fn agent_name_problem(name: &str) -> Option<String> {
    let plain = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !name.starts_with('.');
    (!plain).then(|| {
        format!(
            "{name:?} cannot be an agent's name: it is the agent's folder in the seeds corpus \
             and the `agent` of each entry there, so it holds {AGENT_NAME_RULE}"
        )
    })
}

/// What an agent's name holds, as messages say it.
pub(crate) const AGENT_NAME_RULE: &str =
    "letters, digits, `-`, `_` and `.` only, not starting with `.`";

/// Every entry file under corpus folder `dir` (`dir/<agent>/*.json`), in
/// order; a folder with no entries gives none. A file elsewhere in it
/// that is not `.json` is skipped (a README). A `.json` file anywhere
/// else is an error naming it: directly in `dir`, or in a folder inside an
/// agent's folder (hidden ones aside), it belongs in its agent's folder,
/// where it would be replayed. Every `.json` name in an agent's folder
/// that is not a folder is listed whatever it is (a symbolic link to
/// nowhere, or to itself), so reading it says what is wrong with it
/// rather than it being passed over without a word.
pub fn corpus_files(dir: impl AsRef<Path>) -> std::io::Result<Vec<PathBuf>> {
    let dir = dir.as_ref();
    let stray = |path: &Path, inside: &str| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "{}: a corpus entry belongs in its agent's folder{inside} \
                 ({}/<agent>/<seed>.json)",
                path.display(),
                dir.display()
            ),
        )
    };
    let mut files = Vec::new();
    let mut folders = Vec::new();
    for path in listing(dir)? {
        if path.is_dir() {
            folders.push(path);
        } else if is_json(&path) {
            return Err(stray(&path, ""));
        }
    }
    folders.sort();
    for folder in folders {
        let mut entries = Vec::new();
        for path in listing(&folder)? {
            if path.is_dir() {
                if !hidden(&path)
                    && let Some(json) = json_below(&path)?
                {
                    return Err(stray(&json, " itself, not in a folder inside it"));
                }
            } else if is_json(&path) {
                entries.push(path);
            }
        }
        entries.sort();
        files.extend(entries);
    }
    Ok(files)
}

/// The paths in folder `dir`; an entry that cannot be listed is an error
/// naming the folder, not one left out.
fn listing(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    std::fs::read_dir(dir)
        .map_err(|e| located(dir, e))?
        .map(|entry| entry.map(|e| e.path()).map_err(|e| located(dir, e)))
        .collect()
}

fn is_json(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "json")
}

/// A name starting with `.`: a folder the user hid, passed over.
fn hidden(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with('.'))
}

/// The first `.json` name (in name order) in folder `dir` or a folder
/// below it. Links to folders below `dir` are not followed (a link to an
/// ancestor would never end), and hidden folders are passed over, as
/// they are in an agent's folder.
pub(crate) fn json_below(dir: &Path) -> std::io::Result<Option<PathBuf>> {
    let mut paths = listing(dir)?;
    paths.sort();
    for path in paths {
        let meta = std::fs::symlink_metadata(&path).map_err(|e| located(&path, e))?;
        if meta.is_dir() {
            if !hidden(&path)
                && let Some(json) = json_below(&path)?
            {
                return Ok(Some(json));
            }
        } else if is_json(&path) {
            return Ok(Some(path));
        }
    }
    Ok(None)
}
