//! The invariants checked after every run, by name.
//!
//! Names are stable: reports, JUnit files and recorded seeds use them.
//!
//! | name | what must hold |
//! |---|---|
//! | `protocol` | the session never sent what the strict scripted server (as strict as the service) rejects |
//! | `refused-never-runs` | a call the flow refused never runs, and is answered `{"error": reason}`; a refusal because a call of the tool is still running is true |
//! | `answered-once` | every call the script did not cancel is answered exactly once, with its own id; no call is answered after the session handled its cancellation |
//! | `journal-replays-clean` | the journal holds one `flow:interrupted` per frame the reference model reads as interrupted, and `Scenario::from_journal(journal)` run against the governing spec reproduces every decision |
//! | `decisions-follow-spec` | every admission, refusal, turn's active steps and escalation in the journal is what a model of the flow's rules (written apart from the monitor) gives for the state writes and tool outcomes before it, and every turn the session completed was evaluated |
//! | `journal-ordered` | journal sequence numbers strictly increase; timestamps never go back |
//! | `aggregation` | partial chunks concatenate to the full text that follows; nothing partial is stored; `interrupted` rides on the flush; the fast lane delivers what aggregation makes of the frames |
//! | `wire-order` | the stored log is what the frames the script sent imply, in wire order; after the server's in-band error alone, nothing more is read and the end is fatal |
//! | `liveness` | the session settles within its bound after the fault phase: every call answered, or the connection over when the script ended it or the server's in-band error did; a session that ended stops its tools (no tool run finishes after `disconnected`) |
//! | `tool-ran-once` | no tool runs twice for one call, across reconnects too (a call runs at most once per connection that issued its id) |
//! | `client-messages-once` | every message the user typed reaches the server once, none invented or sent twice; on a connection that resumes transparently, what the server had not consumed is replayed first, in order, once |
//! | `reconnect-ends` | every reconnect ends, resumed, fresh or failed, within its bound: the policy's attempts, counted from 1, each backoff at its longest plus a setup timeout; an attempt waits at least half its backoff step before the next; a session holding a handle starts its `goAway` move within half the time the server gave |
//! | `stored-once` | the stored log holds every delivered event but deltas, notices and live media (the check's own rule), each kind in its order; `connected` and `disconnected` once, each new connection once and in order, and each call's answer or refusal once per connection that issued it |
//! | `handle-secret` | no resumption handle the script gave is in an event, the stored log, the journal, the trace, the run's log lines, an error or the report |
//! | `telemetry` | the clock signals the session writes on its timer agree with the run's events: `session:elapsed_ms` grows, and `session:silence_ms` never exceeds the time since a content event the run received |
//! | `extractor-input` | every question an agent file's extractor asked holds lines the run said: `user: …` or `model: …`, none blank, each a text the reference model made whole (or the user typed), at least one once the model has spoken; they are the last lines said by then, in order, and all of them when the question is shorter than the extractor's window |
//! | `watchers-follow-journal` | each state watcher the builder gave (an agent file's session watches every key its tools write) was called at most once per write of its key, told the value it was last told (or the starting one) and a value a write since left; once settled, once per write |
//! | `resolvers-follow-spec` | each run of a conversation's slot resolvers started at a turn boundary that made its slot due (stage active, slot unset, inputs set, no run of it in flight), with the inputs' values then; a due slot's resolver starts; each value a resolver gave is written to its slot |
//! | `extractor-every-turn` | (an agent file with an `"extractor"`) the extractor was asked once per turn the session completed and each answer the tape had was announced as extracted: at most that many always, exactly once the run settled with its session running |
//! | `spec-as-written` | (an agent file with a `"spec"`) the flow the session enforces is the file's, read apart from livesim's spec reader |
//! | `setup-as-declared` | (an agent file) every `setup` the session sends holds the file's instruction, declares its tools as the file does, and asks for resumption and manual activity as the file says |
//! | `determinism` | the same seed gives the same trace (checked on a sample of seeds, and by `livesim sim check`) |
//!
//! Calls issued on a connection that has since ended cannot be answered
//! (call ids belong to their connection): `answered-once` and `liveness`
//! do not wait for them.
//!
//! Runs that panic are reported as `panic`; runs that deadlock, overstay
//! the executor's time limit or livelock as `liveness`; sessions that do
//! not connect as `setup`; runs still going after the hang bound of wall
//! time (a busy loop that never yields holds the thread, so nothing in the
//! simulation can end it) as `hang`.
//!
//! Each invariant in depth (what breaks it, the message it fails with), the
//! governance properties and the goals: `docs/invariants.md`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::executor::format_time;
use crate::session::{Lane, LiveEvent};
use crate::simulation::Scenario;
use crate::soak::check::calls_by_connection::{
    CallKey, events_by_connection, runs_of, server_calls,
};
use crate::soak::check::extractions;
use crate::soak::check::flow_model;
use crate::soak::check::model::{Expected, FrameModel};
use crate::soak::check::reconnects;
use crate::soak::check::refusals;
use crate::soak::check::telemetry;
use crate::soak::check::wire_order;
use crate::soak::check::{resolvers, watchers};
use crate::soak::run::record::ExecutionOutcome;
use crate::soak::run::record::RunRecord;

