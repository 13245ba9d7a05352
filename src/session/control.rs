//! The control lane: everything that decides. Tool calls (through the flow
//! gate to the dispatcher, and their answers), cancellations,
//! interruptions, turn boundaries, extractors, phases, temporal patterns
//! and watchers.
//!
//! What it adds to the stored log stands where the session's rules put it
//! (see [`Position`]), not where its timing would: a call's response right
//! after the call, however late the tool finishes; an extraction right
//! after the turn it read. Warnings, phase changes and pattern matches are
//! notices.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;
use tokio::sync::mpsc;

use super::bus::EventBus;
use super::config::SessionConfig;
use super::dispatch::{Cancelled, Completed, Completion, Dispatched, Dispatcher};
use super::events::{LiveEvent, ToolCall};
use super::extractors::{Extracted, Transcript, TurnContext};
use super::handle::Command;
use super::phases::PhaseMachine;
use super::position::Position;
use super::route::Routed;
use super::temporal::PatternWatch;
use crate::clock::SharedClock;
use crate::compose::tools::response_of;
use crate::executor::{self, yield_point};
use crate::flow::{FlowEntry, FlowMonitor};
use crate::state::{State, StateChanges};
use crate::wire::object;

pub(crate) struct Control {
    pub session_id: Option<String>,
    pub config: Arc<SessionConfig>,
    pub bus: Arc<EventBus>,
    pub state: State,
    pub clock: SharedClock,
    pub outbound: mpsc::UnboundedSender<Command>,
    /// The first frame of the current connection (the wire lane moves
    /// it): calls from earlier frames are not answered.
    pub from: Arc<AtomicU64>,
}

struct Lane {
    control: Control,
    dispatcher: Dispatcher,
    monitor: Option<FlowMonitor>,
    resolving: BTreeSet<String>,
    resolved: mpsc::UnboundedSender<Resolved>,
    phases: Option<PhaseMachine>,
    patterns: Vec<PatternWatch>,
    watched: BTreeMap<String, Option<Value>>,
    extracting: Vec<ExtractorRuns>,
    extracted: mpsc::UnboundedSender<Extraction>,
    /// A cancellation found its call's tool returned: the completion is
    /// already queued, and is read before the next frame.
    returned_unread: bool,
    /// The planted bug's trigger (test builds only): a call from an earlier
    /// message was still running when this message's calls arrived.
    #[cfg(feature = "planted-bug")]
    planted_overlap: bool,
    /// The ids of the message being handled (test builds only).
    #[cfg(feature = "planted-bug")]
    planted_message: Vec<String>,
    /// Where the turn's latest tool call stands (test builds only).
    #[cfg(feature = "planted-bug")]
    planted_latest_call: Option<Position>,
}

/// One extractor's runs: whether one is going, and the turns waiting for
/// it (each with its place in the log and its transcript), oldest first.
#[derive(Default)]
struct ExtractorRuns {
    running: bool,
    waiting: VecDeque<(Position, Transcript)>,
}

/// An extractor's run that finished.
struct Extraction {
    extractor: usize,
    at: Position,
    outcome: Result<Extracted, String>,
}

/// A slot resolver that finished.
struct Resolved {
    slot: String,
    outcome: Result<Value, String>,
}

