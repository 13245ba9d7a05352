//! `resolvers-follow-spec`: every run of a conversation's slot resolvers
//! came when the rules make its slot due, with the inputs the journal
//! held then, and every value a resolver gave was written to its slot;
//! worked out from the journal and the recorded runs, not from the
//! session's resolver code or the flow's `due_resolutions`.
//!
//! The rules, as the documentation states them: at each turn boundary
//! (a `flow:active` entry, naming the active stages) the session starts
//! the resolver of every resolved slot whose stage is active, whose value
//! is unset (or `null`) and whose inputs are all set, unless that slot's
//! resolver is still running; it passes an object of the inputs' values.
//! A value it returns is written to the slot; an error is reported, and
//! the slot is due again at a later turn boundary. So, slot by slot:
//!
//! - at a turn boundary where the slot is due and no run of it is in
//!   flight, the next run of it starts (no earlier than the boundary)
//!   with the inputs' values as of that entry;
//! - a run is in flight from its start until its value is written, or,
//!   for a failed run, until the session took the failure in: certainly
//!   after [`LAG`] past its end, perhaps at its end (a boundary in
//!   between may start the next run or not);
//! - a write of the slot while a run's value is awaited is that value;
//! - a value is written once the session had the time: a run that gave
//!   one and ended [`LAG`] before a later flow entry was written;
//! - every run is accounted for by a boundary that made its slot due;
//! - except at the instant the session ended for good: a boundary then
//!   may start a run the executor never gets to (nothing could take its
//!   value in), so a slot due there and never run again is no failure.

use std::time::Duration;

use serde_json::{Map, Value};

use crate::clock::VIRTUAL_EPOCH;
use crate::executor::format_time;
use crate::flow::keys::ACTIVE;
use crate::soak::check::flow_model::same;
use crate::soak::check::state_model::StateModel;
use crate::soak::check::telemetry::LAG;
use crate::soak::run::record::RunRecord;
use crate::soak::run::resolving::{Resolution, ResolvedSlot};
use crate::state::StateMutation;

/// The check: `Ok` when the run's resolver runs and its slots' writes
/// are what the rules give.
pub(crate) fn check(run: &RunRecord) -> Result<(), String> {
    if run.resolved_slots.is_empty() {
        return Ok(());
    }
    judge(
        &run.resolved_slots,
        &run.resolutions,
        &run.journal,
        run.clock_skew(),
        // When the session ended for good before the soak hung up.
        run.settling
            .ended
            .then(|| run.last_disconnection())
            .flatten(),
    )
}

/// What the model knows of a slot's resolver at a point of the journal.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Flight {
    /// No run of it is in flight: a boundary where the slot is due starts
    /// one.
    Idle,
    /// Run `i` (an index into the slot's runs) is in flight.
    Running(usize),
}

struct Slot<'r> {
    spec: &'r ResolvedSlot,
    runs: Vec<&'r Resolution>,
    /// The next run no boundary has accounted for.
    next: usize,
    flight: Flight,
    /// Runs that gave a value, and whether it was written.
    written: Vec<bool>,
}

fn at(entry: &StateMutation) -> Duration {
    entry.timestamp - VIRTUAL_EPOCH
}

