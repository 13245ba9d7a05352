//! The soak as the judge of a mutation run: `cargo mutants` (see
//! `.cargo/mutants.toml`) changes one thing at a time in `src/session/`
//! and `src/flow/` and counts a mutant killed when this soak fails.
//!
//! It is ignored in `cargo test` (the suites under `tests/soak` run the
//! same agents); `cargo test --test mutants -- --ignored` runs it, and the
//! nightly workflow's mutation job runs it once per mutant. Seeds scale
//! with `LIVESIM_SEEDS` (default 0..150 per agent).

use livesim::executor::SeedPlan;
use livesim::soak::{Agent, Soak};

/// Every agent in `sim/` passes every invariant over the seeds: a mutant
/// of the session or the flow that a user could notice breaks one.
#[test]
#[ignore = "the judge of a mutation run: cargo mutants runs it"]
fn every_agent_in_sim_soaks_clean() {
    let seeds = match SeedPlan::from_env(SeedPlan::Range(0..150)).expect("LIVESIM_SEEDS") {
        SeedPlan::Range(range) => range,
        SeedPlan::One(seed) => seed.value()..seed.value() + 1,
    };
    let mut broken = Vec::new();
    for agent in Agent::load_all("sim").unwrap_or_else(|e| panic!("{e}")) {
        let soak = Soak::agent(&agent)
            .seed_range(seeds.clone())
            .stop_at_first_failure()
            .keep(false);
        if let Err(summary) = soak.try_run() {
            let first = summary.failures().next().map(|f| f.brief());
            broken.push(first.unwrap_or_else(|| summary.to_string()));
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}
