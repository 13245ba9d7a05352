//! The soak engine: one seed of one agent, and a plan of many.
//!
//! A soak runs seeds against one agent or several. Each (agent, seed) is
//! one session in its own [`Simulation`](crate::executor::Simulation):
//! the seed's faults, the generated script, the session, the liveness
//! phase, then every invariant and every "sometimes" goal over the run's
//! record. Runs go to a pool of OS threads (the sessions themselves stay
//! single-threaded, each inside its simulation), and results are merged in
//! (agent, seed) order, so a summary is the same for the same seeds
//! whatever the number of jobs, apart from wall time.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::executor::logs::Capture;
use crate::executor::{
    FailureKind, Outcome, Schedule, Seed, Simulation, Swarm, Trace, format_time,
};
use crate::flow::{Enforcement, FlowSpec};
use crate::session::LiveBuilder;
use crate::soak::agent::RunContext;
use crate::soak::agent::SimulatedUser;
use crate::soak::agent::repertoire::Repertoire;
use crate::soak::case::Case;
use crate::soak::check::excerpt::excerpt;
use crate::soak::check::invariants::{self, Invariant};
use crate::soak::check::report::Failure;
use crate::soak::check::sometimes::{Reach, Sometimes};
use crate::soak::generate::faults::{FaultKind, Faults};
use crate::soak::generate::script::generate;
use crate::soak::generate::variant;
use crate::soak::run::calibrate::{Calibration, calibrate};
use crate::soak::run::record::RunRecord;
use crate::soak::run::session;
use crate::state::State;
use crate::testing::ScriptedServer;

type BuilderFn = dyn Fn(&RunContext) -> LiveBuilder + Send + Sync;
type ScriptFn = dyn Fn(Seed, &Faults) -> ScriptedServer + Send + Sync;
type ReplayFn = dyn Fn(Seed) -> String + Send + Sync;
type CaseReplayFn = dyn Fn(&Path) -> String + Send + Sync;

/// How a failure is replayed: the line for a seed, and the line for a
/// kept case's file (a shrunk case is not its seed's case any more).
#[derive(Clone)]
pub(crate) struct Replay {
    pub seed: Arc<ReplayFn>,
    pub case: Arc<CaseReplayFn>,
}

/// One agent as the engine runs it.
#[derive(Clone)]
pub(crate) struct Target {
    pub name: String,
    pub builder: Arc<BuilderFn>,
    pub repertoire: Repertoire,
    pub script: Option<Arc<ScriptFn>>,
    pub tuning: Vec<(FaultKind, f64)>,
    /// Replaces the governing spec in `journal-replays-clean`.
    pub spec: Option<Arc<FlowSpec>>,
    pub invariants: Vec<Invariant>,
    pub sometimes: Vec<Sometimes>,
    pub replay: Replay,
    /// How long the session may take to settle after the fault phase.
    pub liveness_bound: Duration,
    /// How long the session must be quiet to count as settled: the
    /// [`SETTLE_WINDOW`](super::session::SETTLE_WINDOW), or longer than
    /// an agent file's extractor takes to answer, so that a run never
    /// settles while an extraction it queued is still running.
    pub settle_window: Duration,
    /// A Rust agent's tools, measured once before the first case is drawn
    /// (see [`calibrate`](super::calibrate)); `None` for an agent whose
    /// file declares every tool's latency.
    pub calibration: Option<Arc<OnceLock<Calibration>>>,
    /// The tools whose latency the user declared: calibration keeps it.
    pub declared_latency: BTreeSet<String>,
    /// The tools allowed to panic (their panic is answered as an error
    /// and not reported as `panic`).
    pub allowed_panics: BTreeSet<String>,
    /// Whether runs that find something new earn variants (see
    /// [`explore`](super::explore)).
    pub explore: bool,
    /// A user played by a model, answering from its tape.
    pub simulated_user: Option<Arc<SimulatedUser>>,
    /// The session's extractors answer from a tape (an agent file's
    /// `"extractor"`), so the tape goals can be reached; a Rust agent's own
    /// extractors answer otherwise.
    pub tape_extractor: bool,
}

