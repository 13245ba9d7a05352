//! Shrinking: real failures of deliberately broken agents cut down to
//! small cases that break the same invariant, down to single seeded
//! decisions when the failure needs them.

use std::time::Duration;

use livesim::Seed;
use livesim::soak::{AgentInvariant, Case, CorpusEntry, Failure, ShrinkBudget, ShrinkError, Soak};

use super::agent;
use super::scratch::scratch;

const BUDGET: Duration = Duration::from_secs(30);

/// The first failure of `invariant` among seeds `0..200` of `soak`.
fn first_failure(soak: &Soak, invariant: &str) -> Failure {
    (0..200)
        .find_map(|s| {
            soak.run_seed(Seed::new(s))
                .failures
                .into_iter()
                .find(|f| f.invariant == invariant)
        })
        .unwrap_or_else(|| panic!("no seed under 200 breaks {invariant}"))
}

/// The weather agent with a `before(get_forecast, get_weather)` invariant
/// of its own, which its calls break (it has no forecast tool).
fn weather_needing_a_forecast() -> Soak {
    let mut weather = agent("weather");
    weather.invariants = vec![AgentInvariant::Before(
        "get_forecast".into(),
        "get_weather".into(),
    )];
    Soak::agent(&weather).check_determinism_every(0)
}

/// Weather calls `get_weather` without any forecast first: the agent
/// file's own `before` invariant breaks, and shrinks to the one call that
/// breaks it.
#[test]
fn an_agent_invariant_shrinks_to_the_call_that_breaks_it() {
    let soak = weather_needing_a_forecast();
    let failure = first_failure(&soak, "before(get_forecast, get_weather)");
    let stages = std::sync::Mutex::new(Vec::new());
    let shrunk = soak
        .shrink(&Case::from(&failure), &failure.invariant, BUDGET, &|p| {
            stages.lock().unwrap().push(p.stage)
        })
        .unwrap();
    assert!(shrunk.finished, "{shrunk}");
    assert_eq!(shrunk.invariant, failure.invariant);
    assert_eq!(shrunk.actions_before, failure.script.actions().len());
    assert_eq!(shrunk.case.actions(), 1, "{}", shrunk.case);
    assert!(
        shrunk.message.starts_with("get_weather (call-"),
        "{}",
        shrunk.message
    );
    let stages = stages.into_inner().unwrap();
    for stage in [
        "turns",
        "actions",
        "calls",
        "text",
        "faults",
        "swarm",
        "decisions",
    ] {
        assert!(stages.contains(&stage), "{stage} not reported: {stages:?}");
    }
    // The shrunk case fails the same way when run again.
    let again = soak.run_case(&shrunk.case);
    assert!(
        again
            .failures
            .iter()
            .any(|f| f.invariant == shrunk.invariant)
    );
    assert_eq!(shrunk.case.seed, failure.seed);
}

/// A failure that needs one tool to take longer than its shortest
/// latency keeps exactly that seeded decision: everything else is calm.
#[test]
fn a_timing_failure_keeps_only_the_decision_it_needs() {
    let soak = Soak::agent(&agent("payment"))
        .check_determinism_every(0)
        .invariant("verify-is-quick", |run| {
            match run.executions_of("verify_identity").find(|e| {
                e.finished
                    .is_some_and(|f| f - e.started > Duration::from_millis(30))
            }) {
                Some(slow) => Err(format!(
                    "verify_identity ({}) took longer than 30 ms",
                    slow.call_id.as_deref().unwrap_or("?")
                )),
                None => Ok(()),
            }
        });
    let failure = first_failure(&soak, "verify-is-quick");
    let shrunk = soak
        .shrink(&Case::from(&failure), "verify-is-quick", BUDGET, &|_| {})
        .unwrap();
    assert!(shrunk.finished, "{shrunk}");
    assert_eq!(shrunk.case.actions(), 1, "{}", shrunk.case);
    let decisions: Vec<String> = shrunk
        .case
        .decisions
        .as_ref()
        .expect("the decisions stage ran")
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(decisions.len(), 1, "{decisions:?}");
    assert!(decisions[0].starts_with("tool-latency#"), "{decisions:?}");
    assert_eq!(shrunk.case.swarm, livesim::executor::Swarm::calm());
    // Saved and read back, the case still fails; with that decision calmed
    // too, it passes.
    let entry = CorpusEntry::from_shrunk(&shrunk);
    let text = serde_json::to_string_pretty(&entry.to_json()).unwrap();
    let read = CorpusEntry::from_json_str(&text, "entry.json").unwrap();
    assert_eq!(read.case, shrunk.case);
    assert!(!soak.replay(&read).failures.is_empty());
    let mut calm = read.case.clone();
    calm.decisions = Some(Vec::new());
    assert!(soak.run_case(&calm).failures.is_empty());
}

