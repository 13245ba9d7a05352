//! Keeping a soak's failures: each one shrunk, written to the corpus,
//! drawn as a timeline page, and told with the line that replays the kept
//! case. `livesim sim soak` and `Soak::run` both keep failures this way.
//!
//! A failure is kept once per (agent, seed), at most
//! [`per_invariant`](Keeping::per_invariant) per (agent, invariant) (the
//! lowest seeds); the rest are counted. A seed the corpus already holds is
//! left as it is (its entry runs first next time anyway).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::executor::Seed;
use crate::soak::Soak;
use crate::soak::case::{Case, actions_said};
use crate::soak::check::excerpt::excerpt;
use crate::soak::check::report::{Failure, Summary};
use crate::soak::keep::corpus::CorpusEntry;
use crate::soak::keep::shrink::{ShrinkBudget, ShrinkError, ShrinkProgress};
use crate::timeline::Timeline;

/// Failures kept per agent and invariant, by default.
pub const KEEP_PER_INVARIANT: usize = 3;

/// What a soak does with the failures it finds.
#[derive(Clone, Debug, PartialEq)]
pub struct Keeping {
    /// The corpus folder (`<corpus>/<agent>/<seed>.json`): where entries
    /// go, and where a seed already kept is found. `None`: no corpus.
    pub corpus: Option<PathBuf>,
    /// Whether new entries are written (`false` in CI, which only reads
    /// the corpus: `LIVESIM_REGRESSIONS=read`).
    pub write: bool,
    /// The most wall time shrinking one failure may take (an outer cap);
    /// zero keeps it as found.
    pub shrink_budget: Duration,
    /// The most candidate runs shrinking one failure makes (the budget
    /// proper: the same case on any machine); zero keeps it as found.
    pub shrink_runs: u64,
    /// At most this many failures per agent and invariant, the lowest
    /// seeds (0: every one).
    pub per_invariant: usize,
    /// The folder each kept failure's timeline page goes to, as
    /// `<agent>-<seed>.html`; `None`: no page.
    pub pages: Option<PathBuf>,
}

/// Where a kept case is in the corpus.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Saved {
    /// Written now.
    New(PathBuf),
    /// The corpus had this seed already; left as it was.
    Already(PathBuf),
    /// Not written (no corpus, or the corpus is only read).
    NotWritten,
    /// Writing failed.
    Failed(String),
}

/// One failure a soak kept: its case shrunk, in the corpus, drawn.
#[derive(Clone, Debug)]
pub struct Kept {
    /// The failure as the soak found it.
    pub found: Failure,
    /// The kept case (shrunk, or as found), its invariant and message.
    pub entry: CorpusEntry,
    /// Why it was kept as found, when shrinking did not work.
    pub note: Option<String>,
    /// What happened in the kept case's run (see the failure report).
    pub excerpt: String,
    /// Where it is in the corpus.
    pub saved: Saved,
    /// The one line that replays the kept case.
    pub replay: String,
    /// Where its timeline page was written, or why it was not.
    pub page: Option<Result<PathBuf, String>>,
}

impl Kept {
    /// The corpus file, when there is one.
    pub fn path(&self) -> Option<&Path> {
        match &self.saved {
            Saved::New(path) | Saved::Already(path) => Some(path),
            Saved::NotWritten | Saved::Failed(_) => None,
        }
    }
}