impl Control {
    /// Runs the lane until the wire lane says the connection ended.
    pub async fn run(self, mut inbox: mpsc::UnboundedReceiver<Routed>) {
        let (dispatcher, mut completions) = Dispatcher::new(&self.config.tools);
        let phases = self
            .config
            .phases
            .clone()
            .map(|p| PhaseMachine::start(p, self.clock.clone()));
        let patterns = self
            .config
            .patterns
            .iter()
            .cloned()
            .map(PatternWatch::new)
            .collect();
        let watched = self
            .config
            .watchers
            .iter()
            .map(|(key, _)| (key.clone(), self.state.get(key)))
            .collect();
        let mut changes: Option<StateChanges> = (!self.config.watchers.is_empty()
            || self.config.phases.is_some())
        .then(|| self.state.changes());
        let monitor = self
            .config
            .governance
            .as_ref()
            .map(|g| FlowMonitor::new(g.spec.clone(), g.enforcement));
        let (resolved, mut resolutions) = mpsc::unbounded_channel();
        let (extracted, mut extractions) = mpsc::unbounded_channel();
        let extracting = (0..self.config.extractors.len())
            .map(|_| ExtractorRuns::default())
            .collect();
        let mut lane = Lane {
            control: self,
            dispatcher,
            monitor,
            resolving: BTreeSet::new(),
            resolved,
            phases,
            patterns,
            watched,
            extracting,
            extracted,
            returned_unread: false,
            #[cfg(feature = "planted-bug")]
            planted_overlap: false,
            #[cfg(feature = "planted-bug")]
            planted_message: Vec::new(),
            #[cfg(feature = "planted-bug")]
            planted_latest_call: None,
        };
        let session_id = lane.control.session_id.clone();
        lane.control
            .bus
            .emit(LiveEvent::Connected { session_id }, Position::OPENING);
        if let Some(phases) = &lane.phases {
            lane.control.state.set("session:phase", phases.current());
        }
        loop {
            tokio::select! {
                biased;
                routed = inbox.recv() => match routed {
                    Some(Routed::Event(event, at)) => {
                        lane.event(event, at).await;
                        // The session knows that tool returned: the flow
                        // counts it (and whatever returned before it)
                        // before it gates the next call, or it would
                        // refuse a call as "still running" behind a tool
                        // it knows is done.
                        if std::mem::take(&mut lane.returned_unread) {
                            while let Ok(done) = completions.try_recv() {
                                lane.answer(done).await;
                            }
                        }
                    }
                    Some(Routed::TurnEnded(event, at, transcript)) => {
                        lane.control.bus.emit(event, at);
                        lane.turn_boundary(at, transcript);
                        lane.check_patterns();
                    }
                    Some(Routed::Tick) => lane.tick(),
                    Some(Routed::Interrupted) => lane.interrupted(),
                    Some(Routed::Activity | Routed::NewConnection) => {}
                    Some(Routed::Ended(event, at)) => {
                        // Tools that returned before the end did their
                        // work: the flow counts them, though no answer
                        // can go. Those still running are stopped.
                        while let Ok(done) = completions.try_recv() {
                            let completed = lane.dispatcher.complete(done);
                            lane.unanswered(completed, Unsent::SessionEnded);
                        }
                        // Writes made before the end (by those tools, or
                        // anything else) were announced: their watchers
                        // are called, as a running session's would be.
                        if let Some(changes) = changes.as_mut() {
                            while let Some(change) = changes.try_next() {
                                lane.state_changed(&change.key);
                            }
                        }
                        #[cfg(feature = "planted-bug")]
                        if lane.control.config.planted(super::PlantedBug::ToolsOutliveHangUp) {
                            lane.dispatcher.detach_all();
                        }
                        lane.dispatcher.abort_all();
                        lane.control.bus.emit(event, at);
                        break;
                    }
                    None => break,
                },
                Some(done) = completions.recv() => lane.answer(done).await,
                Some(resolved) = resolutions.recv() => lane.slot_resolved(resolved),
                Some(extraction) = extractions.recv() => lane.extracted(extraction),
                Some(change) = async {
                    match changes.as_mut() {
                        Some(changes) => changes.next().await,
                        None => std::future::pending().await,
                    }
                } => lane.state_changed(&change.key),
            }
        }
    }
}

/// Why a call whose tool ran is not answered.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Unsent {
    /// Its connection ended first (ids belong to their connection).
    ConnectionEnded,
    /// The server cancelled it once its tool had returned.
    CancelledLate,
    /// The session ended as its tool returned.
    SessionEnded,
}

impl Unsent {
    /// What the warning says after the tool and the call id.
    fn says(self) -> &'static str {
        match self {
            Unsent::ConnectionEnded => {
                "finished after its connection ended: it ran once, and its answer is not sent \
                 (call ids belong to their connection)"
            }
            Unsent::CancelledLate => {
                "had returned when the server cancelled it: it ran once, its result counts, and \
                 its answer is not sent"
            }
            Unsent::SessionEnded => {
                "returned as the session ended: it ran once, its result counts, and its answer \
                 is not sent"
            }
        }
    }
}

