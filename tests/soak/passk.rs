//! pass^k: one fixed conversation played under many seeds, each drawing
//! its own interleavings and tool outcomes.

use livesim::Seed;
use livesim::soak::{ExecutionOutcome, Soak};

use super::agent;

/// A soak of `sim/payment` that also fails any run in which a tool
/// failed: its tools fail at seeded rates, so whether a fixed
/// conversation passes depends on the seed.
fn strict() -> Soak {
    Soak::agent(&agent("payment"))
        .invariant("no-tool-failed", |run| {
            match run
                .executions
                .iter()
                .find(|e| matches!(e.outcome, ExecutionOutcome::Failed(_)))
            {
                Some(e) => Err(format!("{} failed", e.tool)),
                None => Ok(()),
            }
        })
        .check_determinism_every(0)
}

/// pass^1 is the share of seeds whose trial passes; each failing seed,
/// run alone, fails again with the invariants listed, and each other
/// seed passes alone: the trials are the seeds, nothing else.
#[test]
fn pass_k_counts_the_seeds_a_fixed_conversation_passes_on() {
    let soak = strict();
    let trials = 0..40;
    let (case, passk) = (0..50)
        .map(|s| soak.case(Seed::new(s)))
        .map(|case| {
            let passk = soak.pass_k(&case, trials.clone(), 3);
            (case, passk)
        })
        .find(|(_, p)| p.passed > 3 && p.passed < p.trials)
        .expect("a payment conversation whose tools fail on some seeds only");
    assert_eq!(passk.trials, 40);
    assert_eq!(passk.pass_1(), passk.passed as f64 / 40.0);
    assert!(passk.pass_k() < passk.pass_1(), "{passk}");
    let failing: Vec<Seed> = passk.failing.iter().map(|(s, _)| *s).collect();
    for seed in trials.map(Seed::new) {
        let run = soak.run_case(&Soak::trial(&case, seed));
        let broken: Vec<String> = run.failures.iter().map(|f| f.invariant.clone()).collect();
        match passk.failing.iter().find(|(s, _)| *s == seed) {
            Some((_, listed)) => assert_eq!(&broken, listed, "seed {seed}"),
            None => assert!(
                broken.is_empty(),
                "seed {seed} passed in pass_k: {broken:?}"
            ),
        }
    }
    assert_eq!(failing.len() as u64, passk.trials - passk.passed);
}

/// A conversation that passes everywhere has pass^k 1; with fewer trials
/// than k, pass^k is not a number.
#[test]
fn a_steady_conversation_passes_every_seed() {
    let soak = Soak::agent(&agent("weather")).check_determinism_every(0);
    let case = soak.case(Seed::new(4));
    let passk = soak.pass_k(&case, 0..16, 8);
    assert_eq!(
        (passk.passed, passk.pass_k()),
        (16, 1.0),
        "{:?}",
        passk.failing
    );
    assert!(soak.pass_k(&case, 0..4, 8).pass_k().is_nan());
}
