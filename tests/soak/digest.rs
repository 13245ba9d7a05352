//! The soak's summary over fixed seeds holds still: a change meant only
//! to make livesim faster (or tidier) leaves every count, every goal and
//! every failure of `livesim sim soak` over the same seeds as it was. The
//! digests below are what `livesim sim soak --seeds 0..N --no-save` prints
//! on its `digest:` line. A change that alters what the soak does on
//! purpose (a new fault, a new goal, a fixed oracle) updates them, and
//! its commit message says why.

use std::ops::Range;

use livesim::soak::{Agent, Checks, Shard, Soak, soak_all};

/// The digest of the summary of every `sim/` agent over `seeds`, as
/// `livesim sim soak --seeds A..B --no-save` soaks them (default checks,
/// exploring, no kept cases).
fn digest(seeds: Range<u64>) -> String {
    // Every agent of `sim/`, in the order `livesim sim soak` takes them.
    let agents = Agent::load_all("sim").unwrap_or_else(|e| panic!("{e}"));
    let soaks: Vec<Soak> = agents
        .iter()
        .map(|agent| {
            Soak::agent(agent).check_determinism_every(Checks::default().determinism_every)
        })
        .collect();
    let summary = soak_all(
        &soaks,
        seeds,
        Shard::WHOLE,
        2,
        None,
        Checks::default(),
        &|_| {},
    );
    assert!(summary.passed(), "{summary}");
    summary.digest()
}

/// Seeds 0..200 give the summary they gave when this digest was taken.
#[test]
fn the_soak_of_seeds_0_to_200_says_what_it_said() {
    assert_eq!(digest(0..200), "8fbe301b386aaad2");
}

/// Seeds 0..2000 give the summary they gave when this digest was taken
/// (the nightly job runs it, in release).
#[test]
#[ignore = "17,000 sessions: the nightly job runs it (cargo test --release --test soak -- --ignored digest)"]
fn the_soak_of_seeds_0_to_2000_says_what_it_said() {
    assert_eq!(digest(0..2000), "877e04f3675db81a");
}
