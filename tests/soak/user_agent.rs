//! A Rust user's own agent, soaked through `Soak`: the checkout example,
//! run for a few seeds.

#[path = "../../examples/soak_checkout.rs"]
#[allow(dead_code)]
mod checkout;

use super::seeds;

/// The example's soak passes for a few seeds, checking its own
/// invariants beside the built-in ones on every run.
#[test]
fn the_checkout_example_soaks_clean() {
    let range = seeds(8);
    let summary = checkout::checkout_soak()
        .seed_range(range.clone())
        .jobs(2)
        .run();
    let runs = range.end - range.start;
    assert_eq!(summary.sessions(), runs + summary.explored());
    let checks = &summary.agents[0].checks;
    for name in [
        "charged-once",
        "never-charges-an-empty-cart",
        "refused-never-runs",
        "journal-replays-clean",
    ] {
        let (_, held, broke) = checks
            .iter()
            .find(|(n, ..)| n == name)
            .unwrap_or_else(|| panic!("{name} not checked"));
        assert_eq!((*held, *broke), (summary.sessions(), 0), "{name}");
    }
}

/// Without its idempotency check, the checkout charges twice when the
/// model calls `charge_card` twice at once, and the soak says so.
#[test]
fn a_checkout_without_its_guard_is_caught() {
    use livesim::prelude::*;
    use livesim::soak::{FaultKind, Soak};
    use serde_json::json;
    let summary = Soak::new("careless-checkout", || {
        Live::builder().tools(
            T::simple("charge_card", "Charges the card, every time", |_| async {
                tokio::time::sleep(std::time::Duration::from_millis(300)).await;
                Ok(json!({ "charged_cents": 600 }))
            })
            .parameters(json!({"type": "OBJECT", "properties": {}})),
        )
    })
    .invariant("charged-once", |run| {
        let n = run
            .executions_of("charge_card")
            .filter(|e| matches!(e.outcome, livesim::soak::ExecutionOutcome::Ok(_)))
            .count();
        if n > 1 {
            Err(format!("charged {n} times"))
        } else {
            Ok(())
        }
    })
    .faults(&[(FaultKind::ParallelCalls, 0.5)])
    .seed_range(0..20)
    .jobs(2)
    .keep(false) // it fails on purpose: keep nothing
    .try_run()
    .expect_err("parallel calls charge twice");
    assert!(summary.failures().any(|f| f.invariant == "charged-once"));
}