impl Lane {
    async fn event(&mut self, event: LiveEvent, at: Position) {
        match event {
            LiveEvent::ToolCall { calls } => {
                #[cfg(feature = "planted-bug")]
                {
                    use super::PlantedBug;
                    let config = &self.control.config;
                    self.planted_overlap =
                        config.planted(PlantedBug::RefusedCallRuns) && self.dispatcher.is_running();
                    self.planted_message = calls.iter().map(|c| c.id.clone()).collect();
                    self.planted_latest_call = Some(at);
                }
                self.control.bus.emit(
                    LiveEvent::ToolCall {
                        calls: calls.clone(),
                    },
                    at,
                );
                for (k, call) in calls.into_iter().enumerate() {
                    self.call(call, at, k).await;
                }
            }
            LiveEvent::ToolCancelled { ids } => {
                self.control
                    .bus
                    .emit(LiveEvent::ToolCancelled { ids: ids.clone() }, at);
                for id in ids {
                    self.cancel(&id);
                }
            }
            LiveEvent::Resumed { connection, fresh } => {
                // Call ids belong to their connection: a new one starts
                // with none seen; tools still running finish unanswered.
                #[cfg(feature = "planted-bug")]
                if self
                    .control
                    .config
                    .planted(super::PlantedBug::IdsOutliveTheirConnection)
                {
                    self.dispatcher.new_connection_keeping_ids();
                } else {
                    self.dispatcher.new_connection();
                }
                #[cfg(not(feature = "planted-bug"))]
                self.dispatcher.new_connection();
                if let Some(monitor) = self.monitor.as_mut() {
                    monitor.new_connection();
                }
                let state = &self.control.state;
                state.set("session:connection", connection);
                state.set("session:resumed", if fresh { "fresh" } else { "resumed" });
                self.control
                    .bus
                    .emit(LiveEvent::Resumed { connection, fresh }, at);
            }
            LiveEvent::Reconnecting { attempt, cause } => {
                self.control.state.set("session:reconnect_attempt", attempt);
                self.control
                    .bus
                    .emit(LiveEvent::Reconnecting { attempt, cause }, at);
            }
            LiveEvent::ResumptionFailed { reason } => {
                self.control.state.set("session:resumed", "failed");
                self.control
                    .bus
                    .emit(LiveEvent::ResumptionFailed { reason }, at);
            }
            other => self.control.bus.emit(other, at),
        }
        self.check_patterns();
    }

    /// Handles the `k`-th call of the `tool_call` event at `at`.
    async fn call(&mut self, call: ToolCall, at: Position, k: usize) {
        if call.id.is_empty() {
            self.control.bus.notice(LiveEvent::Warning {
                message: format!(
                    "tool call to {} has no id: not run, since no response could be matched to it",
                    call.name
                ),
            });
            return;
        }
        #[cfg(feature = "planted-bug")]
        if self
            .control
            .config
            .planted(super::PlantedBug::RepeatedIdRunsAgain)
            && self.planted_message[..k].contains(&call.id)
        {
            // Planted: a repeat within the message runs again, ungated.
            let _ = self.dispatcher.dispatch(&call, at.response(k));
            return;
        }
        if !self.dispatcher.claim(&call.id) {
            self.control.bus.notice(LiveEvent::Warning {
                message: format!(
                    "duplicate tool call id {:?} ({}): the first call with this id wins; this one is not run or answered",
                    call.id, call.name
                ),
            });
            return;
        }
        if let Some(monitor) = self.monitor.as_mut() {
            match monitor.gate(&call.name, &call.id, &self.control.state) {
                Ok(decision) => {
                    let entries = decision.entries();
                    self.journal(entries);
                    if let Some(refusal) = decision.refusal()
                        && !self.planted_admits()
                    {
                        let reason = decision.reason().unwrap_or_default().to_string();
                        self.control.bus.emit(
                            LiveEvent::ToolDenied {
                                id: call.id.clone(),
                                name: call.name.clone(),
                                reason,
                            },
                            at.refusal(k),
                        );
                        self.send_response(&call.id, &call.name, refusal, at.response(k))
                            .await;
                        return;
                    }
                }
                Err(e) => {
                    self.control.bus.notice(LiveEvent::Warning {
                        message: format!("flow gate: {e}"),
                    });
                    return;
                }
            }
        }
        match self.dispatcher.dispatch(&call, at.response(k)) {
            Dispatched::Started => {}
            Dispatched::UnknownTool(message) => {
                self.respond(&call.id, &call.name, Err(message), at.response(k))
                    .await;
            }
        }
    }

