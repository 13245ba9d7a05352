//! Properties over generated specs, call sequences and outcome
//! interleavings, checked against a small reference model of the flow.
//!
//! Runs are seeded (a fixed proptest seed unless `PROPTEST_RNG_SEED` is
//! set) and sized by `PROPTEST_CASES`.

use std::collections::{BTreeMap, BTreeSet};

use livesim::flow::{
    CompiledConversation, Conversation, Enforcement, Flow, FlowEntry, FlowMonitor, FlowSpec, Guard,
    Spec,
};
use livesim::simulation::Scenario;
use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use serde_json::{Value, json};

const TOOLS: [&str; 5] = ["t0", "t1", "t2", "t3", "t4"];
const KEYS: [&str; 3] = ["k0", "k1", "k2"];

fn config() -> ProptestConfig {
    let mut config = ProptestConfig::default();
    if config.rng_seed == RngSeed::Random {
        config.rng_seed = RngSeed::Fixed(0x5eed_f10e);
    }
    config
}

fn tool() -> impl Strategy<Value = String> {
    prop::sample::select(&TOOLS[..]).prop_map(str::to_string)
}

fn key() -> impl Strategy<Value = String> {
    prop::sample::select(&KEYS[..]).prop_map(str::to_string)
}

fn state_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!(true)),
        Just(json!(false)),
        Just(json!(1)),
        Just(json!(2.0)),
        Just(Value::Null),
        Just(json!("x")),
    ]
}

fn guard() -> impl Strategy<Value = Guard> {
    let leaf = prop_oneof![
        tool().prop_map(Guard::called_ok),
        tool().prop_map(Guard::called),
        key().prop_map(Guard::is_true),
        key().prop_map(Guard::exists),
        (
            key(),
            prop_oneof![
                Just(json!(1)),
                Just(json!("x")),
                Just(json!([1, {"a": null}]))
            ]
        )
            .prop_map(|(k, v)| Guard::equals(k, v)),
    ];
    leaf.prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 1..3).prop_map(Guard::all),
            prop::collection::vec(inner.clone(), 1..3).prop_map(Guard::any),
            inner.prop_map(Guard::not),
        ]
    })
}

/// One step's declaration: `after` as indices of earlier steps, so every
/// generated flow is acyclic and valid.
#[derive(Debug, Clone)]
struct StepPlan {
    after: Vec<bool>,
    allow: Vec<String>,
    gates: Vec<(usize, Guard)>,
    done: Option<Guard>,
    failures: Option<u32>,
    interruptions: Option<u32>,
}

fn step_plan() -> impl Strategy<Value = StepPlan> {
    (
        prop::collection::vec(any::<bool>(), 6),
        prop::collection::vec(tool(), 0..3),
        prop::collection::vec((0usize..3, guard()), 0..2),
        prop::option::weighted(0.8, guard()),
        prop::option::of(1u32..4),
        prop::option::of(1u32..4),
    )
        .prop_map(
            |(after, allow, gates, done, failures, interruptions)| StepPlan {
                after,
                allow,
                gates,
                done,
                failures,
                interruptions,
            },
        )
}

fn flow_spec() -> impl Strategy<Value = FlowSpec> {
    prop::collection::vec(step_plan(), 1..6).prop_map(|plans| {
        let mut flow = Flow::new();
        for (i, plan) in plans.into_iter().enumerate() {
            flow = flow.step(format!("s{i}")).allow(plan.allow.clone());
            for (j, _) in plan.after.iter().enumerate().filter(|(j, a)| **a && *j < i) {
                flow = flow.after(format!("s{j}"));
            }
            for (pick, gate) in plan.gates {
                if let Some(tool) = plan.allow.get(pick) {
                    flow = flow.gate(tool.clone(), gate);
                }
            }
            if let Some(done) = plan.done {
                flow = flow.done(done);
            }
            if let Some(n) = plan.failures {
                flow = flow.escalate_after_tool_failures(n);
            }
            if let Some(n) = plan.interruptions {
                flow = flow.escalate_after_interruptions(n);
            }
        }
        flow.build().expect("generated flows are valid")
    })
}

