//! Calls as the checks tell them apart: a call id belongs to the
//! connection that issued it, so a call is its connection and its id.
//!
//! A server may number its calls from `call-1` again on each connection
//! (the `id-restart` fault), and a session that resumes must not mistake
//! the new connection's `call-1` for the old one's, which may still be
//! running. A check that follows one call through a run (its refusal, its
//! tool run, its answer) must not either. Each reading here puts one kind
//! of record on its connection, numbered from 1:
//!
//! * the calls the frames issued: by the `setupComplete` frames before
//!   them (what the server said, not what the session counted);
//! * the session's events: by the `resumed` events before them (the
//!   control lane emits its calls, refusals, answers and moves in one
//!   order);
//! * the flow's journal: by the writes of `session:connection` before an
//!   entry (the control lane writes it when it moves, in the order it
//!   journals decisions);
//! * a tool run: by the `tool_call` event that named its call, the last
//!   one before the run started (the session dispatches a call as it
//!   emits the event; calls with one id on two connections are a
//!   reconnect apart, far more than a run's start can lag its event).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use crate::flow::FlowEntry;
use crate::session::LiveEvent;
use crate::soak::check::json::Json;
use crate::soak::check::wire_order;
use crate::soak::run::record::{RunRecord, TimedEvent, ToolExecution};

/// A call as the checks name it: the connection (from 1) that issued it,
/// and its id.
pub(crate) type CallKey = (usize, String);

/// How much later than its `tool_call` event a tool run may start and
/// still be that event's call: the event's delivery may lag the dispatch
/// (seeded delivery jitter and lane sleeps, 20 ms each at most), and the
/// run's first poll may lag it too. The same id on another connection
/// comes at least a reconnect later (100 ms of pause and a handshake).
const START_SLACK: Duration = Duration::from_millis(60);

/// What the frames that reached the session issued.
#[derive(Debug, Default)]
pub(crate) struct ServerCalls {
    /// Each call id, with the connections that issued it.
    pub issued: BTreeMap<String, BTreeSet<usize>>,
    /// How many connections the frames opened (at least 1).
    pub connections: usize,
}

impl ServerCalls {
    /// The connections that issued `id`.
    pub(crate) fn connections_of(&self, id: &str) -> impl Iterator<Item = usize> + '_ {
        self.issued.get(id).into_iter().flatten().copied()
    }

    /// The only connection that issued `id`, if just one did.
    fn only_connection(&self, id: &str) -> Option<usize> {
        match self.issued.get(id) {
            Some(on) if on.len() == 1 => on.first().copied(),
            _ => None,
        }
    }
}

/// The calls the frames issued, worked out once per run for every check
/// that reads them.
pub(crate) fn server_calls(run: &RunRecord) -> &ServerCalls {
    run.issued.get_or_init(|| Arc::new(read_server_calls(run)))
}

fn read_server_calls(run: &RunRecord) -> ServerCalls {
    let mut calls = ServerCalls::default();
    let mut connection = 0;
    for frame in run.frames_read() {
        let bytes = frame.payload().unwrap_or_default();
        if wire_order::is_setup_complete(bytes) {
            connection += 1;
            continue;
        }
        if !wire_order::mentions(bytes, &wire_order::TOOL_CALL) {
            continue;
        }
        let Some(message) = Json::parse(bytes) else {
            continue;
        };
        let issued = message
            .as_object()
            .and_then(|m| m.get("toolCall")?.as_object()?.get("functionCalls"))
            .and_then(Json::as_array);
        for id in issued
            .into_iter()
            .flatten()
            .filter_map(|c| c.as_object()?.get("id")?.as_str())
        {
            calls
                .issued
                .entry(id.to_string())
                .or_default()
                .insert(connection.max(1));
        }
    }
    calls.connections = connection.max(1);
    calls
}

/// Each delivered event with the connection it belongs to: 1 until the
/// first `resumed`, which belongs to the connection it reached.
pub(crate) fn events_by_connection(
    events: &[TimedEvent],
) -> impl Iterator<Item = (usize, &TimedEvent)> {
    let mut connection = 1;
    events.iter().map(move |timed| {
        if matches!(timed.event, LiveEvent::Resumed { .. }) {
            connection += 1;
        }
        (connection, timed)
    })
}

/// Every refusal the flow journaled: the call → (tool, reason).
pub(crate) fn journaled_refusals(run: &RunRecord) -> BTreeMap<CallKey, (String, String)> {
    let mut connection = 1;
    let mut refused = BTreeMap::new();
    for entry in &run.journal {
        if entry.key == "session:connection" {
            connection += 1;
            continue;
        }
        if let Ok(Some(FlowEntry::ToolDenied { tool, id, reason })) =
            FlowEntry::parse(&entry.key, &entry.value)
        {
            refused.entry((connection, id)).or_insert((tool, reason));
        }
    }
    refused
}

/// The call a tool run answered, if it ran for one.
pub(crate) fn call_of(run: &RunRecord, execution: &ToolExecution) -> Option<CallKey> {
    let id = execution.call_id.as_deref()?;
    let calls = server_calls(run);
    if let Some(only) = calls.only_connection(id) {
        return Some((only, id.to_string()));
    }
    // The `tool_call` events that named this id for this tool.
    let named: Vec<(usize, Duration)> = events_by_connection(&run.events)
        .filter(|(_, timed)| match &timed.event {
            LiveEvent::ToolCall { calls } => {
                calls.iter().any(|c| c.id == id && c.name == execution.tool)
            }
            _ => false,
        })
        .map(|(connection, timed)| (connection, timed.at))
        .collect();
    let connection = named
        .iter()
        .rev()
        .find(|(_, at)| *at <= execution.started + START_SLACK)
        .or(named.first())
        .map_or(1, |(connection, _)| *connection);
    Some((connection, id.to_string()))
}

/// The tool runs of `call`.
pub(crate) fn runs_of<'a>(
    run: &'a RunRecord,
    call: &'a CallKey,
) -> impl Iterator<Item = &'a ToolExecution> + 'a {
    run.executions
        .iter()
        .filter(move |e| e.call_id.as_deref() == Some(call.1.as_str()))
        .filter(move |e| call_of(run, e).as_ref() == Some(call))
}