impl Target {
    /// The name of every check a run of this target goes through, in the
    /// order they run: the built-in invariants, then its own.
    pub(crate) fn check_names(&self) -> Vec<String> {
        invariants::builtin()
            .iter()
            .chain(&self.invariants)
            .map(|i| i.name().to_string())
            .collect()
    }

    /// The faults seed `seed` turns on: drawn from its parent, and
    /// perturbed when it is a variant.
    pub(crate) fn faults(&self, seed: Seed) -> Faults {
        let resuming = self.repertoire.resumption.is_on();
        let (parent, number) = variant::split(seed);
        let mut drawn = if resuming {
            Faults::draw_resuming(parent)
        } else {
            Faults::draw(parent)
        };
        if number > 0 {
            drawn = drawn.perturbed(seed, resuming);
        }
        if !self.repertoire.resumption.is_transparent() {
            // A handle's index means nothing to a session that never
            // replays.
            drawn = drawn.with(FaultKind::HandleLag, 0.0);
        }
        drawn.tuned(&self.tuning)
    }

    /// What seed `seed` plays: the swarm and faults it draws, its script.
    pub(crate) fn case(&self, seed: Seed) -> Case {
        let faults = self.faults(seed);
        Case {
            seed,
            swarm: Swarm::draw(seed),
            script: self.script(seed, &faults),
            faults,
            decisions: None,
        }
    }

    /// The conversation seed `seed` plays under `faults`: a variant plays
    /// its parent's, written under its own faults.
    pub(crate) fn script(&self, seed: Seed, faults: &Faults) -> ScriptedServer {
        let (parent, _) = variant::split(seed);
        match &self.script {
            Some(script) => script(parent, faults),
            None => generate(&self.name, self.repertoire(), parent, faults),
        }
    }

    /// What conversations are drawn from: the repertoire, its tools'
    /// latencies measured first for a Rust agent.
    pub(crate) fn repertoire(&self) -> &Repertoire {
        match self.calibrated() {
            Some(calibration) => &calibration.repertoire,
            None => &self.repertoire,
        }
    }

    /// The calibration, measured on first use.
    fn calibrated(&self) -> Option<&Calibration> {
        let cell = self.calibration.as_ref()?;
        Some(cell.get_or_init(|| calibrate(self, &self.declared_latency)))
    }

    /// What the agent can reach, from one builder it makes.
    pub(crate) fn reach(&self) -> Reach {
        let ctx = RunContext {
            seed: Seed::new(0),
            faults: Faults::calm(),
            state: State::new(),
        };
        let builder = (self.builder)(&ctx);
        let config = &builder.inner.config;
        // Simulated tools take time, fail and check their arguments as
        // their file says; a Rust agent's tools, as measured.
        let measured = self.calibrated();
        let enforcement = config.governance.as_ref().map(|g| g.enforcement);
        Reach {
            slow_tools: measured.is_none_or(|c| c.slow_tools),
            failing_tools: measured.is_none_or(|c| c.failing_tools),
            checks_args: measured.is_none_or(|c| c.checks_args),
            tools: !config.tools.is_empty(),
            refuses: enforcement == Some(Enforcement::Enforce),
            observes: enforcement == Some(Enforcement::Observe),
            escalates: config
                .governance
                .as_ref()
                .is_some_and(|g| g.spec.steps().iter().any(|s| !s.escalate().is_never())),
            extractors: config
                .extractors
                .iter()
                .filter(|_| self.tape_extractor)
                .map(|e| e.name().to_string())
                .collect(),
            resumes: config.resumption.is_on(),
            transparent: config.resumption.is_transparent(),
            retries: config.resumption.max_attempts() > 1,
        }
    }
}

/// Which of the engine's own checks run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checks {
    /// One run in this many runs twice and must leave the same trace
    /// (`determinism`); 0 turns the sample off, 1 checks every run. In a
    /// soak, which runs is counted by each agent's position in its shard's
    /// seeds (the first, then every `determinism_every`-th), so every shard
    /// of any split checks its share; a run outside a soak's plan (a
    /// variant, [`Soak::run_seed`](crate::soak::Soak::run_seed)) is taken
    /// by a hash of the agent and the seed ([`Checks::samples`]).
    pub determinism_every: u64,
}

