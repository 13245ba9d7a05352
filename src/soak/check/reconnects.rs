//! The invariants of a session that changes connections (their names and
//! the table are in [`crate::soak::check::invariants`]): no tool runs twice for one
//! call, no client message is lost or sent twice, every reconnect ends
//! within its bound, nothing is stored twice, and no resumption handle
//! shows anywhere a person or a file could read it.
//!
//! Each holds trivially for a run on one connection, so every agent is
//! checked against all of them. This file holds `tool-ran-once` and what
//! the others share (which connections issued each call);
//! `client_messages.rs`, `reconnect_ends.rs`, `stored_once.rs` and
//! `handle_secret.rs` hold the others.

use std::collections::{BTreeMap, BTreeSet};

use crate::executor::format_time;
use crate::soak::check::calls_by_connection;
use crate::soak::run::record::RunRecord;

/// Every call id the frames that reached the session issued, with the
/// connections (numbered from 1) that issued it: worked out once per run,
/// for every check that reads it.
pub(crate) fn issues(run: &RunRecord) -> &BTreeMap<String, BTreeSet<usize>> {
    &calls_by_connection::server_calls(run).issued
}

/// How many times a call may be answered or run: once per connection
/// that issued it (a later connection's call with an old id is a new
/// call; a repeat on the same connection is not).
pub(crate) fn allowed(issues: &BTreeMap<String, BTreeSet<usize>>, id: &str) -> usize {
    issues.get(id).map_or(0, BTreeSet::len)
}

fn connections_of(issues: &BTreeMap<String, BTreeSet<usize>>, id: &str) -> String {
    let list: Vec<String> = issues
        .get(id)
        .into_iter()
        .flatten()
        .map(|n| format!("#{n}"))
        .collect();
    list.join(", ")
}

/// `tool-ran-once`.
pub(crate) fn tool_ran_once(run: &RunRecord) -> Result<(), String> {
    let issues = issues(run);
    let mut runs: BTreeMap<&str, Vec<&crate::soak::run::record::ToolExecution>> = BTreeMap::new();
    for execution in &run.executions {
        if let Some(id) = &execution.call_id {
            runs.entry(id.as_str()).or_default().push(execution);
        }
    }
    for (id, ran) in runs {
        let may = allowed(issues, id);
        if ran.len() <= may {
            continue;
        }
        let starts: Vec<String> = ran.iter().map(|e| format_time(e.started)).collect();
        let issued = match may {
            0 => "though no frame that reached the session issued it".to_string(),
            _ => format!(
                "but it was issued on {may} connection(s) ({})",
                connections_of(issues, id)
            ),
        };
        return Err(format!(
            "{} ran {} times for call {id} (from t={}), {issued}: a tool never runs twice for \
             one call",
            ran[0].tool,
            ran.len(),
            starts.join(", t=")
        ));
    }
    Ok(())
}
