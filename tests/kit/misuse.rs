//! Misusing the kit gets a clear error: a script file with an action that
//! cannot be played, a script expecting a resumption the session does not
//! make, and a simulated tool called with arguments that do not fit its
//! parameters (or an agent file whose example does not). Each error says
//! what is wrong and where, and the test pins its words.

use std::future::Future;
use std::path::PathBuf;

use livesim::Seed;
use livesim::executor::Simulation;
use livesim::prelude::*;
use livesim::session::Resumption;
use livesim::soak::{Agent, Faults};
use livesim::testing::{Action, PlayError, ScriptError, ScriptedServer};
use serde_json::{Value, json};

/// Runs `test` under a simulation of seed 5 (virtual time) and returns
/// what it returned.
fn simulated<T: 'static, F: Future<Output = T> + 'static>(test: impl FnOnce() -> F) -> T {
    Simulation::new(Seed::new(5))
        .run(test)
        .expect("the simulation finishes")
        .value
}

/// The message of a script that cannot be read.
fn refused(text: &str) -> String {
    match ScriptedServer::from_json_str(text, "misuse.json") {
        Err(ScriptError::Invalid { origin, message }) => {
            assert_eq!(origin, "misuse.json");
            message
        }
        Err(other) => panic!("not an invalid script: {other}"),
        Ok(script) => panic!("read: {:?}", script.actions()),
    }
}

/// A script file whose `send` is not a JSON object is refused, naming the
/// action, its line and column, and what it holds.
#[test]
fn a_script_file_that_sends_a_non_object_is_refused() {
    let message = refused(
        r#"{"v": 1, "actions": [
  {"send": {"serverContent": {"turnComplete": true}}},
  {"send": [1, 2]}
]}"#,
    );
    assert_eq!(
        message,
        "action #2 at line 3, column 3: a server message must be a JSON object, not [1,2]"
    );
}

/// A script file with an empty `call_many` is refused, naming the action.
#[test]
fn a_script_file_with_an_empty_call_many_is_refused() {
    let message = refused(r#"{"v": 1, "actions": [{"call_many": []}]}"#);
    assert_eq!(
        message,
        "action #1 at line 1, column 22: call_many needs calls"
    );
}

/// A script file with a call of `call_many` that has no id is refused as
/// a lone `call` without one is, naming the action and the call.
#[test]
fn a_script_file_with_a_call_many_member_without_an_id_is_refused() {
    let message = refused(
        r#"{"v": 1, "actions": [
  {"call_many": [{"id": "c1", "name": "a"}, {"id": "", "name": "b"}]}
]}"#,
    );
    assert_eq!(
        message,
        "action #1 at line 2, column 3: call #2 of call_many: a call needs an id and a name"
    );
}

/// A script file whose `resumption_update` has an empty handle is refused,
/// saying to leave the handle out for an update without one.
#[test]
fn a_script_file_with_an_empty_resumption_handle_is_refused() {
    let message = refused(
        r#"{"v": 1, "actions": [
  {"resumption_update": {"handle": "", "resumable": true}}
]}"#,
    );
    assert_eq!(
        message,
        "action #1 at line 2, column 3: resumption_update's handle is empty (leave it out for an \
         update without one)"
    );
    // Left out, it reads: an update without a handle.
    let script = ScriptedServer::from_json_str(
        r#"{"v": 1, "actions": [{"resumption_update": {"resumable": false}}]}"#,
        "misuse.json",
    )
    .expect("an update without a handle reads");
    assert_eq!(script.actions().len(), 1);
}

/// A script that expects the session to resume its handle, played against
/// a session that starts fresh instead (the server's close said the
/// session was not found, so the session dropped the handle), fails the
/// play with a replay error naming the connection and the action that
/// issued the handle, never the handle itself.
#[test]
fn a_script_expecting_a_resumption_the_session_does_not_make_fails_the_play() {
    let err = simulated(|| async {
        ScriptedServer::new()
            .named("resumes")
            .resumption_update("h-secret-1", true)
            .close(1008, "BidiGenerateContent session not found")
            .reconnect_resuming("h-secret-1")
            .says("Welcome back.")
            .play(Live::builder().resumption(Resumption::on()))
            .await
            .err()
    })
    .expect("the play passed");
    let PlayError::Replay(error) = err else {
        panic!("not a replay error: {err}");
    };
    assert_eq!(error.script, "resumes");
    assert_eq!(
        error.problem,
        "connection #2's setup resumes no handle; the script expects it to resume the handle of \
         action #1"
    );
    assert!(!error.to_string().contains("h-secret-1"), "{error}");
}