impl Checks {
    /// Whether the determinism sample takes the run of `seed` for
    /// `agent`, outside a soak's plan: about one in
    /// [`determinism_every`](Self::determinism_every), by a hash of both.
    ///
    /// ```
    /// use livesim::Seed;
    /// use livesim::soak::Checks;
    ///
    /// let checks = Checks::default(); // about one run in 64
    /// let taken = (0..6400).filter(|&s| checks.samples("weather", Seed::new(s))).count();
    /// assert!((60..140).contains(&taken), "{taken}");
    /// ```
    pub fn samples(&self, agent: &str, seed: Seed) -> bool {
        match self.determinism_every {
            0 => false,
            1 => true,
            every => mix(agent, seed).is_multiple_of(every),
        }
    }

    /// The checks for the run at `position` among an agent's runs in a
    /// shard: determinism for the first and every
    /// [`determinism_every`](Self::determinism_every)-th after it.
    pub(crate) fn at(self, position: u64) -> Checks {
        let every = self.determinism_every;
        Checks {
            determinism_every: u64::from(every > 0 && position.is_multiple_of(every)),
        }
    }
}

/// A hash of the agent's name and the seed, spread over every bit
/// (FNV-1a over the name, then SplitMix64's finalizer with the seed).
fn mix(agent: &str, seed: Seed) -> u64 {
    let mut z = crate::executor::fnv1a64(agent.as_bytes())
        ^ seed.value().wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Default for Checks {
    fn default() -> Self {
        Checks {
            determinism_every: 64,
        }
    }
}

/// The result of one (agent, seed): its record, what the checks said.
#[derive(Debug)]
pub struct SeedRun {
    /// The record; `None` when the session's simulation itself failed
    /// (a panic, a deadlock).
    pub record: Option<RunRecord>,
    /// Each invariant checked, and its verdict.
    pub verdicts: Vec<(String, Result<(), String>)>,
    /// The goals the run reached.
    pub reached: Vec<String>,
    /// The failures, one per broken invariant.
    pub failures: Vec<Failure>,
}

impl SeedRun {
    /// This run as a caller of [`Soak`](crate::soak::Soak) gets it: its
    /// record without what the checks worked out from its fields, so a
    /// caller that changes a field (a test forging an event) is judged
    /// by the changed record, not by the first reading.
    pub(crate) fn handed_out(mut self) -> Self {
        if let Some(record) = self.record.as_mut() {
            record.forget_worked_out();
        }
        self
    }

    /// `Ok` when every invariant held; else each failure, what happened
    /// in the run and the line that replays it. What a property asserts:
    /// `prop_assert_eq!(run.verdict(), Ok(()))`.
    pub fn verdict(&self) -> Result<(), String> {
        if self.failures.is_empty() {
            return Ok(());
        }
        let told: Vec<String> = self.failures.iter().map(ToString::to_string).collect();
        Err(told.join("\n"))
    }

    /// Invariant `name`'s verdict; `Err` too when it was not checked.
    pub fn verdict_of(&self, name: &str) -> Result<(), String> {
        self.verdicts
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| {
                let checked: Vec<&str> = self.verdicts.iter().map(|(n, _)| n.as_str()).collect();
                Err(format!(
                    "`{name}` was not checked (checked: {})",
                    checked.join(", ")
                ))
            })
    }
}

/// The log lines kept for `handle-secret`: everything logged at any level
/// but
/// - the executor's scheduling, which never sees a frame;
/// - the session's line for each event it emits
///   (`livesim::session::events`): the line is the event's trace entry
///   with a stamp, and the check reads every trace entry, so it would find
///   a handle there first. These were half of a resuming run's lines;
/// - turmoil, the simulated network: it exists only under the soak, never
///   in a user's program, and it writes the bytes it carries in hex, where
///   a handle's text cannot be found. Its lines were 30 % of a network
///   run's cost.
const HANDLE_LOG_FILTER: &str =
    "trace,livesim::executor=info,livesim::session::events=off,turmoil=off";

