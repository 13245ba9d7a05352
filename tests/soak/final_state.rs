//! Final-state goals: what the state must be once a run has settled. Each
//! form holds on a real run of `sim/payment` (which declares them all) and
//! fails, saying what the state was instead, on the same record with the
//! state or the tool runs changed; agent files naming a key no tool
//! writes, a tool that does not exist or an argument it does not take are
//! refused with the nearest valid name.

use livesim::Seed;
use livesim::soak::{Agent, ExecutionOutcome, FinalState, RunRecord, Soak, ToolExecution};
use serde_json::json;

use super::agent;
use super::scratch::scratch;

/// A payment run in which take_payment succeeded once, and the amount
/// it was paid with.
fn paid_run() -> (RunRecord, serde_json::Value) {
    let soak = Soak::agent(&agent("payment")).check_determinism_every(0);
    (0..200)
        .find_map(|s| {
            let run = soak.run_seed(Seed::new(s));
            let record = run.record?;
            let paid: Vec<_> = record
                .executions_of("take_payment")
                .filter(|e| matches!(e.outcome, ExecutionOutcome::Ok(_)))
                .map(|e| e.args["amount"].clone())
                .collect();
            (run.failures.is_empty() && paid.len() == 1).then(|| (record, paid[0].clone()))
        })
        .expect("a payment seed under 200 pays once and passes")
}

#[test]
fn each_form_holds_on_a_paid_run_and_says_what_the_state_was_instead() {
    let (good, amount) = paid_run();
    let (key, pay) = ("paid".to_string(), "take_payment".to_string());
    let set_iff = FinalState::SetIffOk {
        key: key.clone(),
        tool: pay.clone(),
    };
    let equals = FinalState::EqualsOkArg {
        key: key.clone(),
        tool: pay,
        arg: "amount".into(),
    };
    let once = FinalState::WritesAtMost {
        key: key.clone(),
        n: 1,
    };
    let after = FinalState::AfterOk {
        key,
        tool: "verify_identity".into(),
    };
    // What sim/payment's agent file declares.
    assert_eq!(
        agent("payment").final_state,
        [set_iff.clone(), equals.clone(), once.clone(), after.clone()]
    );
    for g in [&set_iff, &equals, &once, &after] {
        assert_eq!(g.check(&good), Ok(()), "{}", g.name());
    }

    // The payment's record lost: set iff fails.
    let mut lost = good.clone();
    lost.journal.retain(|m| m.key != "paid");
    let err = set_iff.check(&lost).unwrap_err();
    assert!(
        err.starts_with("paid ends unset though take_payment (call-"),
        "{err}"
    );

    // Recorded with another amount, then recorded twice.
    let mut wrong = good.clone();
    let last = wrong
        .journal
        .iter_mut()
        .rev()
        .find(|m| m.key == "paid")
        .unwrap();
    last.value = json!(1);
    let err = equals.check(&wrong).unwrap_err();
    assert!(
        err.starts_with("paid ends as 1, but the last take_payment that succeeded (call-")
            && err.ends_with(&format!("had amount = {amount}")),
        "{err}"
    );
    let mut twice = good.clone();
    let mut again = twice
        .journal
        .iter()
        .find(|m| m.key == "paid")
        .unwrap()
        .clone();
    again.seq = twice.journal.last().unwrap().seq + 1;
    twice.journal.push(again.clone());
    let err = once.check(&twice).unwrap_err();
    assert_eq!(
        err,
        format!(
            "paid was written 2 times (journal seq {}, {}); at most 1 allowed",
            good.journal.iter().find(|m| m.key == "paid").unwrap().seq,
            again.seq
        )
    );

    // No payment succeeded, yet paid is set.
    let mut unpaid = good.clone();
    for e in unpaid
        .executions
        .iter_mut()
        .filter(|e| e.tool == "take_payment")
    {
        e.outcome = ExecutionOutcome::Failed("declined".into());
    }
    let err = set_iff.check(&unpaid).unwrap_err();
    assert_eq!(
        err,
        format!("paid ends as {amount} though no run of take_payment succeeded")
    );
    assert_eq!(
        equals.check(&unpaid),
        Ok(()),
        "nothing succeeded: nothing to equal"
    );

    // Identity never verified: paid came before any verify_identity.
    let mut unverified = good.clone();
    unverified
        .executions
        .retain(|e| e.tool != "verify_identity");
    let err = after.check(&unverified).unwrap_err();
    assert!(
        err.starts_with("paid was first written at t=")
            && err.contains("(by tool:take_payment(call-")
            && err.ends_with("before any verify_identity had succeeded"),
        "{err}"
    );
}

