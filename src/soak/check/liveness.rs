//! `liveness`: the session settles after the fault phase, a session that
//! ended stops its tools, and one that lives lets them finish.

use serde_json::Value;

use crate::executor::format_time;
use crate::session::LiveEvent;
use crate::soak::check::calls_by_connection::{call_of, events_by_connection};
use crate::soak::check::telemetry::LAG;
use crate::soak::check::wire_order;
use crate::soak::run::record::RunRecord;

/// The words of a tool's timeout in its error answer (the dispatcher's
/// sentence, `<tool> timed out after <time>`; a change there must come
/// here).
const TIMED_OUT: &str = " timed out after ";

/// `liveness`.
pub(crate) fn check(run: &RunRecord) -> Result<(), String> {
    let settling = &run.settling;
    let Some(settled) = settling.settled_at else {
        let script = match &settling.script_at {
            Some(at) => format!("; the script was still at {at}"),
            None => String::new(),
        };
        return Err(format!(
            "the session never settled (stopped at t={}): calls issued and not answered or \
             cancelled: {:?}{script}",
            format_time(run.virtual_time),
            unanswered(run)
        ));
    };
    if let Some(done) = settling.script_done_at
        && settled.saturating_sub(done) > settling.bound
    {
        return Err(format!(
            "the session took until t={} to settle after the fault phase ended at t={} (bound {})",
            format_time(settled),
            format_time(done),
            format_time(settling.bound)
        ));
    }
    if settling.ended_by_script && !settling.ended {
        return Err("the script ended the connection, but the session did not end".to_string());
    }
    let gave_up = wire_order::server_gave_up(run);
    if gave_up && !settling.ended {
        return Err(
            "the server sent an in-band error and nothing else, which ends the session, but \
             the session went on"
                .to_string(),
        );
    }
    // A session that ended stops its tools: no run finishes after the
    // `disconnected` event (received at or after it was emitted).
    if let Some(ended) = run
        .events
        .iter()
        .find(|e| e.event.kind() == "disconnected")
        .map(|e| e.at)
        && let Some(late) = run
            .executions
            .iter()
            .find(|x| x.finished.is_some_and(|f| f > ended))
    {
        return Err(format!(
            "{} ({}) was still running when the session ended at t={} and finished at t={}: \
             a session that ends stops its tools",
            late.tool,
            late.call_id.as_deref().unwrap_or("no call id"),
            format_time(ended),
            format_time(late.finished.unwrap_or_default())
        ));
    }
    left_to_finish(run)?;
    answered_while_connected(run)?;
    // A session the strict script hung up on is the `protocol` failure.
    if !settling.ended_by_script
        && !gave_up
        && settling.hung_up_at.is_none()
        && settling.ended
        && !run.script_broke_off()
        && !network_ended_it(run)
    {
        return Err(format!(
            "the session ended though the script never closed the connection: {}",
            run.delivered()
                .find(|e| e.kind() == "disconnected")
                .map_or("(no disconnected event)".to_string(), ToString::to_string)
        ));
    }
    if let Some(at) = settling.hung_up_at {
        // The user hung up while calls ran: their answers never come, but
        // the session must say it ended.
        if !run.delivered().any(|e| e.kind() == "disconnected") {
            return Err(format!(
                "the user hung up at t={} and the session never said it ended (no \
                 disconnected event)",
                format_time(at)
            ));
        }
        // Nor does it reconnect after (it may have been reconnecting).
        if let Some(late) = run.events.iter().find(|e| {
            e.at > at + LAG
                && matches!(
                    e.event,
                    LiveEvent::Reconnecting { .. } | LiveEvent::Resumed { .. }
                )
        }) {
            return Err(format!(
                "the user hung up at t={} and the session went on reconnecting: {} at t={}",
                format_time(at),
                late.event.kind(),
                format_time(late.at)
            ));
        }
    } else if !settling.ended {
        let left = unanswered(run);
        if !left.is_empty() {
            return Err(format!(
                "calls still unanswered after the run settled: {left:?}"
            ));
        }
    }
    Ok(())
}

