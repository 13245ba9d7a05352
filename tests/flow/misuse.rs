//! Misusing the API gets a clear error: a conversation with an empty slot
//! or input key, a spec file that gates a tool it does not allow, and
//! (behind the `simulation` feature) a soak asked about an invariant it
//! never checked, an agent whose spec governs no session, and a session
//! whose second run of a seed never finishes. Each error says what is
//! wrong, and the test pins its words.

use livesim::flow::{Conversation, FlowError, Guard, Spec, resolver};
use serde_json::json;

/// A slot declared with an empty key is refused at compile time, naming
/// the stage it is in.
#[test]
fn a_slot_with_an_empty_key_is_refused() {
    let err = Conversation::new()
        .stage("party")
        .allow(["set_party"])
        .slot("")
        .compile()
        .expect_err("an empty slot key compiles");
    assert_eq!(
        err,
        FlowError::Invalid {
            noun: "stage",
            step: "party".into(),
            problem: "a slot has an empty key".into(),
        }
    );
    assert_eq!(err.to_string(), "stage `party`: a slot has an empty key");
}

/// A resolved slot whose resolver reads an empty key is refused at compile
/// time, naming the stage and the slot.
#[test]
fn a_resolved_slot_that_reads_an_empty_key_is_refused() {
    let err = Conversation::new()
        .stage("account")
        .slot("account_id")
        .resolve_slot(
            "balance",
            ["account_id", ""],
            resolver(|_| async move { Ok(json!(1200)) }),
        )
        .compile()
        .expect_err("a resolver reading an empty key compiles");
    assert_eq!(
        err.to_string(),
        "stage `account`: slot balance is resolved from an empty key"
    );
    assert!(matches!(err, FlowError::Invalid { noun: "stage", .. }));
}

/// A flow spec file that gates a tool its step does not allow is refused
/// with the file, the line and column of the step, and what to do (the
/// builder's `gate` allows the tool itself, so only a file can say this).
#[test]
fn a_spec_file_that_gates_a_tool_it_does_not_allow_is_refused() {
    let text = r#"{"v": 1, "kind": "flow", "steps": [
  {"id": "verify", "allow": ["verify_identity"], "done": {"called_ok": "verify_identity"}},
  {"id": "pay", "after": ["verify"], "allow": ["get_balance"],
   "gates": {"take_payment": {"is_true": "amount_confirmed"}}}
]}"#;
    let err = Spec::from_json(text, "pay.spec.json").expect_err("the gate was taken");
    assert_eq!(err.file, "pay.spec.json");
    assert_eq!(err.path.as_deref(), Some("steps[1]"));
    assert_eq!(err.position, Some((3, 3)));
    assert_eq!(
        err.problem,
        "step `pay`: take_payment has a gate but is not in allow: allow it too"
    );
    assert_eq!(
        err.to_string(),
        "pay.spec.json:3:3: at steps[1]: step `pay`: take_payment has a gate but is not in \
         allow: allow it too"
    );
    // The same step with the tool allowed reads.
    let allowed = text.replace(r#"["get_balance"]"#, r#"["get_balance", "take_payment"]"#);
    let spec = Spec::from_json(&allowed, "pay.spec.json").expect("the fixed file reads");
    assert_eq!(
        spec.flow().step("pay").expect("step pay").gates()["take_payment"],
        Guard::is_true("amount_confirmed")
    );
}

/// The soak's side of misuse (the soak is behind the `simulation`
/// feature; these tests would sit as well in the soak binary).
#[cfg(feature = "simulation")]
mod soak {
    use std::sync::atomic::{AtomicBool, Ordering};

    use livesim::Seed;
    use livesim::prelude::*;
    use livesim::soak::{Agent, Soak, invariants};
    use livesim::testing::ScriptedServer;
    use serde_json::json;

    /// An agent of `sim/`, read from this repository.
    fn agent(name: &str) -> Agent {
        Agent::load(format!("{}/sim/{name}", env!("CARGO_MANIFEST_DIR")))
            .unwrap_or_else(|e| panic!("{e}"))
    }

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
}
