//! The seeds corpus from the command line: `livesim sim shrink` (one
//! seed's failure, shrunk and saved), `livesim sim replay` (corpus entries
//! run again), and the saving of every failure `sim soak` finds.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use livesim::Seed;
use livesim::soak::{
    Agent, Case, CorpusEntry, DEFAULT_BUDGET, Failure, ShrinkError, Soak, Summary, corpus_files,
};
use livesim::timeline::Timeline;

use super::{agent_dirs, find_agent, nearest_sim, parse_duration, soaks, usage};

/// Where failures go, and how long each may be shrunk.
#[derive(Args, Debug)]
pub struct SaveArgs {
    /// Save failures to this corpus folder, as DIR/<agent>/<seed>.json.
    /// Default: the `seeds/` beside the nearest `sim/` when the agents
    /// come from there, else `seeds/` here.
    #[arg(long, value_name = "DIR")]
    pub save: Option<PathBuf>,
    /// Save nothing.
    #[arg(long, conflicts_with = "save")]
    pub no_save: bool,
    /// How long shrinking one failure may take (`30s`, `2m`); `0` saves
    /// failures as found.
    #[arg(long, value_name = "DURATION", default_value = "30s")]
    pub shrink_time: String,
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

/// What saving needs: the folder (`None`: save nothing) and the budget.
pub struct Saving {
    dir: Option<PathBuf>,
    budget: Duration,
}

impl Saving {
    /// The saving `args` ask for, for agents that came from `home` (the
    /// nearest `sim/`, if that is where).
    pub fn from_args(args: &SaveArgs, home: Option<&Path>) -> Result<Saving, String> {
        let budget = match args.shrink_time.trim() {
            "0" | "0s" => Duration::ZERO,
            text => parse_duration(text).map_err(|e| format!("--shrink-time {e}"))?,
        };
        let dir = if args.no_save {
            None
        } else {
            Some(args.save.clone().unwrap_or_else(|| match home {
                Some(sim) => sim.parent().unwrap_or(Path::new(".")).join("seeds"),
                None => PathBuf::from("seeds"),
            }))
        };
        Ok(Saving { dir, budget })
    }
}

/// The entry for `failure`, shrunk within the budget (progress on
/// stderr, each line starting with `command`).
fn entry_for(soak: &Soak, failure: &Failure, budget: Duration, command: &str) -> CorpusEntry {
    if budget.is_zero() {
        return CorpusEntry::from_failure(failure);
    }
    eprintln!(
        "livesim sim {command}: shrinking {} seed {} ({}, {} actions, at most {})",
        failure.agent,
        failure.seed,
        failure.invariant,
        failure.script.actions().len(),
        livesim::executor::format_time(budget)
    );
    let progress = |p: &livesim::soak::ShrinkProgress| eprintln!("livesim sim {command}: {p}");
    match soak.shrink(&Case::from(failure), &failure.invariant, budget, &progress) {
        Ok(shrunk) => {
            eprintln!("livesim sim {command}: {shrunk}");
            CorpusEntry::from_shrunk(&shrunk)
        }
        Err(e @ ShrinkError::Passes { .. }) => {
            // A failure that does not come back on a second run: keep it
            // as found, and say so.
            eprintln!("livesim sim {command}: cannot shrink: {e}; saved as found");
            CorpusEntry::from_failure(failure)
        }
    }
}

/// Saves `entry` under `dir` unless the corpus has that seed already;
/// returns the line that says what happened.
fn save(entry: &CorpusEntry, dir: &Path) -> Result<String, String> {
    let path = entry.path_in(dir);
    if path.exists() {
        return Ok(format!(
            "kept {}: the corpus has this seed already ({} now, {} actions)",
            path.display(),
            entry.invariant,
            entry.case.actions()
        ));
    }
    let path = entry.save(dir).map_err(|e| e.to_string())?;
    let how = match &entry.shrunk {
        Some(note) => format!(
            "shrunk from {} in {} runs, {:.1}s",
            note.actions_before, note.runs, note.seconds
        ),
        None => "as found".to_string(),
    };
    Ok(format!(
        "saved {}: {}, {} actions ({how}); replay: livesim sim replay {}",
        path.display(),
        entry.invariant,
        entry.case.actions(),
        path.display()
    ))
}

/// What saving a soak's failures did.
#[derive(Default)]
pub struct Saved {
    /// Every entry was written (or was in the corpus already).
    pub ok: bool,
    /// The entries, shrunk, in the order saved.
    pub entries: Vec<CorpusEntry>,
    /// What to tell the user: one line per entry, and what was not saved.
    pub lines: Vec<String>,
}

/// Saves the failures of a soak: one entry per (agent, seed), at most
/// `limit` per (agent, invariant), each shrunk first (progress on stderr).
pub fn save_failures(summary: &Summary, soaks: &[Soak], saving: &Saving, limit: usize) -> Saved {
    let mut saved = Saved {
        ok: true,
        ..Saved::default()
    };
    let Some(dir) = &saving.dir else {
        return saved;
    };
    for (agent, soak) in summary.agents.iter().zip(soaks) {
        let mut per_invariant: BTreeMap<&str, usize> = BTreeMap::new();
        let mut seen: Vec<Seed> = Vec::new();
        let mut skipped = 0;
        for failure in &agent.failures {
            if seen.contains(&failure.seed) {
                continue;
            }
            let count = per_invariant.entry(failure.invariant.as_str()).or_default();
            if limit > 0 && *count >= limit {
                skipped += 1;
                continue;
            }
            *count += 1;
            seen.push(failure.seed);
            let entry = entry_for(soak, failure, saving.budget, "soak");
            match save(&entry, dir) {
                Ok(line) => saved.lines.push(line),
                Err(e) => {
                    eprintln!("livesim sim soak: cannot save a failure: {e}");
                    saved.ok = false;
                }
            }
            saved.entries.push(entry);
        }
        if skipped > 0 {
            saved.lines.push(format!(
                "{} more {} failures not saved (--save-limit {limit} per invariant; \
                 livesim sim shrink {} --seed S saves one)",
                skipped, agent.name, agent.name
            ));
        }
    }
    saved
}

pub fn shrink(args: ShrinkArgs) -> ExitCode {
    let agents = match find_agent(&args.agent) {
        Ok(agents) => agents,
        Err(message) => return usage("shrink", &message),
    };
    let saving = match Saving::from_args(&args.save, agents.home.as_deref()) {
        Ok(saving) => saving,
        Err(message) => return usage("shrink", &message),
    };
    let soak = soaks(&agents, livesim::soak::Checks::default()).remove(0);
    let run = soak.run_seed(args.seed);
    let failure = match &args.invariant {
        Some(name) => run.failures.iter().find(|f| &f.invariant == name),
        None => run.failures.first(),
    };
    let Some(failure) = failure else {
        let broken: Vec<&str> = run.failures.iter().map(|f| f.invariant.as_str()).collect();
        say!(
            "{} seed {} {}: nothing to shrink",
            soak.name(),
            args.seed,
            if broken.is_empty() {
                "passes every invariant".to_string()
            } else {
                format!("breaks {} but not {:?}", broken.join(", "), args.invariant)
            }
        );
        return ExitCode::SUCCESS;
    };
    let budget = if saving.budget.is_zero() {
        DEFAULT_BUDGET
    } else {
        saving.budget
    };
    let entry = entry_for(&soak, failure, budget, "shrink");
    say!(
        "{} seed {}: {} ({} actions, from {})",
        entry.agent,
        entry.case.seed,
        entry.invariant,
        entry.case.actions(),
        failure.script.actions().len()
    );
    say!("  case: {}", entry.case);
    for line in entry.message.lines() {
        say!("  {line}");
    }
    if let Some(dir) = &saving.dir {
        match save(&entry, dir) {
            Ok(line) => say!("{line}"),
            Err(e) => return usage("shrink", &e),
        }
    }
    ExitCode::from(1)
}

/// The agent a corpus entry names: `--agent`, or its folder under the
/// nearest `sim/`.
fn agent_of(entry: &CorpusEntry, chosen: Option<&Path>) -> Result<Agent, String> {
    if let Some(dir) = chosen {
        return Agent::load(dir).map_err(|e| e.to_string());
    }
    let sim = nearest_sim()?;
    let dir = sim.join(&entry.agent);
    if !dir.join("agent.json").is_file() {
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

pub fn replay(args: ReplayArgs) -> ExitCode {
    let mut files = Vec::new();
    for path in &args.files {
        if path.is_dir() {
            match corpus_files(path) {
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
                eprintln!("livesim sim replay: {e}");
                bad += 1;
                continue;
            }
        };
        let agent = match agent_of(&entry, args.agent.as_deref()) {
            Ok(agent) => agent,
            Err(e) => {
                eprintln!("livesim sim replay: {}: {e}", file.display());
                bad += 1;
                continue;
            }
        };
        let soak = Soak::agent(&agent);
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
                Ok(()) => eprintln!("livesim sim replay: timeline written to {}", page.display()),
                Err(e) => {
                    eprintln!(
                        "livesim sim replay: cannot write the timeline {}: {e}",
                        page.display()
                    );
                    bad += 1;
                }
            }
        }
        let head = format!(
            "{}: {} seed {} ({}, {} actions)",
            file.display(),
            entry.agent,
            entry.case.seed,
            entry.invariant,
            entry.case.actions()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_corpus_sits_beside_the_nearest_sim() {
        let args = SaveArgs {
            save: None,
            no_save: false,
            shrink_time: "0".into(),
        };
        let saving = Saving::from_args(&args, Some(Path::new("/repo/sim"))).unwrap();
        assert_eq!(saving.dir, Some(PathBuf::from("/repo/seeds")));
        assert!(saving.budget.is_zero());
        let saving = Saving::from_args(&args, None).unwrap();
        assert_eq!(saving.dir, Some(PathBuf::from("seeds")));
    }
}
