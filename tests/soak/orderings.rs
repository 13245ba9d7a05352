//! The governance invariants under generated orderings: scripts built
//! from structured steps (calls waited for or not, parallel calls,
//! cancellations, pauses that let tools finish in between, model text cut
//! into frames at arbitrary points, interruptions, go-aways, turn ends, in
//! any order) played against the governed `payment` agent of `sim/`.
//!
//! The seed is an input proptest never shrinks (`no_shrink`): it decides
//! tool latencies, failures and lane orders, so a smaller seed is not a
//! simpler case. The steps shrink. Runs use a fixed proptest seed unless
//! `PROPTEST_RNG_SEED` is set; `PROPTEST_CASES` sizes them (64 cases per
//! property by default; nightly runs 2,000). Failures are kept in
//! `tests/proptest-regressions/orderings.txt` and run first next time.

use livesim::Seed;
use livesim::soak::{Agent, SeedRun, Soak, invariants};
use livesim::testing::{Action, Call, ScriptedServer};
use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use serde_json::{Value, json};

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

/// The payment agent's tools: `verify_identity` (allowed first),
/// `get_balance` and `take_payment` (refused until verified).
const TOOLS: [&str; 3] = ["verify_identity", "get_balance", "take_payment"];

fn args(tool: usize) -> Value {
    match tool {
        0 => json!({"name": "Ana Silva", "dob": "1990-05-04"}),
        1 => json!({}),
        _ => json!({"amount": 42.5, "card_last4": "4242"}),
    }
}

/// One step of a generated conversation.
#[derive(Clone, Debug)]
enum Step {
    /// A call to `TOOLS[tool]`, the script waiting for its answer or not.
    Call {
        tool: usize,
        wait: bool,
    },
    /// Several calls in one `toolCall` message.
    Parallel(Vec<usize>),
    /// A cancellation of the call issued `n`-th (modulo the calls so far).
    Cancel(usize),
    /// Silence, while tools run and finish.
    Pause(u64),
    /// Model text, cut into frames at these character offsets.
    Text {
        text: String,
        cuts: Vec<usize>,
    },
    Interrupt,
    GoAway,
    TurnComplete,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (0..TOOLS.len(), any::<bool>()).prop_map(|(tool, wait)| Step::Call { tool, wait }),
        1 => prop::collection::vec(0..TOOLS.len(), 2..4).prop_map(Step::Parallel),
        2 => (0usize..8).prop_map(Step::Cancel),
        2 => (1u64..600).prop_map(Step::Pause),
        2 => ("[a-zé€ ]{1,24}", prop::collection::vec(0usize..24, 0..4))
            .prop_map(|(text, cuts)| Step::Text { text, cuts }),
        1 => Just(Step::Interrupt),
        1 => Just(Step::GoAway),
        1 => Just(Step::TurnComplete),
    ]
}

fn send(message: Value) -> Action {
    Action::Send(message)
}

/// The script the steps say, ending with the model's turn complete.
fn script(steps: &[Step]) -> ScriptedServer {
    let mut script = ScriptedServer::new().named("orderings");
    let mut issued: Vec<String> = Vec::new();
    let call = |tool: usize, wait: bool, issued: &mut Vec<String>| {
        let id = format!("call-{}", issued.len() + 1);
        issued.push(id.clone());
        Call {
            id,
            name: TOOLS[tool].to_string(),
            args: args(tool),
            wait,
        }
    };
    for step in steps {
        let action = match step {
            Step::Call { tool, wait } => Action::Call(call(*tool, *wait, &mut issued)),
            Step::Parallel(tools) => {
                Action::CallMany(tools.iter().map(|t| call(*t, true, &mut issued)).collect())
            }
            Step::Cancel(n) if !issued.is_empty() => {
                send(json!({"toolCallCancellation": {"ids": [issued[n % issued.len()]]}}))
            }
            Step::Cancel(_) => continue,
            Step::Pause(ms) => Action::PauseMs(*ms),
            Step::Text { text, cuts } => {
                let chars: Vec<char> = text.chars().collect();
                let mut points: Vec<usize> = cuts
                    .iter()
                    .map(|c| c % chars.len())
                    .filter(|c| *c > 0)
                    .collect();
                points.sort_unstable();
                points.dedup();
                let mut from = 0;
                for point in points.into_iter().chain([chars.len()]) {
                    let chunk: String = chars[from..point].iter().collect();
                    script = script.action(send(
                        json!({"serverContent": {"modelTurn": {"parts": [{"text": chunk}]}}}),
                    ));
                    from = point;
                }
                continue;
            }
            Step::Interrupt => send(json!({"serverContent": {"interrupted": true}})),
            Step::GoAway => send(json!({"goAway": {"timeLeft": "30s"}})),
            Step::TurnComplete => send(json!({"serverContent": {"turnComplete": true}})),
        };
        script = script.action(action);
    }
    script.action(send(json!({"serverContent": {"turnComplete": true}})))
}

/// Plays the steps against the governed payment agent under `seed`.
fn play(payment: &Agent, seed: u64, steps: &[Step]) -> SeedRun {
    let script = script(steps);
    Soak::agent(payment)
        .check_determinism_every(0)
        .script(move |_, _| script.clone())
        .run_seed(Seed::new(seed))
}

/// Invariant `name`'s verdict on the run.
fn verdict(run: &SeedRun, name: &str) -> Result<(), String> {
    run.verdicts
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.clone())
        .unwrap_or_else(|| Err(format!("`{name}` was not checked: {:?}", run.failures)))
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
        steps in prop::collection::vec(step(), 1..14),
    ) {
        let run = play(&payment(), seed, &steps);
        prop_assert_eq!(verdict(&run, invariants::REFUSED_NEVER_RUNS), Ok(()));
    }

    /// Every call the script did not cancel is answered exactly once, and
    /// none is answered after the session handled its cancellation.
    #[test]
    fn every_call_is_answered_once(
        seed in any::<u64>().no_shrink(),
        steps in prop::collection::vec(step(), 1..14),
    ) {
        let run = play(&payment(), seed, &steps);
        prop_assert_eq!(verdict(&run, invariants::ANSWERED_ONCE), Ok(()));
    }

    /// The journal's scenario replays clean against the spec that governed
    /// the session: every decision it recorded, the spec makes again.
    #[test]
    fn the_journal_replays_clean(
        seed in any::<u64>().no_shrink(),
        steps in prop::collection::vec(step(), 1..14),
    ) {
        let run = play(&payment(), seed, &steps);
        prop_assert_eq!(verdict(&run, invariants::JOURNAL_REPLAYS_CLEAN), Ok(()));
    }

    /// Journal sequence numbers strictly increase and its timestamps never
    /// go back.
    #[test]
    fn the_journal_is_ordered(
        seed in any::<u64>().no_shrink(),
        steps in prop::collection::vec(step(), 1..14),
    ) {
        let run = play(&payment(), seed, &steps);
        prop_assert_eq!(verdict(&run, invariants::JOURNAL_ORDERED), Ok(()));
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
        let steps = prop::collection::vec(step(), 1..14)
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