    /// The planted bug (a test-only build, an agent that asks for it): a
    /// refused call runs anyway when it arrives while an earlier message's
    /// call is still running. Only some interleavings of tool completions
    /// and frames hit it; the soak must find one.
    #[cfg(feature = "planted-bug")]
    fn planted_admits(&self) -> bool {
        self.planted_overlap
    }

    #[cfg(not(feature = "planted-bug"))]
    fn planted_admits(&self) -> bool {
        false
    }

    /// The planted bug that leaves a left connection's result out of the
    /// journal.
    #[cfg(feature = "planted-bug")]
    fn planted_uncounts(&self) -> bool {
        self.control
            .config
            .planted(super::PlantedBug::LeftResultUncounted)
    }

    #[cfg(not(feature = "planted-bug"))]
    fn planted_uncounts(&self) -> bool {
        false
    }

    fn cancel(&mut self, id: &str) {
        #[cfg(feature = "planted-bug")]
        let planted = self
            .control
            .config
            .planted(super::PlantedBug::CancelsTheFirstCall)
            .then(|| self.dispatcher.running_ids())
            .filter(|running| running.len() >= 2)
            .and_then(|running| running.into_iter().next());
        #[cfg(feature = "planted-bug")]
        let id = planted.as_deref().unwrap_or(id);
        let note = match self.dispatcher.cancel(id) {
            Cancelled::Aborted => {
                // The call will have no result: the flow must stop counting
                // it as running, or its tool stays held for the session.
                if let Some(monitor) = self.monitor.as_mut() {
                    match monitor.record_cancelled(id) {
                        Ok(entries) => self.journal(entries),
                        Err(e) => self.control.bus.notice(LiveEvent::Warning {
                            message: format!("flow cancellation: {e}"),
                        }),
                    }
                }
                return;
            }
            // Its completion is queued, to be counted but not answered.
            Cancelled::Finished => {
                self.returned_unread = true;
                return;
            }
            Cancelled::TooLate => "it was already answered",
            Cancelled::Unknown => "no call with that id was seen",
        };
        self.control.bus.notice(LiveEvent::Warning {
            message: format!("cancellation of tool call {id:?} ignored: {note}"),
        });
    }

    async fn answer(&mut self, done: Completion) {
        // Its connection has ended: the tool ran (the flow records its
        // result), but its answer would name an id the new connection
        // never issued. (While the session reconnects, the flow has not
        // moved on either: such a call is still its current connection's.)
        let ended = done.at.frame() < self.control.from.load(Ordering::Relaxed);
        match self.dispatcher.complete(done) {
            Completed::Answer(done) if !ended => {
                #[cfg(feature = "planted-bug")]
                let done = {
                    let mut done = done;
                    if self
                        .control
                        .config
                        .planted(super::PlantedBug::AnswerFiledUnderLaterCall)
                        && let Some(latest) = self.planted_latest_call
                        && latest.frame() > done.at.frame()
                    {
                        done.at = latest.response(0);
                    }
                    done
                };
                self.respond(&done.id, &done.name, done.outcome, done.at)
                    .await;
            }
            // Too late to stop it: what it did is done, and the flow must
            // know (a committing tool that did its work stays done).
            completed @ Completed::Unanswered(_) => {
                self.unanswered(completed, Unsent::CancelledLate);
            }
            completed => self.unanswered(completed, Unsent::ConnectionEnded),
        }
    }

