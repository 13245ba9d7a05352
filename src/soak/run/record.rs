//! What one seeded session left behind: the [`RunRecord`] every invariant
//! and every "sometimes" counter reads, and that a failure keeps.

use crate::wire::JsonPath;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::Value;

use crate::executor::{Seed, Swarm, Trace, format_time};
use crate::flow::{Enforcement, FlowSpec};
use crate::session::{LiveEvent, Resumption};
use crate::soak::check::calls_by_connection::ServerCalls;
use crate::soak::check::latency::Sample;
use crate::soak::check::wire_order::Connection;
use crate::soak::generate::faults::Faults;
use crate::soak::run::resolving::{Resolution, ResolvedSlot};
use crate::soak::run::watching::{WatchCall, Watched};
use crate::state::StateMutation;
use crate::testing::{ReplayError, ScriptedServer};
use crate::transport::Frame;

/// An event as the soak received it, with the virtual time it came.
#[derive(Clone, Debug, PartialEq)]
pub struct TimedEvent {
    /// Virtual time since the run started.
    pub at: Duration,
    /// The event.
    pub event: LiveEvent,
}

/// Whether `events` leave the session reconnecting: their latest word on
/// the connection is a `reconnecting`, no `resumed` after it.
pub(crate) fn reconnecting(events: &[TimedEvent]) -> bool {
    events
        .iter()
        .rfind(|e| {
            matches!(
                e.event,
                LiveEvent::Reconnecting { .. } | LiveEvent::Resumed { .. }
            )
        })
        .is_some_and(|e| matches!(e.event, LiveEvent::Reconnecting { .. }))
}

/// How much virtual time one step of the soak's network takes: every step
/// ticks both hosts whatever happens, so a run costs its virtual time
/// over this. 5 ms keeps latencies (drawn from 1–45 ms) apart at the
/// scale of keepalives (300 ms) and faults (20–800 ms), at a fifth of
/// the steps of 1 ms. A host's own clock (the state's, so the journal's
/// timestamps) may lag the network's (the executor's, so the times the
/// soak records of tool and resolver runs) by up to one step.
pub(crate) const NETWORK_TICK: Duration = Duration::from_millis(5);

/// One run of a tool: which call it answered, when it started and ended,
/// and how.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolExecution {
    /// The call it answered (`None` if it ran outside a session's call).
    pub call_id: Option<String>,
    /// The tool.
    pub tool: String,
    /// The arguments it got.
    pub args: Value,
    /// Virtual time it started.
    pub started: Duration,
    /// Virtual time it finished; `None` if it never did (cancelled, timed
    /// out, or the connection ended).
    pub finished: Option<Duration>,
    /// Virtual time it was dropped unfinished (aborted by a cancellation
    /// or the session's end, or cut by a timeout); `None` if it finished,
    /// or still ran when the run was recorded.
    pub dropped: Option<Duration>,
    /// How it ended.
    pub outcome: ExecutionOutcome,
}

/// How a tool run ended.
#[derive(Clone, Debug, PartialEq)]
pub enum ExecutionOutcome {
    /// It returned this result.
    Ok(Value),
    /// It returned this error (or panicked).
    Failed(String),
    /// It was dropped before it finished: aborted by a cancellation, a
    /// timeout or the end of the connection.
    Unfinished,
}

/// The script's view of the calls it made.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Calls {
    /// Every id the script issued, in order (a repeated id each time).
    pub issued: Vec<String>,
    /// The ids the session answered.
    pub answered: BTreeSet<String>,
    /// The ids the script cancelled.
    pub cancelled: BTreeSet<String>,
    /// Calls left unanswered on a connection that has since ended: call
    /// ids belong to their connection, so nobody can answer them.
    pub abandoned: BTreeSet<String>,
    /// Answers that reached the script after it had cancelled their call
    /// (they crossed the cancellation in flight).
    pub late_answers: Vec<String>,
}

/// The flow that governed the run.
#[derive(Clone, Debug)]
pub struct Governance {
    /// The spec.
    pub spec: Arc<FlowSpec>,
    /// How strictly.
    pub enforcement: Enforcement,
}

/// How the run ended: the liveness phase's facts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Settling {
    /// When the script had performed its last action (or ended): the end
    /// of the fault phase.
    pub script_done_at: Option<Duration>,
    /// When the session had settled: every call the script issued and did
    /// not cancel answered (or the connection over), then quiet for the
    /// settle window. `None`: it never did within the soak's cap.
    pub settled_at: Option<Duration>,
    /// Whether the session's connection was over once the run settled,
    /// before the soak's own disconnect at its end: the script, the
    /// server, the network or the user hanging up ended it.
    pub ended: bool,
    /// Whether the script itself ended it (a close or an abort).
    pub ended_by_script: bool,
    /// When the user hung up while calls ran (`hang-up`: see
    /// [`ends_in_hang_up`](crate::soak::ends_in_hang_up)).
    pub hung_up_at: Option<Duration>,
    /// How long after the fault phase the session may take to settle.
    pub bound: Duration,
    /// Where the script was when the soak hung up, if it had not played
    /// to its end: `action #12 (expect clientContent)`.
    pub script_at: Option<String>,
}

