//! Scenario corpora: every `<name>.spec.json` under a folder and the
//! `<name>.<label>.scenario.json` files beside it, run as one CI job.
//!
//! A scenario runs against the spec in the same folder whose name is the
//! longest dotted prefix of its own (`booking.incident.scenario.json` runs
//! against `booking.spec.json`, label `incident`), under Enforce. A
//! scenario with no such spec beside it is not skipped: it is an error in
//! the report, like a file that cannot be read. Other files are ignored,
//! so a folder can hold agent files and notes too. Folders are walked in
//! name order (hidden ones, starting with `.`, are skipped), so the report
//! is the same on every machine. A symbolic link to a folder is followed,
//! as a user who links a shared corpus in expects; each folder is walked
//! once, however many links lead to it (by its canonical path), so a link
//! back up the tree cannot loop. A link that cannot be followed (to
//! nowhere, or a loop) is an error naming it: it may have been a folder of
//! scenarios, and passing it over would pass the run without them. So is
//! a spec or scenario that is not a file (a named pipe, a device): read,
//! a named pipe nothing writes to would hold the run forever.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::scenario::{Scenario, ScenarioFailure};
use crate::flow::{Enforcement, Spec};
use crate::jsonl::special_file;

const SPEC_SUFFIX: &str = ".spec.json";
const SCENARIO_SUFFIX: &str = ".scenario.json";

/// The spec and scenario files found under a folder.
///
/// ```
/// use livesim::simulation::Corpus;
///
/// let report = Corpus::discover("sim")?.run();
/// println!("{report}");
/// assert!(report.passed());
/// # Ok::<(), livesim::simulation::CorpusError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Corpus {
    /// The folder searched.
    pub root: PathBuf,
    /// Every `*.spec.json`, in path order.
    pub specs: Vec<PathBuf>,
    /// Every `*.scenario.json`, in path order.
    pub scenarios: Vec<PathBuf>,
}

/// A folder that cannot be searched, or holds no scenario to run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {problem}")]
pub struct CorpusError {
    /// The folder (or the entry in it) at fault.
    pub path: String,
    /// What was wrong.
    pub problem: String,
}

/// Every scenario's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CorpusReport {
    /// The folder searched.
    pub root: PathBuf,
    /// How many spec files were found.
    pub specs: usize,
    /// Specs with no scenario beside them (reported, not a failure).
    pub specs_without_scenarios: Vec<PathBuf>,
    /// One per scenario file, in path order.
    pub results: Vec<ScenarioResult>,
}

/// One scenario file's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ScenarioResult {
    /// The scenario file, relative to the root.
    pub scenario: PathBuf,
    /// The spec it runs against, relative to the root (for a scenario with
    /// no spec: the one it would run against).
    pub spec: PathBuf,
    /// The label: what the file name has between the spec's name and
    /// `.scenario.json` (may be empty).
    pub label: String,
    /// What happened.
    pub outcome: ScenarioOutcome,
}

/// How a scenario fared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum ScenarioOutcome {
    /// Every step held.
    Passed {
        /// How many steps ran.
        steps: usize,
    },
    /// A step did not hold.
    Failed {
        /// Where and why.
        failure: ScenarioFailure,
    },
    /// The scenario could not run: no spec beside it, or a file that
    /// cannot be read (named with its line).
    Error {
        /// What was wrong.
        problem: String,
    },
}

impl Corpus {
    /// Finds the spec and scenario files under `root`.
    pub fn discover(root: impl AsRef<Path>) -> Result<Corpus, CorpusError> {
        let root = root.as_ref().to_path_buf();
        let meta = std::fs::metadata(&root).map_err(|e| CorpusError {
            path: root.display().to_string(),
            problem: format!("cannot read it: {e}"),
        })?;
        if !meta.is_dir() {
            return Err(CorpusError {
                path: root.display().to_string(),
                problem: "not a folder; give the folder that holds the spec and scenario files"
                    .into(),
            });
        }
        let mut corpus = Corpus {
            root: root.clone(),
            specs: Vec::new(),
            scenarios: Vec::new(),
        };
        let mut walked = BTreeSet::new();
        corpus.walk(&root, &mut walked)?;
        // A run that checks nothing must not look like a pass.
        if corpus.scenarios.is_empty() {
            return Err(CorpusError {
                path: root.display().to_string(),
                problem: format!(
                    "no scenario files (`<name>.<label>{SCENARIO_SUFFIX}`) under it, so there is \
                     nothing to run ({} spec file{} found)",
                    corpus.specs.len(),
                    if corpus.specs.len() == 1 { "" } else { "s" }
                ),
            });
        }
        Ok(corpus)
    }