impl fmt::Display for Kept {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let entry = &self.entry;
        let how = match &entry.shrunk {
            Some(note) => format!(
                "shrunk from {} to {} in {} runs ({:.1}s{})",
                note.actions_before,
                actions_said(entry.case.actions()),
                note.runs,
                note.seconds,
                if note.finished {
                    ""
                } else {
                    ", the budget ran out first"
                }
            ),
            None => format!("{}, as found", actions_said(entry.case.actions())),
        };
        writeln!(
            f,
            "FAILED {} seed {}: {}, {how}",
            entry.agent, entry.case.seed, entry.invariant
        )?;
        for line in entry.message.lines() {
            writeln!(f, "  {line}")?;
        }
        if let Some(note) = &self.note {
            writeln!(f, "  ({note})")?;
        }
        writeln!(f, "  case: {}", entry.case)?;
        for line in self.excerpt.lines() {
            writeln!(f, "  {line}")?;
        }
        match &self.saved {
            Saved::New(path) => writeln!(
                f,
                "  kept: {} (it runs first from now on; commit it with the fix)",
                shown(path).display()
            )?,
            Saved::Already(path) => writeln!(
                f,
                "  kept: {} (the corpus had this seed already)",
                shown(path).display()
            )?,
            Saved::NotWritten => writeln!(f, "  kept: not written (the corpus is read only)")?,
            Saved::Failed(why) => writeln!(f, "  kept: NOT WRITTEN: {why}")?,
        }
        match &self.page {
            Some(Ok(path)) => writeln!(f, "  timeline: {}", shown(path).display())?,
            Some(Err(why)) => writeln!(f, "  timeline: not written ({why})")?,
            None => {}
        }
        writeln!(f, "  replay: {}", self.replay)?;
        // A shrunk entry replays a smaller case than the seed did; the seed
        // as found is worth its line whether the entry is new or was kept
        // by an earlier soak.
        if self.path().is_some() && entry.shrunk.is_some() {
            write!(f, "  the seed as found: {}", self.found.replay)?;
        }
        Ok(())
    }
}

impl Kept {
    /// The kept failure in one line: where it is, what it broke, how
    /// small it is, and the line that replays it.
    pub fn line(&self) -> String {
        let entry = &self.entry;
        let how = match &entry.shrunk {
            Some(note) => format!(
                "shrunk from {} in {} runs, {:.1}s",
                note.actions_before, note.runs, note.seconds
            ),
            None => "as found".to_string(),
        };
        match &self.saved {
            Saved::New(path) => format!(
                "saved {}: {}, {} ({how}); replay: {}",
                path.display(),
                entry.invariant,
                actions_said(entry.case.actions()),
                self.replay
            ),
            Saved::Already(path) => format!(
                "kept {}: the corpus has this seed already ({} now, {})",
                path.display(),
                entry.invariant,
                actions_said(entry.case.actions())
            ),
            Saved::NotWritten => format!(
                "not saved {} seed {}: {}, {} ({how}; the corpus is read only)",
                entry.agent,
                entry.case.seed,
                entry.invariant,
                actions_said(entry.case.actions())
            ),
            Saved::Failed(why) => {
                format!("NOT SAVED {} seed {}: {why}", entry.agent, entry.case.seed)
            }
        }
    }
}

impl Keeping {
    /// Keeps the failures of `summary` (its agents in the order of
    /// `soaks`), shrinking each with `progress` hearing every step and
    /// every line worth telling; puts what was kept in the summary.
    /// Returns false when an entry could not be written.
    pub fn keep(
        &self,
        summary: &mut Summary,
        soaks: &[Soak],
        progress: &(dyn Fn(&str) + Sync),
    ) -> bool {
        let mut ok = true;
        let (mut kept, mut notes) = (Vec::new(), Vec::new());
        for (agent, soak) in summary.agents.iter().zip(soaks) {
            let mut per_invariant: BTreeMap<&str, usize> = BTreeMap::new();
            let mut seen: Vec<Seed> = Vec::new();
            let mut skipped = 0;
            for failure in &agent.failures {
                if seen.contains(&failure.seed) {
                    continue;
                }
                let count = per_invariant.entry(failure.invariant.as_str()).or_default();
                if self.per_invariant > 0 && *count >= self.per_invariant {
                    skipped += 1;
                    continue;
                }
                *count += 1;
                seen.push(failure.seed);
                let one = self.keep_failure(soak, failure, progress);
                ok &= !matches!(one.saved, Saved::Failed(_));
                kept.push(one);
            }
            if skipped > 0 {
                notes.push((agent.name.clone(), skipped));
            }
        }
        summary.kept.extend(kept);
        summary.not_kept.extend(notes);
        ok
    }

