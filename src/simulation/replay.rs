//! Replays: a recorded scenario re-decided by a spec, step by step, with
//! every place the spec decides differently from the recording.
//!
//! [`Scenario::run`] stops at the first step that does not hold; a replay
//! goes on to the end and reports, turn by turn, the active steps, the
//! state writes and tool outcomes, and a [`Divergence`] at every decision
//! the spec makes differently: a call the recording admitted and the spec
//! refuses (or the reverse), and a turn boundary where the active steps
//! differ. The spec decides under Enforce.
//!
//! After a divergence the replay keeps following the recording, since that
//! is what happened: a call the spec refuses never ran as far as the flow
//! is concerned, so its recorded result is shown but not fed to the flow;
//! a call the spec admits that the recording refused stays running with no
//! result. Later decisions are the spec's, given those events.
//!
//! [`Scenario::replay_to`] stops at a turn boundary instead and hands back
//! the simulator there, which is what `livesim flow why` explains.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;

use serde::Serialize;

use super::scenario::Scenario;
use super::sim::Sim;
use super::step::Step;
use crate::flow::{Enforcement, FlowEntry, FlowSpec};

/// What a replay found: every step, grouped by turn.
///
/// ```
/// use livesim::flow::{Conversation, Guard};
/// use livesim::simulation::Scenario;
///
/// let convo = Conversation::new()
///     .stage("book").allow(["confirm"]).commit("book_table", Guard::is_true("confirmed"))
///     .compile()
///     .unwrap();
/// let recorded = Scenario::from_json(r#"{"name": "incident", "steps": [
///     {"expect_allowed": "book_table"}, {"tool_result": {"tool": "book_table", "ok": true}},
///     "turn", {"expect_active": []}
/// ]}"#, "incident.scenario.json").unwrap();
/// let report = recorded.replay(&convo);
/// assert!(!report.clean());
/// let first = report.divergences().next().unwrap();
/// assert_eq!((first.0.index, first.1.recorded.as_str()), (0, "admitted"));
/// assert!(report.to_string().contains("DIVERGED steps[0] {\"expect_allowed\":\"book_table\"}"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReplayReport {
    /// The scenario's name.
    pub scenario: String,
    /// How many steps it has.
    pub steps: usize,
    /// How many recorded decisions were compared: tool calls, the active
    /// steps after each turn boundary, and any recorded step the spec
    /// cannot follow (a result with no call of its tool running).
    pub decisions: usize,
    /// How many of them the spec decides differently.
    pub diverged: usize,
    /// Turn 0 (before the first boundary), then one per turn boundary.
    pub turns: Vec<TurnReplay>,
}

/// One turn of a replay: the spec's active steps when it starts, and the
/// steps recorded until the next turn boundary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TurnReplay {
    /// 0 before the first turn boundary, then 1, 2, …
    pub turn: u64,
    /// The steps the spec has active at the start of the turn.
    pub active: Vec<String>,
    /// The turn's steps, in order.
    pub lines: Vec<ReplayLine>,
}

/// One step of the recording, replayed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReplayLine {
    /// The step's index in the scenario (`steps[index]`).
    pub index: usize,
    /// The step.
    pub step: Step,
    /// What the recording did, in a few words (`set_party: admitted`).
    pub note: String,
    /// Where the spec decides differently, if it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diverged: Option<Divergence>,
}

/// A decision the spec makes differently from the recording.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Divergence {
    /// What the recording did (`admitted`, `active [book]`).
    pub recorded: String,
    /// What the spec decides (`refuses it`, `has [party] active`).
    pub spec: String,
    /// Why the spec decides so.
    pub why: String,
}

/// A turn past the end of the recording.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "turn {asked} is beyond the recording: `{scenario}` has {turns} turn{} (ask for 0 to {turns}; 0 is before the first turn)",
    if *turns == 1 { "" } else { "s" }
)]
pub struct TurnOutOfRange {
    /// The scenario's name.
    pub scenario: String,
    /// The turn asked for.
    pub asked: u64,
    /// The turn boundaries it has.
    pub turns: u64,
}

impl ReplayReport {
    /// Whether the spec reproduces every recorded decision.
    pub fn clean(&self) -> bool {
        self.diverged == 0
    }

    /// Every divergence with the line it is on, in order.
    pub fn divergences(&self) -> impl Iterator<Item = (&ReplayLine, &Divergence)> {
        self.turns
            .iter()
            .flat_map(|turn| &turn.lines)
            .filter_map(|line| Some((line, line.diverged.as_ref()?)))
    }
}

