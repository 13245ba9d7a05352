//! The control lane: everything that decides. Tool calls (through the flow
//! gate to the dispatcher, and their answers), cancellations,
//! interruptions, turn boundaries, phases, temporal patterns and watchers.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::bus::EventBus;
use super::config::SessionConfig;
use super::dispatch::{Cancelled, Completion, Dispatched, Dispatcher};
use super::events::{LiveEvent, ToolCall};
use super::extractors::{Extracted, Transcript, TurnContext};
use super::handle::Command;
use super::phases::PhaseMachine;
use super::route::Routed;
use super::temporal::PatternWatch;
use crate::clock::SharedClock;
use crate::compose::tools::response_object;
use crate::executor::{self, yield_point};
use crate::flow::{FlowEntry, FlowMonitor};
use crate::state::{State, StateChanges};

pub(crate) struct Control {
    pub session_id: Option<String>,
    pub config: Arc<SessionConfig>,
    pub bus: Arc<EventBus>,
    pub state: State,
    pub clock: SharedClock,
    pub outbound: mpsc::UnboundedSender<Command>,
    pub transcript: Transcript,
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
    extracting: Vec<ExtractorRun>,
    extracted: mpsc::UnboundedSender<(usize, Result<Extracted, String>)>,
    /// The planted bug's trigger (test builds only): a call from an earlier
    /// message was still running when this message's calls arrived.
    #[cfg(feature = "planted-bug")]
    planted_overlap: bool,
}

