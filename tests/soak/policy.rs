//! A reconnect policy the user declares, soaked: the conversations a
//! session gets stay within what its policy allows (no more failed
//! attempts in a row than it makes) and sometimes spend all of it, and a
//! long backoff is waited for, not taken for a hang.

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

/// The most setups of one resume that `script` refuses in passing, one
/// after the other (each refusal followed by the session's next try, and
/// nothing else in between).
fn longest_refusal_run(script: &livesim::testing::ScriptedServer) -> usize {
    let (mut run, mut longest) = (0, 0);
    for action in script.actions() {
        match action {
            Action::RejectSetup(close) if close.code != 1008 => {
                run += 1;
                longest = longest.max(run);
            }
            Action::Reconnect(_) => {}
            _ => run = 0,
        }
    }
    longest
}

/// A resume refused in passing is refused at most `attempts - 1` times
/// in a row, so the last attempt the policy allows gets through, and some
/// scripts refuse exactly that many: a session that miscounts its
/// attempts gives up in those, and only in those.
#[test]
fn some_resumes_are_refused_on_every_attempt_but_the_last() {
    for attempts in [2, 3, 5] {
        let soak = soak(Resumption::on().attempts(attempts));
        let runs: Vec<usize> = seeds(64)
            .map(|s| longest_refusal_run(&soak.case(Seed::new(s)).script))
            .collect();
        let most = attempts as usize - 1;
        assert!(
            runs.iter().all(|&n| n <= most),
            "{attempts} attempts: {runs:?}"
        );
        assert!(runs.contains(&most), "{attempts} attempts: {runs:?}");
    }
}

/// A session that spends its whole budget on a resume (every attempt
/// but the last refused) still resumes: it soaks clean.
#[test]
fn a_resume_that_takes_every_attempt_soaks_clean() {
    let soak = soak(Resumption::on().attempts(3));
    let spent: Vec<u64> = seeds(64)
        .filter(|&s| longest_refusal_run(&soak.case(Seed::new(s)).script) == 2)
        .collect();
    assert!(!spent.is_empty());
    for seed in spent {
        let run = soak.run_seed(Seed::new(seed));
        assert!(run.failures.is_empty(), "seed {seed}: {:?}", run.failures);
    }
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
