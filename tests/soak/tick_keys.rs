//! Every tick writes each of its keys: a tick whose `remaining_budget_ms`
//! or `go_away_remaining_ms` went missing fails `telemetry`, though every
//! value left is right.

use livesim::soak::{RunRecord, invariants};

use super::{a_passing_run, verdict};

/// Where `key` was written, in journal order.
fn writes(record: &RunRecord, key: &str) -> Vec<usize> {
    (0..record.journal.len())
        .filter(|&i| record.journal[i].key == key && !record.journal[i].removed)
        .collect()
}

#[test]
fn a_tick_without_its_remaining_budget_is_caught() {
    let good = a_passing_run("weather", 100, "two remaining-budget writes", |r| {
        writes(r, "session:remaining_budget_ms").len() >= 2
    });
    assert_eq!(verdict(invariants::TELEMETRY, &good), Ok(()));
    let mut skipped = good.clone();
    skipped
        .journal
        .remove(writes(&good, "session:remaining_budget_ms")[1]);
    let err = verdict(invariants::TELEMETRY, &skipped).unwrap_err();
    assert!(
        err.contains("wrote session:remaining_budget_ms 0 time(s) before the next tick"),
        "{err}"
    );
}

#[test]
fn a_tick_without_its_go_away_countdown_is_caught() {
    // (Notices that give their time left: one that gives none sets no
    // deadline to count down.)
    let good = a_passing_run("resumable", 100, "three countdowns in memory", |r| {
        r.network.is_none()
            && writes(r, "session:go_away_remaining_ms").len() >= 3
            && !r.events.iter().any(|t| {
                matches!(
                    t.event,
                    livesim::session::LiveEvent::GoAway { time_left: None }
                )
            })
    });
    assert_eq!(verdict(invariants::TELEMETRY, &good), Ok(()));
    // Each countdown in turn taken out: those written while a deadline
    // stood well inside the tick are owed.
    let caught = writes(&good, "session:go_away_remaining_ms")
        .into_iter()
        .filter(|&i| {
            let mut skipped = good.clone();
            skipped.journal.remove(i);
            verdict(invariants::TELEMETRY, &skipped).is_err_and(|err| {
                err.contains("wrote session:go_away_remaining_ms 0 time(s) before the next tick")
            })
        })
        .count();
    assert!(caught >= 1, "no missing countdown was caught");
}
