//! `answered-once`: each call answered once, with its own id, and with
//! what the run of that id's tool gave.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::session::LiveEvent;
use crate::soak::check::calls_by_connection::{
    CallKey, events_by_connection, runs_of, server_calls,
};
use crate::soak::check::model::Expected;
use crate::soak::check::reconnects;
use crate::soak::check::wire_order;
use crate::soak::run::record::ExecutionOutcome;
use crate::soak::run::record::RunRecord;

/// `answered-once`: every call the script did not cancel is answered
/// exactly once, with its own id, and none after the session handled its
/// cancellation; each answer fits the run of that id's tool. A call with
/// no id is never answered (no answer could name it).
pub(crate) fn answered_once(run: &RunRecord) -> Result<(), String> {
    let issues = reconnects::issues(run);
    let mut answers: BTreeMap<&str, usize> = BTreeMap::new();
    let issued: BTreeSet<&str> = run.calls.issued.iter().map(String::as_str).collect();
    for response in run.responses() {
        let Some(id) = response.get("id").and_then(Value::as_str) else {
            return Err(format!("a function response has no id: {response}"));
        };
        if id.is_empty() {
            return Err(format!(
                "the session answered a call with no id, which it must not run: {response}"
            ));
        }
        if !issued.contains(id) {
            return Err(format!(
                "the session answered {id}, which the script never issued"
            ));
        }
        *answers.entry(id).or_default() += 1;
    }
    // Once per connection that issued the id (a later connection's call
    // with an old id is a new call).
    if let Some((id, n)) = answers
        .iter()
        .find(|(id, n)| **n > reconnects::allowed(issues, id).max(1))
    {
        return Err(format!("{id} was answered {n} times"));
    }
    answers_fit_their_runs(run)?;
    // The session's own order: nothing answered after it handled a
    // cancellation (answers that crossed a cancellation on the wire are
    // fine; the session could not have known).
    // Ids belong to their connection: a cancellation names its own calls,
    // those issued before it (a call issued later with the id is new).
    let mut issued: BTreeSet<(usize, &str)> = BTreeSet::new();
    let mut cancelled_at: BTreeMap<(usize, &str), usize> = BTreeMap::new();
    for (index, (connection, timed)) in events_by_connection(&run.events).enumerate() {
        match &timed.event {
            LiveEvent::ToolCall { calls } => {
                for call in calls {
                    issued.insert((connection, call.id.as_str()));
                }
            }
            LiveEvent::ToolCancelled { ids } => {
                for id in ids {
                    let call = (connection, id.as_str());
                    if issued.contains(&call) {
                        cancelled_at.entry(call).or_insert(index);
                    }
                }
            }
            LiveEvent::ToolResponse { id, name, .. } => {
                if let Some(at) = cancelled_at.get(&(connection, id.as_str())) {
                    return Err(format!(
                        "{name} ({id}) was answered after the session handled its cancellation \
                         (event #{at}, answer event #{index})"
                    ));
                }
            }
            _ => {}
        }
    }
    if !run.settling.ended {
        let unanswered: Vec<&String> = run
            .calls
            .issued
            .iter()
            .filter(|id| {
                // A call with no id is not run: no answer could name it.
                !id.is_empty()
                    && !answers.contains_key(id.as_str())
                    && !run.calls.cancelled.contains(*id)
                    && !run.calls.abandoned.contains(*id)
            })
            .collect();
        if let Some(first) = unanswered.first() {
            return Err(format!(
                "{first} was never answered (unanswered: {unanswered:?}), though it was not \
                 cancelled and its connection stayed up"
            ));
        }
    }
    Ok(())
}

/// Each answer says what the run of its call's tool gave: its name is the
/// call's, and its content is the tool's result (an object as it is, any
/// other value as `{"result": value}`), or an error when the tool failed,
/// timed out, was refused or is unknown. Two parallel calls whose results
/// were swapped fail here.
fn answers_fit_their_runs(run: &RunRecord) -> Result<(), String> {
    // The calls the frames carried, as the reference model reads them: the
    // call → its tool's name (the first call with an id on a connection
    // wins).
    let mut names: BTreeMap<CallKey, String> = BTreeMap::new();
    for (n, connection) in wire_order::connections(run).iter().enumerate() {
        for event in connection.frames.iter().flat_map(|f| &f.events) {
            if let Expected::Calls(calls) = event {
                for (id, name, _) in calls {
                    names
                        .entry((n + 1, id.clone()))
                        .or_insert_with(|| name.clone());
                }
            }
        }
    }
    let issued = server_calls(run);
    for response in run.responses() {
        let id = response
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let name = response
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let content = response.get("response").cloned().unwrap_or(Value::Null);
        // The answer is one of the calls with its id (an id on one
        // connection names one call): it must fit that call's run.
        let mut verdict = Ok(());
        for connection in issued.connections_of(id) {
            let call = (connection, id.to_string());
            verdict = answer_fits(run, &call, names.get(&call), name, &content, response);
            if verdict.is_ok() {
                break;
            }
        }
        verdict?;
    }
    Ok(())
}

/// Whether `response` (naming `name`, saying `content`) is what `call`
/// (to the tool `called`) got from its run.
fn answer_fits(
    run: &RunRecord,
    call: &CallKey,
    called: Option<&String>,
    name: &str,
    content: &Value,
    response: &Value,
) -> Result<(), String> {
    let id = &call.1;
    if let Some(called) = called
        && called != name
    {
        return Err(format!(
            "{id} called {called}, but its answer names {name}: {response}"
        ));
    }
    let runs: Vec<&crate::soak::run::record::ToolExecution> = runs_of(run, call).collect();
    let error = content.get("error").is_some();
    if runs.is_empty() {
        // Refused, unknown, or never run: only an error can answer it.
        return if error {
            Ok(())
        } else {
            Err(format!(
                "{id} ({name}) never ran, but was answered as if it had: {content}"
            ))
        };
    }
    let fits = runs.iter().any(|e| {
        e.tool == name
            && match &e.outcome {
                ExecutionOutcome::Ok(Value::Object(result)) => {
                    *content == Value::Object(result.clone())
                }
                ExecutionOutcome::Ok(other) => *content == serde_json::json!({ "result": other }),
                ExecutionOutcome::Failed(_) | ExecutionOutcome::Unfinished => error,
            }
    });
    if fits {
        return Ok(());
    }
    let ran: Vec<String> = runs
        .iter()
        .map(|e| match &e.outcome {
            ExecutionOutcome::Ok(result) => format!("{} gave {result}", e.tool),
            ExecutionOutcome::Failed(why) => format!("{} failed: {why}", e.tool),
            ExecutionOutcome::Unfinished => format!("{} never finished", e.tool),
        })
        .collect();
    Err(format!(
        "{id} was answered {content} as {name}, but its run says otherwise: {}",
        ran.join("; ")
    ))
}