    /// Adds the spec and scenario files under `dir`; `walked` holds the
    /// canonical path of every folder already walked.
    fn walk(&mut self, dir: &Path, walked: &mut BTreeSet<PathBuf>) -> Result<(), CorpusError> {
        let unreadable = |e: std::io::Error| CorpusError {
            path: dir.display().to_string(),
            problem: format!("cannot list it: {e}"),
        };
        // A folder reached a second time (through a link) holds nothing new.
        if !walked.insert(dir.canonicalize().map_err(unreadable)?) {
            return Ok(());
        }
        let mut entries = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(unreadable)? {
            let entry = entry.map_err(unreadable)?;
            let file_type = entry.file_type().map_err(unreadable)?;
            entries.push((entry.file_name(), entry.path(), file_type));
        }
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        for (name, path, file_type) in entries {
            let name = name.to_string_lossy();
            let target = if file_type.is_symlink() {
                match std::fs::metadata(&path) {
                    Ok(target) => target.file_type(),
                    Err(e) => {
                        return Err(CorpusError {
                            path: path.display().to_string(),
                            problem: format!(
                                "a symbolic link that cannot be followed ({e}); it may stand \
                                 for a folder of scenarios: point it at one, or remove it"
                            ),
                        });
                    }
                }
            } else {
                file_type
            };
            let spec = name.ends_with(SPEC_SUFFIX) && name.len() > SPEC_SUFFIX.len();
            let scenario = name.ends_with(SCENARIO_SUFFIX) && name.len() > SCENARIO_SUFFIX.len();
            if target.is_dir() {
                if !name.starts_with('.') {
                    self.walk(&path, walked)?;
                }
            } else if let Some(kind) = special_file(target).filter(|_| spec || scenario) {
                let link = if file_type.is_symlink() {
                    "a symbolic link to "
                } else {
                    ""
                };
                return Err(CorpusError {
                    path: path.display().to_string(),
                    problem: format!(
                        "{link}{kind}, not a file: a spec or scenario found in the folder is \
                         read only from a file (a named pipe nothing writes to would hold the \
                         run forever); put the file here, or remove it"
                    ),
                });
            } else if spec {
                self.specs.push(path);
            } else if scenario {
                self.scenarios.push(path);
            }
        }
        Ok(())
    }

    /// Runs every scenario against its spec, under Enforce. Reads each spec
    /// once; never stops early.
    pub fn run(&self) -> CorpusReport {
        let mut specs: BTreeMap<&Path, Result<Spec, String>> = BTreeMap::new();
        let mut used = vec![false; self.specs.len()];
        let mut results = Vec::new();
        for path in &self.scenarios {
            let (spec_path, label) = self.spec_for(path);
            let outcome = match self.specs.iter().position(|s| s == &spec_path) {
                None => ScenarioOutcome::Error {
                    problem: format!(
                        "no spec beside it: a scenario `<name>.<label>{SCENARIO_SUFFIX}` runs \
                         against `<name>{SPEC_SUFFIX}` in the same folder, and there is no {}",
                        file_name(&spec_path)
                    ),
                },
                Some(i) => {
                    used[i] = true;
                    let spec = specs
                        .entry(self.specs[i].as_path())
                        .or_insert_with(|| Spec::read(&self.specs[i]).map_err(|e| e.to_string()));
                    run_one(spec, path)
                }
            };
            results.push(ScenarioResult {
                scenario: self.relative(path),
                spec: self.relative(&spec_path),
                label,
                outcome,
            });
        }
        CorpusReport {
            root: self.root.clone(),
            specs: self.specs.len(),
            specs_without_scenarios: self
                .specs
                .iter()
                .zip(&used)
                .filter(|(_, used)| !**used)
                .map(|(path, _)| self.relative(path))
                .collect(),
            results,
        }
    }