/// A user's invariant over a Rust agent, broken by the seed's non-ASCII
/// text: the case shrinks to a few frames carrying it.
#[test]
fn a_user_invariant_shrinks_to_the_frames_that_break_it() {
    use livesim::prelude::*;
    let soak = Soak::new("ascii-only", || {
        Live::builder().instruction("You answer in plain English.")
    })
    .lines(["Hello"], ["Hello, how can I help?"])
    .check_determinism_every(0)
    .faults(&[(livesim::soak::FaultKind::NonAscii, 0.5)])
    .invariant("ascii-only", |run| {
        match run
            .delivered()
            .find(|e| e.kind() == "text_complete" && !e.to_string().is_ascii())
        {
            Some(e) => Err(format!("the model said non-ASCII text: {e}")),
            None => Ok(()),
        }
    });
    let failure = first_failure(&soak, "ascii-only");
    let shrunk = soak
        .shrink(&Case::from(&failure), "ascii-only", BUDGET, &|_| {})
        .unwrap();
    assert!(shrunk.case.actions() <= 2, "{}", shrunk.case);
    assert!(shrunk.case.actions() < failure.script.actions().len());
    assert!(shrunk.message.starts_with("the model said non-ASCII text"));
}

/// A case that does not break the invariant is not shrunk: the error says
/// what it breaks instead.
#[test]
fn a_passing_case_is_not_shrunk() {
    let soak = Soak::agent(&agent("weather")).check_determinism_every(0);
    let case = soak.case(Seed::new(3));
    let err = soak
        .shrink(&case, "refused-never-runs", BUDGET, &|_| {})
        .unwrap_err();
    assert_eq!(
        err,
        ShrinkError::Passes {
            agent: "weather".into(),
            seed: "0x3".into(),
            invariant: "refused-never-runs".into(),
            broken: Vec::new(),
        }
    );
    assert!(err.to_string().contains("every invariant holds"), "{err}");
}

/// A failure that needs a stale handle, in an agent whose sessions resume,
/// shrinks to a script that still spans connections: every candidate is a
/// valid script file, so the connection the stale handle ends stays with
/// the `resumption_update` that issued it.
#[test]
fn a_failure_across_connections_shrinks_to_a_valid_script() {
    use livesim::session::LiveEvent;
    let soak = Soak::agent(&agent("resumable"))
        .check_determinism_every(0)
        .invariant("never-fresh", |run| {
            match run
                .events
                .iter()
                .find(|e| matches!(e.event, LiveEvent::Resumed { fresh: true, .. }))
            {
                Some(e) => Err(format!("a fresh session began at {:?}", e.at)),
                None => Ok(()),
            }
        });
    let failure = first_failure(&soak, "never-fresh");
    let shrunk = soak
        .shrink(&Case::from(&failure), "never-fresh", BUDGET, &|_| {})
        .unwrap();
    assert!(shrunk.finished, "{shrunk}");
    assert!(
        shrunk.case.actions() < failure.script.actions().len(),
        "{shrunk}"
    );
    assert!(shrunk.case.script.spans_connections(), "{}", shrunk.case);
    let entry = CorpusEntry::from_shrunk(&shrunk);
    let text = serde_json::to_string_pretty(&entry.to_json()).unwrap();
    let read = CorpusEntry::from_json_str(&text, "entry.json").unwrap();
    assert_eq!(read.case, shrunk.case);
    assert!(
        soak.replay(&read)
            .failures
            .iter()
            .any(|f| f.invariant == "never-fresh")
    );
}

