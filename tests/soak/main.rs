//! The soak, tested through its public API: the swarm of faults each
//! seed draws, the script generator, agent files and their errors, the
//! invariants catching broken runs, the engine (shards, jobs, budgets,
//! JUnit), every `sim/` agent soaked clean, sessions that resume, a Rust
//! user's own agent (its corpus and replay lines: `rust_corpus.rs`; its
//! settings' slips: `mistakes.rs`), shrinking, and the seeds corpus
//! (every entry under `seeds/` replayed, and the real bugs kept there:
//! `past_bugs.rs`).
//!
//! Seed counts scale with `LIVESIM_SEEDS` for nightly runs.

mod agent_files;
mod agents;
mod caught_agent_files;
mod caught_ends;
mod caught_logs;
mod connection_state;
mod corpus;
mod digest;
mod engine;
mod explore;
mod final_state;
mod generator;
mod go_away_countdown;
mod handle_lag;
mod hang_up;
mod hangs;
mod id_restart;
mod import;
mod import_journal;
mod invariants;
mod latency;
mod left_out;
mod left_to_finish;
mod logs;
mod mistakes;
mod misuse;
mod move_moment;
mod network;
mod orderings;
mod passk;
mod past_bugs;
mod phases;
mod policy;
mod refused_move;
mod remaining_budget;
mod resolvers;
mod resumable;
mod rust_corpus;
mod setup;
mod shrink;
mod simulated_user;
mod slow_tools;
mod spoken_while_reconnecting;
mod swarm;
mod temporal;
mod tick_keys;
mod typed_into_fresh;
mod typed_lines;
mod user_agent;
mod watchers;
mod your_agent;

// Scratch folders removed when each test ends, shared with the other test
// binaries rather than copied.
#[path = "../common/scratch.rs"]
mod scratch;

use livesim::executor::SeedPlan;
use livesim::soak::{Agent, RunRecord};

/// The seeds a test runs: `LIVESIM_SEEDS` when set, else `0..default`.
pub fn seeds(default: u64) -> std::ops::Range<u64> {
    match SeedPlan::from_env(SeedPlan::Range(0..default)).expect("LIVESIM_SEEDS") {
        SeedPlan::Range(range) => range,
        SeedPlan::One(seed) => seed.value()..seed.value() + 1,
    }
}

/// An agent of `sim/`.
pub fn agent(name: &str) -> Agent {
    Agent::load(format!("sim/{name}")).unwrap_or_else(|e| panic!("{e}"))
}

/// The first passing run of agent `name`, in seeds under `below`, that
/// `wanted` picks (`what` says what that is, for the panic when none is).
pub fn a_passing_run(
    name: &str,
    below: u64,
    what: &str,
    wanted: impl Fn(&RunRecord) -> bool,
) -> RunRecord {
    let soak = livesim::soak::Soak::agent(&agent(name)).check_determinism_every(0);
    (0..below)
        .find_map(|s| {
            let run = soak.run_seed(livesim::Seed::new(s));
            run.record.filter(|r| run.failures.is_empty() && wanted(r))
        })
        .unwrap_or_else(|| panic!("no passing {name} seed under {below} has {what}"))
}

/// The index in `run`'s journal of its `n`th `session:phase` write.
pub fn phase_write(run: &RunRecord, n: usize) -> usize {
    run.journal
        .iter()
        .enumerate()
        .filter(|(_, m)| m.key == "session:phase")
        .nth(n)
        .map(|(i, _)| i)
        .expect("the run wrote that many phases")
}

/// The first setup `record`'s session sent, to edit.
pub fn first_setup(record: &mut RunRecord) -> &mut serde_json::Value {
    record
        .sent
        .iter_mut()
        .find_map(|m| m.get_mut("setup"))
        .expect("a setup")
}

/// The verdict of built-in invariant `name` on `record`.
pub fn verdict(name: &str, record: &RunRecord) -> Result<(), String> {
    livesim::soak::invariants::builtin()
        .into_iter()
        .find(|i| i.name() == name)
        .unwrap_or_else(|| panic!("no invariant {name}"))
        .check(record)
}

/// Each reconnect that ended in a `resumed` event with `fresh` as given,
/// as (its first `reconnecting`, that `resumed`), from the events alone.
pub fn reconnect_windows(
    record: &RunRecord,
    fresh: bool,
) -> Vec<(std::time::Duration, std::time::Duration)> {
    let mut windows = Vec::new();
    let mut began = None;
    for timed in &record.events {
        match timed.event {
            livesim::session::LiveEvent::Reconnecting { .. } => {
                began.get_or_insert(timed.at);
            }
            livesim::session::LiveEvent::Resumed { fresh: f, .. } => {
                if let Some(from) = began.take()
                    && f == fresh
                {
                    windows.push((from, timed.at));
                }
            }
            _ => {}
        }
    }
    windows
}
