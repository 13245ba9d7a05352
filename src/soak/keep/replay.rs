//! Replaying a corpus folder against one soak: every kept case of its
//! agent, each checked as a replay is (every invariant, determinism),
//! every file that is not a good entry named with what is wrong, and the
//! good entries run all the same.
//!
//! A folder is the agent's own (`seeds/cart`, holding `<seed>.json`
//! files) or a corpus (`seeds`, holding `cart/`): given a corpus, the
//! agent's folder in it is read. Hidden files and `README*` are passed
//! over; any other file that is not an entry of this agent is an error,
//! a symbolic link that leads nowhere included, and so is an entry in a
//! folder inside the agent's (where no soak saves one, and none replays).

use std::fmt;
use std::path::{Path, PathBuf};

use crate::soak::Soak;
use crate::soak::check::report::Failure;
use crate::soak::keep::corpus::{CorpusEntry, json_below};
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
/// the folder cannot be listed. Anything but a folder is listed, whatever
/// it is (a symbolic link to nowhere or to itself, a pipe): reading it
/// says what is wrong with it, where passing over it would say nothing.
/// When `folder` is the agent's own, a folder in it holding `.json` files
/// is a problem too (entries go in the agent's folder itself, where they
/// are replayed); otherwise its folders are other agents'.
fn entry_files(folder: &Path, own: bool) -> Result<(Vec<PathBuf>, Vec<String>), String> {
    let listing = std::fs::read_dir(folder).map_err(|e| format!("{}: {e}", folder.display()))?;
    let (mut files, mut misplaced) = (Vec::new(), Vec::new());
    for entry in listing {
        let path = entry
            .map_err(|e| format!("{}: {e}", folder.display()))?
            .path();
        if passed_over(&path) {
            continue;
        }
        if !path.is_dir() {
            files.push(path);
            continue;
        }
        if !own {
            continue;
        }
        match json_below(&path) {
            Ok(None) => {}
            Ok(Some(json)) => misplaced.push(format!(
                "{}: a corpus entry belongs in its agent's folder itself ({}/<seed>.json), not \
                 in a folder inside it",
                json.display(),
                folder.display()
            )),
            Err(e) => misplaced.push(e.to_string()),
        }
    }
    files.sort();
    misplaced.sort();
    Ok((files, misplaced))
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
    let (files, mut errors) = match entry_files(&folder, true) {
        Ok(found) => found,
        Err(e) => return (Vec::new(), vec![e]),
    };
    let mut kept = Vec::new();
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
    // The agent's own folder: in the corpus, or given as itself.
    let own = folder != dir || dir.file_name().is_some_and(|n| n == soak.name());
    let files = match entry_files(&folder, own) {
        Ok((files, misplaced)) => {
            out.unreadable.extend(misplaced);
            files
        }
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