/// The budget counts candidate runs, so a machine's speed never changes
/// the case a failure shrinks to: the same failure, shrunk on a fast
/// "machine" and on one where every run takes 3 ms longer (a wall-clock
/// sleep in an invariant, outside the simulation), saves the same file,
/// even when the run budget cuts the shrink short.
#[test]
fn a_failure_shrinks_to_the_same_file_on_a_fast_machine_and_a_slow_one() {
    let mut weather = agent("weather");
    weather.invariants = vec![AgentInvariant::Before(
        "get_forecast".into(),
        "get_weather".into(),
    )];
    static SLOWED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let fast = Soak::agent(&weather).check_determinism_every(0);
    let slow = Soak::agent(&weather)
        .check_determinism_every(0)
        .invariant("slow-machine", |_| {
            // A slower machine, simulated: real time, never virtual.
            SLOWED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            #[allow(clippy::disallowed_methods)]
            std::thread::sleep(Duration::from_millis(3));
            Ok(())
        });
    let failure = first_failure(&fast, "before(get_forecast, get_weather)");
    let saved = |soak: &Soak, runs: u64| {
        let dir = scratch(&format!("shrink-speed-{runs}-{}", soak.name()));
        let budget = ShrinkBudget {
            runs,
            time: Duration::from_secs(600),
        };
        let shrunk = soak
            .shrink(&Case::from(&failure), &failure.invariant, budget, &|_| {})
            .unwrap();
        assert!(!shrunk.out_of_time, "{shrunk}");
        let path = CorpusEntry::from_shrunk(&shrunk).save(&dir).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        (shrunk, text)
    };
    for runs in [12, 1000] {
        let (quick, on_fast) = saved(&fast, runs);
        let slowed_before = SLOWED.load(std::sync::atomic::Ordering::Relaxed);
        let (slowly, on_slow) = saved(&slow, runs);
        assert_eq!(on_fast, on_slow, "{runs} runs: the saved files differ");
        assert_eq!(quick.runs, slowly.runs);
        // Every candidate run on the slow machine was slowed.
        let slowed = SLOWED.load(std::sync::atomic::Ordering::Relaxed) - slowed_before;
        assert!(
            slowed >= slowly.runs,
            "{slowed} of {} runs slowed",
            slowly.runs
        );
        if runs == 12 {
            // Cut short by the run budget, at the same candidate.
            assert!(!quick.finished && quick.runs <= 12, "{quick}");
            assert!(quick.to_string().contains("the run budget ran out first"));
        } else {
            assert!(quick.finished, "{quick}");
        }
    }
}

/// A kept file says how a case was shrunk without the wall time it took
/// (which depends on the machine); a file written before that, with its
/// `seconds`, still reads.
#[test]
fn a_saved_shrink_note_has_no_wall_time_and_old_files_still_read() {
    let soak = weather_needing_a_forecast();
    let failure = first_failure(&soak, "before(get_forecast, get_weather)");
    let shrunk = soak
        .shrink(&Case::from(&failure), &failure.invariant, BUDGET, &|_| {})
        .unwrap();
    let entry = CorpusEntry::from_shrunk(&shrunk);
    let mut json = entry.to_json();
    let note = &mut json["regression"]["shrunk"];
    assert!(note.get("seconds").is_none(), "{note}");
    assert_eq!(note["runs"], shrunk.runs);
    note["seconds"] = serde_json::json!(0.4);
    let old = CorpusEntry::from_json_str(&json.to_string(), "old.json").unwrap();
    assert_eq!(old.case, entry.case);
    assert_eq!(old.shrunk.map(|n| n.seconds), Some(0.4));
}

/// A failure that needs one call, made on a later connection of an agent
/// that resumes, shrinks to one connection ending in that call: the
/// connections before it are merged away (a `reconnect` and what ended the connection before it
/// go together, since neither alone leaves a valid script).
#[test]
fn a_call_on_a_later_connection_shrinks_to_one_connection() {
    let mut resumable = agent("resumable");
    resumable.invariants = vec![AgentInvariant::Before(
        "transfer_funds".into(),
        "list_accounts".into(),
    )];
    let soak = Soak::agent(&resumable).check_determinism_every(0);
    let failure = (0..200)
        .find_map(|s| {
            let run = soak.run_seed(Seed::new(s));
            let failure = run
                .failures
                .into_iter()
                .find(|f| f.invariant == "before(transfer_funds, list_accounts)")?;
            // In memory (over the simulated network a frame may be lost,
            // and a case shrinks less), the breaking call after a
            // reconnect.
            if failure.faults.to_string().contains("network") {
                return None;
            }
            let actions = failure.script.actions();
            let reconnect = actions
                .iter()
                .position(|a| matches!(a, livesim::testing::Action::Reconnect(_)))?;
            let call = actions.iter().position(|a| match a {
                livesim::testing::Action::Call(c) => c.name == "list_accounts",
                livesim::testing::Action::CallMany(cs) => {
                    cs.iter().any(|c| c.name == "list_accounts")
                }
                _ => false,
            })?;
            (call > reconnect).then_some(failure)
        })
        .expect("a resumable seed under 200 calls list_accounts only after a reconnect");
    let stages = std::sync::Mutex::new(Vec::new());
    let shrunk = soak
        .shrink(&Case::from(&failure), &failure.invariant, BUDGET, &|p| {
            stages.lock().unwrap().push(p.stage)
        })
        .unwrap();
    // One connection, the call that breaks the invariant last (after the
    // verification the agent's spec gates it on).
    assert!(!shrunk.case.script.spans_connections(), "{}", shrunk.case);
    assert!(shrunk.case.actions() <= 3, "{}", shrunk.case);
    assert!(
        matches!(shrunk.case.script.actions().last(),
            Some(livesim::testing::Action::Call(c)) if c.name == "list_accounts"),
        "{}",
        shrunk.case
    );
    assert!(stages.into_inner().unwrap().contains(&"connections"));
}