fn conversation() -> impl Strategy<Value = CompiledConversation> {
    let stage = (
        step_plan(),
        prop::collection::vec((any::<bool>(), any::<bool>()), 0..3),
        any::<bool>(),
    );
    prop::collection::vec(stage, 1..5).prop_map(|stages| {
        let mut convo = Conversation::new();
        let mut slot = 0;
        for (i, (plan, slots, explicit_after)) in stages.into_iter().enumerate() {
            convo = convo.stage(format!("stage{i}")).allow(plan.allow.clone());
            if explicit_after {
                for (j, _) in plan.after.iter().enumerate().filter(|(j, a)| **a && *j < i) {
                    convo = convo.after(format!("stage{j}"));
                }
            }
            for (resolved, from_key) in slots {
                slot += 1;
                let key = format!("slot{slot}");
                convo = if resolved {
                    let input = if from_key {
                        "k0".to_string()
                    } else {
                        format!("slot{}", slot - 1)
                    };
                    convo.resolve_slot(
                        key,
                        [input],
                        livesim::flow::resolver(|_| async { Ok(json!(1)) }),
                    )
                } else {
                    convo.slot(key)
                };
            }
            for (pick, gate) in plan.gates {
                convo = convo.commit(format!("commit{i}_{pick}"), gate);
            }
            if let Some(done) = plan.done {
                convo = convo.done(done);
            }
            if let Some(n) = plan.failures {
                convo = convo.escalate_after_tool_failures(n);
            }
        }
        convo.compile().expect("generated conversations are valid")
    })
}

/// Something that happens to the session.
#[derive(Debug, Clone)]
enum Event {
    Call(String),
    /// Completes the running call at this position (modulo their number).
    Complete(usize, bool),
    Fail(String),
    Interrupt,
    Turn,
    Set(String, Value),
    /// Gates an id that was already gated (a bookkeeping mistake).
    Regate(usize),
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        4 => tool().prop_map(Event::Call),
        3 => (any::<usize>(), prop::bool::weighted(0.7)).prop_map(|(i, ok)| Event::Complete(i, ok)),
        1 => tool().prop_map(Event::Fail),
        1 => Just(Event::Interrupt),
        2 => Just(Event::Turn),
        2 => (key(), state_value()).prop_map(|(k, v)| Event::Set(k, v)),
        1 => any::<usize>().prop_map(Event::Regate),
    ]
}

/// A reference model of the flow's progress: latched done steps, found by
/// naive repetition until nothing changes, and guards evaluated directly.
#[derive(Default)]
struct Model {
    done: BTreeSet<String>,
    calls: BTreeMap<String, u32>,
    oks: BTreeMap<String, u32>,
}

impl Model {
    fn holds(&self, guard: &Guard, state: &BTreeMap<String, Value>) -> bool {
        let number = |v: &Value| v.as_f64();
        match guard {
            Guard::CalledOk(t) => self.oks.get(t).is_some_and(|n| *n > 0),
            Guard::Called(t) => self.calls.get(t).is_some_and(|n| *n > 0),
            Guard::IsTrue(k) => state.get(k) == Some(&json!(true)),
            Guard::Exists(k) => state.get(k).is_some_and(|v| !v.is_null()),
            Guard::Equals { key, value } => state
                .get(key)
                .is_some_and(|v| v == value || (number(v).is_some() && number(v) == number(value))),
            Guard::All(gs) => gs.iter().all(|g| self.holds(g, state)),
            Guard::Any(gs) => gs.iter().any(|g| self.holds(g, state)),
            Guard::Not(g) => !self.holds(g, state),
        }
    }

