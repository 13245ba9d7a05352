//! `refused-never-runs`: what a refusal must hold. A call the flow refused
//! never runs and is answered with the refusal's reason; and a refusal
//! that says a call of its committing tool is still running is true, read
//! from the events and the tool runs (not from the flow's own books, which
//! are what it checks).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::executor::format_time;
use crate::flow::FlowEntry;
use crate::session::LiveEvent;
use crate::soak::check::reconnects;
use crate::soak::run::record::RunRecord;

/// The words of a refusal that reserves a committing tool for a call
/// still running (the flow's sentence; a change there must come here).
const STILL_RUNNING: &str = "and a call of it is still running";

fn refusals(run: &RunRecord) -> BTreeMap<String, (String, String)> {
    let mut refused = BTreeMap::new();
    for event in run.delivered() {
        if let LiveEvent::ToolDenied { id, name, reason } = event {
            refused.insert(id.clone(), (name.clone(), reason.clone()));
        }
    }
    for entry in &run.journal {
        if let Ok(Some(FlowEntry::ToolDenied { tool, id, reason })) =
            FlowEntry::parse(&entry.key, &entry.value)
        {
            refused.entry(id).or_insert((tool, reason));
        }
    }
    refused
}

pub(crate) fn refused_never_runs(run: &RunRecord) -> Result<(), String> {
    still_running_is_true(run)?;
    let responses = run.responses();
    let issues = reconnects::issues(run);
    for (id, (tool, reason)) in refusals(run) {
        // A later connection may issue the id again, as a new call: each
        // issue is refused or run, never both.
        let refused = run
            .delivered()
            .filter(|e| matches!(e, LiveEvent::ToolDenied { id: d, .. } if *d == id))
            .count()
            .max(1);
        let mut runs = run
            .executions
            .iter()
            .filter(|e| e.call_id.as_deref() == Some(id.as_str()));
        let ran_too = runs.clone().count() + refused > reconnects::allowed(issues, &id).max(1);
        if ran_too && let Some(ran) = runs.next() {
            return Err(format!(
                "{tool} ({id}) was refused ({reason}) but ran, from t={}{}",
                format_time(ran.started),
                ran.finished
                    .map(|t| format!(" to t={}", format_time(t)))
                    .unwrap_or_default()
            ));
        }
        let answer = responses.iter().find(|r| {
            r.get("id").and_then(Value::as_str) == Some(id.as_str())
                && r.get("response") == Some(&serde_json::json!({ "error": reason }))
        });
        let answer = answer.or_else(|| {
            responses
                .iter()
                .find(|r| r.get("id").and_then(Value::as_str) == Some(id.as_str()))
        });
        let wanted = serde_json::json!({ "error": reason });
        match answer.and_then(|r| r.get("response")) {
            Some(response) if *response != wanted => {
                return Err(format!(
                    "{tool} ({id}) was refused, but was answered {response} instead of {wanted}"
                ));
            }
            None if !run.settling.ended && !run.calls.abandoned.contains(&id) => {
                let cancelled = if run.calls.cancelled.contains(&id) {
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
    for (k, refusal) in events.iter().enumerate() {
        let LiveEvent::ToolDenied { id, name, reason } = &refusal.event else {
            continue;
        };
        if !reason.contains(STILL_RUNNING) {
            continue;
        }
        let admitted = events[..k].iter().enumerate().flat_map(|(i, timed)| {
            let calls = match &timed.event {
                LiveEvent::ToolCall { calls } => calls.as_slice(),
                _ => &[],
            };
            calls
                .iter()
                .filter(|call| call.name == *name && call.id != *id)
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