/// Whether an extractor is running, and whether a turn ended meanwhile.
#[derive(Clone, Copy, Default)]
struct ExtractorRun {
    running: bool,
    again: bool,
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
        let extracting = vec![ExtractorRun::default(); self.config.extractors.len()];
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
            #[cfg(feature = "planted-bug")]
            planted_overlap: false,
        };
        let session_id = lane.control.session_id.clone();
        lane.control.bus.emit(LiveEvent::Connected { session_id });
        if let Some(phases) = &lane.phases {
            lane.control.state.set("session:phase", phases.current());
        }
        loop {
            tokio::select! {
                biased;
                routed = inbox.recv() => match routed {
                    Some(Routed::Event(event)) => lane.event(event).await,
                    Some(Routed::Tick) => lane.tick(),
                    Some(Routed::Interrupted) => lane.interrupted(),
                    Some(Routed::Activity) => {}
                    Some(Routed::Ended(event)) => {
                        lane.dispatcher.abort_all();
                        lane.control.bus.emit(event);
                        break;
                    }
                    None => break,
                },
                Some(done) = completions.recv() => lane.answer(done).await,
                Some(resolved) = resolutions.recv() => lane.slot_resolved(resolved),
                Some((index, outcome)) = extractions.recv() => lane.extracted(index, outcome),
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

impl Lane {
    async fn event(&mut self, event: LiveEvent) {
        match event {
            LiveEvent::ToolCall { calls } => {
                #[cfg(feature = "planted-bug")]
                {
                    self.planted_overlap =
                        self.control.config.planted_bug && self.dispatcher.is_running();
                }
                self.control.bus.emit(LiveEvent::ToolCall {
                    calls: calls.clone(),
                });
                for call in calls {
                    self.call(call).await;
                }
            }
            LiveEvent::ToolCancelled { ids } => {
                self.control
                    .bus
                    .emit(LiveEvent::ToolCancelled { ids: ids.clone() });
                for id in ids {
                    self.cancel(&id);
                }
            }
            LiveEvent::TurnComplete { .. } => {
                self.control.bus.emit(event);
                self.turn_boundary();
            }
            other => self.control.bus.emit(other),
        }
        self.check_patterns();
    }

    async fn call(&mut self, call: ToolCall) {
        if call.id.is_empty() {
            self.control.bus.emit(LiveEvent::Warning {
                message: format!(
                    "tool call to {} has no id: not run, since no response could be matched to it",
                    call.name
                ),
            });
            return;
        }
        if !self.dispatcher.claim(&call.id) {
            self.control.bus.emit(LiveEvent::Warning {
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
                        self.control.bus.emit(LiveEvent::ToolDenied {
                            id: call.id.clone(),
                            name: call.name.clone(),
                            reason,
                        });
                        self.send_response(&call.id, &call.name, refusal).await;
                        return;
                    }
                }
                Err(e) => {
                    self.control.bus.emit(LiveEvent::Warning {
                        message: format!("flow gate: {e}"),
                    });
                    return;
                }
            }
        }
        match self.dispatcher.dispatch(&call) {
            Dispatched::Started => {}
            Dispatched::UnknownTool(message) => {
                self.respond(&call.id, &call.name, Err(message)).await;
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

    fn cancel(&mut self, id: &str) {
        let note = match self.dispatcher.cancel(id) {
            Cancelled::Aborted => return,
            Cancelled::TooLate => "it was already answered",
            Cancelled::Unknown => "no call with that id was seen",
        };
        self.control.bus.emit(LiveEvent::Warning {
            message: format!("cancellation of tool call {id:?} ignored: {note}"),
        });
    }

    async fn answer(&mut self, done: Completion) {
        if let Some(done) = self.dispatcher.complete(done) {
            self.respond(&done.id, &done.name, done.outcome).await;
        }
    }

    /// Answers one admitted call: the flow records its outcome, then the
    /// response is sent and emitted.
    async fn respond(&mut self, id: &str, name: &str, outcome: Result<Value, String>) {
        if let Some(monitor) = self.monitor.as_mut() {
            match monitor.record_result(id, outcome.is_ok(), &self.control.state) {
                Ok(entries) => self.journal(entries),
                Err(e) => self.control.bus.emit(LiveEvent::Warning {
                    message: format!("flow result: {e}"),
                }),
            }
        }
        self.send_response(id, name, response_object(&outcome))
            .await;
    }

    /// Sends one function response and emits it.
    async fn send_response(&mut self, id: &str, name: &str, response: Value) {
        let message = json!({
            "toolResponse": {
                "functionResponses": [{ "id": id, "name": name, "response": response }]
            }
        });
        // The wire lane may be gone (connection closed): the call then goes
        // unanswered with everything else on this connection.
        let _ = self.control.outbound.send(Command::Send(message));
        self.control.bus.emit(LiveEvent::ToolResponse {
            id: id.to_string(),
            name: name.to_string(),
            response,
        });
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
        if let Some(monitor) = self.monitor.as_mut() {
            let entries = monitor.record_interruption(&self.control.state);
            self.journal(entries);
        }
    }

    fn turn_boundary(&mut self) {
        if let Some(monitor) = self.monitor.as_mut() {
            let evaluation = monitor.evaluate_turn(&self.control.state);
            self.journal(vec![evaluation.entry()]);
            self.resolve_slots(&evaluation.active);
        }
        self.evaluate_phases();
        for index in 0..self.extracting.len() {
            self.start_extractor(index);
        }
    }

    /// Starts extractor `index`, or asks for a rerun if it is running.
    fn start_extractor(&mut self, index: usize) {
        let run = &mut self.extracting[index];
        if run.running {
            run.again = true;
            return;
        }
        run.running = true;
        let extractor = self.control.config.extractors[index].clone();
        let turn = TurnContext {
            transcript: self.control.transcript.clone(),
            state: self.control.state.clone(),
            clock: self.control.clock.clone(),
        };
        let done = self.extracted.clone();
        executor::spawn(format!("extractor:{}", extractor.name()), async move {
            let outcome = extractor.extract(turn).await;
            let _ = done.send((index, outcome));
        });
    }

    fn extracted(&mut self, index: usize, outcome: Result<Extracted, String>) {
        match outcome {
            Ok(writes) => {
                for (key, value) in writes {
                    self.control.state.set(key, value);
                }
            }
            Err(e) => {
                let name = self.control.config.extractors[index].name().to_string();
                self.control.bus.emit(LiveEvent::Warning {
                    message: format!("extractor {name} failed: {e}"),
                });
            }
        }
        let run = &mut self.extracting[index];
        run.running = false;
        if std::mem::take(&mut run.again) {
            self.start_extractor(index);
        }
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
            Err(e) => self.control.bus.emit(LiveEvent::Warning {
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
            self.control.bus.emit(LiveEvent::PhaseChanged {
                from: transition.from,
                to: transition.to,
            });
        }
    }

    fn check_patterns(&mut self) {
        let now = self.control.clock.now();
        for watch in &mut self.patterns {
            if watch.check(&self.control.state, now) {
                self.control.bus.emit(LiveEvent::PatternMatched {
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
