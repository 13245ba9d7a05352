//! `resolvers-follow-spec`: an agent file's `"resolvers"` fill the slots
//! its conversation spec resolves (`sim/resumable` resolves the caller's
//! `limit` once `verified`), every run is recorded, and the check holds on real runs
//! and fails, saying what was wrong, on the same record with a run lost,
//! a value not written, or a run given other inputs.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use livesim::Seed;
use livesim::flow::{Conversation, Enforcement, resolver};
use livesim::prelude::*;
use livesim::soak::{RunRecord, Soak, invariants};
use serde_json::{Value, json};

use super::{agent, seeds};

fn verdict(record: &RunRecord) -> Result<(), String> {
    invariants::builtin()
        .into_iter()
        .find(|i| i.name() == invariants::RESOLVERS_FOLLOW_SPEC)
        .expect("a built-in invariant")
        .check(record)
}

/// Resumable runs over seeds 0..200 that passed, each with its record.
fn bank_runs() -> Vec<RunRecord> {
    let soak = Soak::agent(&agent("resumable")).check_determinism_every(0);
    (0..200)
        .filter_map(|s| {
            let run = soak.run_seed(Seed::new(s));
            assert!(run.failures.is_empty(), "seed {s}: {:?}", run.failures);
            run.record
        })
        .collect()
}

/// The first run whose limit resolver gave a value that was written.
fn resolved_run(runs: &[RunRecord]) -> RunRecord {
    runs.iter()
        .find(|r| {
            r.resolutions
                .iter()
                .any(|x| matches!(x.outcome, Some(Ok(_))))
                && r.journal.iter().any(|m| m.key == "limit")
        })
        .cloned()
        .expect("a resumable seed under 200 resolves the limit")
}

/// Facts read from the records alone, not from the check: the limit is
/// resolved in some runs and its resolver fails in others; every run is
/// given a value of `verified` the journal held before it started, every
/// value written to `limit` or `receipt` is the one the agent file's
/// template makes of such a value, and no receipt is resolved before the
/// transfer it follows succeeded.
#[test]
fn the_bank_resolves_the_limit_once_the_caller_is_verified() {
    let runs = bank_runs();
    let all: Vec<_> = runs.iter().flat_map(|r| &r.resolutions).collect();
    let ok = all
        .iter()
        .filter(|x| matches!(x.outcome, Some(Ok(_))))
        .count();
    let failed = all
        .iter()
        .filter(|x| matches!(x.outcome, Some(Err(_))))
        .count();
    assert!(ok >= 20 && failed >= 5, "{ok} resolved, {failed} failed");
    let receipts = all.iter().filter(|x| x.slot == "receipt").count();
    assert!(receipts >= 5, "{receipts} receipts");
    for run in &runs {
        let slots: Vec<&str> = run.resolved_slots.iter().map(|s| s.slot.as_str()).collect();
        assert_eq!(slots, ["limit", "receipt"]);
        for resolution in &run.resolutions {
            let sizes: Vec<_> = run
                .journal
                .iter()
                .filter(|m| {
                    m.key == "verified"
                        && m.timestamp - livesim::clock::VIRTUAL_EPOCH <= resolution.started
                })
                .map(|m| json!({ "verified": m.value }))
                .collect();
            assert!(
                sizes.contains(&resolution.args),
                "seed {:#x}: a resolver given {} after {sizes:?}",
                run.seed.value(),
                resolution.args
            );
        }
        // The receipt's stage follows the transfer's: its resolver starts
        // only once a transfer completed ok.
        let transferred = run
            .journal
            .iter()
            .find(|m| m.key == "transferred")
            .map(|m| m.timestamp - livesim::clock::VIRTUAL_EPOCH);
        for receipt in run.resolutions.iter().filter(|x| x.slot == "receipt") {
            assert!(
                transferred.is_some_and(|at| at <= receipt.started),
                "seed {:#x}: a receipt resolved at {:?}, the transfer at {transferred:?}",
                run.seed.value(),
                receipt.started
            );
        }
        for write in run.journal.iter().filter(|m| m.key == "receipt") {
            let verified: Vec<Value> = run
                .journal
                .iter()
                .filter(|m| m.key == "verified" && m.seq < write.seq)
                .map(|m| match &m.value {
                    Value::String(text) => json!(format!("sent to {text}")),
                    other => json!(format!("sent to {other}")),
                })
                .collect();
            assert!(
                verified.contains(&write.value),
                "seed {:#x}: receipt = {} with {verified:?}",
                run.seed.value(),
                write.value
            );
        }
        for write in run.journal.iter().filter(|m| m.key == "limit") {
            let size = run
                .journal
                .iter()
                .filter(|m| m.key == "verified" && m.seq < write.seq)
                .map(|m| m.value.clone())
                .collect::<Vec<_>>();
            assert!(
                size.iter()
                    .any(|s| write.value == json!({"daily_cents": 50000, "verified": s})),
                "seed {:#x}: limit = {} with verified {size:?}",
                run.seed.value(),
                write.value
            );
        }
        assert_eq!(verdict(run), Ok(()), "seed {:#x}", run.seed.value());
    }
}