    fn advance(&mut self, spec: &FlowSpec, state: &BTreeMap<String, Value>) {
        loop {
            let ready: Vec<String> = spec
                .steps()
                .iter()
                .filter(|s| !self.done.contains(s.id()))
                .filter(|s| s.after().iter().all(|a| self.done.contains(a)))
                .filter(|s| s.done().is_some_and(|g| self.holds(g, state)))
                .map(|s| s.id().to_string())
                .collect();
            if ready.is_empty() {
                return;
            }
            self.done.extend(ready);
        }
    }

    fn active<'a>(&self, spec: &'a FlowSpec) -> Vec<&'a livesim::flow::StepSpec> {
        spec.steps()
            .iter()
            .filter(|s| !self.done.contains(s.id()))
            .filter(|s| s.after().iter().all(|a| self.done.contains(a)))
            .collect()
    }
}

/// Whether a done guard can only hold once `tool` succeeded: it is
/// `called_ok(tool)` or an `all` with such a part, at any depth of `all`.
fn commits(guard: &Guard, tool: &str) -> bool {
    match guard {
        Guard::CalledOk(t) => t == tool,
        Guard::All(parts) => parts.iter().any(|p| commits(p, tool)),
        _ => false,
    }
}

/// What a session driving the monitor would have journaled.
struct Recording {
    journal: Vec<(String, Value)>,
    decisions: usize,
    calls: usize,
}

/// Drives a monitor through `events` as the session would, checking each
/// decision against the model; returns the journal.
fn drive(
    spec: &FlowSpec,
    enforcement: Enforcement,
    events: &[Event],
) -> Result<Recording, TestCaseError> {
    let mut monitor = FlowMonitor::new(spec.clone(), enforcement);
    let mut model = Model::default();
    let mut state: BTreeMap<String, Value> = BTreeMap::new();
    let mut running: Vec<(String, String)> = Vec::new();
    let mut ids: Vec<String> = Vec::new();
    let mut rec = Recording {
        journal: Vec::new(),
        decisions: 0,
        calls: 0,
    };
    let write = |rec: &mut Recording, entries: &[FlowEntry]| {
        rec.journal.extend(entries.iter().map(FlowEntry::to_pair));
    };
    for event in events {
        match event {
            Event::Call(tool) => {
                rec.calls += 1;
                let id = format!("call-{}", rec.calls);
                model.advance(spec, &state);
                let escalated: BTreeSet<&str> =
                    monitor.escalations().into_iter().map(|(s, _)| s).collect();
                // A step the tool commits (its done guard needs the tool to
                // succeed) admits no second call while one is running.
                let tool_running = running.iter().any(|(_, t)| t == tool);
                let rule_admits = model.active(spec).iter().any(|step| {
                    step.allow().contains(tool)
                        && !escalated.contains(step.id())
                        && step
                            .gates()
                            .get(tool)
                            .is_none_or(|g| model.holds(g, &state))
                        && !(tool_running && step.done().is_some_and(|g| commits(g, tool)))
                });
                let decision = monitor
                    .gate(tool, &id, &state)
                    .map_err(|e| TestCaseError::fail(format!("a fresh id was not decided: {e}")))?;
                rec.decisions += 1;
                prop_assert_eq!(
                    decision.reason().is_none(),
                    rule_admits,
                    "decision {} disagrees with the model",
                    decision
                );
                if enforcement == Enforcement::Observe {
                    prop_assert!(decision.admitted());
                }
                write(&mut rec, &decision.entries());
                if decision.admitted() {
                    *model.calls.entry(tool.clone()).or_default() += 1;
                    running.push((id.clone(), tool.clone()));
                }
                ids.push(id);
            }
            Event::Complete(pick, ok) => {
                if running.is_empty() {
                    continue;
                }
                let (id, tool) = running.remove(pick % running.len());
                model.advance(spec, &state);
                let entries = monitor.record_result(&id, *ok, &state).map_err(|e| {
                    TestCaseError::fail(format!("a running call could not complete: {e}"))
                })?;
                if *ok {
                    *model.oks.entry(tool).or_default() += 1;
                }
                write(&mut rec, &entries);
            }
            Event::Fail(tool) => {
                model.advance(spec, &state);
                let entries = monitor.record_failure(tool, &state);
                write(&mut rec, &entries);
            }
            Event::Interrupt => {
                model.advance(spec, &state);
                let entries = monitor.record_interruption(&state);
                write(&mut rec, &entries);
            }
            Event::Turn => {
                model.advance(spec, &state);
                let turn = monitor.evaluate_turn(&state);
                let expected: Vec<&str> = model.active(spec).iter().map(|s| s.id()).collect();
                prop_assert_eq!(&turn.active, &expected);
                write(&mut rec, &[turn.entry()]);
            }
            Event::Set(key, value) => {
                if value.is_null() {
                    state.remove(key);
                } else {
                    state.insert(key.clone(), value.clone());
                }
                rec.journal.push((key.clone(), value.clone()));
            }
            Event::Regate(pick) => {
                if ids.is_empty() {
                    continue;
                }
                let id = &ids[pick % ids.len()];
                prop_assert!(monitor.gate("t0", id, &state).is_err());
            }
        }
    }
    Ok(rec)
}