#[test]
fn agent_files_refuse_final_state_goals_that_name_nothing_real() {
    let base: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string("sim/payment/agent.json").unwrap()).unwrap();
    let load = |test: &str, goals: serde_json::Value| -> String {
        let dir = scratch(&format!("final-{test}"));
        let spec = "payment.spec.json";
        std::fs::copy(format!("sim/payment/{spec}"), dir.join(spec)).unwrap();
        let mut agent = base.clone();
        agent["final_state"] = goals;
        std::fs::write(dir.join("agent.json"), agent.to_string()).unwrap();
        Agent::load(&dir)
            .map(|_| String::new())
            .unwrap_or_else(|e| e.to_string())
    };
    let err = load(
        "key",
        json!([{"key": "payd", "set_iff_ok": "take_payment"}]),
    );
    assert!(
        err.contains(
            "at final_state[0].key: no tool, extractor or resolver writes the state key \"payd\"; did you mean `paid`?"
        ),
        "{err}"
    );
    let err = load(
        "tool",
        json!([{"key": "paid", "after_ok": "verify_identiy"}]),
    );
    assert!(err.contains("did you mean `verify_identity`?"), "{err}");
    let err = load(
        "arg",
        json!([{"key": "paid", "equals_ok_arg": ["take_payment", "amont"]}]),
    );
    assert!(
        err.contains("take_payment has no argument \"amont\"; did you mean `amount`?"),
        "{err}"
    );
    let err = load(
        "two",
        json!([{"key": "paid", "after_ok": "take_payment", "writes_at_most": 1}]),
    );
    assert!(err.contains("expected a key and exactly one of"), "{err}");
    assert_eq!(
        load("good", json!([{"key": "verified", "writes_at_most": 3}])),
        ""
    );
}

/// Runs of one tool may overlap (a refunds desk whose flow observes
/// rather than refuses lets a second refund run while the first does), and
/// each writes as it succeeds: the key ends with the argument of the run
/// that finished last, whichever started first.
#[test]
fn the_key_equals_the_argument_of_the_run_that_finished_last() {
    let refunds = agent("refunds");
    let equals = FinalState::EqualsOkArg {
        key: "refunded".into(),
        tool: "issue_refund".into(),
        arg: "amount".into(),
    };
    assert!(refunds.final_state.contains(&equals));
    let soak = Soak::agent(&refunds).check_determinism_every(0);
    // A passing run in which a refund that started first finished last,
    // after one with another amount.
    let (record, first, second) = (0..400)
        .find_map(|s| {
            let run = soak.run_seed(Seed::new(s));
            let record = run.record?;
            let ok: Vec<ToolExecution> = record
                .executions_of("issue_refund")
                .filter(|e| matches!(e.outcome, ExecutionOutcome::Ok(_)))
                .cloned()
                .collect();
            let last = ok.iter().filter_map(|e| e.finished).max()?;
            // Runs are recorded in the order they started.
            let at = ok.iter().position(|e| e.finished == Some(last))?;
            let first = ok[at].clone();
            let second = ok[at + 1..]
                .iter()
                .find(|e| e.finished < first.finished && e.args["amount"] != first.args["amount"])?
                .clone();
            run.failures.is_empty().then_some((record, first, second))
        })
        .expect("a refunds seed under 400 has two overlapping refunds finishing out of order");
    assert_eq!(equals.check(&record), Ok(()));

    // Had the second finished last, the key should have ended as its amount.
    let finish = |at: std::time::Duration| {
        let mut changed = record.clone();
        for e in &mut changed.executions {
            if e.call_id == second.call_id {
                e.finished = Some(at);
            }
        }
        changed
    };
    let later = first.finished.unwrap() + std::time::Duration::from_millis(1);
    let err = equals.check(&finish(later)).unwrap_err();
    assert_eq!(
        err,
        format!(
            "refunded ends as {}, but the last issue_refund that succeeded ({}) had amount = {}",
            first.args["amount"],
            second.call_id.as_deref().unwrap(),
            second.args["amount"]
        )
    );
    // Finished at the same instant: either may have written last.
    assert_eq!(equals.check(&finish(first.finished.unwrap())), Ok(()));
}