/// `protocol`.
pub const PROTOCOL: &str = "protocol";
/// `refused-never-runs`.
pub const REFUSED_NEVER_RUNS: &str = "refused-never-runs";
/// `answered-once`.
pub const ANSWERED_ONCE: &str = "answered-once";
/// `journal-replays-clean`.
pub const JOURNAL_REPLAYS_CLEAN: &str = "journal-replays-clean";
/// `decisions-follow-spec`.
pub const DECISIONS_FOLLOW_SPEC: &str = "decisions-follow-spec";
/// `journal-ordered`.
pub const JOURNAL_ORDERED: &str = "journal-ordered";
/// `aggregation`.
pub const AGGREGATION: &str = "aggregation";
/// `wire-order`.
pub const WIRE_ORDER: &str = "wire-order";
/// `liveness`.
pub const LIVENESS: &str = "liveness";
/// `tool-ran-once`.
pub const TOOL_RAN_ONCE: &str = "tool-ran-once";
/// `client-messages-once`.
pub const CLIENT_MESSAGES_ONCE: &str = "client-messages-once";
/// `reconnect-ends`.
pub const RECONNECT_ENDS: &str = "reconnect-ends";
/// `stored-once`.
pub const STORED_ONCE: &str = "stored-once";
/// `handle-secret`.
pub const HANDLE_SECRET: &str = "handle-secret";
/// `telemetry`.
pub const TELEMETRY: &str = "telemetry";
/// `extractor-input`.
pub const EXTRACTOR_INPUT: &str = "extractor-input";
/// `phases-follow-spec` (an agent file's `"phases"`).
pub const PHASES_FOLLOW_SPEC: &str = "phases-follow-spec";
/// `patterns-follow-spec` (an agent file's `"temporal"`).
pub const PATTERNS_FOLLOW_SPEC: &str = "patterns-follow-spec";
/// `watchers-follow-journal`.
pub const WATCHERS_FOLLOW_JOURNAL: &str = "watchers-follow-journal";
/// `extractor-every-turn` (an agent file's `"extractor"`).
pub const EXTRACTOR_EVERY_TURN: &str = "extractor-every-turn";
/// `spec-as-written` (an agent file's `"spec"`).
pub const SPEC_AS_WRITTEN: &str = "spec-as-written";
/// `setup-as-declared` (every agent file).
pub const SETUP_AS_DECLARED: &str = "setup-as-declared";
/// `resolvers-follow-spec`.
pub const RESOLVERS_FOLLOW_SPEC: &str = "resolvers-follow-spec";
/// `determinism`.
pub const DETERMINISM: &str = "determinism";
/// A run that panicked.
pub const PANIC: &str = "panic";
/// A session that did not connect.
pub const SETUP: &str = "setup";
/// A run that outlived the hang bound in wall time (a task that never
/// yields holds its thread).
pub const HANG: &str = "hang";

type Check = dyn Fn(&RunRecord) -> Result<(), String> + Send + Sync;

/// A named check over a [`RunRecord`].
///
/// ```
/// use livesim::soak::invariants::Invariant;
///
/// let quiet = Invariant::new("no-warnings", |run| {
///     match run.delivered().find(|e| e.kind() == "warning") {
///         Some(w) => Err(format!("the session warned: {w}")),
///         None => Ok(()),
///     }
/// });
/// assert_eq!(quiet.name(), "no-warnings");
/// ```
#[derive(Clone)]
pub struct Invariant {
    name: String,
    check: Arc<Check>,
}

