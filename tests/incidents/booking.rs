//! The booking incident end to end: a governed session writes its journal
//! with `FileJournalSink`, and every step after that is the CLI.

use std::path::{Path, PathBuf};

use livesim::flow::CompiledConversation;
use livesim::simulation::{Scenario, Step};
use serde_json::Value;

use crate::booking_session::{self, SPEC};
use crate::cli::{arg, livesim, livesim_in, package, scratch};

/// The stricter spec: `book_table` also needs `manager_approved`.
fn strict_spec() -> PathBuf {
    package().join("tests/fixtures/flow-ci/strict/booking.spec.json")
}

/// Records script `name` under the sim/ booking spec into `journal`.
fn record(name: &str, journal: &Path) {
    let convo = CompiledConversation::read(SPEC).expect("the booking spec reads");
    let script = booking_session::script(name).expect("a known script");
    booking_session::record(script, &convo, journal).expect("the session records its journal");
}

/// A corpus folder: `spec` copied as `booking.spec.json`, and `scenario`
/// saved beside it as `booking.incident.scenario.json`.
fn corpus(dir: &Path, spec: &Path, scenario: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::copy(spec, dir.join("booking.spec.json")).unwrap();
    std::fs::write(dir.join("booking.incident.scenario.json"), scenario).unwrap();
}

#[test]
fn the_booking_incident_becomes_a_regression_test() {
    let dir = scratch("booking-incident");
    let journal = dir.join("user-123.journal.jsonl");
    record("incident", &journal);

    // The scenario the journal implies.
    let out = livesim(&[
        "session",
        "scenario",
        &arg(&journal),
        "--name",
        "booking-incident",
    ])
    .expect(0);
    let scenario = Scenario::from_json(&out.stdout, "stdout").unwrap();
    assert_eq!(scenario.name, "booking-incident");
    let booking = Step::ExpectAllowed("book_table".into());
    let at = scenario
        .steps
        .iter()
        .position(|step| step == &booking)
        .expect("the recorded booking is a step");
    let turn = scenario.steps[..at]
        .iter()
        .filter(|step| **step == Step::Turn)
        .count();

    // `flow ci` passes it beside its own spec, and fails it at the booking
    // beside the stricter one.
    let own = dir.join("own");
    corpus(&own, Path::new(SPEC), &out.stdout);
    let out = livesim(&["flow", "ci", &arg(&own)]).expect(0);
    assert!(
        out.stdout
            .starts_with("PASS  booking.incident.scenario.json against booking.spec.json: "),
        "{}",
        out.stdout
    );
    let strict = dir.join("strict");
    corpus(
        &strict,
        &strict_spec(),
        &std::fs::read_to_string(own.join("booking.incident.scenario.json")).unwrap(),
    );
    let out = livesim(&[
        "flow",
        "ci",
        &arg(&strict),
        "--junit",
        &arg(&dir.join("ci.xml")),
    ])
    .expect(1);
    let failing = format!(
        "FAIL  booking.incident.scenario.json against booking.spec.json: failed at steps[{at}] \
         {{\"expect_allowed\":\"book_table\"}}: expected book_table to be allowed, but the flow \
         refused it: book_table is not allowed now: stage book allows it only when \
         all(is_true(confirmed), is_true(manager_approved)), and manager_approved is not set\n"
    );
    assert!(out.stdout.starts_with(&failing), "{}", out.stdout);
    let junit = std::fs::read_to_string(dir.join("ci.xml")).unwrap();
    let report = quick_junit::Report::deserialize_from_str(&junit).unwrap();
    let case = &report.test_suites[0].test_cases[0];
    assert_eq!(case.name.as_str(), "incident");
    let quick_junit::TestCaseStatus::NonSuccess { message, .. } = &case.status else {
        panic!("the incident fails in the JUnit report too: {junit}");
    };
    let message = message.as_ref().map(|m| m.as_str()).unwrap_or_default();
    assert!(
        message.starts_with(&format!(
            "failed at steps[{at}] {{\"expect_allowed\":\"book_table\"}}"
        )),
        "{message}"
    );

    // `flow replay`: clean against its own spec, DIVERGED at the booking
    // against the stricter one.
    let out = livesim(&["flow", "replay", SPEC, "--journal", &arg(&journal)]).expect(0);
    assert!(
        out.stdout
            .ends_with("CLEAN: the spec reproduces all 6 recorded decisions\n"),
        "{}",
        out.stdout
    );
    let out = livesim(&[
        "flow",
        "replay",
        &arg(&strict_spec()),
        "--journal",
        &arg(&journal),
    ])
    .expect(1);
    let diverged: Vec<&str> = out
        .stdout
        .lines()
        .filter(|line| line.starts_with("DIVERGED"))
        .collect();
    assert_eq!(
        diverged[0],
        format!(
            "DIVERGED steps[{at}] {{\"expect_allowed\":\"book_table\"}}: recorded admitted; the \
             spec refuses it: book_table is not allowed now: stage book allows it only when \
             all(is_true(confirmed), is_true(manager_approved)), and manager_approved is not set"
        ),
        "{}",
        out.stdout
    );
    // The booking never happened under the stricter spec, so its stage is
    // still active where the recording had none.
    assert!(
        diverged[1].contains("recorded active []; the spec has [book] active"),
        "{}",
        out.stdout
    );
    assert_eq!(
        diverged.last(),
        Some(&"DIVERGED at 2 of 6 recorded decisions")
    );

    // `flow why` at the booking's turn names the missing guard.
    let why = |spec: &str| {
        let out = livesim(&[
            "flow",
            "why",
            spec,
            "--journal",
            &arg(&journal),
            "--turn",
            &turn.to_string(),
            "--tool",
            "book_table",
        ])
        .expect(0);
        serde_json::from_str::<Value>(&out.stdout).unwrap()
    };
    let strict_answer = why(&arg(&strict_spec()));
    assert_eq!(strict_answer["admitted"], false);
    let reason = strict_answer["reason"].as_str().unwrap();
    assert!(reason.contains("is_true(manager_approved)"), "{reason}");
    assert!(reason.ends_with("manager_approved is not set"), "{reason}");
    assert_eq!(why(SPEC)["admitted"], true);
}

