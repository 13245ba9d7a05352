//! Replaying a corpus folder against one soak: every kept case of its
//! agent, each checked as a replay is (every invariant, determinism),
//! every file that is not a good entry named with what is wrong, and the
//! good entries run all the same.
//!
//! A folder is the agent's own (`seeds/cart`, holding `<seed>.json`
//! files) or a corpus (`seeds`, holding `cart/`): given a corpus, the
//! agent's folder in it is read. Hidden files and `README*` are passed
//! over; any other file that is not an entry of this agent is an error.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::soak::Soak;
use crate::soak::check::report::Failure;
use crate::soak::keep::corpus::CorpusEntry;
use crate::soak::keep::kept::shown;
use crate::soak::run::plan::KeptCase;

/// What replaying a corpus folder found.
#[derive(Debug, Default)]
pub struct CorpusReplay {
    /// The folder read.
    pub dir: PathBuf,
    /// The entries that pass today.
    pub passed: Vec<PathBuf>,
    /// The entries that still fail, with what each broke.
    pub failed: Vec<(PathBuf, Vec<Failure>)>,
    /// Files that are not good entries of this agent, each with what is
    /// wrong (the file is named in the message).
    pub unreadable: Vec<String>,
}

impl CorpusReplay {
    /// Whether every entry passes and every file could be read.
    pub fn passed(&self) -> bool {
        self.failed.is_empty() && self.unreadable.is_empty()
    }
}

impl fmt::Display for CorpusReplay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "corpus {}: {} passed, {} failed, {} unreadable",
            self.dir.display(),
            self.passed.len(),
            self.failed.len(),
            self.unreadable.len()
        )?;
        for (path, failures) in &self.failed {
            writeln!(f, "FAILS {}", path.display())?;
            for failure in failures {
                writeln!(
                    f,
                    "  {}: {}",
                    failure.invariant,
                    failure.message.replace('\n', "\n    ")
                )?;
                if !failure.excerpt.is_empty() {
                    writeln!(f, "    {}", failure.excerpt.replace('\n', "\n    "))?;
                }
                writeln!(f, "  replay: {}", failure.replay)?;
            }
        }
        for problem in &self.unreadable {
            writeln!(f, "UNREADABLE {problem}")?;
        }
        Ok(())
    }
}

/// The folder of `dir` that holds `agent`'s entries.
fn agent_folder(dir: &Path, agent: &str) -> PathBuf {
    let inner = dir.join(agent);
    if inner.is_dir() {
        inner
    } else {
        dir.to_path_buf()
    }
}

/// Whether a file in a corpus folder is passed over (not an entry, and
/// not a mistake either).
fn passed_over(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    name.starts_with('.') || name.starts_with("README")
}

/// Every file in `folder` that should be an entry, in name order; or why
/// the folder cannot be listed.
fn entry_files(folder: &Path) -> Result<Vec<PathBuf>, String> {
    let listing = std::fs::read_dir(folder).map_err(|e| format!("{}: {e}", folder.display()))?;
    let mut files: Vec<PathBuf> = listing
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file() && !passed_over(p))
        .collect();
    files.sort();
    Ok(files)
}

/// The entry in `file`, if it is a good entry of `soak`'s agent.
pub(crate) fn load_for(soak: &Soak, file: &Path) -> Result<CorpusEntry, String> {
    if file.extension().is_none_or(|e| e != "json") {
        return Err(format!(
            "{}: not a corpus entry (entries are <seed>.json files, as a soak saves them)",
            file.display()
        ));
    }
    let entry = CorpusEntry::load(file).map_err(|e| e.to_string())?;
    if entry.agent != soak.name() {
        return Err(format!(
            "{}: an entry of agent `{}`, and this soak runs `{}` (the only agent it knows); \
             move the entry to that agent's folder, or replay it with that agent's soak",
            file.display(),
            entry.agent,
            soak.name()
        ));
    }
    Ok(entry)
}

/// The kept cases of `soak`'s agent in `corpus` (its `<agent>/` folder),
/// to run first, and what could not be read. A corpus that does not
/// exist yet holds nothing.
pub(crate) fn kept_cases(soak: &Soak, corpus: Option<&Path>) -> (Vec<KeptCase>, Vec<String>) {
    let Some(corpus) = corpus else {
        return (Vec::new(), Vec::new());
    };
    let folder = corpus.join(soak.name());
    if !folder.is_dir() {
        return (Vec::new(), Vec::new());
    }
    let files = match entry_files(&folder) {
        Ok(files) => files,
        Err(e) => return (Vec::new(), vec![e]),
    };
    let (mut kept, mut errors) = (Vec::new(), Vec::new());
    for file in files {
        match load_for(soak, &file) {
            Ok(entry) => kept.push(KeptCase {
                target: 0,
                replay: soak.replay_case_command(&shown(&file)),
                case: entry.case,
            }),
            Err(e) => errors.push(e),
        }
    }
    (kept, errors)
}

/// Replays `dir` (see the module) against `soak`.
pub(crate) fn replay(soak: &Soak, dir: &Path) -> CorpusReplay {
    let folder = agent_folder(dir, soak.name());
    let mut out = CorpusReplay {
        dir: folder.clone(),
        ..CorpusReplay::default()
    };
    if !folder.exists() {
        // Nothing kept yet: nothing to replay.
        return out;
    }
    let files = match entry_files(&folder) {
        Ok(files) => files,
        Err(e) => {
            out.unreadable.push(e);
            return out;
        }
    };
    for file in files {
        let entry = match load_for(soak, &file) {
            Ok(entry) => entry,
            Err(e) => {
                out.unreadable.push(e);
                continue;
            }
        };
        let mut run = soak.replay(&entry);
        if run.failures.is_empty() {
            out.passed.push(file);
        } else {
            let line = soak.replay_case_command(&shown(&file));
            for failure in &mut run.failures {
                failure.replay = line.clone();
            }
            out.failed.push((file, run.failures));
        }
    }
    out
}
