//! Shrinking: a failing case cut down to a small one that fails the same
//! invariant.
//!
//! A candidate is kept when its run breaks the same invariant and no
//! invariant the original run kept (so the small case is the same bug,
//! not a new one). Every candidate is re-run on the seeded executor, so
//! the result is a case that really fails, not a guess. The stages, in
//! order, each repeated while it helps:
//!
//! 1. **turns**: delta debugging (ddmin) over the script's turns;
//! 2. **actions**: ddmin over single actions; **connections**: each
//!    connection merged into the one before it (its `reconnect` and what
//!    ended the connection before go together, as neither alone leaves a
//!    valid script); then the calls of each parallel call (`call_many`);
//! 3. **text**: runs of text chunks merged into one frame each;
//! 4. **faults**: the conversation faults off (all at once, then kind by
//!    kind; they still matter to simulated tools once the script is fixed);
//! 5. **swarm**: the executor's perturbations off (all at once, then one
//!    by one: lane order, yields, sleeps, tasks stepping aside, delivery
//!    jitter);
//! 6. **decisions**: the decisions that still perturb the run, recorded
//!    one by one (every lane pick among ready lanes, yield point pass,
//!    task poll, delivery, link frame latency and simulated tool run; see
//!    [`Schedule`]), cut down by ddmin to those the failure needs, every
//!    other one made calm.
//!
//! Then the script stages run again against the calmer schedule, until a
//! round changes nothing or the budget runs out; what was found by then is
//! the result. The budget counts candidate runs ([`DEFAULT_RUNS`]), so
//! the same failure shrinks to the same case on a fast machine and a slow
//! one; wall time ([`DEFAULT_BUDGET`]) is only an outer cap, for a case
//! whose every run is slow.

mod ddmin;
mod script;

use std::collections::BTreeSet;
use std::fmt;
use std::time::Duration;

use crate::executor::{Decision, LaneStrategy, Schedule, Swarm};
use crate::soak::case::{Case, actions_said};
use crate::soak::check::invariants;
use crate::soak::generate::faults::{FaultKind, Faults};
use crate::soak::run::engine::{Checks, Target, run_case};
use crate::testing::{Action, Call};
use ddmin::ddmin;

/// The most wall time shrinking one failure may take, by default: an
/// outer cap only (the budget is [`DEFAULT_RUNS`]).
pub const DEFAULT_BUDGET: Duration = Duration::from_secs(120);

/// The most candidate runs shrinking one failure makes, by default
/// (shrinks of the soak's failures take 7 to 72: see the project's
/// benchmarks).
pub const DEFAULT_RUNS: u64 = 1000;

/// How far shrinking one failure may go: candidate runs, and wall time as
/// an outer cap. A [`Duration`] converts to a budget of that wall time and
/// [`DEFAULT_RUNS`] runs.
///
/// ```
/// use std::time::Duration;
/// use livesim::soak::{DEFAULT_RUNS, ShrinkBudget};
///
/// let budget = ShrinkBudget::from(Duration::from_secs(30));
/// assert_eq!(budget, ShrinkBudget { runs: DEFAULT_RUNS, time: Duration::from_secs(30) });
/// assert_eq!(ShrinkBudget::default().runs, DEFAULT_RUNS);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShrinkBudget {
    /// Candidate runs at most.
    pub runs: u64,
    /// Wall time at most.
    pub time: Duration,
}

impl Default for ShrinkBudget {
    fn default() -> Self {
        ShrinkBudget {
            runs: DEFAULT_RUNS,
            time: DEFAULT_BUDGET,
        }
    }
}

impl From<Duration> for ShrinkBudget {
    fn from(time: Duration) -> Self {
        ShrinkBudget {
            runs: DEFAULT_RUNS,
            time,
        }
    }
}

/// Where a shrink is, for a progress display.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShrinkProgress {
    /// The stage (`turns`, `actions`, `calls`, `text`, `faults`, `swarm`,
    /// `decisions`).
    pub stage: &'static str,
    /// Script actions now.
    pub actions: usize,
    /// Decisions still perturbing the run, once that stage has counted
    /// them.
    pub decisions: Option<usize>,
    /// Candidate runs so far.
    pub runs: u64,
    /// Wall time so far.
    pub elapsed: Duration,
}

impl fmt::Display for ShrinkProgress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "shrink [{:>9}] {}{}, {} runs, {:.1}s",
            self.stage,
            actions_said(self.actions),
            self.decisions
                .map(|d| format!(", {d} decisions"))
                .unwrap_or_default(),
            self.runs,
            self.elapsed.as_secs_f64()
        )
    }
}

