//! `refused-never-runs`: what a refusal must hold. A call the flow refused
//! never runs and is answered with the refusal's reason; and a refusal
//! that says a call of its committing tool is still running is true, read
//! from the events and the tool runs (not from the flow's own books, which
//! are what it checks).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::executor::format_time;
use crate::session::LiveEvent;
use crate::soak::check::calls_by_connection::{
    CallKey, events_by_connection, journaled_refusals, runs_of, server_calls,
};
use crate::soak::run::record::RunRecord;

/// The words of a refusal that reserves a committing tool for a call
/// still running (the flow's sentence; a change there must come here).
const STILL_RUNNING: &str = "and a call of it is still running";

/// Every call the flow refused: the call → (tool, reason), from the
/// refusal events and from the journal (a gate that journals a refusal and
/// runs the tool anyway shows up in the second only).
fn refusals(run: &RunRecord) -> BTreeMap<CallKey, (String, String)> {
    let mut refused = BTreeMap::new();
    for (connection, timed) in events_by_connection(&run.events) {
        if let LiveEvent::ToolDenied { id, name, reason } = &timed.event {
            refused.insert((connection, id.clone()), (name.clone(), reason.clone()));
        }
    }
    for (call, refusal) in journaled_refusals(run) {
        refused.entry(call).or_insert(refusal);
    }
    refused
}

pub(crate) fn refused_never_runs(run: &RunRecord) -> Result<(), String> {
    still_running_is_true(run)?;
    let responses = run.responses();
    let calls = server_calls(run);
    for (call, (tool, reason)) in refusals(run) {
        let id = call.1.as_str();
        if let Some(ran) = runs_of(run, &call).next() {
            return Err(format!(
                "{tool} ({id}) was refused ({reason}) but ran, from t={}{}",
                format_time(ran.started),
                ran.finished
                    .map(|t| format!(" to t={}", format_time(t)))
                    .unwrap_or_default()
            ));
        }
        let wanted = serde_json::json!({ "error": reason });
        let with_id = || {
            responses
                .iter()
                .filter(|r| r.get("id").and_then(Value::as_str) == Some(id))
        };
        if with_id().any(|r| r.get("response") == Some(&wanted)) {
            continue;
        }
        // Another connection's call with this id may have been answered
        // otherwise: only an id issued once tells what this one got.
        let issued_on: Vec<usize> = calls.connections_of(id).collect();
        let answer = with_id().next().filter(|_| issued_on.len() <= 1);
        match answer.and_then(|r| r.get("response")) {
            Some(response) => {
                return Err(format!(
                    "{tool} ({id}) was refused, but was answered {response} instead of {wanted}"
                ));
            }
            // Only the last connection's call is still the script's to
            // answer (its view of an id is its last issue's).
            None if !run.settling.ended
                && !run.calls.abandoned.contains(id)
                && calls.connections == call.0 =>
            {
                let cancelled = if run.calls.cancelled.contains(id) {
                    " (the script cancelled it later, but a refusal is answered at once)"
                } else {
                    ""
                };
                return Err(format!(
                    "{tool} ({id}) was refused and never answered{cancelled}"
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// A refusal because "a call of it is still running" names a tool with a
/// call admitted before it that had not ended: neither its answer nor the
/// server's cancellation of it came between the two, on its connection.
/// (A tool that has finished but whose answer the session has not sent
/// yet still holds it; a call of an earlier connection, which is never
/// answered and which a cancellation on a later connection cannot name,
/// holds it too, until the session's end: those are lenient, never false
/// alarms. A tool the session forgot to release keeps refusing for the
/// rest of the session; that is what this catches.)
fn still_running_is_true(run: &RunRecord) -> Result<(), String> {
    let events = &run.events;
    let connections: Vec<usize> = events_by_connection(events).map(|(n, _)| n).collect();
    for (k, refusal) in events.iter().enumerate() {
        let LiveEvent::ToolDenied { id, name, reason } = &refusal.event else {
            continue;
        };
        if !reason.contains(STILL_RUNNING) {
            continue;
        }
        // Every earlier call of the tool but the refused one itself (an
        // earlier connection's call with its id is another call).
        let connections = &connections;
        let admitted = events[..k].iter().enumerate().flat_map(|(i, timed)| {
            let calls = match &timed.event {
                LiveEvent::ToolCall { calls } => calls.as_slice(),
                _ => &[],
            };
            calls
                .iter()
                .filter(move |call| {
                    call.name == *name && (call.id != *id || connections[i] != connections[k])
                })
                .map(move |call| (i, call.id.as_str()))
        });
        let mut ended = Vec::new();
        let mut open = false;
        for (i, call) in admitted {
            // Ids belong to their connection: an answer or a cancellation
            // naming the id after the session moved is another call's.
            // Unanswered by then, the call holds its tool until it ends.
            let moved = events[i + 1..k]
                .iter()
                .position(|e| {
                    matches!(
                        e.event,
                        LiveEvent::Reconnecting { .. } | LiveEvent::Resumed { .. }
                    )
                })
                .map_or(k, |p| i + 1 + p);
            let between = &events[i + 1..moved];
            let refused = between
                .iter()
                .any(|e| matches!(&e.event, LiveEvent::ToolDenied { id: d, .. } if d == call));
            let answered = between
                .iter()
                .any(|e| matches!(&e.event, LiveEvent::ToolResponse { id: r, .. } if r == call));
            let cancelled = between.iter().any(|e| {
                matches!(&e.event, LiveEvent::ToolCancelled { ids } if ids.iter().any(|c| c == call))
            });
            if refused {
                continue;
            }
            if answered || cancelled {
                let how = if cancelled { "cancelled" } else { "answered" };
                ended.push(format!("{call} {how}"));
            } else {
                open = true;
                break;
            }
        }
        if !open {
            let calls = if ended.is_empty() {
                format!("no call of {name} was admitted before it")
            } else {
                format!("every earlier call of it had ended ({})", ended.join(", "))
            };
            return Err(format!(
                "{name} ({id}) was refused at t={} because a call of it was still running, but \
                 {calls}: the flow still holds a call that is over",
                format_time(refusal.at)
            ));
        }
    }
    Ok(())
}
