//! A plan of many runs: the seeds of a range (a shard of it) for every
//! agent, kept cases first, then the fresh seeds in batches, each batch
//! carrying the variants the explorer queued (see [`explore`](super::explore)).
//! Runs go to a pool of OS threads (each run a whole simulation on one
//! thread) and merge into the [`Summary`] in (agent, seed) order, so a
//! summary is the same for the same seeds whatever the number of jobs,
//! apart from wall time.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::executor::{Hang, Seed};
use crate::soak::case::Case;
use crate::soak::check::invariants;
use crate::soak::check::report::{AgentSummary, Failure, Summary};
use crate::soak::check::sometimes::{self, Reach, Sometimes};
use crate::soak::run::engine::{Checks, SeedRun, Target};
use crate::soak::run::explore::{BATCH, Explorer, Observation};
use crate::soak::run::shard::Shard;
use crate::soak::run::workers::{Finished, Job, Outcome, Run, Workers};

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
    /// Wall time a run may take before it is reported as a hang.
    pub hang: Duration,
}

/// A case from the corpus, run first: which target, the case, and the
/// line that replays it.
#[derive(Clone)]
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

/// Runs the plan; `progress` hears of every finished run.
pub(crate) fn run_plan(plan: &Plan<'_>, progress: &(dyn Fn(Progress) + Sync)) -> Summary {
    // The budget is wall-clock time by definition; it only decides which
    // seeds start, never what happens inside a run.
    #[allow(clippy::disallowed_methods)]
    let started = std::time::Instant::now();
    let agents = plan.targets.len() as u64;
    let fresh = plan.shard.count(&plan.seeds).saturating_mul(agents);
    let mut planned = fresh.saturating_add(plan.kept.len() as u64);
    let (mut finished, mut failed) = (0u64, 0u64);
    let mut out_of_time = false;
    let measured: Vec<Result<Reach, ()>> = plan
        .targets
        .iter()
        .map(|t| reach_within(t, plan.hang))
        .collect();
    let reaches: Vec<Vec<Sometimes>> = plan
        .targets
        .iter()
        .zip(&measured)
        .map(|(t, reach)| {
            let mut goals = sometimes::builtin(&reach.clone().unwrap_or_default());
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
    let mut summaries: Vec<AgentSummary> = targets
        .iter()
        .zip(&reaches)
        .map(|(t, goals)| AgentSummary::new(&t.name, goals.iter().map(|g| g.name())))
        .collect();
    // An agent whose tools could not be measured in time: one `hang`.
    for (agent, reach) in measured.iter().enumerate() {
        if reach.is_err() {
            let target = &targets[agent];
            let message = format!(
                "measuring the agent's tools before the first seed (each called a few times \
                 under fixed seeds) took over {:.1}s of wall time: a tool that never yields (a \
                 busy loop with no .await) holds the thread",
                (plan.hang * CALIBRATION_RUNS).as_secs_f64()
            );
            let replay = (target.replay.seed)(Seed::new(plan.seeds.start));
            let seed = Run::Seed(agent, Seed::new(plan.seeds.start), None);
            let (_, run) = given_up(
                &targets,
                plan.kept,
                seed,
                invariants::HANG,
                message,
                &replay,
            );
            let verdicts = [(invariants::HANG.to_string(), false)];
            summaries[agent].add(Duration::ZERO, 0, None, &verdicts, &[], run.failures);
            failed += 1;
        }
    }
    let mut throughput: Vec<u64> = Vec::new();
    // One seed alone (a replay) is never explored.
    let explores = targets
        .iter()
        .map(|t| t.explore && plan.seeds.end.saturating_sub(plan.seeds.start) > 1)
        .collect();
    let mut explorer = Explorer::new(explores);
    let jobs = plan.jobs.max(1);
    let mut workers = Workers::start(
        targets.clone(),
        plan.kept.to_vec(),
        plan.checks,
        jobs,
        plan.hang,
    );
    let over_budget = || {
        plan.duration
            .is_some_and(|budget| started.elapsed() >= budget)
    };
    let mut batch_number = 0u64;
    let mut next = 0u64;
    let mut first = true;
    while agents > 0 && (first || next < fresh || explorer.has_more()) {
        // The kept cases first, then fresh seeds in batches, each with the
        // variants the last one earned.
        let batch: Vec<Run> = if first {
            first = false;
            (0..plan.kept.len()).map(Run::Kept).collect()
        } else {
            let end = next.saturating_add(BATCH).min(fresh);
            let mut batch: Vec<Run> = (next..end)
                .map(|index| {
                    let (agent, seed) = item(&plan.seeds, plan.shard, agents, index);
                    Run::Seed(agent, seed, Some(index / agents))
                })
                .collect();
            next = end;
            let variants = explorer.take();
            planned = planned.saturating_add(variants.len() as u64);
            batch.extend(
                variants
                    .into_iter()
                    .map(|(agent, seed)| Run::Seed(agent, seed, None)),
            );
            batch
        };
        batch_number += 1;
        for (position, run) in batch.iter().enumerate() {
            workers.submit(Job {
                batch: batch_number,
                position,
                run: *run,
            });
        }
        let mut outstanding = vec![true; batch.len()];
        let mut left = batch.len();
        let mut observed: Vec<(usize, Observation)> = Vec::new();
        while left > 0 {
            let stopping = over_budget() || (plan.stop_at_first_failure && failed > 0);
            if stopping {
                out_of_time |= over_budget();
                workers.stop();
            }
            let Some(done) = workers.next() else {
                continue;
            };
            // A run given up as a hang may still finish later: counted once.
            if done.batch != batch_number
                || !std::mem::replace(&mut outstanding[done.position], false)
            {
                continue;
            }
            left -= 1;
            let (agent, ran) = match done.outcome {
                Outcome::Skipped => continue,
                Outcome::Ran(agent, ran) => (agent, *ran),
                Outcome::Hung(hang) => {
                    let (agent, run) = hung(&targets, plan.kept, done.run, &hang);
                    (agent, Finished::from(run))
                }
                Outcome::Crashed(message) => {
                    let (agent, run) = crashed(&targets, plan.kept, done.run, &message);
                    (agent, Finished::from(run))
                }
            };
            let run = ran.run;
            if let Run::Seed(_, seed, _) = done.run {
                observed.push((
                    done.position,
                    Observation {
                        agent,
                        seed,
                        orders: ran.orders,
                        reached: run.reached.clone(),
                    },
                ));
            }
            let second = usize::try_from(started.elapsed().as_secs()).unwrap_or(usize::MAX);
            if throughput.len() <= second {
                throughput.resize(second.saturating_add(1), 0);
            }
            throughput[second] += 1;
            let found = run.failures.len() as u64;
            let verdicts: Vec<(String, bool)> = run
                .verdicts
                .iter()
                .map(|(n, v)| (n.clone(), v.is_ok()))
                .collect();
            if let Run::Seed(_, seed, _) = done.run {
                summaries[agent].add_latencies(seed, &ran.latencies);
            }
            summaries[agent].add(
                ran.virtual_time,
                ran.reconnects,
                ran.network,
                &verdicts,
                &run.reached,
                run.failures,
            );
            finished += 1;
            failed += found;
            progress(Progress {
                done: finished,
                // A range that only a time budget ends has no useful total.
                total: (planned < 1 << 40).then_some(planned),
                failures: failed,
            });
        }
        observed.sort_by_key(|(position, _)| *position);
        for (_, run) in &observed {
            explorer.observe(run);
        }
        if over_budget() || (plan.stop_at_first_failure && failed > 0) {
            out_of_time |= over_budget();
            break;
        }
    }
    let order: Vec<Vec<String>> = targets.iter().map(Target::check_names).collect();
    let summaries: Vec<AgentSummary> = summaries
        .into_iter()
        .zip(&order)
        .enumerate()
        .map(|(agent, (mut summary, order))| {
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
        stopped_by_budget: out_of_time,
        throughput,
        kept_cases_run: plan.kept.len() as u64,
        corpus_errors: Vec::new(),
        kept: Vec::new(),
        not_kept: Vec::new(),
    }
}

/// The result of a run given up as a hang: the `hang` failure, with the
/// run's case, what it was doing and the line that replays it.
fn hung(targets: &[Target], kept: &[KeptCase], run: Run, hang: &Hang) -> (usize, SeedRun) {
    let message = format!(
        "still running after {:.1}s of wall time: a task that never yields (a busy loop \
         with no .await, in a tool or the session) holds the executor's thread\n  last trace \
         entries:\n{}",
        hang.after.as_secs_f64(),
        hang.tail.trim_end()
    );
    given_up(targets, kept, run, invariants::HANG, message, &hang.replay)
}

/// The result of a run whose worker panicked outside the run's own
/// simulation (a bug in livesim): reported as `panic`.
fn crashed(targets: &[Target], kept: &[KeptCase], run: Run, message: &str) -> (usize, SeedRun) {
    let replay = match run {
        Run::Kept(at) => kept[at].replay.clone(),
        Run::Seed(agent, seed, _) => (targets[agent].replay.seed)(seed),
    };
    let message = format!("the soak itself panicked running this case: {message}");
    given_up(targets, kept, run, invariants::PANIC, message, &replay)
}

/// A run that left no record, failed as `invariant`.
fn given_up(
    targets: &[Target],
    kept: &[KeptCase],
    run: Run,
    invariant: &str,
    message: String,
    replay: &str,
) -> (usize, SeedRun) {
    let (agent, case) = match run {
        Run::Kept(at) => (kept[at].target, kept[at].case.clone()),
        Run::Seed(agent, seed, _) => (agent, targets[agent].case(seed)),
    };
    let failure = Failure {
        agent: targets[agent].name.clone(),
        seed: case.seed,
        swarm: case.swarm,
        faults: case.faults,
        invariant: invariant.to_string(),
        message: message.clone(),
        script: case.script,
        replay: replay.to_string(),
        excerpt: String::new(),
    };
    let run = SeedRun {
        record: None,
        verdicts: vec![(invariant.to_string(), Err(message))],
        reached: Vec::new(),
        failures: vec![failure],
    };
    (agent, run)
}

/// What `target` can reach, measured (a Rust agent's tools are calibrated
/// first) on a thread of its own: a builder that panics, or a tool that
/// never yields while it is measured, only means no built-in goal applies
/// (the runs themselves then fail as `panic`, or wait on the measurement
/// and are reported as hangs).
/// `Err` when measuring outlived the bound.
fn reach_within(target: &Target, bound: Duration) -> Result<Reach, ()> {
    let (sender, receiver) = std::sync::mpsc::channel();
    let target = target.clone();
    let measuring = std::thread::Builder::new()
        .name("livesim-reach".to_string())
        .spawn(move || {
            let reach = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| target.reach()));
            let _ = sender.send(reach.unwrap_or_default());
        });
    if measuring.is_err() {
        return Ok(Reach::default());
    }
    // Calibration makes a few dozen runs.
    match receiver.recv_timeout(bound.saturating_mul(CALIBRATION_RUNS)) {
        Ok(reach) => Ok(reach),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => Ok(Reach::default()),
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => Err(()),
    }
}

/// How many hang bounds measuring an agent's tools may take.
const CALIBRATION_RUNS: u32 = 4;
