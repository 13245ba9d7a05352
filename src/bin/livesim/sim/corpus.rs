//! The seeds corpus from the command line: `livesim sim shrink` (one
//! seed's failure, shrunk and saved), `livesim sim replay` (corpus entries
//! run again), and the saving of every failure `sim soak` finds.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use livesim::Seed;
use livesim::soak::{
    Agent, CorpusEntry, DEFAULT_RUNS, Keeping, Kept, Saved, Soak, Summary, corpus_files,
};
use livesim::timeline::Timeline;

use super::{actions, agent_dirs, find_agent, nearest_sim, parse_duration_or_zero, soaks, usage};

/// Where failures go, and how long each may be shrunk.
#[derive(Args, Debug)]
pub struct SaveArgs {
    /// Save failures to this corpus folder, as DIR/<agent>/<seed>.json.
    /// Default: the `seeds/` beside the nearest `sim/` when the agents
    /// come from there, else `seeds/` here.
    #[arg(long, value_name = "DIR")]
    pub save: Option<PathBuf>,
    /// Save nothing, and leave the corpus alone: the failures kept before
    /// do not run first either.
    #[arg(long, conflicts_with = "save")]
    pub no_save: bool,
    /// The most wall time shrinking one failure may take (`30s`, `2m`):
    /// an outer cap; `0` saves failures as found.
    #[arg(long, value_name = "DURATION", default_value = "2m")]
    pub shrink_time: String,
    /// The most candidate runs shrinking one failure makes: the budget
    /// that makes a saved case the same on any machine; `0` saves
    /// failures as found.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_RUNS)]
    pub shrink_runs: u64,
}

#[derive(Args, Debug)]
pub struct ShrinkArgs {
    /// The agent: a name under the nearest `sim/`, or a folder holding
    /// agent.json.
    pub agent: String,
    /// The failing seed (hex like 0x1f, or decimal).
    #[arg(long)]
    pub seed: Seed,
    /// The invariant to keep broken (default: the first the seed breaks).
    #[arg(long)]
    pub invariant: Option<String>,
    #[command(flatten)]
    pub save: SaveArgs,
}

#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// Corpus entries (`seeds/<agent>/<seed>.json`), or corpus folders
    /// (every entry under them).
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Replay against the agent in this folder (holding agent.json)
    /// instead of the entry's agent under the nearest `sim/`.
    #[arg(long, value_name = "DIR")]
    pub agent: Option<PathBuf>,
    /// Also draw each replay's timeline: one entry file named, a page at
    /// FILE; a folder or several, a folder FILE with one page per entry
    /// (`<agent>-<seed>.html`).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

/// How failures are kept, as `args` ask, for agents that came from
/// `home` (the nearest `sim/`, if that is where): the corpus folder
/// (none with `--no-save`), the shrink budget, the limit per invariant,
/// and no timeline pages (`--html` draws them beside its report).
pub fn keeping(args: &SaveArgs, home: Option<&Path>, limit: usize) -> Result<Keeping, String> {
    let budget: Duration =
        parse_duration_or_zero(&args.shrink_time).map_err(|e| format!("--shrink-time {e}"))?;
    let corpus = if args.no_save {
        None
    } else {
        Some(args.save.clone().unwrap_or_else(|| match home {
            Some(sim) => sim.parent().unwrap_or(Path::new(".")).join("seeds"),
            None => PathBuf::from("seeds"),
        }))
    };
    Ok(Keeping {
        write: corpus.is_some(),
        corpus,
        shrink_budget: budget,
        shrink_runs: args.shrink_runs,
        per_invariant: limit,
        pages: None,
    })
}

/// Keeps the failures of a soak (shrunk, progress on stderr) and says
/// what happened to each; false when one could not be written.
pub fn keep_failures(
    summary: &mut Summary,
    soaks: &[Soak],
    keeping: &Keeping,
    limit: usize,
) -> (bool, Vec<String>) {
    if keeping.corpus.is_none() {
        return (true, Vec::new());
    }
    let ok = keeping.keep(summary, soaks, &|line| note!("livesim sim soak: {line}"));
    let mut lines: Vec<String> = summary.kept.iter().map(Kept::line).collect();
    for (agent, skipped) in &summary.not_kept {
        lines.push(format!(
            "{skipped} more {agent} failures not saved (--save-limit {limit} per invariant; \
             livesim sim shrink {agent} --seed S saves one)"
        ));
    }
    (ok, lines)
}

