//! A server whose resumption handle lags behind what it received (the
//! `handle-lag` fault): its `lastConsumedClientMessageIndex` leaves out the
//! latest messages, and a session that resumes transparently must replay
//! them as well as what came after the handle.

use std::collections::BTreeMap;

use livesim::Seed;
use livesim::soak::{FaultKind, Soak};
use livesim::testing::{Action, ResumptionUpdate};

use super::{agent, seeds};

/// How many of a script's handles lag behind.
fn lagging(actions: &[Action]) -> usize {
    actions
        .iter()
        .filter(|a| {
            matches!(
                a,
                Action::ResumptionUpdate(ResumptionUpdate { behind: 1.., .. })
            )
        })
        .count()
}

/// With `handle-lag` at full rate, a transparent session's scripts carry
/// lagging handles, by one or two messages; with it off, none do; and a
/// session that resumes without replaying never gets one, whatever its
/// tuning (an index means nothing to it).
#[test]
fn handles_lag_only_where_the_session_replays() {
    let tuned = |name: &str, rate: f64| {
        let agent = agent(name);
        (0..60)
            .map(|s| {
                let case = Soak::agent(&agent)
                    .fault(FaultKind::HandleLag, rate)
                    .case(Seed::new(s));
                for action in case.script.actions() {
                    if let Action::ResumptionUpdate(update) = action {
                        assert!(update.behind <= 2, "seed {s}: {update:?}");
                        assert!(update.behind == 0 || update.transparent, "seed {s}");
                    }
                }
                lagging(case.script.actions())
            })
            .sum::<usize>()
    };
    assert!(tuned("resumable", 1.0) >= 30);
    assert_eq!(tuned("resumable", 0.0), 0);
    assert_eq!(tuned("pharmacy", 1.0), 0);
}

/// Sessions that resume lagging handles pass every check (the server
/// checks each replay, and `client-messages-once` reads the index the
/// server sent), and replay in more runs than with the fault off.
/// `LIVESIM_SEEDS` widens it.
#[test]
fn a_session_resuming_lagging_handles_replays_what_they_leave_out() {
    let replays = |rate: f64| {
        let summary = Soak::agent(&agent("resumable"))
            .fault(FaultKind::HandleLag, rate)
            .check_determinism_every(0)
            .keep(false)
            .seed_range(seeds(150))
            .try_run()
            .unwrap_or_else(|summary| panic!("{summary}"));
        let goals: BTreeMap<&str, u64> = summary.agents[0]
            .goals
            .iter()
            .map(|(goal, hits)| (goal.as_str(), *hits))
            .collect();
        goals["transparent-replay"]
    };
    let (with, without) = (replays(1.0), replays(0.0));
    assert!(
        with > without,
        "replays: {with} with the fault, {without} without"
    );
}
