//! Agent files' own invariants (`phases-follow-spec`,
//! `patterns-follow-spec`, `setup-as-declared`, `resolvers-follow-spec`)
//! and the clock signals' (`telemetry`) catch these broken runs: each test
//! takes a real passing run, breaks the one thing a failure site guards
//! (the sites no other test reached), and sees that site's message.

use livesim::session::LiveEvent;
use livesim::soak::{RunRecord, Soak, invariants};
use livesim::state::StateMutation;
use serde_json::json;

use super::{a_passing_run, agent, first_setup, phase_write, verdict};

/// The verdict of `invariant`, one of agent `name`'s own, on `record`.
fn own_verdict(name: &str, invariant: &str, record: &RunRecord) -> Result<(), String> {
    Soak::agent(&agent(name))
        .check_determinism_every(0)
        .invariants()
        .iter()
        .find(|i| i.name() == invariant)
        .unwrap_or_else(|| panic!("sim/{name}'s soak checks {invariant}"))
        .check(record)
}

/// The phases a record's journal wrote, in order (`?` for a value that
/// is no name).
fn phases_of(run: &RunRecord) -> Vec<&str> {
    run.journal
        .iter()
        .filter(|m| m.key == "session:phase")
        .map(|m| m.value.as_str().unwrap_or("?"))
        .collect()
}

/// A `session:phase` write whose value is a number, not a phase's name,
/// fails `phases-follow-spec` at that entry.
#[test]
fn a_phase_written_as_a_number_is_caught() {
    let good = a_passing_run("booking", 100, "a move out of greet", |r| {
        phases_of(r).len() >= 2
    });
    assert_eq!(
        own_verdict("booking", invariants::PHASES_FOLLOW_SPEC, &good),
        Ok(())
    );
    let mut broken = good.clone();
    let at = phase_write(&broken, 1);
    broken.journal[at].value = json!(2);
    let seq = broken.journal[at].seq;
    let err = own_verdict("booking", invariants::PHASES_FOLLOW_SPEC, &broken)
        .expect_err("the broken record fails");
    assert!(
        err.starts_with(&format!(
            "journal entry #{seq} writes session:phase = 2, not a phase name"
        )),
        "{err}"
    );
}

/// A move back from sized to greet, which no transition of sim/booking
/// takes, fails `phases-follow-spec` at that move.
#[test]
fn a_phase_moving_back_where_no_transition_leads_is_caught() {
    let good = a_passing_run(
        "booking",
        200,
        "a move to sized before anything is confirmed",
        |r| {
            phases_of(r).starts_with(&["greet", "sized"])
                && !r.journal[..phase_write(r, 1)]
                    .iter()
                    .any(|m| m.key == "confirmed")
        },
    );
    assert_eq!(
        own_verdict("booking", invariants::PHASES_FOLLOW_SPEC, &good),
        Ok(())
    );
    // Right after the move to sized, the phase goes back to greet: out of
    // sized, the file's transitions go to booked or confirmed only, and
    // nothing was confirmed yet.
    let mut broken = good.clone();
    let at = phase_write(&broken, 1);
    let mut back = broken.journal[at].clone();
    back.value = json!("greet");
    let seq = back.seq;
    broken.journal.insert(at + 1, back);
    let err = own_verdict("booking", invariants::PHASES_FOLLOW_SPEC, &broken)
        .expect_err("the broken record fails");
    assert!(
        err.starts_with(&format!(
            "journal entry #{seq} moves the phase from \"sized\" to \"greet\", but no \
             transition out of \"sized\" holds then"
        )),
        "{err}"
    );
}

/// A session that connected and wrote to its state but never wrote
/// `session:phase` fails `phases-follow-spec`.
#[test]
fn a_session_that_never_wrote_its_phase_is_caught() {
    let good = a_passing_run("booking", 100, "a connection", |r| {
        r.connect_error.is_none() && !r.journal.is_empty()
    });
    assert_eq!(
        own_verdict("booking", invariants::PHASES_FOLLOW_SPEC, &good),
        Ok(())
    );
    let mut broken = good.clone();
    broken.journal.retain(|m| m.key != "session:phase");
    broken
        .events
        .retain(|e| !matches!(e.event, LiveEvent::PhaseChanged { .. }));
    assert!(!broken.journal.is_empty(), "other keys are still written");
    let err = own_verdict("booking", invariants::PHASES_FOLLOW_SPEC, &broken)
        .expect_err("the broken record fails");
    assert!(
        err.starts_with("the session never wrote session:phase"),
        "{err}"
    );
}

