//! A plan of many runs: the seeds of a range (a shard of it) for every
//! agent, kept cases first, then the fresh seeds in batches, each batch
//! carrying the variants the explorer queued (see [`explore`](super::explore)).
//! Runs go to a pool of OS threads (each run a whole simulation on one
//! thread) and merge into the [`Summary`] in (agent, seed) order, so a
//! summary is the same for the same seeds whatever the number of jobs,
//! apart from wall time.

use std::ops::Range;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use crate::executor::Seed;
use crate::session::LiveEvent;
use crate::soak::case::Case;
use crate::soak::check::invariants;
use crate::soak::check::report::{AgentSummary, Summary};
use crate::soak::check::sometimes::{self, Sometimes};
use crate::soak::run::engine::{Checks, Target, run_case, run_seed};
use crate::soak::run::explore::{BATCH, Explorer, Observation, orders};
use crate::soak::run::shard::Shard;

/// How many runs have finished, for a progress display.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// Runs finished.
    pub done: u64,
    /// Runs planned (`None` when only a time budget ends the soak).
    pub total: Option<u64>,
    /// Failures found so far.
    pub failures: u64,
}

/// A soak over several agents: the seeds, the shard, the jobs, the budget.
pub(crate) struct Plan<'a> {
    pub targets: &'a [Target],
    pub seeds: Range<u64>,
    pub shard: Shard,
    pub jobs: usize,
    pub duration: Option<Duration>,
    pub checks: Checks,
    /// Kept cases of the corpus, run before the seeds.
    pub kept: &'a [KeptCase],
    /// Start no new run once a run has failed.
    pub stop_at_first_failure: bool,
}

/// A case from the corpus, run first: which target, the case, and the
/// line that replays it.
pub(crate) struct KeptCase {
    pub target: usize,
    pub case: Case,
    pub replay: String,
}

/// Runs `work(i)` for `i` in `0..total` on `jobs` threads, taking no new
/// `i` once `stop()` says so. Results go wherever `work` puts them: a soak
/// may run millions of sessions, and keeps counts, not runs.
pub(crate) fn pool(
    total: u64,
    jobs: usize,
    stop: &(dyn Fn() -> bool + Sync),
    work: &(dyn Fn(u64) + Sync),
) {
    let next = AtomicU64::new(0);
    let worker = || {
        while !stop() {
            let index = next.fetch_add(1, Ordering::Relaxed);
            if index >= total {
                return;
            }
            work(index);
        }
    };
    if jobs <= 1 {
        worker();
    } else {
        // OS threads outside the sessions: each run is a whole simulation
        // on one thread, and nothing is shared between runs but the queue
        // of indexes and the results.
        std::thread::scope(|scope| {
            for _ in 0..jobs {
                scope.spawn(worker);
            }
        });
    }
}

/// The (agent, seed) of run `index` of a plan over `agents` agents: seed
/// by seed, every agent in turn, so a time budget covers them alike.
pub(crate) fn item(seeds: &Range<u64>, shard: Shard, agents: u64, index: u64) -> (usize, Seed) {
    let offset = index / agents.max(1);
    let seed = seeds.start + (shard.index - 1) + offset * shard.of;
    ((index % agents.max(1)) as usize, Seed::new(seed))
}

/// One run of a plan: a kept case, or a seed of an agent: fresh (with its
/// place among the agent's seeds in the shard), or a variant the explorer
/// queued.
#[derive(Clone, Copy)]
enum Run {
    Kept(usize),
    Seed(usize, Seed, Option<u64>),
}