/// Every script the sim/ corpus was recorded from, recorded again, makes a
/// scenario that passes beside the sim/ spec.
#[test]
fn every_booking_script_records_a_passing_scenario() {
    let dir = scratch("booking-scripts");
    std::fs::copy(SPEC, dir.join("booking.spec.json")).unwrap();
    for name in booking_session::SCRIPTS {
        let journal = dir.join(format!("{name}.journal.jsonl"));
        record(name, &journal);
        let out = livesim(&["session", "scenario", &arg(&journal)]).expect(0);
        assert!(
            out.stdout.contains(&format!("\"name\": \"{name}\"")),
            "{}",
            out.stdout
        );
        std::fs::write(
            dir.join(format!("booking.{name}.scenario.json")),
            &out.stdout,
        )
        .unwrap();
    }
    let out = livesim(&["flow", "ci", &arg(&dir)]).expect(0);
    assert!(
        out.stdout.contains("flow ci: 3 passed, 0 failed, 0 errors"),
        "{}",
        out.stdout
    );
}

/// "Incidents to regression tests" in `docs/guide/governance.md` shows these
/// commands with their output; run again in a folder laid out as there,
/// they print the same.
#[test]
fn the_readme_walkthrough_prints_what_the_readme_shows() {
    let readme = std::fs::read_to_string(package().join("docs/guide/governance.md")).unwrap();
    let section = readme
        .split("## Incidents to regression tests")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("docs/guide/governance.md has the section");
    let shown: Vec<&str> = section
        .split("```text\n")
        .skip(1)
        .map(|block| block.split("```").next().unwrap())
        .collect();

    // The folder: the sim/ booking corpus, the stricter spec, the journal.
    let dir = scratch("readme");
    std::fs::create_dir_all(dir.join("sim/booking")).unwrap();
    std::fs::create_dir_all(dir.join("strict")).unwrap();
    let sim = package().join("sim/booking");
    for file in [
        "booking.spec.json",
        "booking.escalation.scenario.json",
        "booking.refused-early-booking.scenario.json",
    ] {
        std::fs::copy(sim.join(file), dir.join("sim/booking").join(file)).unwrap();
    }
    let journal = dir.join("user-123.journal.jsonl");
    record("incident", &journal);
    let run = |args: &[&str]| livesim_in(&dir, args, b"");

    let head: String = std::fs::read_to_string(&journal)
        .unwrap()
        .lines()
        .take(3)
        .map(|line| format!("{line}\n"))
        .collect();
    assert_eq!(shown[0], head);
    let scenario = run(&[
        "session",
        "scenario",
        "user-123.journal.jsonl",
        "--name",
        "booking-incident",
    ])
    .expect(0)
    .stdout;
    assert_eq!(shown[1], scenario);
    std::fs::write(
        dir.join("sim/booking/booking.incident.scenario.json"),
        &scenario,
    )
    .unwrap();
    assert_eq!(shown[2], run(&["flow", "ci"]).expect(0).stdout);
    std::fs::copy(strict_spec(), dir.join("strict/booking.spec.json")).unwrap();
    std::fs::write(dir.join("strict/booking.incident.scenario.json"), &scenario).unwrap();
    assert_eq!(
        shown[3],
        run(&["flow", "ci", "strict", "--junit", "ci.xml"])
            .expect(1)
            .stdout
    );
    let replay = [
        "flow",
        "replay",
        "strict/booking.spec.json",
        "--journal",
        "user-123.journal.jsonl",
    ];
    assert_eq!(shown[4], run(&replay).expect(1).stdout);
    let why = [
        "flow",
        "why",
        "strict/booking.spec.json",
        "--journal",
        "user-123.journal.jsonl",
        "--turn",
        "2",
        "--tool",
        "book_table",
    ];
    assert_eq!(shown[5], run(&why).expect(0).stdout);
    assert_eq!(shown.len(), 6);
}
