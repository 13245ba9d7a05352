//! A server that numbers its calls from `call-1` again on a new connection
//! (the `id-restart` fault): the generator restarts the count where the
//! fault fires, and the checks tell the new connection's `call-1` from the
//! old one's, so a session that does too passes.

use std::collections::BTreeMap;

use livesim::Seed;
use livesim::soak::{FaultKind, Soak};
use livesim::testing::Action;

use super::{agent, seeds};

/// The call ids of each connection of a script, in order: a `reconnect`
/// action starts the next connection.
fn ids_by_connection(actions: &[Action]) -> Vec<Vec<String>> {
    let mut connections = vec![Vec::new()];
    for action in actions {
        match action {
            Action::Reconnect(_) => connections.push(Vec::new()),
            Action::Call(call) => connections.last_mut().unwrap().push(call.id.clone()),
            Action::CallMany(calls) => connections
                .last_mut()
                .unwrap()
                .extend(calls.iter().map(|c| c.id.clone())),
            _ => {}
        }
    }
    connections.retain(|ids| !ids.is_empty());
    connections
}

/// With `id-restart` firing on every new connection, each connection's
/// calls are numbered from `call-1`; with it off, no id is issued on two
/// connections. (Seeds whose conversation reconnects, among the first 60.)
#[test]
fn a_new_connection_numbers_its_calls_from_one_when_the_fault_fires() {
    let resumable = agent("resumable");
    let tuned = |rate: f64| Soak::agent(&resumable).fault(FaultKind::IdRestart, rate);
    let (restarting, counting) = (tuned(1.0), tuned(0.0));
    let mut restarted = 0;
    for seed in (0..60).map(Seed::new) {
        let connections = ids_by_connection(restarting.case(seed).script.actions());
        for ids in connections.iter().skip(1) {
            assert_eq!(ids[0], "call-1", "seed {seed}: {connections:?}");
            restarted += 1;
        }
        let connections = ids_by_connection(counting.case(seed).script.actions());
        let mut first_seen: BTreeMap<&str, usize> = BTreeMap::new();
        for (n, ids) in connections.iter().enumerate() {
            for id in ids {
                let first = *first_seen.entry(id).or_insert(n);
                assert_eq!(
                    first, n,
                    "seed {seed}: {id} on two connections: {connections:?}"
                );
            }
        }
    }
    assert!(restarted >= 10, "only {restarted} connections restarted");
}

/// Sessions whose server restarts its ids on every new connection pass
/// every check: the checks key a call by its connection and its id, and
/// the session answers each connection's `call-1` as the new call it is
/// (the `id-reused` goal). `LIVESIM_SEEDS` widens it.
#[test]
fn a_session_whose_server_restarts_its_ids_passes_and_answers_the_new_calls() {
    let summary = Soak::agent(&agent("resumable"))
        .fault(FaultKind::IdRestart, 1.0)
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
    assert!(goals["id-reused"] > 0, "{goals:?}");
}