/// A run that settled in confirmed, its session still running, with the
/// table booked at the end fails `phases-follow-spec`: confirmed → booked
/// held, so the session owed that move.
#[test]
fn a_run_resting_in_a_phase_whose_way_out_holds_is_caught() {
    let good = a_passing_run(
        "booking",
        200,
        "a settled run resting in confirmed, unbooked",
        |r| {
            !r.settling.ended
                && r.settling.settled_at.is_some()
                && phases_of(r).last() == Some(&"confirmed")
                && !r.journal.iter().any(|m| m.key == "booked")
        },
    );
    assert_eq!(
        own_verdict("booking", invariants::PHASES_FOLLOW_SPEC, &good),
        Ok(())
    );
    let mut broken = good.clone();
    let last = broken.journal.last().expect("a journal").clone();
    broken.journal.push(StateMutation {
        seq: last.seq + 1,
        key: "booked".into(),
        value: json!(true),
        removed: false,
        ..last
    });
    let err = own_verdict("booking", invariants::PHASES_FOLLOW_SPEC, &broken)
        .expect_err("the broken record fails");
    assert!(
        err.starts_with(
            "the run settled in the phase \"confirmed\", though its transition to \"booked\" \
             holds"
        ),
        "{err}"
    );
}

/// A tick's `session:time_in_phase_ms` written before the session wrote
/// any `session:phase` (it counted time in no phase) fails `telemetry`.
#[test]
fn a_time_in_phase_written_before_any_phase_is_caught() {
    let good = a_passing_run("booking", 100, "a tick's time in phase", |r| {
        r.journal
            .iter()
            .any(|m| m.key == "session:time_in_phase_ms")
    });
    assert_eq!(verdict(invariants::TELEMETRY, &good), Ok(()));
    let mut broken = good.clone();
    let tick = broken
        .journal
        .iter()
        .position(|m| m.key == "session:time_in_phase_ms")
        .expect("a time in phase");
    let written = broken.journal.remove(tick);
    let seq = written.seq;
    let first_phase = phase_write(&broken, 0);
    broken.journal.insert(first_phase, written);
    let err = verdict(invariants::TELEMETRY, &broken).expect_err("the broken record fails");
    assert!(
        err.starts_with(&format!(
            "journal #{seq}: session:time_in_phase_ms written before any session:phase"
        )),
        "{err}"
    );
}

/// A `goAway` countdown written when the run received no `goAway` at all
/// fails `telemetry`.
#[test]
fn a_countdown_with_no_go_away_before_it_is_caught() {
    const KEY: &str = "session:go_away_remaining_ms";
    let good = a_passing_run(
        "resumable",
        200,
        "a goAway counted down before the key is ever removed",
        |r| {
            r.journal
                .iter()
                .find(|m| m.key == KEY)
                .is_some_and(|m| !m.removed)
        },
    );
    assert_eq!(verdict(invariants::TELEMETRY, &good), Ok(()));
    let mut broken = good.clone();
    broken
        .events
        .retain(|e| !matches!(e.event, LiveEvent::GoAway { .. }));
    let first = broken
        .journal
        .iter()
        .find(|m| m.key == KEY)
        .expect("a countdown");
    let err = verdict(invariants::TELEMETRY, &broken).expect_err("the broken record fails");
    assert!(
        err.starts_with(&format!(
            "journal #{}: {KEY} {} at t=",
            first.seq, first.value
        )),
        "{err}"
    );
    assert!(err.ends_with(", with no goAway before it"), "{err}");
}

/// A pattern match in a run whose session never connected (its
/// `connected` event gone) fails `patterns-follow-spec`.
#[test]
fn a_pattern_matched_before_any_connection_is_caught() {
    let good = a_passing_run("checkout", 200, "one match, of basket-waiting", |r| {
        let matched: Vec<&str> = r
            .events
            .iter()
            .filter_map(|e| match &e.event {
                LiveEvent::PatternMatched { name } => Some(name.as_str()),
                _ => None,
            })
            .collect();
        matched == ["basket-waiting"]
    });
    assert_eq!(
        own_verdict("checkout", invariants::PATTERNS_FOLLOW_SPEC, &good),
        Ok(())
    );
    let mut broken = good.clone();
    broken
        .events
        .retain(|e| !matches!(e.event, LiveEvent::Connected { .. }));
    let err = own_verdict("checkout", invariants::PATTERNS_FOLLOW_SPEC, &broken)
        .expect_err("the broken record fails");
    assert!(err.starts_with("basket-waiting matched at t="), "{err}");
    assert!(err.ends_with(", before any connection"), "{err}");
}

