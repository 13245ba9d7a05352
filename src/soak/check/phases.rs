//! `phases-follow-spec`: the phases a run's session moved through are the
//! ones its agent file's `"phases"` give, worked out by a small model over
//! the run's state journal (not by the session's phase machine).
//!
//! The rules, as the model applies them:
//!
//! - The session writes `session:phase` when it starts (the initial phase)
//!   and at every move. Between two writes, the state is what the
//!   journal's other entries made it.
//! - A move out of phase P goes to the first transition out of P, in
//!   declaration order, whose condition holds on the state at the write.
//! - A governed session evaluates its phases right after the flow
//!   evaluates a turn (its `flow:active` entry): when a transition out of
//!   the phase holds then, the move is the next entry that is not the
//!   flow's.
//! - A move into a phase whose own way out already holds goes on at once,
//!   before any other entry that is not the flow's: the session takes a
//!   chain of moves in one evaluation (not asked of plans with a cycle,
//!   where it takes at most one move out of each phase per evaluation).
//! - Each move is also a `phase_changed` event, in the same order.
//! - When the run settled with its session still running, no transition
//!   out of the phase it ended in holds: the session evaluates its phases
//!   after every state change, so one whose condition holds was taken.
//!   (Not asked of plans with a cycle: the session takes at most one move
//!   out of a phase per evaluation, so a cycle may rest anywhere.)

use crate::flow::Guard;
use crate::session::LiveEvent;
use crate::soak::agent::phases::PhasePlan;
use crate::soak::check::state_model::StateModel;
use crate::soak::run::record::RunRecord;

/// The check: `Ok` when the run's phases are the plan's.
pub(crate) fn check(plan: &PhasePlan, run: &RunRecord) -> Result<(), String> {
    let mut state = StateModel::default();
    let mut current: Option<&str> = None;
    let mut moves: Vec<(&str, &str)> = Vec::new();
    // A move owed at a turn's end, or right after a move (a chain): the
    // entry it is owed from, where from and to, and whether a move.
    let mut owed: Option<(u64, &str, &str, bool)> = None;
    // Without a cycle, a chain of moves completes in one evaluation.
    let chains = !plan.has_cycle();
    for entry in &run.journal {
        if entry.key != "session:phase" {
            if let Some((at, from, to, chained)) = owed
                && !entry.key.starts_with("flow:")
            {
                let when = if chained {
                    format!("after the move to {from:?} at journal entry #{at}")
                } else {
                    format!("at the turn that ended at journal entry #{at}")
                };
                return Err(format!(
                    "{when}, the transition from {from:?} to {to:?} held, but the phase did not \
                     move (entry #{} came first)",
                    entry.seq
                ));
            }
            state.apply(entry);
            if entry.key == "flow:active"
                && let Some(from) = current
            {
                owed = first_that_holds(plan, from, &state)
                    .map(|(to, _)| (entry.seq, from, to, false));
            }
            continue;
        }
        owed = None;
        let Some(to) = entry.value.as_str() else {
            return Err(format!(
                "journal entry #{} writes session:phase = {}, not a phase name",
                entry.seq, entry.value
            ));
        };
        let Some(from) = current else {
            if to != plan.initial {
                return Err(format!(
                    "journal entry #{} starts the session in the phase {to:?}, but the agent's \
                     phases start in {:?}",
                    entry.seq, plan.initial
                ));
            }
            current = Some(to);
            continue;
        };
        match first_that_holds(plan, from, &state) {
            None => {
                return Err(format!(
                    "journal entry #{} moves the phase from {from:?} to {to:?}, but no \
                     transition out of {from:?} holds then",
                    entry.seq
                ));
            }
            Some((next, when)) if next != to => {
                return Err(format!(
                    "journal entry #{} moves the phase from {from:?} to {to:?}, but the first \
                     transition out of {from:?} that holds then goes to {next:?} (when {when})",
                    entry.seq
                ));
            }
            Some(_) => {}
        }
        moves.push((from, to));
        current = Some(to);
        if chains {
            owed = first_that_holds(plan, to, &state).map(|(next, _)| (entry.seq, to, next, true));
        }
    }
    let Some(last) = current else {
        // A session that never started has no phase.
        return match &run.connect_error {
            Some(_) => Ok(()),
            None if run.journal.is_empty() => Ok(()),
            None => Err("the session never wrote session:phase".to_string()),
        };
    };
    let events: Vec<(&str, &str)> = run
        .delivered()
        .filter_map(|e| match e {
            LiveEvent::PhaseChanged { from, to } => Some((from.as_str(), to.as_str())),
            _ => None,
        })
        .collect();
    if events != moves {
        return Err(format!(
            "the phase_changed events are {}, but the journal's moves are {}",
            list(&events),
            list(&moves)
        ));
    }
    if !run.settling.ended
        && run.settling.settled_at.is_some()
        && !plan.has_cycle()
        && let Some((next, when)) = first_that_holds(plan, last, &state)
    {
        return Err(format!(
            "the run settled in the phase {last:?}, though its transition to {next:?} holds \
             (when {when})"
        ));
    }
    Ok(())
}

/// The first transition out of `from` whose condition holds on `state`.
fn first_that_holds<'p>(
    plan: &'p PhasePlan,
    from: &str,
    state: &StateModel<'_>,
) -> Option<(&'p str, &'p Guard)> {
    plan.transitions
        .iter()
        .find(|t| t.from == from && state.holds(&t.when))
        .map(|t| (t.to.as_str(), &t.when))
}

fn list(moves: &[(&str, &str)]) -> String {
    if moves.is_empty() {
        return "none".to_string();
    }
    moves
        .iter()
        .map(|(from, to)| format!("{from} -> {to}"))
        .collect::<Vec<_>>()
        .join(", ")
}