    /// A call whose tool ran but which is not answered, and `why`: the
    /// flow counts its outcome (a call of a connection the session has
    /// left, by its tool), and a warning says so.
    fn unanswered(&mut self, completed: Completed, why: Unsent) {
        let (done, left) = match completed {
            Completed::Answer(done) | Completed::Unanswered(done) => (done, false),
            Completed::Left(done) => (done, true),
        };
        let counts = !(why == Unsent::ConnectionEnded && self.planted_uncounts());
        if counts && let Some(monitor) = self.monitor.as_mut() {
            let (ok, state) = (done.outcome.is_ok(), &self.control.state);
            let counted = if left {
                monitor.record_left_result_of(&done.name, &done.id, ok, state)
            } else {
                monitor.record_result(&done.id, ok, state)
            };
            match counted {
                Ok(entries) => self.journal(entries),
                Err(e) => self.control.bus.notice(LiveEvent::Warning {
                    message: format!("flow result: {e}"),
                }),
            }
        }
        self.control.bus.notice(LiveEvent::Warning {
            message: format!("tool {} ({}) {}", done.name, done.id, why.says()),
        });
    }

    /// Answers one admitted call: the flow records its outcome, then the
    /// response is sent and emitted at `at`.
    async fn respond(
        &mut self,
        id: &str,
        name: &str,
        outcome: Result<Value, String>,
        at: Position,
    ) {
        if let Some(monitor) = self.monitor.as_mut() {
            match monitor.record_result(id, outcome.is_ok(), &self.control.state) {
                Ok(entries) => self.journal(entries),
                Err(e) => self.control.bus.notice(LiveEvent::Warning {
                    message: format!("flow result: {e}"),
                }),
            }
        }
        self.send_response(id, name, response_of(outcome), at).await;
    }

    /// Sends one function response and emits it at `at`.
    async fn send_response(&mut self, id: &str, name: &str, response: Value, at: Position) {
        let answer = object([
            ("id", Value::String(id.to_string())),
            ("name", Value::String(name.to_string())),
            ("response", response.clone()),
        ]);
        let message = object([(
            "toolResponse",
            object([("functionResponses", Value::Array(vec![answer]))]),
        )]);
        // The wire lane may be gone (connection closed): the call then goes
        // unanswered with everything else on this connection.
        let _ = self.control.outbound.send(Command::Answer { message, at });
        self.control.bus.emit(
            LiveEvent::ToolResponse {
                id: id.to_string(),
                name: name.to_string(),
                response,
            },
            at,
        );
        yield_point("control:respond").await;
    }

    /// Writes flow decisions to the state, and so to the journal.
    fn journal(&self, entries: Vec<FlowEntry>) {
        for entry in entries {
            let (key, value) = entry.to_pair();
            self.control.state.set(key, value);
        }
    }

    fn interrupted(&mut self) {
        #[cfg(feature = "planted-bug")]
        if self
            .control
            .config
            .planted(super::PlantedBug::InterruptionAbortsCalls)
            && self.dispatcher.running_ids().len() >= 2
        {
            for id in self.dispatcher.running_ids() {
                self.dispatcher.cancel(&id);
            }
        }
        if let Some(monitor) = self.monitor.as_mut() {
            let entries = monitor.record_interruption(&self.control.state);
            self.journal(entries);
        }
    }

    /// The turn that ended at `at` (its `turn_complete`): the flow
    /// evaluates the turn, phases move, and each extractor is queued to
    /// read `transcript`.
    fn turn_boundary(&mut self, at: Position, transcript: Transcript) {
        if let Some(monitor) = self.monitor.as_mut() {
            let evaluation = monitor.evaluate_turn(&self.control.state);
            self.journal(vec![evaluation.entry()]);
            self.resolve_slots(&evaluation.active);
        }
        self.evaluate_phases();
        for index in 0..self.extracting.len() {
            self.extracting[index]
                .waiting
                .push_back((at.extraction(index), transcript.clone()));
            self.start_extractor(index);
        }
    }