/// A resolver run recorded for a slot sim/resumable's conversation does
/// not resolve fails `resolvers-follow-spec`.
#[test]
fn a_resolver_run_for_a_slot_nobody_resolves_is_caught() {
    let good = a_passing_run("resumable", 200, "a resolver run", |r| {
        !r.resolutions.is_empty()
    });
    assert_eq!(verdict(invariants::RESOLVERS_FOLLOW_SPEC, &good), Ok(()));
    assert!(
        !good.resolved_slots.iter().any(|s| s.slot == "overdraft"),
        "sim/resumable resolves no overdraft"
    );
    let mut broken = good.clone();
    broken.resolutions[0].slot = "overdraft".into();
    let err =
        verdict(invariants::RESOLVERS_FOLLOW_SPEC, &broken).expect_err("the broken record fails");
    assert!(
        err.starts_with(
            "a resolver ran for overdraft, which is not a resolved slot of the conversation"
        ),
        "{err}"
    );
}

/// A session that connected but whose sent messages hold no `setup`
/// fails `setup-as-declared`.
#[test]
fn a_session_that_connected_without_a_setup_is_caught() {
    let good = a_passing_run("payment", 50, "a connection", |r| r.connect_error.is_none());
    assert_eq!(
        own_verdict("payment", invariants::SETUP_AS_DECLARED, &good),
        Ok(())
    );
    // Every setup gone, with when and on which connection it was sent.
    let mut broken = good.clone();
    let setups: Vec<usize> = (0..broken.sent.len())
        .filter(|&i| broken.sent[i].get("setup").is_some())
        .collect();
    assert!(!setups.is_empty(), "the run sent a setup");
    assert_eq!(
        (broken.sent_at.len(), broken.sent_on.len()),
        (broken.sent.len(), broken.sent.len()),
        "each message sent has its time and connection"
    );
    for &i in setups.iter().rev() {
        broken.sent.remove(i);
        broken.sent_at.remove(i);
        broken.sent_on.remove(i);
    }
    let err = own_verdict("payment", invariants::SETUP_AS_DECLARED, &broken)
        .expect_err("the broken record fails");
    assert!(
        err.starts_with("the session connected without sending a setup"),
        "{err}"
    );
}

/// A first connection whose setup already resumes a handle (none was
/// given yet) fails `setup-as-declared`.
#[test]
fn a_first_setup_that_resumes_a_handle_is_caught() {
    let good = a_passing_run("resumable", 50, "a connection", |r| {
        r.connect_error.is_none()
    });
    assert_eq!(
        own_verdict("resumable", invariants::SETUP_AS_DECLARED, &good),
        Ok(())
    );
    let mut broken = good.clone();
    let resumption = first_setup(&mut broken)
        .get_mut("sessionResumption")
        .expect("sim/resumable's setup asks for resumption");
    assert!(resumption.get("handle").is_none(), "{resumption}");
    resumption["handle"] = json!("handle-from-nowhere");
    let err = own_verdict("resumable", invariants::SETUP_AS_DECLARED, &broken)
        .expect_err("the broken record fails");
    assert!(
        err.starts_with("setup #1: the first connection's setup resumes a handle"),
        "{err}"
    );
}

/// sim/support marks the user's activity by hand: a setup that leaves the
/// server's automatic activity detection on fails `setup-as-declared`.
#[test]
fn a_setup_that_forgets_manual_activity_is_caught() {
    assert!(
        agent("support").repertoire.manual_activity,
        "sim/support's file asks for manual activity"
    );
    let good = a_passing_run("support", 50, "a connection", |r| r.connect_error.is_none());
    assert_eq!(
        own_verdict("support", invariants::SETUP_AS_DECLARED, &good),
        Ok(())
    );
    let mut broken = good.clone();
    let setup = first_setup(&mut broken)
        .as_object_mut()
        .expect("a setup object");
    assert_eq!(
        setup["realtimeInputConfig"]["automaticActivityDetection"]["disabled"],
        json!(true)
    );
    setup.remove("realtimeInputConfig");
    let err = own_verdict("support", invariants::SETUP_AS_DECLARED, &broken)
        .expect_err("the broken record fails");
    assert!(
        err.starts_with(
            "setup #1: automatic activity detection off: false, but the agent file says true"
        ),
        "{err}"
    );
}
