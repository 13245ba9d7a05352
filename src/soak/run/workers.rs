//! The soak's workers and the sentinel that watches them.
//!
//! Each worker is an OS thread that takes runs from a queue and plays each
//! as a whole simulation on itself; results come back over a channel to
//! the thread that planned the soak. That thread is also the sentinel: it
//! reads the wall clock (as the soak's time budget does, never inside a
//! run) and, when a run outlives the hang bound, reports it as a hang with
//! its replay line and its last trace entries, gives its worker up (a
//! thread cannot be stopped from outside; a busy loop with no `.await`
//! keeps it until it ends) and starts another in its place, so the soak
//! goes on and ends with its summary.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::executor::watch::{Watch, wall_clock};
use crate::executor::{Hang, Seed};
use crate::session::LiveEvent;
use crate::soak::check::latency::{self, Measure};
use crate::soak::run::engine::{Checks, SeedRun, Target, run_case, run_seed};
use crate::soak::run::explore::{Orders, orders};
use crate::soak::run::plan::KeptCase;

/// One run of a plan: a kept case, or a seed of an agent: fresh (with its
/// place among the agent's seeds in the shard), or a variant the explorer
/// queued.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Run {
    Kept(usize),
    Seed(usize, Seed, Option<u64>),
}

/// A run to do: which batch and place in it, and what.
pub(crate) struct Job {
    pub batch: u64,
    pub position: usize,
    pub run: Run,
}

/// What became of a job.
pub(crate) enum Outcome {
    /// It ran: its agent and result.
    Ran(usize, Box<Finished>),
    /// It outlived the hang bound; its worker was given up.
    Hung(Hang),
    /// The soak was stopping (its budget ran out, or a run failed and it
    /// stops at the first failure): not run.
    Skipped,
    /// The worker itself panicked (a bug in livesim, not in the agent):
    /// the message.
    Crashed(String),
}

/// What the planning thread keeps of a run: its verdicts and failures,
/// and the few facts of its record that the summary and the explorer
/// need. The record itself is dropped on the worker that made it (freeing
/// it there is far cheaper than on another thread).
pub(crate) struct Finished {
    /// The run, without its record.
    pub run: SeedRun,
    /// Virtual time it took.
    pub virtual_time: Duration,
    /// Reconnects its session began.
    pub reconnects: u64,
    /// For a run over the simulated network: the connections that died
    /// on it.
    pub network: Option<u64>,
    /// The event orders it left (`None`: it left no record).
    pub orders: Option<Orders>,
    /// Its latencies.
    pub latencies: Vec<(Measure, Duration)>,
}

impl From<SeedRun> for Finished {
    fn from(mut run: SeedRun) -> Self {
        let record = run.record.take();
        Finished {
            virtual_time: record.as_ref().map_or(Duration::ZERO, |r| r.virtual_time),
            reconnects: record.as_ref().map_or(0, |r| {
                r.events
                    .iter()
                    .filter(|e| matches!(e.event, LiveEvent::Reconnecting { .. }))
                    .count() as u64
            }),
            network: record
                .as_ref()
                .and_then(|r| r.network.as_ref())
                .map(|n| n.died.len() as u64),
            orders: record.as_ref().map(|r| orders(&r.events)),
            latencies: record.as_ref().map_or_else(Vec::new, |r| {
                latency::samples(r)
                    .iter()
                    .map(|s| (s.measure, s.took))
                    .collect()
            }),
            run,
        }
    }
}

/// A finished job.
pub(crate) struct Done {
    pub batch: u64,
    pub position: usize,
    pub run: Run,
    pub outcome: Outcome,
}

/// What every worker reads.
struct Shared {
    targets: Vec<Target>,
    kept: Vec<KeptCase>,
    checks: Checks,
    queue: Mutex<Receiver<Job>>,
    stopping: AtomicBool,
}

/// One worker, as the sentinel sees it.
struct Worker {
    watch: Arc<Watch>,
    /// The job it is running.
    current: Arc<Mutex<Option<(u64, usize, Run)>>>,
    /// Given up on: it drops what it finishes and takes nothing more.
    retired: Arc<AtomicBool>,
}

/// The workers of one soak.
pub(crate) struct Workers {
    shared: Arc<Shared>,
    jobs: Sender<Job>,
    results: Receiver<Done>,
    results_tx: Sender<Done>,
    workers: Vec<Worker>,
    bound: Duration,
    /// When the workers were last looked at.
    looked: Instant,
}

/// How often the sentinel looks at the workers.
const TICK: Duration = Duration::from_millis(50);

impl Workers {
    /// `count` workers for `targets` and the `kept` cases; a run longer
    /// than `bound` in wall time is a hang.
    pub(crate) fn start(
        targets: Vec<Target>,
        kept: Vec<KeptCase>,
        checks: Checks,
        count: usize,
        bound: Duration,
    ) -> Workers {
        let (jobs, queue) = channel();
        let (results_tx, results) = channel();
        let shared = Arc::new(Shared {
            targets,
            kept,
            checks,
            queue: Mutex::new(queue),
            stopping: AtomicBool::new(false),
        });
        let mut workers = Workers {
            shared,
            jobs,
            results,
            results_tx,
            workers: Vec::new(),
            bound,
            looked: wall_clock(),
        };
        for _ in 0..count.max(1) {
            workers.spawn();
        }
        workers
    }

    /// Queues a job.
    pub(crate) fn submit(&self, job: Job) {
        // The workers hold the queue until this ends; a send cannot fail.
        let _ = self.jobs.send(job);
    }

