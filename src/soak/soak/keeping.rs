//! What a soak does with the failures it finds: shrinks them, keeps them
//! in the corpus, draws their pages, and runs the kept ones first.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::executor::regressions::Use;
use crate::soak::keep::corpus::agent_name_problem;
use crate::soak::keep::kept::Keeping;
use crate::soak::keep::replay::CorpusReplay;

use super::Soak;

impl Soak {
    /// Keeps failures in corpus folder `dir` (`dir/<agent>/<seed>.json`)
    /// instead of the crate's `seeds/`.
    ///
    /// By default a soak keeps what it finds: each failure (at most
    /// [`KEEP_PER_INVARIANT`](crate::soak::KEEP_PER_INVARIANT) per invariant, the lowest seeds) is shrunk
    /// (at most [`DEFAULT_RUNS`](crate::soak::DEFAULT_RUNS) candidate runs each, and
    /// [`DEFAULT_BUDGET`](crate::soak::DEFAULT_BUDGET) of wall time), saved as a corpus
    /// entry in the `seeds/` folder of the crate the test runs in
    /// (`CARGO_MANIFEST_DIR`), and drawn as a timeline page under the
    /// target directory; every entry of the agent's folder runs first on
    /// every later run, before the seeds, however few (a replay of one
    /// seed, `LIVESIM_SEED`, or of one case, `LIVESIM_CASE`, runs that
    /// alone). `LIVESIM_REGRESSIONS=read` (CI)
    /// runs the kept cases but writes nothing; `LIVESIM_REGRESSIONS=off`
    /// does neither; `LIVESIM_REGRESSIONS_DIR=dir` puts the corpus in
    /// `dir/seeds`.
    pub fn corpus(mut self, dir: impl Into<PathBuf>) -> Self {
        self.keep.corpus = Some(dir.into());
        self
    }

    /// Whether failures are kept at all (default: yes, see
    /// [`corpus`](Self::corpus)); `false` shrinks, saves, draws and
    /// replays nothing.
    pub fn keep(mut self, on: bool) -> Self {
        self.keep.on = on;
        self
    }

    /// The most wall time shrinking one failure may take (default
    /// [`DEFAULT_BUDGET`](crate::soak::DEFAULT_BUDGET)): an outer cap, the budget is
    /// [`shrink_runs`](Self::shrink_runs); zero keeps failures as found.
    pub fn shrink_time(mut self, budget: Duration) -> Self {
        self.keep.shrink_budget = budget;
        self
    }

    /// The most candidate runs shrinking one failure makes (default
    /// [`DEFAULT_RUNS`](crate::soak::DEFAULT_RUNS)): what makes a kept case the same on any machine;
    /// zero keeps failures as found.
    pub fn shrink_runs(mut self, runs: u64) -> Self {
        self.keep.shrink_runs = runs;
        self
    }

    /// Keeps at most `n` failures per invariant, the lowest seeds
    /// (default [`KEEP_PER_INVARIANT`](crate::soak::KEEP_PER_INVARIANT); 0: every one).
    pub fn keep_limit(mut self, n: usize) -> Self {
        self.keep.per_invariant = n;
        self
    }

    /// Writes each kept failure's timeline page to folder `dir`
    /// (`<agent>-<seed>.html`) instead of under the target directory.
    pub fn pages(mut self, dir: impl Into<PathBuf>) -> Self {
        self.keep.pages = Some(dir.into());
        self
    }

    /// The corpus folder this soak keeps failures in and runs first: the
    /// builder's, else `LIVESIM_REGRESSIONS_DIR/seeds`, else the
    /// `seeds/` of the crate being tested (`CARGO_MANIFEST_DIR`), else
    /// `seeds/` here.
    pub fn corpus_dir(&self) -> PathBuf {
        if let Some(dir) = &self.keep.corpus {
            return dir.clone();
        }
        let env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        match (env("LIVESIM_REGRESSIONS_DIR"), env("CARGO_MANIFEST_DIR")) {
            (Some(dir), _) => PathBuf::from(dir).join("seeds"),
            (None, Some(crate_dir)) => PathBuf::from(crate_dir).join("seeds"),
            (None, None) => PathBuf::from("seeds"),
        }
    }

    /// How this soak keeps failures, as the builder and the environment
    /// say (`None`: not at all). An error when the soak's name cannot be
    /// a folder of the corpus (see [`CorpusEntry::save`](crate::soak::CorpusEntry::save)):
    /// said before anything runs, not after a failure found.
    pub fn keeping(&self) -> Result<Option<Keeping>, String> {
        let use_ = Use::from_env()?;
        if !self.keep.on || use_ == Use::Off {
            return Ok(None);
        }
        if let Some(problem) = agent_name_problem(self.name()) {
            return Err(format!(
                "{problem}; rename the soak, or keep nothing (`.keep(false)`)"
            ));
        }
        let pages = self.keep.pages.clone().unwrap_or_else(|| {
            crate::timeline::target_dir()
                .join("livesim")
                .join("soak")
                .join(crate::timeline::path_component(&self.target.name))
        });
        Ok(Some(Keeping {
            corpus: Some(self.corpus_dir()),
            write: use_ == Use::ReadWrite,
            shrink_budget: self.keep.shrink_budget,
            shrink_runs: self.keep.shrink_runs,
            per_invariant: self.keep.per_invariant,
            pages: Some(pages),
        }))
    }

    /// Replays every kept case of this soak's agent (its folder of the
    /// [corpus](Self::corpus_dir), `<corpus>/<agent>/`), each checked as
    /// a replay is (every invariant, and determinism); panics naming each
    /// entry that fails and each file that cannot be read, or that names
    /// an invariant this soak does not check (its replay would pass
    /// whether or not its bug is back). The one line a test needs to keep
    /// its corpus passing. With `LIVESIM_CASE` set (a failing entry's
    /// replay line sets it), replays that entry alone.
    ///
    /// ```no_run
    /// # use livesim::prelude::*;
    /// # use livesim::soak::Soak;
    /// # fn cart() -> LiveBuilder { Live::builder() }
    /// #[test]
    /// fn every_kept_case_passes() {
    ///     Soak::new("cart", cart).replay_corpus();
    /// }
    /// ```
    #[track_caller]
    pub fn replay_corpus(&self) -> CorpusReplay {
        self.replay_corpus_in(self.corpus_dir())
    }

    /// [`replay_corpus`](Self::replay_corpus) over folder `dir`: the
    /// agent's folder of a corpus (`seeds/cart`), or a corpus whose
    /// `<agent>/` folder holds the entries (`seeds`).
    #[track_caller]
    pub fn replay_corpus_in(&self, dir: impl AsRef<Path>) -> CorpusReplay {
        let replay = self.try_replay_corpus(dir);
        if !replay.passed() {
            panic!("\n{replay}");
        }
        replay
    }

    /// Replays a corpus folder as [`replay_corpus_in`](Self::replay_corpus_in)
    /// does, and returns what happened instead of panicking.
    ///
    /// # Panics
    /// At the caller, before anything runs, on a setting that cannot be
    /// what was meant (as [`try_run`](Self::try_run) does).
    #[track_caller]
    pub fn try_replay_corpus(&self, dir: impl AsRef<Path>) -> CorpusReplay {
        self.refuse_mistakes();
        crate::soak::keep::replay::replay(self, dir.as_ref())
    }
}
