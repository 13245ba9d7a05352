//! The connection keys a resuming session writes to state follow its
//! events: `session:reconnect_attempt` each `reconnecting` attempt,
//! `session:resumed` `failed` at each `resumption_failed`, and at each
//! `resumed` the new connection's number (`session:connection`) and how
//! it was reached (`session:resumed`: `fresh` or `resumed`). Part of the
//! `telemetry` invariant.
//!
//! The model is the list of writes the events call for, in the events'
//! order, held against the journal's writes of those three keys in the
//! journal's order: a key left unwritten, written with another value or
//! written out of turn shows as the first place the two lists part.

use serde_json::{Value, json};

use crate::session::LiveEvent;
use crate::soak::run::record::RunRecord;

/// The keys this check owns.
const KEYS: [&str; 3] = [
    "session:connection",
    "session:resumed",
    "session:reconnect_attempt",
];

/// Checks the run's connection keys against its events.
pub(crate) fn check(run: &RunRecord) -> Result<(), String> {
    let mut expected: Vec<(&str, Value)> = Vec::new();
    for timed in &run.events {
        match &timed.event {
            LiveEvent::Reconnecting { attempt, .. } => {
                expected.push(("session:reconnect_attempt", json!(attempt)));
            }
            LiveEvent::ResumptionFailed { .. } => {
                expected.push(("session:resumed", json!("failed")))
            }
            LiveEvent::Resumed { connection, fresh } => {
                expected.push(("session:connection", json!(connection)));
                let how = if *fresh { "fresh" } else { "resumed" };
                expected.push(("session:resumed", json!(how)));
            }
            _ => {}
        }
    }
    let written: Vec<(&str, &Value)> = run
        .journal
        .iter()
        .filter(|m| KEYS.contains(&m.key.as_str()))
        .map(|m| (m.key.as_str(), &m.value))
        .collect();
    let parted =
        (0..expected.len().max(written.len())).find(|&i| match (expected.get(i), written.get(i)) {
            (Some((key, value)), Some((k, v))) => key != k || value != *v,
            _ => true,
        });
    let Some(i) = parted else {
        return Ok(());
    };
    let show = |entry: Option<(&str, &Value)>| match entry {
        Some((key, value)) => format!("{key} = {value}"),
        None => "nothing".to_string(),
    };
    Err(format!(
        "write #{} of the connection keys is {}, but the events call for {}: \
         the state does not follow the session's connections",
        i + 1,
        show(written.get(i).copied()),
        show(expected.get(i).map(|(k, v)| (*k, v)))
    ))
}