/// A failure, shrunk.
#[derive(Clone, Debug)]
pub struct Shrunk {
    /// The agent.
    pub agent: String,
    /// The invariant the case breaks (the original's).
    pub invariant: String,
    /// What the shrunk case's run says about it.
    pub message: String,
    /// The shrunk case.
    pub case: Case,
    /// Script actions before shrinking.
    pub actions_before: usize,
    /// Candidate runs made.
    pub runs: u64,
    /// Wall time taken.
    pub elapsed: Duration,
    /// Whether shrinking finished (a round changed nothing) before the
    /// budget ran out.
    pub finished: bool,
    /// Whether the wall-time cap, not the run budget, stopped it (the
    /// case then depends on the machine's speed).
    pub out_of_time: bool,
}

impl fmt::Display for Shrunk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} seed {}: {} shrunk from {} to {} in {} runs, {:.1}s{}",
            self.agent,
            self.case.seed,
            self.invariant,
            self.actions_before,
            actions_said(self.case.actions()),
            self.runs,
            self.elapsed.as_secs_f64(),
            if self.finished {
                ""
            } else if self.out_of_time {
                " (the time cap ran out first)"
            } else {
                " (the run budget ran out first)"
            }
        )
    }
}

/// Why a case cannot be shrunk.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShrinkError {
    /// The case does not break the invariant (any more).
    #[error(
        "{agent} seed {seed} does not break `{invariant}`{}",
        if broken.is_empty() { " (every invariant holds)".to_string() } else { format!(" (it breaks: {})", broken.join(", ")) }
    )]
    Passes {
        /// The agent.
        agent: String,
        /// The seed.
        seed: String,
        /// The invariant asked for.
        invariant: String,
        /// What the case does break.
        broken: Vec<String>,
    },
}

/// Runs candidates and says which still fail the same way.
struct Judge<'a> {
    target: &'a Target,
    invariant: String,
    /// The invariants the original run broke: a candidate may break no
    /// other.
    allowed: BTreeSet<String>,
    checks: Checks,
    deadline: std::time::Instant,
    max_runs: u64,
    runs: u64,
    /// The wall-time cap stopped the search.
    timed_out: bool,
    message: String,
}

impl Judge<'_> {
    /// Whether the budget is spent: the runs, or the wall-time cap.
    fn spent(&mut self) -> bool {
        if self.runs >= self.max_runs {
            return true;
        }
        // Wall time caps the search only; it never enters a run.
        #[allow(clippy::disallowed_methods)]
        let now = std::time::Instant::now();
        self.timed_out |= now >= self.deadline;
        self.timed_out
    }

    /// Whether `case` still fails the same way (running it).
    fn fails(&mut self, case: &Case) -> bool {
        if self.spent() || !script::connections_end(case.script.actions()) {
            return false;
        }
        self.runs += 1;
        let run = run_case(self.target, case, self.checks, None);
        let broken: BTreeSet<&str> = run.failures.iter().map(|f| f.invariant.as_str()).collect();
        let same = broken.contains(self.invariant.as_str())
            && broken.iter().all(|b| self.allowed.contains(*b));
        if same && let Some(failure) = run.failures.iter().find(|f| f.invariant == self.invariant) {
            self.message = failure.message.clone();
        }
        same
    }
}

