//! `watchers-follow-journal`: every state watcher a session has (an agent
//! file's session watches each key its tools write; a Rust builder's own
//! watchers are wrapped, still called) is recorded, and its calls are
//! checked against the state journal. The check holds on real runs and
//! fails, saying which call was wrong, on the same record with a call
//! lost, added, or told the wrong value.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use livesim::Seed;
use livesim::prelude::*;
use livesim::soak::{RunRecord, Soak, invariants};
use serde_json::json;

use super::{agent, seeds};

fn verdict(record: &RunRecord) -> Result<(), String> {
    invariants::builtin()
        .into_iter()
        .find(|i| i.name() == invariants::WATCHERS_FOLLOW_JOURNAL)
        .expect("a built-in invariant")
        .check(record)
}

/// The index of the watcher of `key`, and its calls.
fn calls_of(record: &RunRecord, key: &str) -> (usize, usize) {
    let index = record.watched.iter().position(|w| w.key == key).unwrap();
    let calls = record
        .watch_calls
        .iter()
        .filter(|c| c.watcher == index)
        .count();
    (index, calls)
}

/// A checkout run that passed and settled with its session running, in
/// which the basket was written at least three times.
fn basket_run() -> RunRecord {
    let soak = Soak::agent(&agent("checkout")).check_determinism_every(0);
    (0..300)
        .find_map(|s| {
            let run = soak.run_seed(Seed::new(s));
            let record = run.record?;
            let writes = record.journal.iter().filter(|m| m.key == "basket").count();
            (run.failures.is_empty()
                && writes >= 3
                && record.settling.settled_at.is_some()
                && !record.settling.ended)
                .then_some(record)
        })
        .expect("a checkout seed under 300 writes its basket three times and settles")
}

/// Each key a checkout tool writes is watched from an empty state, and a
/// settled run calls the basket's watcher once per write, the last call
/// told the basket's last value (read straight from the journal here).
#[test]
fn an_agent_file_session_watches_what_its_tools_write() {
    let run = basket_run();
    let keys: Vec<&str> = run.watched.iter().map(|w| w.key.as_str()).collect();
    assert_eq!(keys, ["address", "basket", "ordered"]);
    assert!(run.watched.iter().all(|w| w.initial.is_none()));
    let writes: Vec<_> = run.journal.iter().filter(|m| m.key == "basket").collect();
    let (index, calls) = calls_of(&run, "basket");
    assert_eq!(calls, writes.len());
    let last = run
        .watch_calls
        .iter()
        .rev()
        .find(|c| c.watcher == index)
        .unwrap();
    let final_value = writes.last().unwrap();
    let expected = if final_value.removed {
        serde_json::Value::Null
    } else {
        final_value.value.clone()
    };
    assert_eq!(last.new, expected);
    assert_eq!(verdict(&run), Ok(()));
}

#[test]
fn a_call_lost_added_or_told_the_wrong_value_is_named() {
    let good = basket_run();
    let (index, calls) = calls_of(&good, "basket");
    let positions: Vec<usize> = good
        .watch_calls
        .iter()
        .enumerate()
        .filter(|(_, c)| c.watcher == index)
        .map(|(i, _)| i)
        .collect();

    let mut lost = good.clone();
    lost.watch_calls.remove(*positions.last().unwrap());
    let err = verdict(&lost).unwrap_err();
    assert_eq!(
        err,
        format!(
            "basket was written {calls} times, but its watcher was called {} times by the time \
             the run settled",
            calls - 1
        )
    );

    let mut added = good.clone();
    let extra = added.watch_calls[positions[0]].clone();
    added.watch_calls.push(extra);
    let err = verdict(&added).unwrap_err();
    assert!(
        err.starts_with(&format!(
            "the watcher of basket was called {} times, but basket was written {calls} times",
            calls + 1
        )),
        "{err}"
    );

    let mut told = good.clone();
    told.watch_calls[positions[1]].old = Some(json!("a teapot"));
    let err = verdict(&told).unwrap_err();
    assert!(
        err.starts_with("call #2 of the watcher of basket (t="),
        "{err}"
    );
    assert!(
        err.contains("was told the value before was \"a teapot\", but the call before told it"),
        "{err}"
    );

    let mut never = good.clone();
    never.watch_calls[positions[0]].new = json!("never written");
    let err = verdict(&never).unwrap_err();
    assert!(
        err.contains("was told basket is \"never written\", but no write of basket from its #1"),
        "{err}"
    );
}

/// A Rust builder's own watcher is still called under the soak, and its
/// calls are checked like an agent file's.
#[test]
fn a_rust_agents_own_watcher_is_called_and_checked() {
    let called = Arc::new(AtomicU64::new(0));
    let agent = {
        let called = called.clone();
        move || {
            let state = State::new();
            let note = {
                let state = state.clone();
                T::simple("note", "Counts a note", move |_| {
                    let state = state.clone();
                    async move {
                        let n = state.get_as::<u64>("notes").unwrap_or(0) + 1;
                        state.set("notes", n);
                        Ok(json!({ "notes": n }))
                    }
                })
            };
            let called = called.clone();
            Live::builder()
                .state(state)
                .tools(note)
                .watch("notes", move |_, _, _, _| {
                    called.fetch_add(1, Ordering::Relaxed);
                })
        }
    };
    let soak = Soak::new("notes", agent).check_determinism_every(0);
    let mut recorded = 0;
    for s in seeds(60) {
        let run = soak.run_seed(Seed::new(s));
        assert!(run.failures.is_empty(), "seed {s:#x}: {:?}", run.failures);
        let record = run.record.unwrap();
        assert_eq!(record.watched.len(), 1);
        assert_eq!(record.watched[0].key, "notes");
        recorded += record.watch_calls.len() as u64;
    }
    // The soak also runs sessions of its own (measuring the tools first),
    // so the watcher may be called more often than these records show.
    assert!(recorded > 0);
    assert!(called.load(Ordering::Relaxed) >= recorded);
}
