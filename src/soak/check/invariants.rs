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
//! | `decisions-follow-spec` | every admission, refusal, turn's active steps and escalation in the journal is what a model of the flow's rules (written apart from the monitor) gives for the state writes and tool outcomes before it, every turn the session completed was evaluated, and every tool run was admitted and, once finished, has its result journaled with the same outcome |
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
//!
//! This file names the invariants and lists the built-in ones; each check
//! lives in a file of `check/` named for what it reads (`answers.rs`,
//! `aggregation.rs`, `liveness.rs`, `journal.rs`, `wire_order.rs`,
//! `reconnects.rs`, …).

use std::fmt;
use std::sync::Arc;

use crate::executor::format_time;
use crate::soak::check::extractions;
use crate::soak::check::flow_model;
use crate::soak::check::reconnects;
use crate::soak::check::refusals;
use crate::soak::check::telemetry;
use crate::soak::check::wire_order;
use crate::soak::check::{aggregation, answers, journal, liveness};
use crate::soak::check::{client_messages, handle_secret, reconnect_ends, stored_once};
use crate::soak::check::{resolvers, watchers};
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
/// `journal-rebuilds-state`.
pub const JOURNAL_REBUILDS_STATE: &str = "journal-rebuilds-state";
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
/// Not a check: what a corpus entry kept from a recorded session that
/// broke nothing (`livesim sim import`) says it broke.
pub const IMPORTED: &str = "imported";

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
        Invariant::new(ANSWERED_ONCE, answers::answered_once),
        Invariant::new(JOURNAL_REPLAYS_CLEAN, journal::journal_replays_clean),
        Invariant::new(DECISIONS_FOLLOW_SPEC, flow_model::check),
        Invariant::new(JOURNAL_ORDERED, journal::journal_ordered),
        Invariant::new(JOURNAL_REBUILDS_STATE, journal::journal_rebuilds_state),
        Invariant::new(AGGREGATION, aggregation::check),
        Invariant::new(WIRE_ORDER, wire_order::check),
        Invariant::new(LIVENESS, liveness::check),
        Invariant::new(TOOL_RAN_ONCE, reconnects::tool_ran_once),
        Invariant::new(CLIENT_MESSAGES_ONCE, client_messages::client_messages_once),
        Invariant::new(RECONNECT_ENDS, reconnect_ends::reconnect_ends),
        Invariant::new(STORED_ONCE, stored_once::stored_once),
        Invariant::new(HANDLE_SECRET, handle_secret::handle_secret),
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