    /// Keeps one failure of `soak`: shrunk (unless its seed is in the
    /// corpus already), saved, run again for its excerpt, drawn.
    pub fn keep_failure(
        &self,
        soak: &Soak,
        failure: &Failure,
        progress: &(dyn Fn(&str) + Sync),
    ) -> Kept {
        let already = self
            .corpus
            .as_ref()
            .map(|dir| CorpusEntry::from_failure(failure).path_in(dir))
            .filter(|path| path.is_file());
        let (entry, note) = match &already {
            // The corpus holds this seed: its kept case is what replays.
            Some(path) => match CorpusEntry::load(path) {
                Ok(entry) => (entry, None),
                Err(e) => (
                    CorpusEntry::from_failure(failure),
                    Some(format!("its corpus entry cannot be read: {e}")),
                ),
            },
            None => self.shrunk(soak, failure, progress),
        };
        let saved = match (&already, &self.corpus) {
            (Some(path), _) => Saved::Already(path.clone()),
            (None, Some(dir)) if self.write => match entry.save(dir) {
                Ok(path) => Saved::New(path),
                Err(e) => Saved::Failed(e.to_string()),
            },
            _ => Saved::NotWritten,
        };
        let run = soak.run_case(&entry.case);
        let excerpt = run
            .record
            .as_ref()
            .map(|record| excerpt(record, &entry.message))
            .unwrap_or_default();
        let replay = match &saved {
            Saved::New(path) | Saved::Already(path) => soak.replay_case_command(&shown(path)),
            Saved::NotWritten | Saved::Failed(_) => failure.replay.clone(),
        };
        let page = self.pages.as_ref().map(|dir| {
            let path = dir.join(format!("{}-{}.html", entry.agent, entry.case.seed));
            let mut run = run;
            for failure in &mut run.failures {
                failure.replay = replay.clone();
            }
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("{}: {e}", dir.display()))
                .and_then(|()| {
                    Timeline::of_case(soak, &entry.case, &run)
                        .write_html(&path)
                        .map_err(|e| e.to_string())
                })
                .map(|()| path)
        });
        Kept {
            found: failure.clone(),
            entry,
            note,
            excerpt,
            saved,
            replay,
            page,
        }
    }

    /// The entry for `failure`, shrunk within the budget when there is one.
    fn shrunk(
        &self,
        soak: &Soak,
        failure: &Failure,
        progress: &(dyn Fn(&str) + Sync),
    ) -> (CorpusEntry, Option<String>) {
        if self.shrink_budget.is_zero() || self.shrink_runs == 0 {
            return (CorpusEntry::from_failure(failure), None);
        }
        progress(&format!(
            "shrinking {} seed {} ({}, {}, at most {} runs or {})",
            failure.agent,
            failure.seed,
            failure.invariant,
            actions_said(failure.script.actions().len()),
            self.shrink_runs,
            crate::executor::format_time(self.shrink_budget)
        ));
        let step = |p: &ShrinkProgress| progress(&p.to_string());
        match soak.shrink(
            &Case::from(failure),
            &failure.invariant,
            ShrinkBudget {
                runs: self.shrink_runs,
                time: self.shrink_budget,
            },
            &step,
        ) {
            Ok(shrunk) => {
                progress(&shrunk.to_string());
                (CorpusEntry::from_shrunk(&shrunk), None)
            }
            Err(e @ ShrinkError::Passes { .. }) => (
                CorpusEntry::from_failure(failure),
                Some(format!("cannot shrink: {e}; kept as found")),
            ),
        }
    }
}

/// A path as a replay line shows it: relative to the current folder when
/// it is under it (a `cargo test` runs in the crate's folder).
pub(crate) fn shown(path: &Path) -> PathBuf {
    std::env::current_dir()
        .ok()
        .and_then(|here| path.strip_prefix(here).ok().map(Path::to_path_buf))
        .unwrap_or_else(|| path.to_path_buf())
}
