//! Log capture under several jobs: each run's log lines are its own, none
//! dropped and none crossed into another run's, whatever thread it ran on.

use std::time::Duration;

use livesim::prelude::*;
use livesim::session::Resumption;
use livesim::soak::{Soak, invariants};
use livesim::testing::ScriptedServer;

/// The handle seed `seed`'s script gives: plain text, not shaped like a
/// secret, so only `handle-secret` can find it.
fn handle(seed: u64) -> String {
    format!("hdl-for-run-{seed}")
}

/// A soak of a tool that logs the handle its run's script is about to
/// give (before the session has seen it, so nothing redacts it): a leak
/// in the log lines of every run, and only there.
fn leaky(jobs: usize, seeds: std::ops::Range<u64>) -> Soak {
    Soak::new("leaky", || {
        Live::builder()
            .resumption(Resumption::on())
            .tools(T::simple(
                "note",
                "Notes the run",
                |args: serde_json::Value| async move {
                    let run = args["run"].as_u64().unwrap_or(u64::MAX);
                    tracing::info!("resuming later with {}", handle(run));
                    Ok(serde_json::json!({"noted": true}))
                },
            ))
    })
    .script(|seed, _| {
        ScriptedServer::new()
            .calls("note", serde_json::json!({"run": seed.value()}))
            .pause(Duration::from_millis(5))
            .resumption_update(handle(seed.value()), true)
            .says("Noted.")
    })
    // Each run's lines hold its own handle, once, and no other run's.
    .invariant("own-lines", |run| {
        let own = handle(run.seed.value());
        let mine = run.logs.iter().filter(|l| l.contains(&own)).count();
        let others = run
            .logs
            .iter()
            .filter(|l| l.contains("hdl-for-run-") && !l.contains(&own))
            .count();
        match (mine, others) {
            (1, 0) => Ok(()),
            _ => Err(format!(
                "{mine} lines with its handle, {others} with another's"
            )),
        }
    })
    .seed_range(seeds)
    .jobs(jobs)
    .explore(false)
    .check_determinism_every(0)
    .keep(false)
}

/// On two jobs, every run's leaked handle is caught in that run's own log
/// lines: no run passes `handle-secret` (a line dropped would let one),
/// and no run's lines hold another run's handle (`own-lines`).
#[test]
fn every_run_on_two_jobs_catches_its_own_leaked_handle() {
    for round in 0..3 {
        let summary = leaky(2, 0..120).try_run().expect_err("every run leaks");
        assert!(
            summary.failures().all(|f| f.invariant != "own-lines"),
            "round {round}: {summary}"
        );
        let failures: Vec<_> = summary
            .failures()
            .filter(|f| f.invariant == invariants::HANDLE_SECRET)
            .collect();
        assert_eq!(failures.len(), 120, "round {round}: {summary}");
        for failure in failures {
            assert!(
                failure.message.contains("log line"),
                "round {round}, seed {}: {}",
                failure.seed,
                failure.message
            );
        }
    }
}

/// A soak whose script gives the one-letter handle `"h"` and has the
/// model say `says`, with a tool that logs `logged`.
fn one_letter(says: &'static str, logged: &'static str) -> Soak {
    Soak::new("one-letter", move || {
        Live::builder()
            .resumption(Resumption::on())
            .tools(T::simple(
                "note",
                "Notes the run",
                move |_: serde_json::Value| async move {
                    tracing::info!("{logged}");
                    Ok(serde_json::json!({"noted": true}))
                },
            ))
    })
    .script(move |_, _| {
        ScriptedServer::new()
            .resumption_update("h", true)
            .calls("note", serde_json::json!({}))
            .says(says)
    })
    .seed_range(0..4)
    .explore(false)
    .keep(false)
}

/// A one-letter handle is a leak where it stands alone, not inside the
/// words around it: "the weather here" and "hot" hold no handle `h`, a
/// log line "resuming with h" does.
#[test]
fn a_one_letter_handle_is_found_alone_not_inside_words() {
    let words = "The weather here is hot; thanks for asking.";
    one_letter(words, "the note is written")
        .try_run()
        .expect("no handle stands alone");
    let summary = one_letter(words, "resuming with h")
        .try_run()
        .expect_err("the tool logs the handle");
    assert!(
        summary
            .failures()
            .all(|f| f.invariant == invariants::HANDLE_SECRET && f.message.contains("log line")),
        "{summary}"
    );
}