/// Runs `case` of `target` once and returns its trace, however the run
/// ended (a failed run's trace stops where it failed).
pub(crate) fn trace_of(target: &Target, case: &Case) -> Trace {
    match simulate(target, case, None) {
        Ok(outcome) => outcome.trace,
        Err(failure) => failure.trace,
    }
}

/// Runs `case` of `target` once, in its simulation: the case's swarm, and
/// `schedule` numbering (and perhaps calming) its decisions.
pub(crate) fn simulate(
    target: &Target,
    case: &Case,
    schedule: Option<Schedule>,
) -> Result<Outcome<RunRecord>, Box<crate::executor::Failure>> {
    let limit = session::time_limit(target, &case.script);
    let mut simulation = Simulation::new(case.seed)
        .swarm(case.swarm.clone())
        .time_limit(limit);
    if let Some(schedule) = schedule {
        simulation = simulation.schedule(schedule);
    }
    let (target, seed, faults, swarm, script) = (
        target.clone(),
        case.seed,
        case.faults.clone(),
        case.swarm.clone(),
        case.script.clone(),
    );
    #[cfg(feature = "network")]
    if faults.is_on(FaultKind::Network) {
        return over_network(&simulation, target, seed, faults, swarm, script);
    }
    simulation
        .run(move || async move { session::play(&target, seed, faults, swarm, script, None).await })
}

/// Runs a case over the simulated network: the script's player on the
/// server host, the session on the client host, every kind of network
/// fault drawn by the seed over the conversation's own.
#[cfg(feature = "network")]
fn over_network(
    simulation: &Simulation,
    target: Target,
    seed: Seed,
    faults: Faults,
    swarm: Swarm,
    script: ScriptedServer,
) -> Result<Outcome<RunRecord>, Box<crate::executor::Failure>> {
    use crate::network::{Network, Tap};
    let network = Network::new(script.clone().answers_may_cross_cancellations())
        .faults(crate::network::Faults::storm())
        .tick(crate::soak::run::record::NETWORK_TICK)
        // As long as the run may take (the network steps every host every
        // tick, so a run stuck waiting costs real time: the limit is past
        // every liveness bound, not much more).
        .duration(simulation.limit());
    let tap = Tap::default();
    network.run_scripted(
        simulation,
        tap.clone(),
        move |connector, control| async move {
            let over = session::OverNetwork {
                connector,
                control,
                tap,
            };
            session::play(&target, seed, faults, swarm, script, Some(over)).await
        },
    )
}

/// Runs one seed of `target`.
pub(crate) fn run_seed(target: &Target, seed: Seed, checks: Checks) -> SeedRun {
    run_case(target, &target.case(seed), checks, None)
}