impl Scenario {
    /// How many turn boundaries the scenario has (`turn` steps, and the
    /// boundary inside each `tool_ok`).
    pub fn turns(&self) -> u64 {
        self.steps
            .iter()
            .filter(|step| matches!(step, Step::Turn | Step::ToolOk(_)))
            .count() as u64
    }

    /// Replays every step against `spec` (see the module docs) and reports
    /// each turn and every divergence. Never stops early.
    pub fn replay(&self, spec: &impl AsRef<FlowSpec>) -> ReplayReport {
        let mut replayer = Replayer::new(spec.as_ref());
        for (index, step) in self.steps.iter().enumerate() {
            replayer.step(index, step);
        }
        let diverged = replayer
            .turns
            .iter()
            .flat_map(|turn| &turn.lines)
            .filter(|line| line.diverged.is_some())
            .count();
        ReplayReport {
            scenario: self.name.clone(),
            steps: self.steps.len(),
            decisions: replayer.decisions,
            diverged,
            turns: replayer.turns,
        }
    }

    /// Replays the steps up to turn boundary `turn` against `spec` (0: none
    /// at all, the start of the session) and returns the simulator there,
    /// to [explain](Sim::explain). The replay follows the recording as
    /// [`replay`](Self::replay) does.
    ///
    /// ```
    /// use livesim::flow::{Flow, Guard};
    /// use livesim::simulation::{Scenario, Step};
    ///
    /// let spec = Flow::new()
    ///     .step("verify").allow(["verify_identity"]).done(Guard::called_ok("verify_identity"))
    ///     .step("pay").after("verify").allow(["take_payment"])
    ///     .build()
    ///     .unwrap();
    /// let recorded = Scenario::new("paid", vec![Step::ToolOk("verify_identity".into())]);
    /// assert!(!recorded.replay_to(&spec, 0).unwrap().explain_tool("take_payment").admitted);
    /// assert!(recorded.replay_to(&spec, 1).unwrap().explain_tool("take_payment").admitted);
    /// assert_eq!(
    ///     recorded.replay_to(&spec, 2).unwrap_err().to_string(),
    ///     "turn 2 is beyond the recording: `paid` has 1 turn (ask for 0 to 1; 0 is before the first turn)"
    /// );
    /// ```
    pub fn replay_to(&self, spec: &impl AsRef<FlowSpec>, turn: u64) -> Result<Sim, TurnOutOfRange> {
        let turns = self.turns();
        if turn > turns {
            return Err(TurnOutOfRange {
                scenario: self.name.clone(),
                asked: turn,
                turns,
            });
        }
        let mut replayer = Replayer::new(spec.as_ref());
        for (index, step) in self.steps.iter().enumerate() {
            if replayer.turn() == turn {
                break;
            }
            replayer.step(index, step);
        }
        Ok(replayer.sim)
    }
}

/// The replay engine: a simulator under Enforce, and the recording's view
/// of the calls it admitted.
struct Replayer {
    sim: Sim,
    noun: &'static str,
    /// Per tool, the calls the recording admitted that have no result yet,
    /// oldest first: whether the spec admitted each.
    running: BTreeMap<String, VecDeque<bool>>,
    decisions: usize,
    turns: Vec<TurnReplay>,
}

impl Replayer {
    fn new(spec: &FlowSpec) -> Replayer {
        let sim = Sim::new(spec.clone(), Enforcement::Enforce);
        let active = sim.monitor().active_steps(sim.state());
        Replayer {
            sim,
            noun: spec.noun(),
            running: BTreeMap::new(),
            decisions: 0,
            turns: vec![TurnReplay {
                turn: 0,
                active,
                lines: Vec::new(),
            }],
        }
    }

    fn turn(&self) -> u64 {
        self.turns.last().map_or(0, |turn| turn.turn)
    }

    fn step(&mut self, index: usize, step: &Step) {
        match step {
            Step::ExpectAllowed(tool) => self.call(index, step, tool, true),
            Step::ExpectDenied(tool) => self.call(index, step, tool, false),
            Step::ToolResult { tool, ok } => self.result(index, step, tool, *ok),
            Step::ToolCancelled(tool) => self.cancelled(index, step, tool),
            Step::ToolOk(tool) => {
                self.call(index, step, tool, true);
                self.result(index, step, tool, true);
                self.boundary();
            }
            Step::Turn => self.boundary(),
            Step::ExpectActive(recorded) => self.active(index, step, recorded),
            Step::Set { key, value } => {
                let note = format!("set {key} = {}", shortened(&value.to_string()));
                self.apply(index, step, note);
            }
            Step::ToolFailed(tool) => {
                let note = format!("{tool}: failed (no result)");
                self.apply(index, step, note);
            }
            Step::Interrupt => self.apply(index, step, "interrupted".into()),
        }
    }

