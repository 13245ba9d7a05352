//! `patterns-follow-spec`: an agent file's `"temporal"` patterns are given
//! to the session, and the soak checks its `pattern_matched` events
//! against a model of their timing over the state journal. The check holds
//! on real runs of `sim/checkout` and fails, saying what was wrong, on the
//! same record with a match renamed, early, repeated, missing or at a
//! moment its condition did not hold, or with a break written in before it.

use std::time::Duration;

use livesim::Seed;
use livesim::clock::VIRTUAL_EPOCH;
use livesim::flow::Guard;
use livesim::session::LiveEvent;
use livesim::soak::{RunRecord, Soak, Sustained};
use livesim::state::StateMutation;

use super::{agent, seeds};

fn patterns() -> Vec<Sustained> {
    agent("checkout").temporal
}

/// The times at which `name` matched in a run.
fn matches(run: &RunRecord, name: &str) -> Vec<Duration> {
    run.events
        .iter()
        .filter(|e| matches!(&e.event, LiveEvent::PatternMatched { name: n } if n == name))
        .map(|e| e.at)
        .collect()
}

/// When a journal entry was written, on the run's clock.
fn at(entry: &StateMutation) -> Duration {
    entry.timestamp - VIRTUAL_EPOCH
}

/// A checkout run that passed, in which basket-waiting matched once.
fn waiting_run() -> RunRecord {
    let soak = Soak::agent(&agent("checkout")).check_determinism_every(0);
    (0..300)
        .find_map(|s| {
            let run = soak.run_seed(Seed::new(s));
            let record = run.record?;
            (run.failures.is_empty() && matches(&record, "basket-waiting").len() == 1)
                .then_some(record)
        })
        .expect("a checkout seed under 300 leaves a basket waiting once")
}

#[test]
fn sim_checkout_declares_two_patterns() {
    let basket = Guard::All(vec![
        Guard::Exists("basket".into()),
        Guard::Not(Box::new(Guard::IsTrue("ordered".into()))),
    ]);
    assert_eq!(
        patterns(),
        [
            Sustained {
                name: "basket-waiting".into(),
                when: basket,
                lasting: Duration::from_secs(3),
            },
            Sustained {
                name: "no-address-yet".into(),
                when: Guard::Not(Box::new(Guard::Exists("address".into()))),
                lasting: Duration::from_secs(8),
            },
        ]
    );
}

/// Every checkout run passes `patterns-follow-spec`, both patterns match
/// in some runs, and, read straight from the record: no-address-yet
/// matches at most once, 8 s after the connection at the earliest and
/// before any address is written (no checkout tool removes one).
#[test]
fn checkout_runs_match_both_patterns_as_the_model_says() {
    let soak = Soak::agent(&agent("checkout")).check_determinism_every(0);
    let (mut waiting, mut unaddressed) = (0, 0);
    for s in seeds(200) {
        let run = soak.run_seed(Seed::new(s));
        let Some(record) = run.record else { continue };
        assert_eq!(
            Sustained::check(&patterns(), &record),
            Ok(()),
            "seed {s:#x}"
        );
        waiting += matches(&record, "basket-waiting").len();
        let found = matches(&record, "no-address-yet");
        unaddressed += found.len();
        assert!(found.len() <= 1, "seed {s:#x}: {found:?}");
        let connected = record
            .events
            .iter()
            .find(|e| e.event.kind() == "connected")
            .map(|e| e.at);
        let addressed = record.journal.iter().find(|m| m.key == "address").map(at);
        for t in found {
            assert!(connected.is_some_and(|c| t >= c + Duration::from_secs(8)));
            assert!(addressed.is_none_or(|a| t <= a), "seed {s:#x}");
        }
    }
    assert!(waiting > 0 && unaddressed > 0, "{waiting} {unaddressed}");
}