/// Everything one seeded session did, as the invariants read it.
#[derive(Clone, Debug)]
pub struct RunRecord {
    /// The agent.
    pub agent: String,
    /// The seed.
    pub seed: Seed,
    /// The executor's swarm (lane order, yields, delivery jitter).
    pub swarm: Swarm,
    /// The conversation's faults.
    pub faults: Faults,
    /// The script that played (save it with `ScriptedServer::save`).
    pub script: ScriptedServer,
    /// Why the session did not connect, if it did not.
    pub connect_error: Option<String>,
    /// Every event, as delivered (each lane in its order, the lanes
    /// interleaved by the seed), with its virtual time.
    pub events: Vec<TimedEvent>,
    /// The session's stored log at the end.
    pub session_log: Vec<LiveEvent>,
    /// The state journal.
    pub journal: Vec<StateMutation>,
    /// The whole state store (every prefix, keys in full) when the journal
    /// began: what the builder had written before the soak listened.
    pub state_before: BTreeMap<String, Value>,
    /// The whole state store when the journal was taken.
    pub state_after: BTreeMap<String, Value>,
    /// Every message the session sent, in order.
    pub sent: Vec<Value>,
    /// When the script got each of [`sent`](Self::sent) (virtual time).
    pub sent_at: Vec<Duration>,
    /// The connection each of [`sent`](Self::sent) came on, numbered from
    /// 1 in the order they opened (a late frame from a connection the
    /// session left counts on that one). A connection the session went
    /// back to (its move failed) keeps its number, and the next one opened
    /// takes the number after it again.
    pub sent_on: Vec<u32>,
    /// Every frame the script sent that reached the session, in order
    /// (`setupComplete` first).
    pub server_frames: Vec<Frame>,
    /// When each of [`server_frames`](Self::server_frames) reached the
    /// session (virtual time): in memory when the script delivered it,
    /// over the simulated network when the session's transport read it.
    pub server_frames_at: Vec<Duration>,
    /// Every tool run, in the order they started.
    pub executions: Vec<ToolExecution>,
    /// The script's view of its calls.
    pub calls: Calls,
    /// What the session did that the script (strict, like the service)
    /// did not allow.
    pub replay_errors: Vec<ReplayError>,
    /// The flow that governed the session, if one did.
    pub governance: Option<Governance>,
    /// How the run ended.
    pub settling: Settling,
    /// The session's reconnect policy (off for a session that never
    /// reconnects).
    pub resumption: Resumption,
    /// How long the session waits for a connection's `setupComplete`.
    pub setup_timeout: Duration,
    /// What the soak's user sent, in order: each text the session took,
    /// `audio <data>` for a chunk of audio, `(activityStart)` and the like
    /// for a marker.
    pub typed: Vec<String>,
    /// When the user sent each of [`typed`](Self::typed) (virtual time).
    pub typed_at: Vec<Duration>,
    /// The run's log lines, captured for a run whose script gives
    /// resumption handles (so `handle-secret` can look for them there).
    pub logs: Vec<String>,
    /// The state watchers the session had, as the builder gave them.
    pub watched: Vec<Watched>,
    /// Every call of those watchers, in order.
    pub watch_calls: Vec<WatchCall>,
    /// The resolved slots of the session's conversation, if it has one.
    pub resolved_slots: Vec<ResolvedSlot>,
    /// Every run of their resolvers, in the order they started.
    pub resolutions: Vec<Resolution>,
    /// The executor's trace of the run.
    pub trace: Trace,
    /// The trace's hash: the run's fingerprint.
    pub trace_hash: u64,
    /// Virtual time the run took.
    pub virtual_time: Duration,
    /// For a run over the simulated network: what the session wrote on
    /// each connection and which connections died (frames in flight on
    /// them may be lost). `None` for a run on in-memory connections,
    /// which lose nothing.
    pub network: Option<NetworkRun>,
    /// The reference model's reading of `server_frames`, worked out once
    /// for the checks that read it.
    pub(crate) modelled: WorkedOut<Arc<Vec<Connection>>>,
    /// The calls the frames issued, connection by connection, worked out
    /// once for the checks that read them.
    pub(crate) issued: WorkedOut<Arc<ServerCalls>>,
    /// The server frames with the payloads the protocol cannot read
    /// taken out, when the session warned about one (worked out once).
    pub(crate) readable: WorkedOut<Option<Vec<Frame>>>,
    /// The run's latencies, measured once for the budgets and the
    /// summary's distributions that read them.
    pub(crate) samples: WorkedOut<Vec<Sample>>,
}

/// Something the checks work out from a record's fields once. A copy of
/// the record starts without it: whoever changes the copy's fields (a test
/// forging a frame, say) must not be judged by the original's reading.
#[derive(Debug, Default)]
pub(crate) struct WorkedOut<T>(OnceLock<T>);