pub fn shrink(args: ShrinkArgs) -> ExitCode {
    let agents = match find_agent(&args.agent) {
        Ok(agents) => agents,
        Err(message) => return usage("shrink", &message),
    };
    // `--shrink-time 0` or `--shrink-runs 0` saves the failure as found,
    // as `sim soak` and `sim import` do.
    let keeping = match keeping(&args.save, agents.home.as_deref(), 1) {
        Ok(keeping) => keeping,
        Err(message) => return usage("shrink", &message),
    };
    let soak = soaks(&agents, livesim::soak::Checks::default()).remove(0);
    let run = soak.run_seed(args.seed);
    let failure = match &args.invariant {
        Some(name) => run.failures.iter().find(|f| &f.invariant == name),
        None => run.failures.first(),
    };
    let Some(failure) = failure else {
        // A name the agent does not check (a typo) is bad usage, not a
        // seed with nothing to shrink.
        if let Some(name) = &args.invariant
            && let Err(problem) = checks_for(&soak, name)
        {
            return usage("shrink", &format!("--invariant {problem}"));
        }
        let broken: Vec<&str> = run.failures.iter().map(|f| f.invariant.as_str()).collect();
        say!(
            "{} seed {} {}: nothing to shrink",
            soak.name(),
            args.seed,
            match (broken.is_empty(), &args.invariant) {
                (true, _) => "passes every invariant".to_string(),
                (false, Some(name)) => format!("breaks {} but not {name}", broken.join(", ")),
                // Unreachable: a seed that breaks one has a first.
                (false, None) => format!("breaks {}", broken.join(", ")),
            }
        );
        return ExitCode::SUCCESS;
    };
    if keeping.shrink_budget.is_zero() || keeping.shrink_runs == 0 {
        note!("livesim sim shrink: not shrunk (--shrink-time 0 or --shrink-runs 0): kept as found");
    }
    let kept = keeping.keep_failure(&soak, failure, &|line| note!("livesim sim shrink: {line}"));
    let entry = &kept.entry;
    say!(
        "{} seed {}: {} ({}, from {})",
        entry.agent,
        entry.case.seed,
        entry.invariant,
        actions(entry.case.actions()),
        failure.script.actions().len()
    );
    say!("  case: {}", entry.case);
    for line in entry.message.lines() {
        say!("  {line}");
    }
    for line in kept.excerpt.lines() {
        say!("  {line}");
    }
    match &kept.saved {
        Saved::Failed(e) => return usage("shrink", e),
        Saved::NotWritten => {}
        _ => say!("{}", kept.line()),
    }
    ExitCode::from(1)
}

/// The agent a corpus entry names: `--agent`, or its folder under the
/// nearest `sim/`.
fn agent_of(entry: &CorpusEntry, chosen: Option<&Path>) -> Result<Agent, String> {
    if let Some(dir) = chosen {
        let agent = Agent::load(dir).map_err(|e| e.to_string())?;
        belongs_to(entry, &agent, &dir.display().to_string())?;
        return Ok(agent);
    }
    let sim = nearest_sim().map_err(|_| {
        format!(
            "its agent `{}` is not under a sim/ folder here or above: pass --agent DIR, the \
             folder holding the agent's agent.json",
            entry.agent
        )
    })?;
    let dir = sim.join(&entry.agent);
    if !Agent::holds_agent_file(&dir) {
        let known: Vec<String> = agent_dirs(&sim)
            .iter()
            .filter_map(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect();
        return Err(format!(
            "its agent `{}` is not in {} (agents: {}): a corpus entry of an agent that no \
             longer exists cannot pass; delete the entry with the agent, or pass --agent DIR",
            entry.agent,
            sim.display(),
            known.join(", ")
        ));
    }
    Agent::load(&dir).map_err(|e| e.to_string())
}

/// Whether `entry` is a case of `agent` (named `chosen` on the command
/// line): an entry's script and invariant are its own agent's, so played
/// against another agent its pass or failure would say nothing about the
/// bug it was kept for, and would be taken for a verdict on it.
pub(super) fn belongs_to(entry: &CorpusEntry, agent: &Agent, chosen: &str) -> Result<(), String> {
    if entry.agent == agent.name {
        return Ok(());
    }
    Err(format!(
        "the entry belongs to agent `{}` (its \"agent\"), not to `{}` (--agent {chosen}): its \
         script and invariant are {}'s, so a replay against `{}` would say nothing about the \
         bug it was kept for; leave out --agent, or give a folder of agent `{}`",
        entry.agent, agent.name, entry.agent, agent.name, entry.agent
    ))
}

/// The entries in folder `dir`: the corpus's (`dir/<agent>/<seed>.json`),
/// or one agent's folder of it (`dir/<seed>.json`). A folder that holds
/// entries both ways is refused: which is the corpus is unclear.
fn entries_in(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let list = || {
        std::fs::read_dir(dir)
            .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", dir.display())))
    };
    let mut own: Vec<PathBuf> = list()?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| {
            path.extension().is_some_and(|e| e == "json")
                && !path.is_dir()
                && !path
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .collect();
    if own.is_empty() {
        return corpus_files(dir);
    }
    let nested = list()?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.is_dir())
        .find(|folder| corpus_files(folder).is_ok_and(|files| !files.is_empty()));
    if let Some(folder) = nested {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "{}: holds corpus entries itself and in {}: give the corpus folder \
                 (holding <agent>/<seed>.json) or one agent's folder (holding <seed>.json)",
                dir.display(),
                folder.display()
            ),
        ));
    }
    own.sort();
    Ok(own)
}

