//! A reconnect policy the user declares, soaked: the conversations a
//! session gets stay within what its policy allows (no more failed
//! attempts in a row than it makes), and a long backoff is waited for,
//! not taken for a hang.

use std::time::Duration;

use livesim::Seed;
use livesim::prelude::*;
use livesim::session::Resumption;
use livesim::soak::Soak;
use livesim::testing::Action;

use super::seeds;

/// A Rust user's agent with one tool, resuming under `policy`.
fn soak(policy: Resumption) -> Soak {
    Soak::new("policy", move || {
        Live::builder().resumption(policy.clone()).tools(T::simple(
            "look_up",
            "Looks a record up",
            |_args: serde_json::Value| async move { Ok(serde_json::json!({"found": true})) },
        ))
    })
    .explore(false)
    .check_determinism_every(0)
    .keep(false)
}

/// How many of `seeds`' scripts refuse a resume's setup in passing (a
/// retryable close, not the stale handle's `session not found`).
fn refused_in_passing(soak: &Soak, seeds: std::ops::Range<u64>) -> usize {
    seeds
        .map(|s| soak.case(Seed::new(s)).script)
        .filter(|script| {
            script
                .actions()
                .iter()
                .any(|a| matches!(a, Action::RejectSetup(close) if close.code != 1008))
        })
        .count()
}

/// A session allowed one attempt per reconnect is never refused a setup
/// in passing (that would take a second attempt), though the same seeds
/// refuse the default policy's; and it soaks clean, the simulated
/// network's refusals included (it gives up, as its policy says).
#[test]
fn one_attempt_per_reconnect_is_never_refused_in_passing_and_soaks_clean() {
    let range = seeds(64);
    let one = soak(Resumption::on().attempts(1));
    assert_eq!(refused_in_passing(&one, range.clone()), 0);
    assert!(refused_in_passing(&soak(Resumption::on()), range.clone()) > 0);
    let summary = one.seed_range(range).jobs(2).try_run();
    assert!(summary.is_ok(), "{}", summary.unwrap_err());
}

/// A backoff of tens of seconds soaks clean: the liveness phase waits
/// for the longest reconnect the policy allows, and some sessions did
/// take longer than the soak's default bound to settle.
#[test]
fn a_long_backoff_is_waited_for() {
    let range = seeds(64);
    let long = soak(Resumption::on().backoff(Duration::from_secs(20), Duration::from_secs(120)));
    let mut slow = 0;
    for seed in range {
        let run = long.run_seed(Seed::new(seed));
        assert!(run.failures.is_empty(), "seed {seed}: {:?}", run.failures);
        let settling = run.record.expect("a record").settling;
        if let (Some(done), Some(settled)) = (settling.script_done_at, settling.settled_at)
            && settled - done > livesim::soak::LIVENESS_BOUND
        {
            slow += 1;
        }
    }
    assert!(slow > 0, "no session took longer than the default bound");
}