    /// From now on, queued jobs come back [`Outcome::Skipped`].
    pub(crate) fn stop(&self) {
        self.shared.stopping.store(true, Ordering::Relaxed);
    }

    /// The next finished job, or `None` after `TICK` with nothing
    /// finished. A run past the bound comes back [`Outcome::Hung`] (once),
    /// and its worker is replaced.
    pub(crate) fn next(&mut self) -> Option<Done> {
        // The workers are looked at every tick, whether results come or
        // not: a run's time is counted look by look (see `Watch`).
        if wall_clock().saturating_duration_since(self.looked) >= TICK
            && let Some(hung) = self.look()
        {
            return Some(hung);
        }
        match self.results.recv_timeout(TICK) {
            Ok(done) => Some(done),
            Err(RecvTimeoutError::Timeout) => self.look(),
            // Cannot happen: this holds a sender.
            Err(RecvTimeoutError::Disconnected) => None,
        }
    }

    /// Looks at every worker: the first whose run is past the bound is
    /// retired and replaced, and its job comes back hung.
    fn look(&mut self) -> Option<Done> {
        self.looked = wall_clock();
        let (at, hang) = self
            .workers
            .iter()
            .enumerate()
            .find_map(|(at, w)| w.watch.overdue(self.bound).map(|hang| (at, hang)))?;
        let worker = self.workers.remove(at);
        worker.retired.store(true, Ordering::Relaxed);
        let job = worker
            .current
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        self.spawn();
        let (batch, position, run) = job?;
        Some(Done {
            batch,
            position,
            run,
            outcome: Outcome::Hung(hang),
        })
    }

    fn spawn(&mut self) {
        let worker = Worker {
            watch: Arc::new(Watch::default()),
            current: Arc::new(Mutex::new(None)),
            retired: Arc::new(AtomicBool::new(false)),
        };
        let (shared, results) = (self.shared.clone(), self.results_tx.clone());
        let (watch, current, retired) = (
            worker.watch.clone(),
            worker.current.clone(),
            worker.retired.clone(),
        );
        // OS threads outside the sessions: each run is a whole simulation
        // on one thread, and nothing is shared between runs but the queue
        // and the results.
        let spawned = std::thread::Builder::new()
            .name("livesim-soak".to_string())
            .spawn(move || work(&shared, &results, &watch, &current, &retired));
        if spawned.is_ok() {
            self.workers.push(worker);
        }
    }
}

/// A worker's life: take a job, run it watched, send what came of it.
fn work(
    shared: &Shared,
    results: &Sender<Done>,
    watch: &Arc<Watch>,
    current: &Mutex<Option<(u64, usize, Run)>>,
    retired: &AtomicBool,
) {
    loop {
        let job = {
            let queue = shared.queue.lock().unwrap_or_else(|p| p.into_inner());
            queue.recv()
        };
        let Ok(job) = job else {
            return;
        };
        let outcome = if shared.stopping.load(Ordering::Relaxed) {
            Outcome::Skipped
        } else {
            *current.lock().unwrap_or_else(|p| p.into_inner()) =
                Some((job.batch, job.position, job.run));
            let (what, replay) = describe(shared, job.run);
            // Not `panics::catch`: the session's own panics (a tool's) go
            // through the simulation's hook, which a catch here would take
            // over.
            let ran = watch.run(what, replay, || {
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| execute(shared, job.run)))
            });
            current.lock().unwrap_or_else(|p| p.into_inner()).take();
            match ran {
                Ok((agent, run)) => Outcome::Ran(agent, Box::new(run.into())),
                Err(payload) => {
                    Outcome::Crashed(crate::executor::panics::payload_message(payload.as_ref()))
                }
            }
        };
        if retired.load(Ordering::Relaxed) {
            // Reported as a hang already; its worker's place is taken.
            return;
        }
        let done = Done {
            batch: job.batch,
            position: job.position,
            run: job.run,
            outcome,
        };
        if results.send(done).is_err() {
            return;
        }
    }
}

/// What a run is called in a hang report, and the line that replays it.
fn describe(shared: &Shared, run: Run) -> (String, String) {
    match run {
        Run::Kept(at) => {
            let kept = &shared.kept[at];
            let target = &shared.targets[kept.target];
            (
                format!("{} kept case (seed {})", target.name, kept.case.seed),
                kept.replay.clone(),
            )
        }
        Run::Seed(agent, seed, _) => {
            let target = &shared.targets[agent];
            (
                format!("{} seed {seed}", target.name),
                (target.replay.seed)(seed),
            )
        }
    }
}

/// Plays one run: its agent and result.
fn execute(shared: &Shared, run: Run) -> (usize, SeedRun) {
    match run {
        Run::Kept(at) => {
            let kept = &shared.kept[at];
            // A kept case runs as a replay does: determinism checked.
            let replaying = Checks {
                determinism_every: 1,
            };
            let mut run = run_case(&shared.targets[kept.target], &kept.case, replaying, None);
            for failure in &mut run.failures {
                failure.replay = kept.replay.clone();
            }
            (kept.target, run)
        }
        Run::Seed(agent, seed, place) => {
            // A fresh seed's determinism check goes by its place in the
            // shard, a variant's by its hash.
            let checks = match place {
                Some(place) => shared.checks.at(place),
                None => shared.checks,
            };
            (agent, run_seed(&shared.targets[agent], seed, checks))
        }
    }
}
