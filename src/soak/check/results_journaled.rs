//! Part of `decisions-follow-spec`: a governed run's journal holds the
//! outcome of every tool run, as the tool runs themselves say it.
//!
//! The model in [`flow_model`](super::flow_model) reads the journal's
//! results as given; this ties them to what the soak's tool wrappers saw
//! run, which the session does not write. Three rules, counted per tool,
//! call id and outcome (an id may come back on a later connection):
//!
//! - every run of a call follows that call's `flow:tool_call`: the flow
//!   admitted it (a tool that ran past the gate would not be counted);
//! - every run that finished has its `flow:tool_result` with the same `ok`,
//!   whichever connection the call belonged to: a run that finishes after
//!   the session moved to a new connection still ran, and so does one whose
//!   cancellation reached the session after the tool had returned (its
//!   answer is not sent, but a `flow:tool_cancelled` in place of its result
//!   would free a committing tool that has done its work: a second payment);
//! - every `flow:tool_result` that says `ok` answers a run that finished
//!   with a result. A result that says it failed may have no run (a
//!   timeout cuts a run short; an unknown tool never runs).
//!
//! A run that finished up to the session's end owes its entry too, the
//! instant of the end included: a tool that returned as the user hung up
//! did its work, and the session counts it before it stops. Only a run
//! that finished after the end owes nothing here (a session that ended
//! stops its tools: `liveness` judges that).

use std::collections::BTreeMap;

use super::flow_model::member;
use crate::flow::keys;
use crate::soak::run::record::{ExecutionOutcome, RunRecord};

/// The check: `Ok` when the journal's results and the tool runs agree.
pub(crate) fn check(run: &RunRecord) -> Result<(), String> {
    // What the journal says of each (tool, id): admissions, results by
    // outcome, and cancellations.
    let mut admitted: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    let mut journaled: BTreeMap<(&str, &str), Outcomes> = BTreeMap::new();
    for entry in &run.journal {
        if entry.key == keys::TOOL_CALL {
            *admitted
                .entry((member(entry, "tool")?, member(entry, "id")?))
                .or_default() += 1;
            continue;
        }
        let outcome = match entry.key.as_str() {
            keys::TOOL_RESULT => match entry.value.get("ok").and_then(|ok| ok.as_bool()) {
                Some(true) => Said::Ok,
                Some(false) => Said::Failed,
                None => {
                    return Err(format!(
                        "journal entry {} ({}) has no boolean \"ok\": {}",
                        entry.seq, entry.key, entry.value
                    ));
                }
            },
            keys::TOOL_CANCELLED => Said::Cancelled,
            _ => continue,
        };
        journaled
            .entry((member(entry, "tool")?, member(entry, "id")?))
            .or_default()
            .add(outcome);
    }
    // The session's end: its last disconnection, else the run's end.
    let end = run.last_disconnection().unwrap_or(run.virtual_time);
    // Each run takes one admission, and once finished one journal entry
    // of its own.
    for execution in &run.executions {
        let Some(id) = execution.call_id.as_deref() else {
            continue;
        };
        match admitted.get_mut(&(execution.tool.as_str(), id)) {
            Some(count) if *count > 0 => *count -= 1,
            _ => {
                return Err(format!(
                    "tool {} ran for call {id}, but the journal has no flow:tool_call admitting \
                     it: the call ran past the flow's gate",
                    execution.tool
                ));
            }
        }
        let Some(finished) = execution.finished else {
            continue;
        };
        let ok = matches!(execution.outcome, ExecutionOutcome::Ok(_));
        // A run after the end takes its entry if it is there, so nothing
        // else claims it, but owes none.
        let owed = finished <= end;
        let took = journaled
            .get_mut(&(execution.tool.as_str(), id))
            .is_some_and(|outcomes| outcomes.take(ok));
        if owed && !took {
            let outcome = if ok { "a result" } else { "an error" };
            return Err(format!(
                "tool {} ran for call {id} and finished with {outcome}, but the journal has no \
                 flow:tool_result with \"ok\": {ok} for it: the flow did not count a call that \
                 ran{}",
                execution.tool,
                if journaled
                    .get(&(execution.tool.as_str(), id))
                    .is_some_and(|outcomes| outcomes.cancelled > 0)
                {
                    " (it has a flow:tool_cancelled, but the tool had returned: a cancellation \
                     that comes too late to stop a tool does not undo what it did)"
                } else {
                    ""
                }
            ));
        }
    }
    for ((tool, id), outcomes) in &journaled {
        if outcomes.ok > 0 {
            return Err(format!(
                "the journal says call {id} of {tool} succeeded ({} flow:tool_result with \"ok\": \
                 true left over), but no run of {tool} for that call finished with a result",
                outcomes.ok
            ));
        }
    }
    Ok(())
}

/// What the journal said of one call: how many results of each kind, and
/// cancellations.
#[derive(Default)]
struct Outcomes {
    ok: usize,
    failed: usize,
    cancelled: usize,
}

/// One journal entry about a call.
#[derive(Clone, Copy)]
enum Said {
    Ok,
    Failed,
    Cancelled,
}

impl Outcomes {
    fn add(&mut self, said: Said) {
        match said {
            Said::Ok => self.ok += 1,
            Said::Failed => self.failed += 1,
            Said::Cancelled => self.cancelled += 1,
        }
    }

    /// Takes the entry a finished run is owed: its result. Whether there
    /// was one.
    fn take(&mut self, ok: bool) -> bool {
        let result = if ok { &mut self.ok } else { &mut self.failed };
        if *result == 0 {
            return false;
        }
        *result -= 1;
        true
    }
}