/// Runs the plan; `progress` hears of every finished run.
pub(crate) fn run_plan(plan: &Plan<'_>, progress: &(dyn Fn(Progress) + Sync)) -> Summary {
    // The budget is wall-clock time by definition; it only decides which
    // seeds start, never what happens inside a run.
    #[allow(clippy::disallowed_methods)]
    let started = std::time::Instant::now();
    let agents = plan.targets.len() as u64;
    let fresh = plan.shard.count(&plan.seeds).saturating_mul(agents);
    let planned = AtomicU64::new(fresh.saturating_add(plan.kept.len() as u64));
    let finished = AtomicU64::new(0);
    let failed = AtomicU64::new(0);
    let out_of_time = AtomicBool::new(false);
    let reaches: Vec<Vec<Sometimes>> = plan
        .targets
        .iter()
        .map(|t| {
            // A builder that panics fails every run as `panic`; here it
            // only means no built-in goal applies.
            let reach = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| t.reach()))
                .unwrap_or_default();
            let mut goals = sometimes::builtin(&reach);
            goals.extend(t.sometimes.iter().cloned());
            goals
        })
        .collect();
    let targets: Vec<Target> = plan
        .targets
        .iter()
        .zip(&reaches)
        .map(|(t, goals)| Target {
            sometimes: goals.clone(),
            ..t.clone()
        })
        .collect();
    let stop = || {
        let over = plan
            .duration
            .is_some_and(|budget| started.elapsed() >= budget);
        if over {
            out_of_time.store(true, Ordering::Relaxed);
        }
        over || (plan.stop_at_first_failure && failed.load(Ordering::Relaxed) > 0)
    };
    let summaries: Vec<Mutex<AgentSummary>> = targets
        .iter()
        .zip(&reaches)
        .map(|(t, goals)| Mutex::new(AgentSummary::new(&t.name, goals.iter().map(|g| g.name()))))
        .collect();
    let throughput: Mutex<Vec<u64>> = Mutex::new(Vec::new());
    // One seed alone (a replay) is never explored.
    let explores = targets
        .iter()
        .map(|t| t.explore && plan.seeds.end.saturating_sub(plan.seeds.start) > 1)
        .collect();
    let mut explorer = Explorer::new(explores);
    let jobs = plan.jobs.max(1);
    // Each batch's observations, put back in the batch's order before the
    // explorer sees them.
    let observed: Mutex<Vec<(usize, Observation)>> = Mutex::new(Vec::new());
    let run_batch = |batch: &[Run]| {
        let work = |position: u64| {
            let (agent, run) = match batch[position as usize] {
                Run::Kept(at) => {
                    let kept = &plan.kept[at];
                    // A kept case runs as a replay does: determinism checked.
                    let replaying = Checks {
                        determinism_every: 1,
                    };
                    let mut run = run_case(&targets[kept.target], &kept.case, replaying, None);
                    for failure in &mut run.failures {
                        failure.replay = kept.replay.clone();
                    }
                    (kept.target, run)
                }
                Run::Seed(agent, seed, place) => {
                    // A fresh seed's determinism check goes by its place in
                    // the shard, a variant's by its hash.
                    let checks = match place {
                        Some(place) => plan.checks.at(place),
                        None => plan.checks,
                    };
                    let run = run_seed(&targets[agent], seed, checks);
                    let observation = Observation {
                        agent,
                        seed,
                        orders: run.record.as_ref().map(|r| orders(&r.events)),
                        reached: run.reached.clone(),
                    };
                    observed
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push((position as usize, observation));
                    (agent, run)
                }
            };
            {
                let second = usize::try_from(started.elapsed().as_secs()).unwrap_or(usize::MAX);
                let mut counts = throughput.lock().unwrap_or_else(|p| p.into_inner());
                if counts.len() <= second {
                    counts.resize(second.saturating_add(1), 0);
                }
                counts[second] += 1;
            }
            let found = run.failures.len() as u64;
            let verdicts: Vec<(String, bool)> = run
                .verdicts
                .iter()
                .map(|(n, v)| (n.clone(), v.is_ok()))
                .collect();
            summaries[agent]
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .add(
                    run.record
                        .as_ref()
                        .map_or(Duration::ZERO, |r| r.virtual_time),
                    run.record.as_ref().map_or(0, |r| {
                        r.events
                            .iter()
                            .filter(|e| matches!(e.event, LiveEvent::Reconnecting { .. }))
                            .count() as u64
                    }),
                    &verdicts,
                    &run.reached,
                    run.failures,
                );
            let total = planned.load(Ordering::Relaxed);
            progress(Progress {
                done: finished.fetch_add(1, Ordering::Relaxed) + 1,
                // A range that only a time budget ends has no useful total.
                total: (total < 1 << 40).then_some(total),
                failures: failed.fetch_add(found, Ordering::Relaxed) + found,
            });
        };
        pool(batch.len() as u64, jobs, &stop, &work);
    };
    if agents > 0 {
        let kept: Vec<Run> = (0..plan.kept.len()).map(Run::Kept).collect();
        run_batch(&kept);
        let mut next = 0;
        while (next < fresh || explorer.has_more()) && !stop() {
            let end = next.saturating_add(BATCH).min(fresh);
            let mut batch: Vec<Run> = (next..end)
                .map(|index| {
                    let (agent, seed) = item(&plan.seeds, plan.shard, agents, index);
                    Run::Seed(agent, seed, Some(index / agents))
                })
                .collect();
            next = end;
            let variants = explorer.take();
            planned.fetch_add(variants.len() as u64, Ordering::Relaxed);
            batch.extend(
                variants
                    .into_iter()
                    .map(|(agent, seed)| Run::Seed(agent, seed, None)),
            );
            run_batch(&batch);
            let mut runs = std::mem::take(&mut *observed.lock().unwrap_or_else(|p| p.into_inner()));
            runs.sort_by_key(|(position, _)| *position);
            for (_, run) in &runs {
                explorer.observe(run);
            }
        }
    }
    let order: Vec<Vec<String>> = targets
        .iter()
        .map(|t| {
            invariants::builtin()
                .iter()
                .chain(&t.invariants)
                .map(|i| i.name().to_string())
                .collect()
        })
        .collect();
    let summaries: Vec<AgentSummary> = summaries
        .into_iter()
        .zip(&order)
        .enumerate()
        .map(|(agent, (summary, order))| {
            let mut summary = summary.into_inner().unwrap_or_else(|p| p.into_inner());
            summary.finish(order);
            summary.orders = explorer.orders(agent);
            summary.signatures = explorer.signatures(agent);
            summary.explored = explorer.explored(agent);
            summary
        })
        .collect();
    Summary {
        agents: summaries,
        wall_time: started.elapsed(),
        seeds: plan.seeds.clone(),
        shard: plan.shard,
        jobs,
        stopped_by_budget: out_of_time.load(Ordering::Relaxed),
        throughput: throughput.into_inner().unwrap_or_else(|p| p.into_inner()),
        kept_cases_run: plan.kept.len() as u64,
        corpus_errors: Vec::new(),
        kept: Vec::new(),
        not_kept: Vec::new(),
    }
}