/// Checks the journal stream: per call id, an admitted call has exactly one
/// `flow:tool_call` and at most one `flow:tool_result` after it; a refused
/// call has exactly one `flow:tool_denied` and nothing else.
fn check_stream(rec: &Recording, enforcement: Enforcement) -> Result<(), TestCaseError> {
    #[derive(Default)]
    struct PerCall {
        call: Vec<u64>,
        denied: u32,
        would_deny: u32,
        result: Vec<u64>,
    }
    let mut calls: BTreeMap<String, PerCall> = BTreeMap::new();
    let mut last_seq = 0;
    for (seq, (key, value)) in (1u64..).zip(&rec.journal) {
        prop_assert!(seq > last_seq);
        last_seq = seq;
        let Some(entry) = FlowEntry::parse(key, value).map_err(TestCaseError::fail)? else {
            continue;
        };
        let Some(id) = entry.call_id() else { continue };
        let per = calls.entry(id.to_string()).or_default();
        match entry {
            FlowEntry::ToolCall { .. } => per.call.push(seq),
            FlowEntry::ToolDenied { .. } => per.denied += 1,
            FlowEntry::ToolWouldDeny { .. } => per.would_deny += 1,
            FlowEntry::ToolResult { .. } => per.result.push(seq),
            _ => {}
        }
    }
    prop_assert_eq!(calls.len(), rec.decisions);
    for (id, per) in &calls {
        if per.denied > 0 {
            prop_assert_eq!(enforcement, Enforcement::Enforce);
            prop_assert_eq!(per.denied, 1, "{} denied twice", id);
            prop_assert!(per.call.is_empty() && per.result.is_empty() && per.would_deny == 0);
        } else {
            prop_assert_eq!(per.call.len(), 1, "{} needs one tool_call", id);
            prop_assert!(per.result.len() <= 1, "{} completed twice", id);
            prop_assert!(per.result.iter().all(|r| *r > per.call[0]));
            prop_assert!(per.would_deny <= 1);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    // Invariant: under Enforce a call is admitted exactly when an active step (per the
    // reference model) allows its tool, has not escalated, and its gate holds; so no tool
    // outside the active steps' allow lists ever runs, and turn boundaries report the
    // model's active steps.
    #[test]
    fn enforce_admits_only_what_active_steps_allow(
        spec in flow_spec(),
        events in prop::collection::vec(event(), 0..60),
    ) {
        drive(&spec, Enforcement::Enforce, &events)?;
    }

    // Invariant: in both modes every call id gets exactly one decision, and the journal
    // stream is well-formed: an admitted call has one tool_call and at most one later
    // tool_result, a refused call one tool_denied and nothing else.
    #[test]
    fn every_call_is_decided_once_and_journaled_well(
        spec in flow_spec(),
        observe in any::<bool>(),
        events in prop::collection::vec(event(), 0..60),
    ) {
        let enforcement = if observe { Enforcement::Observe } else { Enforcement::Enforce };
        let rec = drive(&spec, enforcement, &events)?;
        prop_assert_eq!(rec.decisions, rec.calls);
        check_stream(&rec, enforcement)?;
    }

    // Invariant: the scenario derived from a recorded journal, run against the same spec and
    // enforcement, reproduces every recorded flow decision and turn.
    #[test]
    fn a_journal_replays_to_the_same_decisions(
        spec in flow_spec(),
        observe in any::<bool>(),
        events in prop::collection::vec(event(), 0..60),
    ) {
        let enforcement = if observe { Enforcement::Observe } else { Enforcement::Enforce };
        let rec = drive(&spec, enforcement, &events)?;
        let numbered: Vec<(u64, String, Value)> = (1u64..)
            .zip(&rec.journal)
            .map(|(seq, (k, v))| (seq, k.clone(), v.clone()))
            .collect();
        let scenario = Scenario::from_journal("replay", &numbered);
        let sim = scenario
            .run_now(&spec, enforcement)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let decisions = |journal: &[(String, Value)]| -> Vec<(String, Value)> {
            journal
                .iter()
                .filter(|(k, _)| k.starts_with("flow:"))
                .map(|(k, v)| {
                    let mut v = v.clone();
                    if let Some(map) = v.as_object_mut() {
                        map.remove("id");
                    }
                    (k.clone(), v)
                })
                .collect()
        };
        prop_assert_eq!(decisions(sim.journal()), decisions(&rec.journal));
    }

    // Invariant: any flow spec written to JSON reads back equal, and writes the same text.
    #[test]
    fn flow_specs_round_trip_through_json(spec in flow_spec()) {
        let text = spec.to_json();
        let read = FlowSpec::from_json(&text, "generated.spec.json")
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&read, &spec);
        prop_assert_eq!(read.to_json(), text);
    }

    // Invariant: any compiled conversation written to JSON reads back equal (stages and
    // compiled flow), and writes the same text.
    #[test]
    fn conversations_round_trip_through_json(convo in conversation()) {
        let text = convo.to_json();
        let read = Spec::from_json(&text, "generated.spec.json")
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let Spec::Conversation(read) = read else {
            return Err(TestCaseError::fail("read back as a flow"));
        };
        prop_assert_eq!(&read, &convo);
        prop_assert_eq!(read.flow(), convo.flow());
        prop_assert_eq!(read.to_json(), text);
    }
}

/// The soak's model of the rules, against the monitor (the soak is behind
/// the `simulation` feature).
#[cfg(feature = "simulation")]
mod soak_model {
    use super::*;
    use livesim::clock::Timestamp;
    use livesim::soak::invariants::decisions_follow_spec;
    use livesim::state::StateMutation;

    proptest! {
        #![proptest_config(config())]

    // Invariant: the soak's `decisions-follow-spec` model of the rules agrees with every
    // journal the monitor writes, on any flow (so it raises no false alarm on a user's spec).
    #[test]
    fn the_soak_model_agrees_with_every_journal(
        spec in flow_spec(),
        observe in any::<bool>(),
        events in prop::collection::vec(event(), 0..60),
    ) {
        let enforcement = if observe { Enforcement::Observe } else { Enforcement::Enforce };
        let rec = drive(&spec, enforcement, &events)?;
        let journal: Vec<StateMutation> = (1u64..)
            .zip(&rec.journal)
            .map(|(seq, (key, value))| StateMutation {
                seq,
                key: key.clone(),
                value: value.clone(),
                timestamp: Timestamp::EPOCH,
                removed: false,
            })
            .collect();
        prop_assert_eq!(decisions_follow_spec(&spec, enforcement, &journal), Ok(()));
    }
    }
}