impl<T> WorkedOut<T> {
    pub(crate) fn get_or_init(&self, work: impl FnOnce() -> T) -> &T {
        self.0.get_or_init(work)
    }
}

impl<T> Clone for WorkedOut<T> {
    fn clone(&self) -> Self {
        WorkedOut(OnceLock::new())
    }
}

/// What crossed the simulated network at the session's end, in a run
/// over one (see [`FaultKind::Network`](crate::soak::FaultKind::Network)).
#[derive(Clone, Debug, Default)]
pub struct NetworkRun {
    /// Every frame the session wrote: the connection (numbered from 1 in
    /// the order the session opened them) and the frame.
    pub written: Vec<(u32, Frame)>,
    /// The connections that ended without a close frame either way.
    pub died: Vec<u32>,
    /// The first connection died before the session was set up (it then
    /// fails to connect, as it should: there is nothing to resume).
    pub lost_before_setup: bool,
}

impl RunRecord {
    /// Drops what the checks worked out from the fields: it is worked out
    /// again, from the fields as they are then, when next asked for.
    pub(crate) fn forget_worked_out(&mut self) {
        self.modelled = WorkedOut::default();
        self.issued = WorkedOut::default();
        self.readable = WorkedOut::default();
        self.samples = WorkedOut::default();
    }

    /// Whether the script broke off (the `protocol` failure): from its
    /// first error on it stopped reading what the session sent, so what
    /// it never got, and a session it never closed, say nothing of the
    /// session.
    pub(crate) fn script_broke_off(&self) -> bool {
        !self.replay_errors.is_empty()
    }

    /// The server frames as the protocol reads them: each payload it
    /// cannot read taken out (see [`frames_read`](crate::soak::check::frames_read)).
    /// What the checks that model the frames read.
    pub(crate) fn frames_read(&self) -> &[Frame] {
        self.readable
            .get_or_init(|| crate::soak::check::frames_read::frames_read(self))
            .as_deref()
            .unwrap_or(&self.server_frames)
    }

    /// The run's first report line: the seed, the swarm and the faults.
    pub fn header(&self) -> String {
        format!(
            "{} seed {} | swarm: {} | faults: {}",
            self.agent, self.seed, self.swarm, self.faults
        )
    }

    /// Every function response the session sent (`{"id", "name",
    /// "response"}`), in order.
    pub fn responses(&self) -> Vec<&Value> {
        self.sent
            .iter()
            .filter_map(|m| m.at("/toolResponse/functionResponses"))
            .filter_map(Value::as_array)
            .flatten()
            .collect()
    }

    /// Where, in [`sent`](Self::sent), the messages are that a
    /// transparently resumed session sent again: on a connection that
    /// resumed a handle, what the server had not consumed when it issued
    /// the handle. The count stops where the messages stop making sense
    /// (where `client-messages-once` fails).
    pub fn replays(&self) -> Vec<usize> {
        match crate::soak::check::client_messages::contents(self) {
            Ok(contents) => contents.replays,
            Err(_) => Vec::new(),
        }
    }

    /// How far the journal's timestamps may be from the times the soak
    /// recorded (tool and resolver runs, events): zero in memory, where
    /// one clock serves both; up to one network step over the simulated
    /// network, where a host's clock may lag the network's.
    pub(crate) fn clock_skew(&self) -> Duration {
        if self.network.is_some() {
            NETWORK_TICK
        } else {
            Duration::ZERO
        }
    }

    /// When the run heard of the session's last `disconnected`, if it
    /// did: the session's end, once it ended.
    pub(crate) fn last_disconnection(&self) -> Option<Duration> {
        self.events
            .iter()
            .rev()
            .find(|e| matches!(e.event, LiveEvent::Disconnected { .. }))
            .map(|e| e.at)
    }

    /// The events, without their times.
    pub fn delivered(&self) -> impl Iterator<Item = &LiveEvent> {
        self.events.iter().map(|e| &e.event)
    }

    /// How many turns the session completed: the `turn_complete` events
    /// in its stored log.
    pub(crate) fn turns_completed(&self) -> usize {
        self.session_log
            .iter()
            .filter(|e| matches!(e, LiveEvent::TurnComplete { .. }))
            .count()
    }

    /// The executions of calls to `tool`.
    pub fn executions_of<'a>(&'a self, tool: &'a str) -> impl Iterator<Item = &'a ToolExecution> {
        self.executions.iter().filter(move |e| e.tool == tool)
    }

    /// The compact lane timeline: one line per delivered event, with its
    /// virtual time and lane.
    pub fn timeline(&self) -> String {
        let mut out = String::new();
        for TimedEvent { at, event } in &self.events {
            let mut text = event.to_string();
            if text.len() > 160 {
                let cut = (0..=157)
                    .rev()
                    .find(|&i| text.is_char_boundary(i))
                    .unwrap_or(0);
                text.truncate(cut);
                text.push('…');
            }
            out.push_str(&format!(
                "[{:>10}] {:<9} | {text}\n",
                format_time(*at),
                event.lane().name()
            ));
        }
        out
    }
}