#[test]
fn a_match_renamed_early_repeated_or_while_the_condition_failed_is_named() {
    let good = waiting_run();
    let patterns = patterns();
    assert_eq!(Sustained::check(&patterns, &good), Ok(()));
    let index = good
        .events
        .iter()
        .position(
            |e| matches!(&e.event, LiveEvent::PatternMatched { name } if name == "basket-waiting"),
        )
        .unwrap();
    let t = good.events[index].at;

    let mut renamed = good.clone();
    renamed.events[index].event = LiveEvent::PatternMatched {
        name: "basket-wating".into(),
    };
    let err = Sustained::check(&patterns, &renamed).unwrap_err();
    assert!(
        err.starts_with("a pattern named \"basket-wating\" matched at t="),
        "{err}"
    );
    assert!(
        err.ends_with("but the agent declares no such pattern"),
        "{err}"
    );

    let mut twice = good.clone();
    let mut again = twice.events[index].clone();
    again.at = t + Duration::from_millis(10);
    twice.events.insert(index + 1, again);
    let err = Sustained::check(&patterns, &twice).unwrap_err();
    assert!(
        err.contains("held throughout: a pattern fires once per stretch"),
        "{err}"
    );

    // Reported before the session connected (a match decided then would
    // not have waited its duration).
    let mut unconnected = good.clone();
    let connected = unconnected
        .events
        .iter_mut()
        .find(|e| e.event.kind() == "connected")
        .unwrap();
    connected.at = t + Duration::from_secs(1);
    let err = Sustained::check(&patterns, &unconnected).unwrap_err();
    assert!(
        err.contains("0.000s after the session connected (at t="),
        "{err}"
    );
    assert!(err.ends_with("its condition must hold for 3.000s"), "{err}");

    // Before any basket: the condition did not hold then.
    let mut early = good.clone();
    early.events[index].at = Duration::ZERO;
    let err = Sustained::check(&patterns, &early).unwrap_err();
    assert!(
        err.starts_with("basket-waiting matched at t=0.000s, but"),
        "{err}"
    );
}

#[test]
fn a_missing_match_or_a_break_the_session_saw_fails() {
    let good = waiting_run();
    let patterns = patterns();

    let mut missing = good.clone();
    missing.events.retain(
        |e| !matches!(&e.event, LiveEvent::PatternMatched { name } if name == "basket-waiting"),
    );
    let err = Sustained::check(&patterns, &missing).unwrap_err();
    assert!(
        err.starts_with("basket-waiting's condition (all(exists(basket), not(is_true(ordered))))"),
        "{err}"
    );
    assert!(err.contains("but the pattern did not match by t="), "{err}");

    // The basket removed for a second and put back half a second before
    // the match: ticks came in between, so the session saw the break and
    // the stretch it counted was too short.
    let t = matches(&good, "basket-waiting")[0];
    let (gone, back) = (
        t - Duration::from_millis(1500),
        t - Duration::from_millis(500),
    );
    let basket = good
        .journal
        .iter()
        .rev()
        .find(|m| m.key == "basket" && at(m) < back)
        .unwrap()
        .clone();
    let mut broken = good.clone();
    broken
        .journal
        .retain(|m| !(m.key == "basket" && at(m) >= gone && at(m) <= back));
    let mut removal = basket.clone();
    removal.removed = true;
    removal.value = serde_json::Value::Null;
    removal.timestamp = VIRTUAL_EPOCH + gone;
    let mut restore = basket;
    restore.timestamp = VIRTUAL_EPOCH + back;
    for entry in [removal, restore] {
        let place = broken
            .journal
            .iter()
            .position(|m| m.timestamp > entry.timestamp)
            .unwrap_or(broken.journal.len());
        broken.journal.insert(place, entry);
    }
    let err = Sustained::check(&patterns, &broken).unwrap_err();
    assert!(err.contains("failed from t="), "{err}");
    assert!(
        err.contains("saw it), so it had held for 0.500s only, less than 3.000s"),
        "{err}"
    );
}