/// A script built with the builder (which does not check what the file
/// reader checks) that reconnects to a handle it issued as not resumable,
/// played against a session that starts fresh, fails saying no resumable
/// update issued the handle it expects (it once ended with nothing).
#[test]
fn a_built_script_resuming_a_handle_it_never_issued_says_so() {
    let err = simulated(|| async {
        ScriptedServer::new()
            .named("resumes")
            .resumption_update("h-secret-1", false)
            .close(1008, "BidiGenerateContent session not found")
            .reconnect_resuming("h-secret-1")
            .says("Welcome back.")
            .play(Live::builder().resumption(Resumption::on()))
            .await
            .err()
    })
    .expect("the play passed");
    let PlayError::Replay(error) = err else {
        panic!("not a replay error: {err}");
    };
    assert!(
        error
            .problem
            .starts_with("connection #2's setup resumes no handle"),
        "{error}"
    );
    assert!(
        !error.problem.trim_end().ends_with("resume"),
        "the problem names no handle: {error}"
    );
    assert!(error.problem.contains("resumable"), "{error}");
}

/// The payment agent of `sim/`, read from this repository.
fn payment_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("sim/payment")
}

/// The error each call of `take_payment` (the payment agent's simulated
/// tool, which declares `amount` and `card_last4`) gets, for each of
/// `calls`' arguments, in a scripted session.
fn take_payment_errors(calls: Vec<Value>) -> Vec<Value> {
    let agent = Agent::load(payment_dir()).expect("sim/payment loads");
    let tool = agent
        .tools
        .iter()
        .find(|t| t.name == "take_payment")
        .expect("sim/payment has take_payment")
        .clone();
    simulated(move || async move {
        let mut script = ScriptedServer::new().hears("Take it from my card.");
        for args in calls {
            script = script.calls("take_payment", args);
        }
        let state = State::new();
        let run = script
            .says("Done.")
            .play(Live::builder().tools(tool.build(&state, &Faults::calm())))
            .await
            .expect("the script plays");
        run.tool_responses()
            .into_iter()
            .map(|r| r["response"]["error"].clone())
            .collect()
    })
}

/// A simulated tool called with arguments that are not an object, or with
/// one it does not declare, answers with an error saying which, while
/// fitting arguments get no error.
#[test]
fn a_simulated_tool_refuses_arguments_that_do_not_fit_its_parameters() {
    let errors = take_payment_errors(vec![
        json!("42.5 from card 4242"),
        json!({"amount": 42.5, "card_last4": "4242", "tip": 5}),
        json!({"amount": 42.5, "card_last4": "4242"}),
    ]);
    assert_eq!(
        errors,
        [
            json!(
                "invalid arguments for take_payment: arguments must be an object, got \"42.5 from card 4242\""
            ),
            json!("invalid arguments for take_payment: unexpected argument `tip`"),
            Value::Null,
        ]
    );
}

/// An agent file whose tool example holds an argument the tool's
/// parameters do not declare is refused, naming the file, the line, the
/// example and the argument.
#[test]
fn an_agent_file_example_with_an_undeclared_argument_is_refused() {
    let dir = payment_dir();
    let text = std::fs::read_to_string(dir.join("agent.json")).expect("sim/payment/agent.json");
    let fitting = r#"[{"amount": 42.5, "card_last4": "4242"}]"#;
    assert!(text.contains(fitting));
    let misfit = text.replace(
        fitting,
        r#"[{"amount": 42.5, "card_last4": "4242", "tip": 5}]"#,
    );
    let err = Agent::from_json("payment", &dir, &misfit, "agent.json")
        .expect_err("an example with an undeclared argument loads");
    assert_eq!(
        err.problem,
        "this example does not fit the parameters: unexpected argument `tip`"
    );
    assert_eq!(err.path.as_deref(), Some("tools[2].examples[0]"));
    assert!(err.to_string().starts_with("agent.json:"), "{err}");
    assert!(Agent::from_json("payment", &dir, &text, "agent.json").is_ok());
}

/// A built script the file reader would refuse (an empty `call_many`, an
/// empty handle) is not saved: the error names the action and says why,
/// and no file is written; the same script without that action saves and
/// loads back.
#[test]
fn a_built_script_that_could_not_load_back_is_not_saved() {
    let folder = tempfile::tempdir().expect("a scratch folder");
    let path = folder.path().join("script.json");
    let good = ScriptedServer::new().hears("Hello?").says("Hi.");
    for (bad, wrong) in [
        (
            good.clone().action(Action::CallMany(vec![])),
            "call_many needs calls",
        ),
        (
            good.clone().resumption_update("", true),
            "resumption_update's handle is empty",
        ),
    ] {
        match bad.save(&path) {
            Err(ScriptError::Invalid { origin, message }) => {
                assert_eq!(origin, path.display().to_string());
                // The action after the good script's own.
                let action = format!("action #{}: {wrong}", good.actions().len() + 1);
                assert!(message.starts_with(&action), "{message}");
                assert!(message.ends_with("not written, since a script file must load back"));
            }
            other => panic!("saved: {other:?}"),
        }
        assert!(!path.exists(), "a refused script left a file");
    }
    good.save(&path).expect("a good script saves");
    let loaded = ScriptedServer::load(&path).expect("and loads back");
    assert_eq!(loaded.actions(), good.actions());
}