/// Shrinks `case` of `target`, which must break `invariant`, within
/// `budget`; `progress` hears of every step.
pub(crate) fn shrink(
    target: &Target,
    case: &Case,
    invariant: &str,
    budget: ShrinkBudget,
    progress: &(dyn Fn(&ShrinkProgress) + Sync),
) -> Result<Shrunk, ShrinkError> {
    // The wall-time cap decides when the search stops, never what a
    // candidate run does.
    #[allow(clippy::disallowed_methods)]
    let started = std::time::Instant::now();
    let checks = Checks {
        // The determinism check doubles every run: only when it is the
        // failure being shrunk.
        determinism_every: u64::from(invariant == invariants::DETERMINISM),
    };
    let first = run_case(target, case, checks, None);
    let broken: BTreeSet<String> = first.failures.iter().map(|f| f.invariant.clone()).collect();
    let Some(failure) = first.failures.iter().find(|f| f.invariant == invariant) else {
        return Err(ShrinkError::Passes {
            agent: target.name.clone(),
            seed: case.seed.to_string(),
            invariant: invariant.to_string(),
            broken: broken.into_iter().collect(),
        });
    };
    let mut judge = Judge {
        target,
        invariant: invariant.to_string(),
        allowed: broken,
        checks,
        deadline: started + budget.time,
        max_runs: budget.runs,
        runs: 1,
        timed_out: false,
        message: failure.message.clone(),
    };
    let mut best = case.clone();
    let report = |stage: &'static str, best: &Case, judge: &Judge<'_>| {
        progress(&ShrinkProgress {
            stage,
            actions: best.actions(),
            decisions: best.decisions.as_ref().map(Vec::len),
            runs: judge.runs,
            elapsed: started.elapsed(),
        });
    };
    let mut finished = false;
    while !judge.spent() {
        let before = best.clone();
        shrink_turns(&mut best, &mut judge);
        report("turns", &best, &judge);
        shrink_actions(&mut best, &mut judge);
        report("actions", &best, &judge);
        merge_connections(&mut best, &mut judge);
        report("connections", &best, &judge);
        shrink_calls(&mut best, &mut judge);
        report("calls", &best, &judge);
        merge_text(&mut best, &mut judge);
        report("text", &best, &judge);
        calm_faults(&mut best, &mut judge);
        report("faults", &best, &judge);
        calm_swarm(&mut best, &mut judge);
        report("swarm", &best, &judge);
        calm_decisions(&mut best, &mut judge);
        report("decisions", &best, &judge);
        if best == before {
            finished = !judge.spent();
            break;
        }
    }
    Ok(Shrunk {
        agent: target.name.clone(),
        invariant: invariant.to_string(),
        message: judge.message,
        case: best,
        actions_before: case.actions(),
        runs: judge.runs,
        elapsed: started.elapsed(),
        finished,
        out_of_time: judge.timed_out,
    })
}

/// `best` with `actions` as its script, if that is a valid script.
fn with_actions(best: &Case, actions: &[Action]) -> Option<Case> {
    Some(Case {
        script: script::with_actions(&best.script, actions)?,
        ..best.clone()
    })
}

fn shrink_turns(best: &mut Case, judge: &mut Judge<'_>) {
    let turns = script::turns(best.script.actions());
    if turns.len() < 2 {
        return;
    }
    let base = best.clone();
    let kept = ddmin(turns, &mut |candidate| {
        let actions: Vec<_> = candidate.concat();
        with_actions(&base, &actions).is_some_and(|case| judge.fails(&case))
    });
    if let Some(case) = with_actions(&base, &kept.concat()) {
        *best = case;
    }
}

fn shrink_actions(best: &mut Case, judge: &mut Judge<'_>) {
    let base = best.clone();
    let kept = ddmin(base.script.actions().to_vec(), &mut |candidate| {
        with_actions(&base, candidate).is_some_and(|case| judge.fails(&case))
    });
    if let Some(case) = with_actions(&base, &kept) {
        *best = case;
    }
}

/// Merges a connection into the one before it: its `reconnect` and the
/// action that ended the connection before (a `close`, an `abort`, a
/// refused setup, a `goAway`) go together. Removing either alone leaves
/// a script that is not valid (a reconnect with no reason, or a
/// connection that ends with none after it), so the action-by-action
/// stage keeps both even when the failure needs neither.
fn merge_connections(best: &mut Case, judge: &mut Judge<'_>) {
    let mut reconnect = best.script.actions().len();
    while let Some(r) = best.script.actions()[..reconnect]
        .iter()
        .rposition(|a| matches!(a, Action::Reconnect(_)))
    {
        reconnect = r;
        let actions = best.script.actions();
        let Some(end) = actions[..r].iter().rposition(script::ends_a_connection) else {
            continue;
        };
        let merged: Vec<Action> = actions
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != end && i != r)
            .map(|(_, a)| a.clone())
            .collect();
        if let Some(case) = with_actions(best, &merged) {
            try_case(best, judge, case);
        }
    }
}

fn shrink_calls(best: &mut Case, judge: &mut Judge<'_>) {
    let mut index = 0;
    while index < best.script.actions().len() {
        let Action::CallMany(calls) = &best.script.actions()[index] else {
            index += 1;
            continue;
        };
        let calls = calls.clone();
        let base = best.clone();
        let rebuild = |calls: &[Call]| -> Option<Case> {
            let mut actions = base.script.actions().to_vec();
            match calls {
                [] => {
                    actions.remove(index);
                }
                [one] => actions[index] = Action::Call(one.clone()),
                many => actions[index] = Action::CallMany(many.to_vec()),
            }
            with_actions(&base, &actions)
        };
        let kept = ddmin(calls, &mut |candidate| {
            rebuild(candidate).is_some_and(|case| judge.fails(&case))
        });
        if let Some(case) = rebuild(&kept) {
            *best = case;
        }
        index += 1;
    }
}

