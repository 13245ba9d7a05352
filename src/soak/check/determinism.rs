//! The determinism check over many seeds: each (agent, seed) run twice in
//! this process, its traces compared entry by entry, and its trace hash
//! kept so that a run in another process (`livesim sim check` starts a
//! child) can be compared with it.

use std::ops::Range;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::executor::Seed;
use crate::soak::run::plan::{item, pool};
use crate::soak::soak::Soak;

/// One (agent, seed)'s trace hash.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeedHash {
    /// The agent.
    pub agent: String,
    /// The seed.
    pub seed: Seed,
    /// Its trace's hash.
    pub hash: u64,
}

/// A seed whose runs left different traces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Divergence {
    /// The agent.
    pub agent: String,
    /// The seed.
    pub seed: Seed,
    /// Where the traces part, or which hashes differ.
    pub detail: String,
}

/// What the check found.
#[derive(Clone, Debug, Default)]
pub struct Determinism {
    /// Every (agent, seed)'s trace hash, agent by agent in seed order.
    pub hashes: Vec<SeedHash>,
    /// Every seed whose two runs differed.
    pub divergences: Vec<Divergence>,
}

/// Runs each seed of `seeds` for every soak, `runs` times (1 or 2) on
/// `jobs` threads; with two runs, compares their traces. `progress` hears
/// how many (agent, seed) pairs are done.
pub fn check_determinism(
    soaks: &[Soak],
    seeds: Range<u64>,
    runs: u32,
    jobs: usize,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Determinism {
    let agents = soaks.len() as u64;
    let total = seeds.end.saturating_sub(seeds.start).saturating_mul(agents);
    let done = AtomicU64::new(0);
    let results = Mutex::new(Vec::new());
    let work = |index: u64| {
        let (agent, seed) = item(&seeds, crate::soak::Shard::WHOLE, agents, index);
        let soak = &soaks[agent];
        let first = soak.trace(seed);
        let divergence = (runs > 1)
            .then(|| first.first_divergence(&soak.trace(seed)))
            .flatten()
            .map(|d| Divergence {
                agent: soak.name().to_string(),
                seed,
                detail: d.to_string(),
            });
        progress(done.fetch_add(1, Ordering::Relaxed) + 1, total);
        let hash = SeedHash {
            agent: soak.name().to_string(),
            seed,
            hash: first.hash(),
        };
        results
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((index, (hash, divergence)));
    };
    let mut report = Determinism::default();
    if agents == 0 {
        return report;
    }
    pool(total, jobs, &|| false, &work);
    let mut results = results.into_inner().unwrap_or_else(|p| p.into_inner());
    // Agent by agent, then seed by seed.
    results.sort_by_key(|(index, _)| (index % agents, index / agents));
    for (_, (hash, divergence)) in results {
        report.hashes.push(hash);
        report.divergences.extend(divergence);
    }
    report
}
