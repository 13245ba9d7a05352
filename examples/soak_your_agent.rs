//! Soaking your own agent, from Rust, until the soak finds a bug, keeps
//! it, and the fix keeps it fixed.
//!
//! The agent is a shop's cart: `add_item` reads the cart from the
//! session's state, looks the item's price up (120 to 300 ms), and writes
//! the cart back with the item added; `checkout` reads the cart. When the
//! model adds two items at once, both calls read the same cart and the
//! second write loses the first item. The agent's own invariant says so:
//! the cart must hold every item `add_item` answered ok.
//!
//! ```sh
//! cargo run --release --example soak_your_agent
//! ```
//!
//! 1. `Soak::run` over 300 seeds finds the lost update, shrinks it to the
//!    call that shows it, keeps it as a corpus entry (here in a temporary
//!    folder; in a test, the crate's `seeds/`), draws its timeline and
//!    prints the line that replays the kept case;
//! 2. the corpus, replayed against the same agent, still fails;
//! 3. the fixed agent (a lock held across the read-modify-write) passes
//!    seeds 0..2000 and the kept case;
//! 4. proptest, drawing conversations as steps (`livesim::soak::fuzz`),
//!    finds the race too and shrinks it to the two calls that show it;
//!    the fixed cart holds under the same property.
//!
//! Exits non-zero when any of it does not hold.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use livesim::prelude::*;
use livesim::soak::{ExecutionOutcome, RunRecord, Soak};
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize)]
struct Item {
    sku: String,
}

/// How long looking an item up takes: 120 to 300 ms of virtual time,
/// drawn from the seed (200 ms outside a simulation).
async fn look_up(_sku: &str) {
    let ms = livesim::executor::draw("cart/lookup", |s| s.range(120..=300)).unwrap_or(200);
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

/// The cart agent; `locked` holds a lock across `add_item`'s
/// read-modify-write, which is the fix.
pub fn cart_agent(locked: bool) -> LiveBuilder {
    let state = State::new();
    let lock = Arc::new(tokio::sync::Mutex::new(()));
    let add_item = {
        let state = state.clone();
        T::typed("add_item", "Adds an item to the cart", move |item: Item| {
            let (state, lock) = (state.clone(), lock.clone());
            async move {
                let _held = if locked {
                    Some(lock.lock().await)
                } else {
                    None
                };
                let mut cart: Vec<String> = state.get_as("cart").unwrap_or_default();
                look_up(&item.sku).await;
                cart.push(item.sku.clone());
                state.set("cart", json!(cart));
                Ok(json!({ "added": item.sku, "items": cart.len() }))
            }
        })
        .parameters(json!({
            "type": "OBJECT",
            "properties": { "sku": { "type": "STRING", "enum": ["mug", "kettle", "teapot"] } },
            "required": ["sku"]
        }))
    };
    let checkout = {
        let state = state.clone();
        T::simple("checkout", "Checks the cart out", move |_| {
            let state = state.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(150)).await;
                let cart: Vec<String> = state.get_as("cart").unwrap_or_default();
                Ok(json!({ "items": cart }))
            }
        })
    };
    Live::builder()
        .instruction("You run the cart of a kitchenware shop.")
        .state(state)
        .tools(add_item | checkout)
}

/// The invariant: every item `add_item` answered ok is in the cart at
/// the end (the last value the session wrote to `cart`).
pub fn cart_holds_every_item(run: &RunRecord) -> Result<(), String> {
    let mut added: Vec<String> = run
        .executions_of("add_item")
        .filter_map(|e| match &e.outcome {
            ExecutionOutcome::Ok(answer) => answer["added"].as_str().map(String::from),
            _ => None,
        })
        .collect();
    let mut cart: Vec<String> = run
        .journal
        .iter()
        .rev()
        .find(|write| write.key == "cart")
        .and_then(|write| serde_json::from_value(write.value.clone()).ok())
        .unwrap_or_default();
    added.sort();
    cart.sort();
    if added == cart {
        Ok(())
    } else {
        Err(format!(
            "add_item answered ok for {added:?}, but the cart holds {cart:?}"
        ))
    }
}