fn merge_text(best: &mut Case, judge: &mut Judge<'_>) {
    // Last run first: merging one leaves the earlier runs' places alone.
    for run in script::text_runs(best.script.actions()) {
        let actions = best.script.actions();
        let Some(one) = script::merged(actions, run.clone()) else {
            continue;
        };
        let mut candidate = actions[..run.start].to_vec();
        candidate.push(one);
        candidate.extend_from_slice(&actions[run.end..]);
        if let Some(case) = with_actions(best, &candidate)
            && judge.fails(&case)
        {
            *best = case;
        }
    }
}

/// Keeps `candidate` as the best case if it still fails.
fn try_case(best: &mut Case, judge: &mut Judge<'_>, candidate: Case) -> bool {
    if candidate != *best && judge.fails(&candidate) {
        *best = candidate;
        true
    } else {
        false
    }
}

fn calm_faults(best: &mut Case, judge: &mut Judge<'_>) {
    let calm = Case {
        faults: Faults::calm(),
        ..best.clone()
    };
    if best.faults.on().is_empty() || try_case(best, judge, calm) {
        return;
    }
    for kind in FaultKind::ALL {
        if best.faults.is_on(kind) {
            let candidate = Case {
                faults: best.faults.clone().with(kind, 0.0),
                ..best.clone()
            };
            try_case(best, judge, candidate);
        }
    }
}

/// The swarm with one perturbation off, for each one that is on.
fn calmer_swarms(swarm: &Swarm) -> Vec<Swarm> {
    let mut out = Vec::new();
    if swarm.lanes != LaneStrategy::Fixed {
        out.push(Swarm {
            lanes: LaneStrategy::Fixed,
            ..swarm.clone()
        });
    }
    if swarm.yield_chance > 0.0 || swarm.yield_max > 0 {
        out.push(Swarm {
            yield_chance: 0.0,
            yield_max: 0,
            ..swarm.clone()
        });
    }
    if swarm.sleep_chance > 0.0 || !swarm.sleep_max.is_zero() {
        out.push(Swarm {
            sleep_chance: 0.0,
            sleep_max: Duration::ZERO,
            ..swarm.clone()
        });
    }
    if swarm.task_yield_chance > 0.0 {
        out.push(Swarm {
            task_yield_chance: 0.0,
            ..swarm.clone()
        });
    }
    if !swarm.delivery_jitter.is_zero() {
        out.push(Swarm {
            delivery_jitter: Duration::ZERO,
            ..swarm.clone()
        });
    }
    out
}

fn calm_swarm(best: &mut Case, judge: &mut Judge<'_>) {
    if best.swarm == Swarm::calm() {
        return;
    }
    let calm = Case {
        swarm: Swarm::calm(),
        ..best.clone()
    };
    if try_case(best, judge, calm) {
        return;
    }
    // One at a time, each against the swarm as it is now.
    let mut changed = true;
    while changed {
        changed = false;
        for swarm in calmer_swarms(&best.swarm) {
            let candidate = Case {
                swarm,
                ..best.clone()
            };
            if try_case(best, judge, candidate) {
                changed = true;
                break;
            }
        }
    }
}

/// The decisions that perturb `case`'s run: its own restriction, or what
/// a recording run takes.
fn perturbing(case: &Case, judge: &mut Judge<'_>) -> Vec<Decision> {
    if let Some(only) = &case.decisions {
        return only.clone();
    }
    let recording = Schedule::recording();
    judge.runs += 1;
    let _ = run_case(judge.target, case, judge.checks, Some(recording.clone()));
    recording.taken()
}

fn calm_decisions(best: &mut Case, judge: &mut Judge<'_>) {
    if judge.spent() {
        return;
    }
    let taken = perturbing(best, judge);
    let restricted = Case {
        decisions: Some(taken.clone()),
        ..best.clone()
    };
    // Keeping exactly the perturbations the run took is the same run.
    if best.decisions.is_none() && !judge.fails(&restricted) {
        return;
    }
    *best = restricted;
    let base = best.clone();
    let kept = ddmin(taken, &mut |candidate| {
        judge.fails(&Case {
            decisions: Some(candidate.to_vec()),
            ..base.clone()
        })
    });
    best.decisions = Some(kept);
}