pub fn replay(args: ReplayArgs) -> ExitCode {
    let mut files = Vec::new();
    for path in &args.files {
        if path.is_dir() {
            match entries_in(path) {
                Ok(found) if found.is_empty() => {
                    say!("{}: no corpus entries", path.display());
                }
                Ok(found) => files.extend(found),
                Err(e) => return usage("replay", &e.to_string()),
            }
        } else {
            files.push(path.clone());
        }
    }
    // One file named: its page is FILE; a folder or several: pages in FILE.
    let one_file = args.files.len() == 1 && !args.files[0].is_dir();
    let (mut passed, mut failed, mut bad) = (0, 0, 0);
    for file in &files {
        let entry = match CorpusEntry::load(file) {
            Ok(entry) => entry,
            Err(e) => {
                note!("livesim sim replay: {e}");
                bad += 1;
                continue;
            }
        };
        let agent = match agent_of(&entry, args.agent.as_deref()) {
            Ok(agent) => agent,
            Err(e) => {
                note!("livesim sim replay: {}: {e}", file.display());
                bad += 1;
                continue;
            }
        };
        let soak = Soak::agent(&agent);
        if let Err(e) = names_a_check(&soak, &entry) {
            note!("livesim sim replay: {}: {e}", file.display());
            bad += 1;
            continue;
        }
        let run = soak.replay(&entry);
        if let Some(out) = &args.html {
            let page = if one_file {
                out.clone()
            } else {
                out.join(format!("{}-{}.html", entry.agent, entry.case.seed))
            };
            let written = page
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|()| Timeline::of_case(&soak, &entry.case, &run).write_html(&page));
            match written {
                Ok(()) => note!("livesim sim replay: timeline written to {}", page.display()),
                Err(e) => {
                    note!(
                        "livesim sim replay: cannot write the timeline {}: {e}",
                        page.display()
                    );
                    bad += 1;
                }
            }
        }
        let head = format!(
            "{}: {} seed {} ({}, {})",
            file.display(),
            entry.agent,
            entry.case.seed,
            entry.invariant,
            actions(entry.case.actions())
        );
        if run.failures.is_empty() {
            say!("{head}: passes");
            passed += 1;
        } else {
            say!("{head}: FAILS");
            for f in &run.failures {
                say!("  {}: {}", f.invariant, f.message.replace('\n', "\n    "));
            }
            failed += 1;
        }
    }
    say!("replayed {passed} passed, {failed} failed, {bad} unreadable");
    if bad > 0 {
        ExitCode::from(2)
    } else if failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Whether `soak` runs a check named `name`: a name it does not (a typo)
/// could never be shrunk to.
fn checks_for(soak: &Soak, name: &str) -> Result<(), String> {
    let names = soak.failure_names();
    if names.iter().any(|n| n == name) {
        return Ok(());
    }
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    // A check with an argument is named with it: `at-most-once` means
    // `at-most-once(lend_book)` when that is the only one of its kind.
    let with_argument: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| {
            n.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with('('))
        })
        .collect();
    let hint = match with_argument.as_slice() {
        [] => livesim::jsonl::nearest(name, &names)
            .map(|n| format!(" Did you mean `{n}`?"))
            .unwrap_or_default(),
        several => format!(
            " Did you mean {}? (a check with an argument is named with it)",
            several
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(" or ")
        ),
    };
    Err(format!(
        "`{name}`: agent `{}` checks no invariant of that name.{hint} Its checks: {}.",
        soak.name(),
        names.join(", ")
    ))
}

/// Whether the check `entry` says it broke is one the agent runs: a name
/// no check has (a typo, an entry saved for another agent) would make its
/// replay's pass say nothing about the bug it was kept for.
fn names_a_check(soak: &Soak, entry: &CorpusEntry) -> Result<(), String> {
    let mut names = soak.failure_names();
    names.push(livesim::soak::invariants::IMPORTED.to_string());
    if names.contains(&entry.invariant) {
        return Ok(());
    }
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let hint = livesim::jsonl::nearest(&entry.invariant, &names)
        .map(|n| format!(" Did you mean `{n}`?"))
        .unwrap_or_default();
    Err(format!(
        "the entry says it broke `{}`, which agent `{}` does not check, so its replay could not show whether that bug is back.{hint}",
        entry.invariant, entry.agent
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_corpus_sits_beside_the_nearest_sim() {
        let args = SaveArgs {
            save: None,
            no_save: false,
            shrink_time: "0".into(),
            shrink_runs: DEFAULT_RUNS,
        };
        let kept = keeping(&args, Some(Path::new("/repo/sim")), 3).unwrap();
        assert_eq!(kept.corpus, Some(PathBuf::from("/repo/seeds")));
        assert!(kept.shrink_budget.is_zero());
        let kept = keeping(&args, None, 3).unwrap();
        assert_eq!(kept.corpus, Some(PathBuf::from("seeds")));
    }
}