/// The soak of the cart agent (the racy one, or the fixed one: both are
/// agent `cart`, so the fixed one replays the racy one's corpus). In a
/// test, add `.test(livesim::test_id!())` and the replay lines are
/// `cargo test` lines.
pub fn cart_soak(locked: bool) -> Soak {
    Soak::new("cart", move || cart_agent(locked))
        .replay_line(|seed| format!("LIVESIM_SEED={seed} cargo run --example soak_your_agent"))
        .replay_case_line(|file| {
            format!(
                "LIVESIM_CASE={} cargo run --example soak_your_agent",
                file.display()
            )
        })
        .lines(
            [
                "A mug and a kettle, please.",
                "And a teapot.",
                "That's all, check out.",
            ],
            ["Added.", "Your cart is ready.", "Checked out, thank you!"],
        )
        .invariant("cart-holds-every-item", cart_holds_every_item)
}

fn main() -> ExitCode {
    let corpus =
        std::env::temp_dir().join(format!("livesim-soak-your-agent-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&corpus);

    // 1. The racy cart: found, shrunk, kept.
    let summary = match cart_soak(false).seeds(300).corpus(&corpus).try_run() {
        Ok(summary) => {
            eprintln!("soak_your_agent: the racy cart passed 300 seeds:\n{summary}");
            return ExitCode::FAILURE;
        }
        Err(summary) => summary,
    };
    let Some(kept) = summary.kept.first() else {
        eprintln!("soak_your_agent: nothing was kept:\n{summary}");
        return ExitCode::FAILURE;
    };
    println!("{kept}\n");
    let Some(file) = kept.path() else {
        eprintln!(
            "soak_your_agent: the failure was not written to {}",
            corpus.display()
        );
        return ExitCode::FAILURE;
    };
    if kept.entry.case.actions() > 3 {
        eprintln!(
            "soak_your_agent: the kept case has {} actions",
            kept.entry.case.actions()
        );
        return ExitCode::FAILURE;
    }

    // 2. The corpus against the same agent: still failing.
    let replay = cart_soak(false).try_replay_corpus(&corpus);
    println!("{replay}");
    if replay.passed() {
        eprintln!(
            "soak_your_agent: {} passes against the racy cart",
            file.display()
        );
        return ExitCode::FAILURE;
    }

    // 3. The fix: a lock across the read-modify-write.
    let fixed = cart_soak(true).corpus(&corpus).seeds(2000);
    let replay = fixed.try_replay_corpus(&corpus);
    println!("{replay}");
    if !replay.passed() {
        eprintln!("soak_your_agent: the fixed cart fails its corpus");
        return ExitCode::FAILURE;
    }
    // A passing soak prints its one line itself.
    match fixed.try_run() {
        Ok(_) => {}
        Err(summary) => {
            eprintln!("soak_your_agent: the fixed cart fails:\n{summary}");
            return ExitCode::FAILURE;
        }
    }
    // 4. The same race, found by a property: proptest draws the steps.
    match race_by_proptest(false) {
        Some(steps) if steps.len() <= 2 => {
            println!("proptest found the race and shrank it to {steps:?}")
        }
        found => {
            eprintln!("soak_your_agent: proptest on the racy cart: {found:?}");
            return ExitCode::FAILURE;
        }
    }
    if let Some(steps) = race_by_proptest(true) {
        eprintln!("soak_your_agent: the fixed cart fails the property: {steps:?}");
        return ExitCode::FAILURE;
    }
    // The corpus was this run's scratch: a failing run above leaves it
    // for a look, a passing one tidies up.
    let _ = std::fs::remove_dir_all(&corpus);
    println!("soak_your_agent: ok");
    ExitCode::SUCCESS
}

/// The property "every invariant holds, whatever the model does", run by
/// proptest over 256 conversations; returns the failing steps, shrunk.
/// In a test, write it with `proptest!` (see `livesim::soak::fuzz`).
pub fn race_by_proptest(locked: bool) -> Option<Vec<livesim::soak::Step>> {
    use livesim::soak::fuzz;
    use proptest::prelude::*;
    use proptest::test_runner::{Config, RngSeed, TestError, TestRunner};

    let soak = cart_soak(locked).keep(false);
    let mut runner = TestRunner::new(Config {
        cases: 256,
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(0x5eed),
        ..Config::default()
    });
    let cart_tools = 2;
    let result = runner.run(
        &(fuzz::seed(), fuzz::steps(cart_tools, 1..12)),
        |(seed, steps)| {
            prop_assert_eq!(soak.run_steps(seed, &steps).verdict(), Ok(()));
            Ok(())
        },
    );
    match result {
        Ok(()) => None,
        Err(TestError::Fail(_, (_, steps))) => Some(steps),
        Err(TestError::Abort(why)) => panic!("proptest gave up: {why}"),
    }
}