/// A session that lives lets its tools finish, those of a connection that
/// ended too (a half-run tool is worse than an unanswered one): a run is
/// dropped unfinished only when its call was cancelled, when its answer
/// went out anyway (before the drop, or a timeout's error, which follows
/// it by at most [`LAG`]), when its tool timed out after its
/// connection ended (the session says the call finished there), or as the
/// session ended (its `disconnected` event comes at most [`LAG`] after).
fn left_to_finish(run: &RunRecord) -> Result<(), String> {
    for execution in &run.executions {
        let Some(dropped) = execution.dropped else {
            continue;
        };
        let id = execution.call_id.as_deref().unwrap_or_default();
        // Call ids belong to their connection: only a cancellation on the
        // connection the call came on names it (a later connection's
        // `call-1` is another call).
        // The connection it started on (a call that came with a new
        // connection's `setupComplete` came after its `resumed`).
        let on = events_by_connection(&run.events)
            .take_while(|(_, e)| e.at <= execution.started)
            .last()
            .map_or(1, |(connection, _)| connection);
        let excused = events_by_connection(&run.events).any(|(connection, e)| match &e.event {
            // The server cancelled it (a frame of its own, or the
            // script's cancellation), or the session answered it without
            // its run (it timed out).
            LiveEvent::ToolCancelled { ids } => {
                connection == on && e.at <= dropped && ids.iter().any(|c| c == id)
            }
            // A timeout drops the run inside its task, and its error
            // answer follows through the control lane, a moment later.
            LiveEvent::ToolResponse {
                id: answered,
                response,
                ..
            } => {
                let timed_out = response
                    .get("error")
                    .and_then(Value::as_str)
                    .is_some_and(|e| e.contains(TIMED_OUT));
                connection == on
                    && answered == id
                    && (e.at <= dropped || (timed_out && e.at <= dropped + LAG))
            }
            LiveEvent::Disconnected { .. } => dropped <= e.at && e.at <= dropped + LAG,
            LiveEvent::Warning { message } => {
                !id.is_empty()
                    && message.contains(&format!("({id}) finished after its connection ended"))
            }
            _ => false,
        });
        if !excused {
            return Err(format!(
                "{} ({}) started at t={} on connection {on} was dropped unfinished at t={}, \
                 though its call was not cancelled or answered on that connection and the \
                 session did not end: a session lets its tools finish, those of a connection \
                 that ended too",
                execution.tool,
                execution.call_id.as_deref().unwrap_or("no call id"),
                format_time(execution.started),
                format_time(dropped)
            ));
        }
    }
    Ok(())
}

/// A session answers each call whose tool finished while the call's
/// connection was still the session's, a connection whose move the server
/// refused too (the session stayed on it). A connection stops being the
/// session's when the session says so: a `reconnecting` for anything but
/// a `goAway` (it is gone), the next connection's `resumed` (a move
/// completed), or `disconnected`. A run that finished more than [`LAG`]
/// before that is answered, or its call cancelled, on that connection.
fn answered_while_connected(run: &RunRecord) -> Result<(), String> {
    for execution in &run.executions {
        let (Some(finished), Some(id)) = (execution.finished, execution.call_id.as_deref()) else {
            continue;
        };
        let Some((on, _)) = call_of(run, execution) else {
            continue;
        };
        let over = events_by_connection(&run.events)
            .find(|(connection, e)| {
                *connection > on
                    || (*connection == on
                        && e.at >= execution.started
                        && match &e.event {
                            LiveEvent::Reconnecting { cause, .. } => cause != "goAway",
                            LiveEvent::Disconnected { .. } => true,
                            _ => false,
                        })
            })
            .map(|(_, e)| e.at);
        if over.is_some_and(|over| finished + LAG > over) {
            continue;
        }
        let settled = events_by_connection(&run.events).any(|(connection, e)| {
            connection == on
                && match &e.event {
                    LiveEvent::ToolResponse { id: answered, .. } => answered == id,
                    LiveEvent::ToolCancelled { ids } => ids.iter().any(|c| c == id),
                    _ => false,
                }
        });
        if !settled {
            return Err(format!(
                "{} ({id}) finished at t={} on connection {on}, which was still the session's \
                 (until {}), and was never answered there: a call whose connection lasts is \
                 answered on it",
                execution.tool,
                format_time(finished),
                over.map_or("the end".to_string(), |at| format!("t={}", format_time(at)))
            ));
        }
    }
    Ok(())
}

/// Whether the simulated network, not the session, ended a session the
/// script never closed: the session made every attempt its policy allows
/// without getting back (the network can refuse any of them, a short
/// policy gives up sooner), or a connection died under it while it held
/// no resumable handle (nothing to resume: it ends, as designed).
fn network_ended_it(run: &RunRecord) -> bool {
    let Some(network) = &run.network else {
        return false;
    };
    // The attempts of the last reconnect, counted from the events.
    let mut attempts = 0;
    for timed in &run.events {
        match &timed.event {
            LiveEvent::Reconnecting { attempt, .. } => attempts = *attempt,
            LiveEvent::Resumed { .. } => attempts = 0,
            _ => {}
        }
    }
    if attempts >= run.resumption.max_attempts() {
        return true;
    }
    if network.died.is_empty() {
        return false;
    }
    // Whether the session held a resumable handle when it ended: the
    // latest update says so, and no rejected resumption dropped it since.
    // (wire-order ties these events to the frames.)
    let mut resumable_handle = false;
    for timed in &run.events {
        match &timed.event {
            LiveEvent::ResumptionUpdate { resumable, .. } => resumable_handle = *resumable,
            LiveEvent::ResumptionFailed { .. } => resumable_handle = false,
            _ => {}
        }
    }
    !resumable_handle
}

fn unanswered(run: &RunRecord) -> Vec<String> {
    run.calls
        .issued
        .iter()
        .filter(|id| {
            !run.calls.answered.contains(*id)
                && !run.calls.cancelled.contains(*id)
                && !run.calls.abandoned.contains(*id)
        })
        .cloned()
        .collect()
}
