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

use crate::soak::CASE_VARIABLE;
use crate::soak::Soak;
use crate::soak::check::invariants::IMPORTED;
use crate::soak::check::report::Failure;
use crate::soak::keep::corpus::{CorpusEntry, json_below};
use crate::soak::keep::kept::shown;
use crate::soak::run::plan::KeptCase;

/// What replaying a corpus folder found.
#[derive(Debug, Default)]
pub struct CorpusReplay {
    /// The folder read (or the one entry `LIVESIM_CASE` names).
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
    names_a_check(soak, file, &entry)?;
    Ok(entry)
}

/// Whether the check `entry` says it broke is one `soak` runs: an entry
/// naming another (an invariant renamed since, added to another test's
/// soak, or an agent file's) would pass whether or not its bug is back,
/// as `livesim sim replay` refuses it for.
fn names_a_check(soak: &Soak, file: &Path, entry: &CorpusEntry) -> Result<(), String> {
    let mut names = soak.failure_names();
    names.push(IMPORTED.to_string());
    if names.contains(&entry.invariant) {
        return Ok(());
    }
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let own: Vec<&str> = soak.invariants().iter().map(|i| i.name()).collect();
    let own = match own.is_empty() {
        true => "none of its own, only livesim's built-in checks".to_string(),
        false => format!("{}, and livesim's built-in checks", own.join(", ")),
    };
    let renamed = crate::jsonl::nearest(&entry.invariant, &names)
        .map(|n| format!(", set the entry's `invariant` to `{n}` if that is the check renamed"))
        .unwrap_or_default();
    Err(format!(
        "{}: the entry says it broke `{}`, which soak `{}` does not check (it checks {own}), so \
         its replay could not show whether that bug is back. Add that invariant to this soak \
         (`.invariant(\"{}\", …)`){renamed}, or delete the entry if its bug is gone for good",
        file.display(),
        entry.invariant,
        soak.name(),
        entry.invariant,
    ))
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

/// Replays `dir` (see the module) against `soak`; with `LIVESIM_CASE`
/// set, the entry it names alone (what a failing entry's replay line
/// asks for).
pub(crate) fn replay(soak: &Soak, dir: &Path) -> CorpusReplay {
    if let Some(case) = std::env::var_os(CASE_VARIABLE).filter(|v| !v.is_empty()) {
        let file = PathBuf::from(case);
        let mut out = CorpusReplay {
            dir: file.clone(),
            ..CorpusReplay::default()
        };
        replay_file(soak, file, &mut out);
        return out;
    }
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
        replay_file(soak, file, &mut out);
    }
    out
}

/// Replays the entry in `file` against `soak`, into `out`.
fn replay_file(soak: &Soak, file: PathBuf, out: &mut CorpusReplay) {
    let entry = match load_for(soak, &file) {
        Ok(entry) => entry,
        Err(e) => {
            out.unreadable.push(e);
            return;
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