/// The slots' runs against the journal; `ended`: when the session ended
/// for good, if it did.
pub(crate) fn judge(
    slots: &[ResolvedSlot],
    runs: &[Resolution],
    journal: &[StateMutation],
    skew: Duration,
    ended: Option<Duration>,
) -> Result<(), String> {
    let mut model: Vec<Slot<'_>> = slots
        .iter()
        .map(|spec| {
            let mine: Vec<&Resolution> = runs.iter().filter(|r| r.slot == spec.slot).collect();
            Slot {
                spec,
                written: vec![false; mine.len()],
                runs: mine,
                next: 0,
                flight: Flight::Idle,
            }
        })
        .collect();
    if let Some(stray) = runs
        .iter()
        .find(|r| !slots.iter().any(|s| s.slot == r.slot))
    {
        return Err(format!(
            "a resolver ran for {}, which is not a resolved slot of the conversation",
            stray.slot
        ));
    }
    let mut state = StateModel::default();
    for entry in journal {
        state.apply(entry);
        let t = at(entry);
        for slot in model.iter_mut() {
            if entry.key == slot.spec.slot {
                slot.written_at(entry, skew)?;
            }
        }
        if entry.key != ACTIVE {
            continue;
        }
        let active: Vec<&str> = entry
            .value
            .as_array()
            .map(|ids| ids.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for slot in model.iter_mut() {
            if !active.contains(&slot.spec.stage.as_str()) || state.value(&slot.spec.slot).is_some()
            {
                continue;
            }
            let Some(args) = inputs(slot.spec, &state) else {
                continue;
            };
            let certain = match slot.flight {
                Flight::Idle => true,
                Flight::Running(i) => match (&slot.runs[i].outcome, slot.runs[i].finished) {
                    (Some(Err(_)), Some(end)) if end + LAG < t => true,
                    (Some(Err(_)), Some(end)) if end <= t => false,
                    _ => continue,
                },
            };
            let fits = slot
                .runs
                .get(slot.next)
                .is_some_and(|r| r.started + skew >= t && same(&r.args, &args));
            // The session ended as the slot fell due: the run it started
            // may never have been polled, and none can come after.
            let ending = ended.is_some_and(|end| end <= t) && slot.runs.get(slot.next).is_none();
            if fits {
                slot.flight = Flight::Running(slot.next);
                slot.next += 1;
            } else if certain && !ending {
                return Err(slot.not_started(entry, &args));
            }
        }
    }
    let last_flow = journal
        .iter()
        .rev()
        .find(|e| e.key.starts_with("flow:"))
        .map(at);
    for slot in &model {
        if let Some(run) = slot.runs.get(slot.next) {
            return Err(format!(
                "the resolver of {} ran at {} with {}, but no turn boundary made {} due then \
                 (its stage {} active, the slot unset, its inputs set, no run of it in flight)",
                slot.spec.slot,
                format_time(run.started),
                run.args,
                slot.spec.slot,
                slot.spec.stage
            ));
        }
        for (i, run) in slot.runs.iter().enumerate() {
            if let (Some(Ok(value)), Some(end)) = (&run.outcome, run.finished)
                && !slot.written[i]
                && last_flow.is_some_and(|last| end + LAG <= last)
            {
                return Err(format!(
                    "the resolver of {} gave {value} at {}, but the slot was never written, \
                     though the session wrote flow entries until {}",
                    slot.spec.slot,
                    format_time(end),
                    format_time(last_flow.unwrap_or_default())
                ));
            }
        }
    }
    Ok(())
}

/// The slot's inputs as of now, if all are set.
fn inputs(spec: &ResolvedSlot, state: &StateModel<'_>) -> Option<Value> {
    let mut args = Map::new();
    for key in &spec.inputs {
        args.insert(key.clone(), state.value(key)?.clone());
    }
    Some(Value::Object(args))
}

impl Slot<'_> {
    /// A journal write of the slot: the value of the run in flight, if it
    /// gave one and had ended (by the journal's clock, which may be
    /// `skew` behind the run's); otherwise another writer's (a user's tool
    /// may write it).
    fn written_at(&mut self, entry: &StateMutation, skew: Duration) -> Result<(), String> {
        let Flight::Running(i) = self.flight else {
            return Ok(());
        };
        let run = self.runs[i];
        let (Some(Ok(value)), Some(end)) = (&run.outcome, run.finished) else {
            return Ok(());
        };
        if at(entry) + skew < end {
            return Ok(());
        }
        let written = if entry.removed {
            &Value::Null
        } else {
            &entry.value
        };
        if !same(written, value) {
            return Err(format!(
                "journal entry {} wrote {} = {written} after its resolver gave {value} (at {}): \
                 a resolved slot gets its resolver's value",
                entry.seq,
                self.spec.slot,
                format_time(end)
            ));
        }
        self.written[i] = true;
        self.flight = Flight::Idle;
        Ok(())
    }

    fn not_started(&self, entry: &StateMutation, args: &Value) -> String {
        let next = match self.runs.get(self.next) {
            Some(run) => format!(
                "its next run started at {} with {}",
                format_time(run.started),
                run.args
            ),
            None => "it never ran again".to_string(),
        };
        format!(
            "{} was due at journal entry {} (a turn boundary at {}: stage {} active, the slot \
             unset, its inputs {args}, no run of it in flight), but its resolver did not start \
             then: {next}",
            self.spec.slot,
            entry.seq,
            format_time(at(entry)),
            self.spec.stage
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn slot() -> Vec<ResolvedSlot> {
        vec![ResolvedSlot {
            stage: "book".into(),
            slot: "table".into(),
            inputs: vec!["party_size".into()],
        }]
    }

    fn entry(seq: u64, ms: u64, key: &str, value: Value) -> StateMutation {
        StateMutation {
            seq,
            key: key.into(),
            value,
            timestamp: VIRTUAL_EPOCH + Duration::from_millis(ms),
            removed: false,
        }
    }

    fn run(start: u64, end: u64, args: Value, outcome: Result<Value, String>) -> Resolution {
        Resolution {
            slot: "table".into(),
            args,
            started: Duration::from_millis(start),
            finished: Some(Duration::from_millis(end)),
            outcome: Some(outcome),
        }
    }

    fn journal() -> Vec<StateMutation> {
        vec![
            entry(1, 100, "party_size", json!(4)),
            entry(2, 200, ACTIVE, json!(["book"])),
            entry(3, 260, "table", json!("T4")),
            entry(4, 900, ACTIVE, json!(["book"])),
        ]
    }

    #[test]
    fn a_run_at_its_boundary_whose_value_is_written_passes() {
        let runs = [run(200, 260, json!({"party_size": 4}), Ok(json!("T4")))];
        assert_eq!(
            judge(&slot(), &runs, &journal(), Duration::ZERO, None),
            Ok(())
        );
    }

    #[test]
    fn a_due_slot_with_no_run_fails() {
        let err = judge(&slot(), &[], &journal(), Duration::ZERO, None).unwrap_err();
        assert!(err.contains("table was due at journal entry 2"), "{err}");
    }

    #[test]
    fn a_run_with_other_inputs_fails() {
        let runs = [run(200, 260, json!({"party_size": 5}), Ok(json!("T4")))];
        let err = judge(&slot(), &runs, &journal(), Duration::ZERO, None).unwrap_err();
        assert!(err.contains("did not start"), "{err}");
    }

    #[test]
    fn a_value_never_written_fails() {
        let mut journal = journal();
        journal.remove(2);
        let runs = [run(200, 260, json!({"party_size": 4}), Ok(json!("T4")))];
        let err = judge(&slot(), &runs, &journal, Duration::ZERO, None).unwrap_err();
        assert!(err.contains("never written"), "{err}");
    }

    #[test]
    fn a_wrong_value_written_fails() {
        let mut journal = journal();
        journal[2].value = json!("T5");
        let runs = [run(200, 260, json!({"party_size": 4}), Ok(json!("T4")))];
        let err = judge(&slot(), &runs, &journal, Duration::ZERO, None).unwrap_err();
        assert!(
            err.contains("a resolved slot gets its resolver's value"),
            "{err}"
        );
    }

    #[test]
    fn a_failed_run_is_retried_at_a_later_boundary() {
        let mut journal = journal();
        journal.remove(2);
        let failed = run(200, 260, json!({"party_size": 4}), Err("down".into()));
        // Not retried at 900 ms, well past the failure: a miss.
        let err = judge(
            &slot(),
            std::slice::from_ref(&failed),
            &journal,
            Duration::ZERO,
            None,
        )
        .unwrap_err();
        assert!(err.contains("entry 4"), "{err}");
        let retry = run(900, 950, json!({"party_size": 4}), Err("down".into()));
        assert_eq!(
            judge(
                &slot(),
                &[failed.clone(), retry],
                &journal,
                Duration::ZERO,
                None
            ),
            Ok(())
        );
        // A boundary right at the failure's end may go either way.
        journal[2] = entry(4, 260, ACTIVE, json!(["book"]));
        assert_eq!(
            judge(&slot(), &[failed], &journal, Duration::ZERO, None),
            Ok(())
        );
    }

    #[test]
    fn a_run_no_boundary_asked_for_fails() {
        let runs = [
            run(200, 260, json!({"party_size": 4}), Ok(json!("T4"))),
            run(300, 320, json!({"party_size": 4}), Ok(json!("T4"))),
        ];
        let err = judge(&slot(), &runs, &journal(), Duration::ZERO, None).unwrap_err();
        assert!(err.contains("no turn boundary made table due"), "{err}");
    }

    #[test]
    fn a_slot_due_as_the_session_ended_may_never_run() {
        let mut journal = vec![
            entry(1, 100, "party_size", json!(4)),
            entry(2, 200, ACTIVE, json!(["book"])),
        ];
        let ms = Duration::from_millis;
        assert_eq!(
            judge(&slot(), &[], &journal, Duration::ZERO, Some(ms(200))),
            Ok(())
        );
        // A session that ended later gave the boundary its time.
        let err = judge(&slot(), &[], &journal, Duration::ZERO, Some(ms(201))).unwrap_err();
        assert!(err.contains("due at journal entry 2"), "{err}");
        // Due at an earlier boundary too: that one is still a miss.
        journal.push(entry(3, 500, ACTIVE, json!(["book"])));
        let err = judge(&slot(), &[], &journal, Duration::ZERO, Some(ms(500))).unwrap_err();
        assert!(err.contains("due at journal entry 2"), "{err}");
    }

    #[test]
    fn a_slot_whose_stage_is_not_active_is_not_due() {
        let mut journal = journal();
        journal[1].value = json!(["party"]);
        journal[3].value = json!(["party"]);
        journal.remove(2);
        assert_eq!(judge(&slot(), &[], &journal, Duration::ZERO, None), Ok(()));
    }

    /// What happens next in a generated session: a turn boundary (with the
    /// slot's stage active or not), or a write of the input (`None`
    /// removes it), `dt` ms after the step before.
    #[derive(Clone, Debug)]
    enum Step {
        Boundary { active: bool, dt: u64 },
        Input { value: Option<u64>, dt: u64 },
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            (any::<bool>(), 0u64..400).prop_map(|(active, dt)| Step::Boundary { active, dt }),
            (proptest::option::of(1u64..4), 0u64..400)
                .prop_map(|(value, dt)| Step::Input { value, dt }),
        ]
    }

    /// A resolver run's timing: how long after the boundary it is first
    /// polled, how long it takes, whether it gives a value, and how long
    /// after it ends the lane takes its outcome in (under [`LAG`]).
    type Timing = (u64, u64, bool, u64);

    /// What a generated session left: its journal, its resolver runs,
    /// when its last step came, and the run that step started, if any.
    type Left = (Vec<StateMutation>, Vec<Resolution>, u64, Option<usize>);

    /// A session's control lane written again from the documented rules:
    /// the journal and resolver runs it leaves for `steps`, the session
    /// ending (no more flow entries, outcomes not yet taken in lost) after
    /// the last step.
    fn lane(steps: &[Step], timings: &[Timing]) -> Left {
        let mut journal: Vec<StateMutation> = Vec::new();
        let mut runs: Vec<Resolution> = Vec::new();
        let (mut now, mut input, mut slot_set) = (0u64, None::<u64>, false);
        let mut started_last = None;
        // The run in flight, and when the lane takes its outcome in.
        let mut flight: Option<(usize, u64)> = None;
        let write = |journal: &mut Vec<StateMutation>, ms: u64, key: &str, value: Value| {
            let seq = journal.len() as u64 + 1;
            journal.push(entry(seq, ms, key, value));
        };
        for step in steps {
            let dt = match step {
                Step::Boundary { dt, .. } | Step::Input { dt, .. } => *dt,
            };
            let next = now + dt;
            // An outcome due by then is taken in first, in its own time.
            if let Some((i, taken)) = flight
                && taken <= next
            {
                if let Some(Ok(value)) = runs[i].outcome.clone() {
                    write(&mut journal, taken, "table", value);
                    slot_set = true;
                }
                flight = None;
            }
            now = next;
            started_last = None;
            match step {
                Step::Input { value, .. } => {
                    input = *value;
                    let value = value.map_or(Value::Null, |v| json!(v));
                    write(&mut journal, now, "party_size", value);
                }
                Step::Boundary { active, .. } => {
                    let stages = if *active { json!(["book"]) } else { json!([]) };
                    write(&mut journal, now, ACTIVE, stages);
                    if let (true, false, Some(size), None) = (*active, slot_set, input, flight) {
                        let (poll, takes, ok, lag) = timings[runs.len() % timings.len()];
                        let (start, end) = (now + poll, now + poll + takes);
                        runs.push(Resolution {
                            slot: "table".into(),
                            args: json!({ "party_size": size }),
                            started: Duration::from_millis(start),
                            finished: Some(Duration::from_millis(end)),
                            outcome: Some(if ok {
                                Ok(json!(format!("T{size}")))
                            } else {
                                Err("down".into())
                            }),
                        });
                        flight = Some((runs.len() - 1, end + lag));
                        started_last = Some(runs.len() - 1);
                    }
                }
            }
        }
        (journal, runs, now, started_last)
    }

    /// One to seven resolver timings, used in turn.
    fn timings() -> impl Strategy<Value = Vec<Timing>> {
        proptest::collection::vec(
            (
                0u64..30,
                0u64..600,
                any::<bool>(),
                0u64..LAG.as_millis() as u64,
            ),
            1..8,
        )
    }

    proptest! {
        /// For every sequence of turn boundaries and input writes and every
        /// timing of the resolver's runs (first polled after its boundary,
        /// its outcome taken in within `LAG` of its end), a lane that
        /// follows the documented rules passes the model.
        #[test]
        fn a_correct_lane_passes_whatever_the_timing(
            steps in proptest::collection::vec(step(), 1..40),
            timings in timings(),
        ) {
            let (journal, runs, _, _) = lane(&steps, &timings);
            prop_assert_eq!(judge(&slot(), &runs, &journal, Duration::ZERO, None), Ok(()));
        }

        /// A session that ends for good at its last step's instant passes
        /// the model whether or not the run that step started was polled
        /// before the end.
        #[test]
        fn a_lane_ending_at_its_last_boundary_passes_whether_or_not_its_run_began(
            steps in proptest::collection::vec(step(), 1..40),
            timings in timings(),
            polled in any::<bool>(),
        ) {
            let (journal, mut runs, now, started_last) = lane(&steps, &timings);
            if let (Some(last), false) = (started_last, polled) {
                runs.remove(last);
            }
            let ended = Some(Duration::from_millis(now));
            prop_assert_eq!(judge(&slot(), &runs, &journal, Duration::ZERO, ended), Ok(()));
        }
    }
}