    /// A recorded call decision, re-decided by the spec.
    fn call(&mut self, index: usize, step: &Step, tool: &str, recorded_admit: bool) {
        self.decisions += 1;
        let active = self.sim.monitor().active_steps(self.sim.state());
        let verdict = self.sim.monitor().check(tool, self.sim.state());
        let spec_admits = verdict.is_ok();
        let decided = if spec_admits {
            Step::ExpectAllowed(tool.to_string())
        } else {
            Step::ExpectDenied(tool.to_string())
        };
        // The expectation matches the check, so it holds; were it not to,
        // the message is the divergence's reason.
        let applied = self.sim.apply(&decided);
        if recorded_admit {
            self.running
                .entry(tool.to_string())
                .or_default()
                .push_back(spec_admits);
        }
        let recorded = if recorded_admit {
            "admitted"
        } else {
            "refused"
        };
        let diverged = match (applied, verdict) {
            (Err(problem), _) => Some(Divergence {
                recorded: recorded.into(),
                spec: "cannot decide it".into(),
                why: problem,
            }),
            (Ok(()), Err(reason)) if recorded_admit => Some(Divergence {
                recorded: recorded.into(),
                spec: "refuses it".into(),
                why: reason,
            }),
            (Ok(()), Ok(())) if !recorded_admit => {
                let owners: Vec<&str> = self
                    .sim
                    .monitor()
                    .spec()
                    .steps_allowing(tool)
                    .into_iter()
                    .filter(|id| active.iter().any(|a| a == id))
                    .collect();
                Some(Divergence {
                    recorded: recorded.into(),
                    spec: "admits it".into(),
                    why: format!(
                        "{tool} is allowed by the active {} [{}]",
                        self.noun,
                        owners.join(", ")
                    ),
                })
            }
            (Ok(()), _) => None,
        };
        self.push(index, step, format!("{tool}: {recorded}"), diverged);
    }

    /// A recorded result: fed to the flow when the spec admitted its call.
    fn result(&mut self, index: usize, step: &Step, tool: &str, ok: bool) {
        let outcome = if ok { "ok" } else { "failed" };
        let spec_admitted = self.running.get_mut(tool).and_then(VecDeque::pop_front);
        if spec_admitted == Some(false) {
            let note =
                format!("{tool}: {outcome} (not fed to the flow: the spec refused this call)");
            self.push(index, step, note, None);
            return;
        }
        let result = Step::ToolResult {
            tool: tool.to_string(),
            ok,
        };
        self.apply_as(index, step, &result, format!("{tool}: {outcome}"));
    }

    /// A recorded cancellation: fed to the flow when the spec admitted the
    /// call.
    fn cancelled(&mut self, index: usize, step: &Step, tool: &str) {
        let spec_admitted = self.running.get_mut(tool).and_then(VecDeque::pop_front);
        if spec_admitted == Some(false) {
            let note =
                format!("{tool}: cancelled (not fed to the flow: the spec refused this call)");
            self.push(index, step, note, None);
            return;
        }
        self.apply_as(index, step, step, format!("{tool}: cancelled"));
    }

    /// A turn boundary: the flow is evaluated and a new turn starts.
    fn boundary(&mut self) {
        let _ = self.sim.apply(&Step::Turn);
        let active = self.sim.monitor().active_steps(self.sim.state());
        let turn = self.turn() + 1;
        self.turns.push(TurnReplay {
            turn,
            active,
            lines: Vec::new(),
        });
    }

    /// The recorded active steps, compared with the spec's.
    fn active(&mut self, index: usize, step: &Step, recorded: &[String]) {
        self.decisions += 1;
        let mut spec = self.sim.monitor().active_steps(self.sim.state());
        let mut wanted = recorded.to_vec();
        spec.sort();
        wanted.sort();
        wanted.dedup();
        let note = format!("active [{}]", wanted.join(", "));
        let diverged = (spec != wanted).then(|| Divergence {
            recorded: note.clone(),
            spec: format!("has [{}] active", spec.join(", ")),
            why: self.active_difference(&wanted, &spec),
        });
        self.push(index, step, note, diverged);
    }