impl fmt::Debug for Invariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Invariant").field(&self.name).finish()
    }
}

impl Invariant {
    /// An invariant named `name`: `check` returns `Err(why)` when a run
    /// breaks it.
    pub fn new(
        name: impl Into<String>,
        check: impl Fn(&RunRecord) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        Invariant {
            name: name.into(),
            check: Arc::new(check),
        }
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Checks a run.
    pub fn check(&self, run: &RunRecord) -> Result<(), String> {
        (self.check)(run)
    }
}

/// The built-in invariants checked after every run (`determinism` is the
/// engine's, not a check of one run).
pub fn builtin() -> Vec<Invariant> {
    vec![
        Invariant::new(PROTOCOL, protocol),
        Invariant::new(REFUSED_NEVER_RUNS, refusals::refused_never_runs),
        Invariant::new(ANSWERED_ONCE, answered_once),
        Invariant::new(JOURNAL_REPLAYS_CLEAN, journal_replays_clean),
        Invariant::new(DECISIONS_FOLLOW_SPEC, flow_model::check),
        Invariant::new(JOURNAL_ORDERED, journal_ordered),
        Invariant::new(AGGREGATION, aggregation),
        Invariant::new(WIRE_ORDER, wire_order::check),
        Invariant::new(LIVENESS, liveness),
        Invariant::new(TOOL_RAN_ONCE, reconnects::tool_ran_once),
        Invariant::new(CLIENT_MESSAGES_ONCE, reconnects::client_messages_once),
        Invariant::new(RECONNECT_ENDS, reconnects::reconnect_ends),
        Invariant::new(STORED_ONCE, reconnects::stored_once),
        Invariant::new(HANDLE_SECRET, reconnects::handle_secret),
        Invariant::new(TELEMETRY, telemetry::check),
        Invariant::new(EXTRACTOR_INPUT, extractions::check),
        Invariant::new(WATCHERS_FOLLOW_JOURNAL, watchers::check),
        Invariant::new(RESOLVERS_FOLLOW_SPEC, resolvers::check),
    ]
}

/// The `decisions-follow-spec` check on its own: whether every decision in
/// a governed session's state `journal` (each call admitted or refused,
/// each turn's active steps, each escalation) is what the flow's rules
/// give for the state writes and tool outcomes before it. The rules are
/// worked out by a model written apart from [`FlowMonitor`](crate::flow::FlowMonitor),
/// so a journal from a session in production can be checked against its
/// spec this way too. `Err` says which entry the rules disagree with.
///
/// ```
/// use livesim::clock::Timestamp;
/// use livesim::flow::{Enforcement, Flow, Guard};
/// use livesim::soak::invariants::decisions_follow_spec;
/// use livesim::state::StateMutation;
/// use serde_json::json;
///
/// let spec = Flow::new()
///     .step("verify").allow(["verify_identity"]).done(Guard::called_ok("verify_identity"))
///     .step("pay").after("verify").allow(["take_payment"])
///     .build()?;
/// let entry = |seq, key: &str, value| StateMutation {
///     seq, key: key.into(), value, timestamp: Timestamp::EPOCH, removed: false,
/// };
/// // A payment admitted before the caller was verified.
/// let journal = [entry(1, "flow:tool_call", json!({"tool": "take_payment", "id": "call-1"}))];
/// let err = decisions_follow_spec(&spec, Enforcement::Enforce, &journal).unwrap_err();
/// assert!(err.contains("the spec's rules refuse it"), "{err}");
/// # Ok::<(), livesim::flow::FlowError>(())
/// ```
pub fn decisions_follow_spec(
    spec: &crate::flow::FlowSpec,
    enforcement: crate::flow::Enforcement,
    journal: &[crate::state::StateMutation],
) -> Result<(), String> {
    flow_model::follows(spec, enforcement, journal)
}

/// `panic`, for a run that finished: no tool panicked, but those allowed
/// to. A tool's panic is answered as an error (the session must survive
/// it), and reported here, naming the tool, its call and where it
/// panicked, from the trace (the simulation notes every panic under the
/// task it happened in: `tool:<name>(<id>)`).
pub(crate) fn tool_panics(
    run: &RunRecord,
    allowed: &std::collections::BTreeSet<String>,
) -> Result<(), String> {
    for entry in run.trace.entries() {
        let Some(call) = entry.label.strip_prefix("tool:") else {
            continue;
        };
        let Some(panic) = entry.event.strip_prefix("panic: ") else {
            continue;
        };
        let (tool, id) = call
            .strip_suffix(')')
            .and_then(|c| c.split_once('('))
            .unwrap_or((call, "no call"));
        if allowed.contains(tool) {
            continue;
        }
        // The hook's text: `'<label>' panicked at <file:line:col>: <message>`.
        let said = panic
            .split_once("' panicked")
            .map_or(panic, |(_, rest)| rest.trim_start());
        return Err(format!(
            "tool {tool} ({id}) panicked {said} (t={}); the session answered it as an error. \
             A tool that may panic is allowed with `Soak::allow_panic(\"{tool}\")`",
            format_time(entry.at)
        ));
    }
    Ok(())
}

fn protocol(run: &RunRecord) -> Result<(), String> {
    match run.replay_errors.as_slice() {
        [] => Ok(()),
        [only] => Err(only.to_string()),
        [first, rest @ ..] => Err(format!("{first} (and {} more)", rest.len())),
    }
}

/// Every call the flow refused: id → (tool, reason), from the refusal
/// events and from the journal (a gate that journals a refusal and runs
/// the tool anyway shows up in the second only).
fn answered_once(run: &RunRecord) -> Result<(), String> {
    let issues = reconnects::issues(run);
    let mut answers: BTreeMap<&str, usize> = BTreeMap::new();
    let issued: BTreeSet<&str> = run.calls.issued.iter().map(String::as_str).collect();
    for response in run.responses() {
        let Some(id) = response.get("id").and_then(Value::as_str) else {
            return Err(format!("a function response has no id: {response}"));
        };
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
                !answers.contains_key(id.as_str())
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

fn journal_replays_clean(run: &RunRecord) -> Result<(), String> {
    let Some(governance) = &run.governance else {
        return Ok(());
    };
    // The journal holds every interruption the session was told of: one
    // `flow:interrupted` per frame the reference model reads as
    // interrupted (a replay of a journal without them would never
    // escalate on interruptions).
    let told: usize = wire_order::connections(run)
        .iter()
        .flat_map(|c| &c.frames)
        .filter(|f| f.interrupted)
        .count();
    let journaled = run
        .journal
        .iter()
        .filter(|e| e.key == crate::flow::keys::INTERRUPTED)
        .count();
    if journaled != told {
        return Err(format!(
            "the server interrupted the model {told} time(s), but the journal records {journaled} \
             `{}` entries",
            crate::flow::keys::INTERRUPTED
        ));
    }
    let name = format!("{}-{}", run.agent, run.seed);
    let scenario = Scenario::try_from_journal(&name, &run.journal).map_err(|e| e.to_string())?;
    scenario
        .run_now(&governance.spec, governance.enforcement)
        .map(|_| ())
        .map_err(|failure| {
            format!(
                "the journal's scenario does not replay against the spec that governed the run: \
                 {failure}"
            )
        })
}

fn journal_ordered(run: &RunRecord) -> Result<(), String> {
    for pair in run.journal.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        if b.seq <= a.seq {
            return Err(format!(
                "journal entry {} ({}) follows entry {} ({}): sequence numbers must increase",
                b.seq, b.key, a.seq, a.key
            ));
        }
        if b.timestamp < a.timestamp {
            return Err(format!(
                "journal entry {} ({}) is stamped {}, before entry {} ({}) at {}",
                b.seq, b.key, b.timestamp, a.seq, a.key, a.timestamp
            ));
        }
    }
    Ok(())
}

/// Which partial stream an event belongs to, and its text.
fn stream_of(event: &LiveEvent) -> Option<(&'static str, bool, &str, bool)> {
    // (stream, is the full event, text, thought)
    match event {
        LiveEvent::TextDelta { text, thought } => Some(("text", false, text, *thought)),
        LiveEvent::TextComplete { text, thought, .. } => Some(("text", true, text, *thought)),
        LiveEvent::InputTranscriptDelta { text } => Some(("input transcript", false, text, false)),
        LiveEvent::InputTranscript { text } => Some(("input transcript", true, text, false)),
        LiveEvent::OutputTranscriptDelta { text } => {
            Some(("output transcript", false, text, false))
        }
        LiveEvent::OutputTranscript { text } => Some(("output transcript", true, text, false)),
        _ => None,
    }
}

fn aggregation(run: &RunRecord) -> Result<(), String> {
    if let Some(partial) = run.session_log.iter().find(|e| e.is_partial()) {
        return Err(format!("a partial event was stored: {partial}"));
    }
    // Partials concatenate to the full event that follows, per stream and
    // per connection (a connection's end drops the text it left pending).
    let connections = wire_order::connections(run);
    // Where, in the fast lane's events, a connection whose aggregation
    // started afresh begins.
    let mut afresh = connections
        .iter()
        .scan(0, |fast, connection| {
            let starts = *fast;
            *fast += wire_order::fast_lane(&connection.frames)
                .iter()
                .filter(|e| !matches!(e, Expected::Media { .. }))
                .count();
            Some((starts, connection.afresh))
        })
        .filter(|(starts, afresh)| *afresh && *starts > 0)
        .map(|(starts, _)| starts)
        .peekable();
    let mut pending: BTreeMap<&str, (String, Option<bool>)> = BTreeMap::new();
    let fast = run
        .delivered()
        .filter(|e| e.lane() == Lane::Fast && e.kind() != "media");
    for (index, event) in fast.enumerate() {
        while afresh.next_if(|starts| *starts <= index).is_some() {
            pending.clear();
        }
        let Some((stream, full, text, thought)) = stream_of(event) else {
            continue;
        };
        let (buffer, flag) = pending.entry(stream).or_default();
        if !full {
            if flag.is_some_and(|f| f != thought) {
                return Err(format!(
                    "a {stream} chunk switched between thought and answer without a full event \
                     in between: {event}"
                ));
            }
            buffer.push_str(text);
            *flag = Some(thought);
            continue;
        }
        if buffer != text {
            return Err(format!(
                "the {stream} chunks concatenate to {buffer:?}, but the full event that follows \
                 says {text:?}"
            ));
        }
        if flag.is_some_and(|f| f != thought) {
            return Err(format!(
                "the full {stream} event's thought flag differs from its chunks': {event}"
            ));
        }
        buffer.clear();
        *flag = None;
    }
    // `interrupted` rides on the flush: each interruption that does not end
    // the turn yields either the interrupted flush or a bare interruption.
    let frames: Vec<&FrameModel> = connections.iter().flat_map(|c| &c.frames).collect();
    let interruptions = frames.iter().filter(|f| f.interrupted).count();
    let alone = frames
        .iter()
        .filter(|f| f.interrupted && !f.turn_complete)
        .count();
    let flushed = run
        .delivered()
        .filter(|e| {
            matches!(
                e,
                LiveEvent::TextComplete {
                    interrupted: true,
                    ..
                }
            )
        })
        .count();
    let bare = run
        .delivered()
        .filter(|e| matches!(e, LiveEvent::Interrupted))
        .count();
    if bare + flushed < alone || bare + flushed > interruptions {
        return Err(format!(
            "{interruptions} frames reported an interruption ({alone} without the turn's end), \
             but the session emitted {flushed} interrupted flushes and {bare} bare interruptions"
        ));
    }
    // The fast lane delivers what the reference model makes of the
    // frames: text, transcriptions and media, in order.
    let expected = wire_order::fast_lane(frames.iter().copied());
    let delivered: Vec<&LiveEvent> = run.delivered().filter(|e| e.lane() == Lane::Fast).collect();
    let differs = |i: usize| match (expected.get(i), delivered.get(i)) {
        (Some(wanted), Some(got)) => !wanted.is(got),
        (None, None) => false,
        _ => true,
    };
    if let Some(i) = (0..expected.len().max(delivered.len())).find(|&i| differs(i)) {
        return Err(format!(
            "the fast lane's event #{i} is {}, but the aggregation rules give {}",
            delivered
                .get(i)
                .map_or("(nothing)".to_string(), |e| e.to_string()),
            expected
                .get(i)
                .map_or("(nothing)".to_string(), |e| e.to_string())
        ));
    }
    Ok(())
}

fn liveness(run: &RunRecord) -> Result<(), String> {
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
    // A session the strict script hung up on is the `protocol` failure.
    if !settling.ended_by_script
        && !gave_up
        && settling.hung_up_at.is_none()
        && settling.ended
        && run.replay_errors.is_empty()
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
