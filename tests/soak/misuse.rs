//! Misusing the soak gets a clear error: asked about an invariant it
//! never checked, an agent whose spec governs no session, a session whose
//! second run of a seed never finishes. Each error says what is wrong, and
//! the test pins its words.

use std::sync::atomic::{AtomicBool, Ordering};

use livesim::Seed;
use livesim::prelude::*;
use livesim::soak::{Agent, Soak, invariants};

use super::agent;
use livesim::testing::ScriptedServer;
use serde_json::json;

/// An echoing agent, its one scripted call answered at once.
fn echo() -> Soak {
    Soak::new("echo", || {
        Live::builder().tools(T::simple(
            "echo",
            "Says it back",
            |args| async move { Ok(args) },
        ))
    })
    .script(|_, _| {
        ScriptedServer::new()
            .hears("Say hi")
            .calls("echo", json!({"text": "hi"}))
            .says("hi")
    })
    .explore(false)
    .keep(false)
    .check_determinism_every(0)
}

/// Asking a run for the verdict of an invariant it never checked (a
/// misspelt name) is an error naming it and every name it did check.
#[test]
fn the_verdict_of_an_invariant_that_was_not_checked_is_an_error_listing_those_that_were() {
    let run = echo().run_seed(Seed::new(1));
    assert_eq!(run.verdict(), Ok(()), "the echo run passes");
    let err = run
        .verdict_of("wire-ordr")
        .expect_err("a misspelt invariant has a verdict");
    assert!(
        err.starts_with("`wire-ordr` was not checked (checked: "),
        "{err}"
    );
    for (name, _) in &run.verdicts {
        assert!(err.contains(name.as_str()), "{name} not listed: {err}");
    }
    assert!(err.contains(invariants::WIRE_ORDER), "{err}");
    assert_eq!(run.verdict_of(invariants::WIRE_ORDER), Ok(()));
}

/// An agent read with a spec file, its `spec` then taken away, governs
/// no session: `spec-as-written` fails and says so, rather than
/// passing a spec it never saw enforced.
#[test]
fn an_agent_whose_spec_file_governs_no_session_fails_spec_as_written() {
    let mut agent = agent("payment");
    assert!(agent.spec.is_some(), "sim/payment has a spec file");
    let soak = |agent: &Agent| Soak::agent(agent).check_determinism_every(0).keep(false);
    let governed = soak(&agent).run_seed(Seed::new(0));
    assert_eq!(governed.verdict_of(invariants::SPEC_AS_WRITTEN), Ok(()));

    agent.spec = None;
    let run = soak(&agent).run_seed(Seed::new(0));
    assert_eq!(
        run.verdict_of(invariants::SPEC_AS_WRITTEN),
        Err("the agent's spec file governs no session".to_string())
    );
    assert!(
        run.failures
            .iter()
            .any(|f| f.invariant == invariants::SPEC_AS_WRITTEN),
        "{:?}",
        run.failures
    );
}

/// Whether the tool of the next test has answered its scripted call:
/// the first run of the seed is over, and the next one is the second.
static FIRST_RUN_CALLED: AtomicBool = AtomicBool::new(false);

/// A session whose second run of a seed never finishes (its builder
/// panics the second time: a tool that merely hangs is cut off by the
/// run's own cap, and its run finishes, differently) fails
/// `determinism`, which says the first run finished and the second did
/// not, and why.
#[test]
fn a_second_run_that_never_finishes_fails_determinism() {
    let soak = Soak::new("breaks-the-second-time", || {
        assert!(
            !FIRST_RUN_CALLED.load(Ordering::SeqCst),
            "built again after the first run"
        );
        Live::builder().tools(T::simple(
            "count",
            "Counts its calls",
            |args: serde_json::Value| async move {
                // Only the script's call counts (calibration calls the
                // tool with other arguments).
                if args["counted"] == true {
                    FIRST_RUN_CALLED.store(true, Ordering::SeqCst);
                }
                Ok(json!({"ok": true}))
            },
        ))
    })
    .script(|_, _| {
        ScriptedServer::new()
            .hears("Count")
            .calls("count", json!({"counted": true}))
            .says("Counted.")
    })
    .explore(false)
    .keep(false)
    .check_determinism_every(1);
    let run = soak.run_seed(Seed::new(2));
    assert!(FIRST_RUN_CALLED.load(Ordering::SeqCst), "the first run ran");
    let err = run
        .verdict_of(invariants::DETERMINISM)
        .expect_err("a run that never finished was deterministic");
    assert!(
        err.starts_with("the first run finished, the second did not: panic at "),
        "{err}"
    );
    assert!(err.contains("built again after the first run"), "{err}");
    assert!(
        run.failures
            .iter()
            .any(|f| f.invariant == invariants::DETERMINISM),
        "{:?}",
        run.failures
    );
    // The first run itself was checked, and passed.
    assert_eq!(run.verdict_of(invariants::LIVENESS), Ok(()));
}
