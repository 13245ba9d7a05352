//! The governance invariants under generated orderings: scripts built
//! from structured steps (calls waited for or not, parallel calls,
//! cancellations, pauses that let tools finish in between, model text cut
//! into frames at arbitrary points, interruptions, go-aways, turn ends, in
//! any order) played against the governed `payment` agent of `sim/`,
//! through the same public strategies a user's own property uses
//! (`livesim::soak::fuzz`, `Soak::run_steps`).
//!
//! The seed is an input proptest never shrinks (`no_shrink`): it decides
//! tool latencies, failures and lane orders, so a smaller seed is not a
//! simpler case. The steps shrink. Runs use a fixed proptest seed unless
//! `PROPTEST_RNG_SEED` is set; `PROPTEST_CASES` sizes them (64 cases per
//! property by default; nightly runs 2,000). Failures are kept in
//! `tests/proptest-regressions/orderings.txt` and run first next time.

use livesim::Seed;
use livesim::soak::{Agent, SeedRun, Soak, Step, fuzz, invariants};
use proptest::prelude::*;
use proptest::test_runner::RngSeed;

use super::agent;

fn config() -> ProptestConfig {
    let mut config = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = 64;
    }
    if config.rng_seed == RngSeed::Random {
        config.rng_seed = RngSeed::Fixed(0x0dde_5eed);
    }
    config
}

/// The payment agent's tools, by index: `verify_identity` (allowed
/// first), `get_balance` and `take_payment` (refused until verified).
const TOOLS: usize = 3;

/// Plays the steps against the governed payment agent under `seed`.
fn play(payment: &Agent, seed: u64, steps: &[Step]) -> SeedRun {
    Soak::agent(payment)
        .check_determinism_every(0)
        .run_steps(Seed::new(seed), steps)
}

fn payment() -> Agent {
    agent("payment")
}

proptest! {
    #![proptest_config(config())]

    /// A call the flow refuses never runs and is answered `{"error":
    /// reason}`, whatever the order of completions, cancellations,
    /// interruptions and go-aways around it.
    #[test]
    fn refused_calls_never_run(
        seed in any::<u64>().no_shrink(),
        steps in fuzz::steps(TOOLS, 1..14),
    ) {
        let run = play(&payment(), seed, &steps);
        prop_assert_eq!(run.verdict_of(invariants::REFUSED_NEVER_RUNS), Ok(()));
    }

    /// Every call the script did not cancel is answered exactly once, and
    /// none is answered after the session handled its cancellation.
    #[test]
    fn every_call_is_answered_once(
        seed in any::<u64>().no_shrink(),
        steps in fuzz::steps(TOOLS, 1..14),
    ) {
        let run = play(&payment(), seed, &steps);
        prop_assert_eq!(run.verdict_of(invariants::ANSWERED_ONCE), Ok(()));
    }

    /// The journal's scenario replays clean against the spec that governed
    /// the session: every decision it recorded, the spec makes again.
    #[test]
    fn the_journal_replays_clean(
        seed in any::<u64>().no_shrink(),
        steps in fuzz::steps(TOOLS, 1..14),
    ) {
        let run = play(&payment(), seed, &steps);
        prop_assert_eq!(run.verdict_of(invariants::JOURNAL_REPLAYS_CLEAN), Ok(()));
    }

    /// Journal sequence numbers strictly increase and its timestamps never
    /// go back.
    #[test]
    fn the_journal_is_ordered(
        seed in any::<u64>().no_shrink(),
        steps in fuzz::steps(TOOLS, 1..14),
    ) {
        let run = play(&payment(), seed, &steps);
        prop_assert_eq!(run.verdict_of(invariants::JOURNAL_ORDERED), Ok(()));
    }
}

/// The generator reaches what the properties are about: refusals, runs
/// cut short by cancellations, answers, interruptions (a property that
/// never meets a refusal proves nothing about refusals).
#[test]
fn the_steps_reach_refusals_cancellations_and_interruptions() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let payment = payment();
    let mut runner = TestRunner::new(config());
    let (mut refused, mut cancelled, mut interrupted) = (0, 0, 0);
    for seed in 0..40 {
        let steps = fuzz::steps(TOOLS, 1..14)
            .new_tree(&mut runner)
            .unwrap()
            .current();
        let run = play(&payment, seed, &steps);
        let record = run.record.expect("the run finished");
        refused += usize::from(record.delivered().any(|e| e.kind() == "tool_denied"));
        cancelled += usize::from(!record.calls.cancelled.is_empty());
        interrupted += usize::from(record.delivered().any(|e| e.kind() == "interrupted"));
    }
    assert!(refused >= 10, "{refused} of 40 runs refused a call");
    assert!(cancelled >= 10, "{cancelled} of 40 runs cancelled a call");
    assert!(
        interrupted >= 5,
        "{interrupted} of 40 runs were interrupted"
    );
}