#[test]
fn a_lost_run_a_lost_write_or_other_inputs_fail() {
    let run = resolved_run(&bank_runs());
    assert_eq!(verdict(&run), Ok(()));

    let mut lost = run.clone();
    lost.resolutions.clear();
    let err = verdict(&lost).unwrap_err();
    assert!(
        err.contains("limit was due at journal entry") && err.contains("did not start"),
        "{err}"
    );

    let mut unwritten = run.clone();
    unwritten.journal.retain(|m| m.key != "limit");
    let err = verdict(&unwritten).unwrap_err();
    assert!(err.contains("never written"), "{err}");

    let mut other = run.clone();
    other.resolutions[0].args = json!({"verified": false});
    let err = verdict(&other).unwrap_err();
    assert!(err.contains("did not start"), "{err}");

    let mut wrong = run.clone();
    let at = wrong.journal.iter().position(|m| m.key == "limit").unwrap();
    wrong.journal[at].value = json!({"daily_cents": 1});
    let err = verdict(&wrong).unwrap_err();
    assert!(err.contains("gets its resolver's value"), "{err}");
}

/// A Rust builder's own conversation resolvers are still run under the
/// soak, recorded, and checked like an agent file's.
#[test]
fn a_rust_agents_own_resolver_is_recorded_and_checked() {
    let ran = Arc::new(AtomicU64::new(0));
    let agent = {
        let ran = ran.clone();
        move || {
            let state = State::new();
            let identify = {
                let state = state.clone();
                T::simple("identify", "Finds the caller's account", move |_| {
                    let state = state.clone();
                    async move {
                        state.set("account_id", "a-7");
                        Ok(json!({ "account_id": "a-7" }))
                    }
                })
            };
            let ran = ran.clone();
            let convo = Conversation::new()
                .stage("account")
                .allow(["identify"])
                .slot("account_id")
                .resolve_slot(
                    "balance",
                    ["account_id"],
                    resolver(move |args| {
                        ran.fetch_add(1, Ordering::Relaxed);
                        async move { Ok(json!({"account": args["account_id"], "cents": 1200})) }
                    }),
                )
                .compile()
                .expect("a valid conversation");
            Live::builder()
                .state(state)
                .tools(identify)
                .converse_with(&convo, Enforcement::Enforce)
        }
    };
    let soak = Soak::new("balance", agent).check_determinism_every(0);
    let mut resolved = 0;
    for s in seeds(60) {
        let run = soak.run_seed(Seed::new(s));
        assert!(run.failures.is_empty(), "seed {s:#x}: {:?}", run.failures);
        let record = run.record.unwrap();
        assert_eq!(record.resolved_slots.len(), 1);
        for resolution in &record.resolutions {
            assert_eq!(resolution.args, json!({"account_id": "a-7"}));
            resolved += 1;
        }
        let mut forged = record.clone();
        if !forged.resolutions.is_empty() {
            forged.resolutions.clear();
            assert!(verdict(&forged).is_err(), "seed {s:#x}");
        }
    }
    assert!(resolved > 0);
    assert!(ran.load(Ordering::Relaxed) >= resolved);
}
