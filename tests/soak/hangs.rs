//! Nothing hangs the soak: a run whose task never yields (a real busy
//! loop, no `.await` inside) is reported as `hang` with its replay line
//! and last trace entries, and the soak goes on with the other seeds.

use std::time::{Duration, Instant};

use livesim::prelude::*;
use livesim::soak::{Soak, invariants};
use livesim::testing::ScriptedServer;

/// Spins for `wall` of wall time without ever yielding.
fn busy_loop(wall: Duration) {
    // Real time, on purpose: the hang is in wall time.
    #[allow(clippy::disallowed_methods)]
    let until = Instant::now() + wall;
    #[allow(clippy::disallowed_methods)]
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

/// An agent with a tool that answers at once and one that spins for
/// `spin`; seeds in `spinning` call the spinner, the others the quick one.
fn spinner(spin: Duration, spinning: fn(u64) -> bool) -> Soak {
    Soak::new("spinner", move || {
        Live::builder()
            .tools(T::simple("quick", "Answers", |_| async {
                Ok(serde_json::json!({"ok": true}))
            }))
            .tools(T::simple(
                "spin",
                "Spins",
                move |args: serde_json::Value| async move {
                    if args["spin"] == true {
                        busy_loop(spin);
                    }
                    Ok(serde_json::json!({"ok": true}))
                },
            ))
    })
    .script(move |seed, _| {
        let call = if spinning(seed.value()) {
            ("spin", serde_json::json!({"spin": true}))
        } else {
            ("quick", serde_json::json!({}))
        };
        ScriptedServer::new()
            .hears("Go")
            .calls(call.0, call.1)
            .says("Done.")
    })
    .explore(false)
    .check_determinism_every(0)
    .keep(false)
}

/// One seed's tool spins past the bound: that run alone is reported, as
/// `hang`, naming its seed, with its replay line and the last trace
/// entries (the tool's start among them); every other seed runs and
/// passes, and the summary (and its JUnit) says so.
#[test]
fn a_busy_loop_in_a_tool_is_reported_as_a_hang_and_the_soak_goes_on() {
    let summary = spinner(Duration::from_millis(2500), |s| s == 3)
        .seed_range(0..8)
        .jobs(2)
        .hang_after(Duration::from_millis(400))
        .try_run()
        .expect_err("seed 3 hangs");
    assert_eq!(summary.sessions(), 8, "{summary}");
    let failures: Vec<_> = summary.failures().collect();
    assert_eq!(failures.len(), 1, "{summary}");
    let hang = failures[0];
    assert_eq!(
        (hang.invariant.as_str(), hang.seed.value()),
        (invariants::HANG, 3)
    );
    assert!(hang.replay.contains("LIVESIM_SEED=0x3"), "{}", hang.replay);
    assert!(
        hang.message.contains("last trace entries"),
        "{}",
        hang.message
    );
    assert!(hang.message.contains("tool:spin"), "{}", hang.message);
    let junit = summary.junit().to_string().expect("JUnit XML");
    assert!(junit.contains("hang"), "{junit}");
}

/// A time budget is honored even when every run hangs: the runs in flight
/// are reported as hangs at the bound, and nothing else starts.
#[test]
fn the_time_budget_is_honored_when_every_run_hangs() {
    let summary = spinner(Duration::from_millis(2500), |_| true)
        .seed_range(0..1000)
        .jobs(2)
        .duration(Duration::from_millis(200))
        .hang_after(Duration::from_millis(400))
        .try_run()
        .expect_err("the runs hang");
    assert!(summary.stopped_by_budget, "{summary}");
    assert_eq!(summary.sessions(), 2, "{summary}");
    assert!(summary.failures().all(|f| f.invariant == invariants::HANG));
}