    /// Why each step in one list and not the other is where it is.
    fn active_difference(&self, recorded: &[String], spec: &[String]) -> String {
        let explanation = self.sim.explain();
        let mut reasons = Vec::new();
        for id in recorded.iter().filter(|id| !spec.contains(id)) {
            if explanation.done.contains(id) {
                reasons.push(format!("{id} is already done"));
            } else if let Some(waiting) = explanation.waiting.iter().find(|w| &w.id == id) {
                reasons.push(format!(
                    "{id} waits for [{}]",
                    waiting.waits_for_steps.join(", ")
                ));
            } else {
                reasons.push(format!("{id} is not a {} of this spec", self.noun));
            }
        }
        for id in spec.iter().filter(|id| !recorded.contains(id)) {
            let unmet = explanation
                .active
                .iter()
                .find(|a| &a.id == id)
                .map(|a| {
                    a.waits_for
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default();
            if unmet.is_empty() {
                reasons.push(format!("{id} is active"));
            } else {
                reasons.push(format!(
                    "{id} is still active: it waits for {}",
                    unmet.join(" and ")
                ));
            }
        }
        reasons.join("; ")
    }

    fn apply(&mut self, index: usize, step: &Step, note: String) {
        self.apply_as(index, step, step, note);
    }

    /// Applies `applied` (the recorded `step`, or what it stands for) and
    /// notes any escalation it caused. A step the simulator cannot apply
    /// (a result with no running call) means the recording and the spec no
    /// longer agree on what is running: it is reported as a divergence.
    fn apply_as(&mut self, index: usize, step: &Step, applied: &Step, mut note: String) {
        let before = self.sim.journal().len();
        let diverged = self.sim.apply(applied).err().map(|problem| Divergence {
            recorded: note.clone(),
            spec: "cannot apply it".into(),
            why: problem,
        });
        // A step the spec cannot follow is a decision it makes
        // differently, so the count of divergences never passes the count
        // of decisions.
        if diverged.is_some() {
            self.decisions += 1;
        }
        for (key, value) in &self.sim.journal()[before..] {
            if let Ok(Some(FlowEntry::Escalated { stage, reason })) = FlowEntry::parse(key, value) {
                note.push_str(&format!("; {} {stage} {reason}", self.noun));
            }
        }
        self.push(index, step, note, diverged);
    }

    fn push(&mut self, index: usize, step: &Step, note: String, diverged: Option<Divergence>) {
        if let Some(turn) = self.turns.last_mut() {
            turn.lines.push(ReplayLine {
                index,
                step: step.clone(),
                note,
                diverged,
            });
        }
    }
}

/// A value as a note shows it: whole up to 120 characters, else its start
/// and how long it is (the step itself keeps it whole).
fn shortened(text: &str) -> String {
    const MAX: usize = 120;
    match text.char_indices().nth(MAX) {
        None => text.to_string(),
        Some((cut, _)) => format!("{}… ({} characters)", &text[..cut], text.chars().count()),
    }
}

/// The report as `livesim flow replay` prints it: a header, each turn with
/// the spec's active steps, each step indented, a `DIVERGED` line (at the
/// start of the line) after each step the spec decides differently, and
/// `CLEAN` or the count of divergences last.
impl fmt::Display for ReplayReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
        writeln!(
            f,
            "replay of `{}`: {}, {}",
            self.scenario,
            plural(self.steps, "step"),
            plural(self.turns.len().saturating_sub(1), "turn"),
        )?;
        for turn in &self.turns {
            writeln!(f, "turn {}: active [{}]", turn.turn, turn.active.join(", "))?;
            for line in &turn.lines {
                // The recorded active steps only print when they differ
                // from the turn's header.
                if !matches!(line.step, Step::ExpectActive(_)) || line.diverged.is_some() {
                    writeln!(f, "  steps[{}] {}", line.index, line.note)?;
                }
                if let Some(d) = &line.diverged {
                    writeln!(
                        f,
                        "DIVERGED steps[{}] {}: recorded {}; the spec {}: {}",
                        line.index, line.step, d.recorded, d.spec, d.why
                    )?;
                }
            }
        }
        if self.decisions == 0 {
            write!(f, "CLEAN: no recorded decisions to compare")
        } else if self.clean() {
            write!(
                f,
                "CLEAN: the spec reproduces all {}",
                plural(self.decisions, "recorded decision")
            )
        } else {
            write!(
                f,
                "DIVERGED at {} of {}",
                self.diverged,
                plural(self.decisions, "recorded decision")
            )
        }
    }
}