    /// The spec a scenario runs against (the longest dotted prefix of its
    /// name that names a spec beside it, else its first dotted part) and
    /// its label.
    fn spec_for(&self, scenario: &Path) -> (PathBuf, String) {
        let dir = scenario.parent().unwrap_or(Path::new(""));
        let file = file_name(scenario);
        let stem = file.strip_suffix(SCENARIO_SUFFIX).unwrap_or(&file);
        let spec_named = |name: &str| dir.join(format!("{name}{SPEC_SUFFIX}"));
        let mut cuts: Vec<usize> = stem.match_indices('.').map(|(i, _)| i).collect();
        cuts.push(stem.len());
        for &cut in cuts.iter().rev() {
            let candidate = spec_named(&stem[..cut]);
            if self.specs.contains(&candidate) {
                let label = stem.get(cut + 1..).unwrap_or_default().to_string();
                return (candidate, label);
            }
        }
        let first = cuts[0];
        let label = stem.get(first + 1..).unwrap_or_default().to_string();
        (spec_named(&stem[..first]), label)
    }

    fn relative(&self, path: &Path) -> PathBuf {
        path.strip_prefix(&self.root).unwrap_or(path).to_path_buf()
    }
}

fn run_one(spec: &Result<Spec, String>, path: &Path) -> ScenarioOutcome {
    let spec = match spec {
        Ok(spec) => spec,
        Err(problem) => {
            return ScenarioOutcome::Error {
                problem: format!("its spec cannot be used: {problem}"),
            };
        }
    };
    match Scenario::read(path) {
        Err(e) => ScenarioOutcome::Error {
            problem: e.to_string(),
        },
        Ok(scenario) => match scenario.run_now(spec, Enforcement::Enforce) {
            Ok(_) => ScenarioOutcome::Passed {
                steps: scenario.steps.len(),
            },
            Err(failure) => ScenarioOutcome::Failed { failure },
        },
    }
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

impl CorpusReport {
    /// Whether every scenario passed.
    pub fn passed(&self) -> bool {
        self.failures() == 0 && self.errors() == 0
    }

    /// How many scenarios passed.
    pub fn passes(&self) -> usize {
        self.count(|o| matches!(o, ScenarioOutcome::Passed { .. }))
    }

    /// How many scenarios ran and failed at a step.
    pub fn failures(&self) -> usize {
        self.count(|o| matches!(o, ScenarioOutcome::Failed { .. }))
    }

    /// How many scenarios could not run.
    pub fn errors(&self) -> usize {
        self.count(|o| matches!(o, ScenarioOutcome::Error { .. }))
    }

    fn count(&self, which: impl Fn(&ScenarioOutcome) -> bool) -> usize {
        self.results.iter().filter(|r| which(&r.outcome)).count()
    }

    /// The summary line: `flow ci: 2 passed, 1 failed, 0 errors (…)`.
    pub fn summary(&self) -> String {
        format!(
            "flow ci: {} passed, {} failed, {} error{} ({} scenario{}, {} spec{} under {})",
            self.passes(),
            self.failures(),
            self.errors(),
            if self.errors() == 1 { "" } else { "s" },
            self.results.len(),
            if self.results.len() == 1 { "" } else { "s" },
            self.specs,
            if self.specs == 1 { "" } else { "s" },
            self.root.display()
        )
    }
}

impl ScenarioResult {
    /// What the result's line says after the status word: where a failure
    /// happened and why, or why the scenario could not run.
    pub fn detail(&self) -> String {
        match &self.outcome {
            ScenarioOutcome::Passed { steps } => {
                format!("{steps} step{}", if *steps == 1 { "" } else { "s" })
            }
            ScenarioOutcome::Failed { failure } => format!(
                "failed at steps[{}] {}: {}",
                failure.index, failure.step, failure.reason
            ),
            ScenarioOutcome::Error { problem } => problem.clone(),
        }
    }

    /// `PASS`, `FAIL` or `ERROR`.
    pub fn status(&self) -> &'static str {
        match self.outcome {
            ScenarioOutcome::Passed { .. } => "PASS",
            ScenarioOutcome::Failed { .. } => "FAIL",
            ScenarioOutcome::Error { .. } => "ERROR",
        }
    }
}

/// One line per scenario (`PASS  booking/booking.incident.scenario.json
/// against booking/booking.spec.json: 15 steps`), a note per spec with no
/// scenario, and the summary.
impl fmt::Display for CorpusReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for result in &self.results {
            writeln!(
                f,
                "{:<5} {} against {}: {}",
                result.status(),
                result.scenario.display(),
                result.spec.display(),
                result.detail()
            )?;
        }
        for spec in &self.specs_without_scenarios {
            writeln!(f, "note  {}: no scenario beside it", spec.display())?;
        }
        write!(f, "{}", self.summary())
    }
}