    /// Starts extractor `index` on its oldest waiting turn, unless it is
    /// running (it then starts when the run finishes).
    fn start_extractor(&mut self, index: usize) {
        let runs = &mut self.extracting[index];
        if runs.running {
            return;
        }
        let Some((at, transcript)) = runs.waiting.pop_front() else {
            return;
        };
        runs.running = true;
        let extractor = self.control.config.extractors[index].clone();
        let turn = TurnContext {
            transcript,
            state: self.control.state.clone(),
            clock: self.control.clock.clone(),
        };
        let done = self.extracted.clone();
        executor::spawn(format!("extractor:{}", extractor.name()), async move {
            let outcome = extractor.extract(turn).await;
            let _ = done.send(Extraction {
                extractor: index,
                at,
                outcome,
            });
        });
    }

    fn extracted(&mut self, extraction: Extraction) {
        let Extraction {
            extractor: index,
            at,
            outcome,
        } = extraction;
        let name = self.control.config.extractors[index].name().to_string();
        match outcome {
            Ok(writes) if writes.is_empty() => {}
            Ok(writes) => {
                let mut values = serde_json::Map::new();
                for (key, value) in writes {
                    self.control.state.set(&key, value.clone());
                    values.insert(key, value);
                }
                self.control.bus.emit(
                    LiveEvent::Extracted {
                        extractor: name,
                        values,
                    },
                    at,
                );
            }
            Err(e) => {
                self.control.bus.notice(LiveEvent::Warning {
                    message: format!("extractor {name} failed: {e}"),
                });
            }
        }
        self.extracting[index].running = false;
        self.start_extractor(index);
    }

    /// Starts the resolvers of slots that are due (a conversation's active
    /// stages need them and their inputs are set), one at a time per slot.
    fn resolve_slots(&mut self, active: &[String]) {
        let Some(conversation) = self
            .control
            .config
            .governance
            .as_ref()
            .and_then(|g| g.conversation.clone())
        else {
            return;
        };
        for due in conversation.due_resolutions(active, &self.control.state) {
            let Some(resolver) = conversation.resolver(&due.slot).cloned() else {
                continue;
            };
            if !self.resolving.insert(due.slot.clone()) {
                continue;
            }
            let done = self.resolved.clone();
            let slot = due.slot.clone();
            executor::spawn(format!("resolver:{slot}"), async move {
                let outcome = resolver(due.args).await;
                let _ = done.send(Resolved { slot, outcome });
            });
        }
    }

    fn slot_resolved(&mut self, resolved: Resolved) {
        self.resolving.remove(&resolved.slot);
        match resolved.outcome {
            Ok(value) => self.control.state.set(&resolved.slot, value),
            Err(e) => self.control.bus.notice(LiveEvent::Warning {
                message: format!("resolver for slot {} failed: {e}", resolved.slot),
            }),
        }
    }

    fn state_changed(&mut self, key: &str) {
        let watchers: Vec<_> = self
            .control
            .config
            .watchers
            .iter()
            .filter(|(watched, _)| watched == key)
            .map(|(_, callback)| callback.clone())
            .collect();
        if !watchers.is_empty() {
            let new = self.control.state.get(key).unwrap_or(Value::Null);
            let old = self
                .watched
                .insert(key.to_string(), Some(new.clone()))
                .flatten();
            for callback in watchers {
                callback(key, old.as_ref(), &new, &self.control.state);
            }
        }
        if !key.starts_with("session:") {
            self.evaluate_phases();
        }
    }

    fn evaluate_phases(&mut self) {
        let Some(phases) = self.phases.as_mut() else {
            return;
        };
        for transition in phases.evaluate(&self.control.state) {
            self.control
                .state
                .set("session:phase", transition.to.as_str());
            self.control.bus.notice(LiveEvent::PhaseChanged {
                from: transition.from,
                to: transition.to,
            });
        }
    }

    fn check_patterns(&mut self) {
        let now = self.control.clock.now();
        for watch in &mut self.patterns {
            if watch.check(&self.control.state, now) {
                self.control.bus.notice(LiveEvent::PatternMatched {
                    name: watch.pattern().name().to_string(),
                });
            }
        }
    }

    /// The telemetry lane's timer: patterns are checked on it as well as on
    /// events, and the time in phase is written.
    fn tick(&mut self) {
        self.check_patterns();
        if let Some(phases) = &self.phases {
            let ms = phases.time_in_phase().as_millis() as u64;
            self.control.state.set("session:time_in_phase_ms", ms);
        }
    }
}