/// Runs `case` of `target`: its simulation, then every check. `schedule`
/// numbers the run's decisions (its restriction, or the case's, applies);
/// without one, the case's own decides.
pub(crate) fn run_case(
    target: &Target,
    case: &Case,
    checks: Checks,
    schedule: Option<Schedule>,
) -> SeedRun {
    let seed = case.seed;
    let schedule = schedule.or_else(|| case.schedule());
    // A run whose script gives resumption handles keeps its log lines, so
    // `handle-secret` can look for them there too.
    let capture = case
        .script
        .uses_resumption()
        .then(|| Capture::new(HANDLE_LOG_FILTER));
    let outcome = match &capture {
        Some(capture) => capture.scope(|| simulate(target, case, schedule.clone())),
        None => simulate(target, case, schedule.clone()),
    };
    let failure = |invariant: &str, message: String, script: &ScriptedServer| Failure {
        agent: target.name.clone(),
        seed,
        swarm: case.swarm.clone(),
        faults: case.faults.clone(),
        invariant: invariant.to_string(),
        message,
        script: script.clone(),
        replay: (target.replay.seed)(seed),
        excerpt: String::new(),
    };
    let script = &case.script;
    let mut record = match outcome {
        Ok(outcome) => {
            let mut record = outcome.value;
            record.trace_hash = outcome.trace.hash();
            record.trace = outcome.trace;
            record.virtual_time = outcome.elapsed;
            record
        }
        Err(broken) => {
            let invariant = match broken.kind {
                FailureKind::Panic { .. } => invariants::PANIC,
                _ => invariants::LIVENESS,
            };
            let message = format!(
                "{}\n  last trace entries:\n{}",
                broken.summary(),
                broken.trace.tail(12).trim_end()
            );
            return SeedRun {
                record: None,
                verdicts: vec![(invariant.to_string(), Err(message.clone()))],
                reached: Vec::new(),
                failures: vec![failure(invariant, message, script)],
            };
        }
    };
    // Run again before the record is checked; reported after the others.
    let determinism = if checks.samples(&target.name, seed) {
        let verdict = match simulate(target, case, schedule.as_ref().map(Schedule::fresh)) {
            Ok(again) => match record.trace.first_divergence(&again.trace) {
                None => Ok(()),
                Some(divergence) => Err(format!("two runs of the seed differ: {divergence}")),
            },
            Err(broken) => Err(format!(
                "the first run finished, the second did not: {}",
                broken.summary()
            )),
        };
        Some((invariants::DETERMINISM.to_string(), verdict))
    } else {
        None
    };
    let mut verdicts = Vec::new();
    record.script = script.clone();
    if let Some(capture) = capture {
        record.logs = capture.take();
    }
    let network_lost_it = record.network.as_ref().is_some_and(|n| n.lost_before_setup);
    if network_lost_it {
        // The network, not the session, ended it: nothing ran to check.
        verdicts.push((invariants::SETUP.to_string(), Ok(())));
    } else if let Some(error) = record.connect_error.clone() {
        verdicts.push((invariants::SETUP.to_string(), Err(error)));
    } else {
        for invariant in invariants::builtin().iter().chain(&target.invariants) {
            verdicts.push((invariant.name().to_string(), checked(invariant, &record)));
        }
        verdicts.push((
            invariants::PANIC.to_string(),
            invariants::tool_panics(&record, &target.allowed_panics),
        ));
    }
    verdicts.extend(determinism);
    let failures = verdicts
        .iter()
        .filter_map(|(name, verdict)| {
            let message = verdict.as_ref().err()?;
            let mut failure = failure(name, message.clone(), &record.script);
            failure.excerpt = excerpt(&record, message);
            Some(failure)
        })
        .collect();
    // A goal that panics is not reached (its author learns of it from the
    // summary's goal counts, and the soak goes on).
    let reached = target
        .sometimes
        .iter()
        .filter(|goal| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| goal.reached(&record)))
                .unwrap_or(false)
        })
        .map(|goal| goal.name().to_string())
        .collect();
    SeedRun {
        record: Some(record),
        verdicts,
        reached,
        failures,
    }
}

/// An invariant's verdict; an invariant that panics fails, saying where,
/// and the soak goes on.
fn checked(invariant: &Invariant, record: &RunRecord) -> Result<(), String> {
    let panicked = crate::executor::panics::catch(|| invariant.check(record));
    match panicked {
        Ok(verdict) => verdict,
        Err(panic) => Err(format!(
            "the invariant `{}` itself panicked{}: {} (a check must return Err, not panic)",
            invariant.name(),
            panic
                .location
                .map(|l| format!(" at {l}"))
                .unwrap_or_default(),
            panic.message
        )),
    }
}

/// How many jobs "all cores" means here.
pub fn all_cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// A duration as the summary prints it (`1h02m`, `12.500s`).
pub(crate) fn human(d: Duration) -> String {
    let secs = d.as_secs();
    if secs >= 3600 {
        format!("{}h{:02}m", secs / 3600, (secs % 3600) / 60)
    } else if secs >= 60 {
        format!("{}m{:02}s", secs / 60, secs % 60)
    } else {
        format_time(d)
    }
}
