//! `livesim flow ci`: the sim/ corpus, failing fixtures, JUnit read back,
//! and corpora with files that cannot be used.

use std::path::Path;

use livesim::simulation::{Corpus, ScenarioOutcome};
use quick_junit::{NonSuccessKind, Report, TestCaseStatus};
use serde_json::Value;

use crate::cli::{arg, livesim, package, scratch};

/// The scenario files under `dir`, sub-folders included.
fn scenario_files(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(scenario_files(&path));
        } else if path.to_string_lossy().ends_with(".scenario.json") {
            found.push(
                path.strip_prefix(package().join("sim"))
                    .unwrap()
                    .display()
                    .to_string(),
            );
        }
    }
    found
}

#[test]
fn the_sim_corpus_passes() {
    let out = livesim(&["flow", "ci"]).expect(0);
    let scenarios = scenario_files(&package().join("sim"));
    assert!(scenarios.len() >= 2, "{scenarios:?}");
    for scenario in &scenarios {
        assert!(
            out.stdout.contains(&format!("PASS  {scenario} against ")),
            "{scenario}: {}",
            out.stdout
        );
    }
    let summary = format!(
        "flow ci: {n} passed, 0 failed, 0 errors ({n} scenarios, ",
        n = scenarios.len()
    );
    assert!(out.stdout.contains(&summary), "{}", out.stdout);
}

#[test]
fn failing_fixtures_fail_and_the_junit_file_says_where() {
    let dir = scratch("ci-junit");
    let junit = dir.join("ci.xml");
    let out = livesim(&[
        "flow",
        "ci",
        "tests/fixtures/flow-ci",
        "--junit",
        &arg(&junit),
    ])
    // The scenario with no spec beside it cannot run: exit 2 outranks the
    // failure's 1.
    .expect(2);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(
        lines[0],
        "ERROR orphan/walk-in.first-visit.scenario.json against orphan/walk-in.spec.json: no spec \
         beside it: a scenario `<name>.<label>.scenario.json` runs against `<name>.spec.json` in \
         the same folder, and there is no walk-in.spec.json"
    );
    assert!(
        lines[1].starts_with(
            "PASS  strict/booking.escalation.scenario.json against strict/booking.spec.json"
        ),
        "{}",
        out.stdout
    );
    assert!(
        lines[2].starts_with(
            "FAIL  strict/booking.incident.scenario.json against strict/booking.spec.json: failed \
             at steps[10] {\"expect_allowed\":\"book_table\"}: "
        ),
        "{}",
        out.stdout
    );
    assert_eq!(
        lines[3],
        "flow ci: 1 passed, 1 failed, 1 error (3 scenarios, 1 spec under tests/fixtures/flow-ci)"
    );

    let report = Report::deserialize_from_str(&std::fs::read_to_string(&junit).unwrap()).unwrap();
    assert_eq!((report.tests, report.failures, report.errors), (3, 1, 1));
    let cases: Vec<_> = report
        .test_suites
        .iter()
        .flat_map(|suite| &suite.test_cases)
        .collect();
    assert_eq!(cases.len(), 3, "one test case per scenario");
    let incident = cases
        .iter()
        .find(|case| case.name.as_str() == "incident")
        .unwrap();
    assert_eq!(
        incident.classname.as_ref().map(|c| c.as_str()),
        Some("strict/booking")
    );
    let TestCaseStatus::NonSuccess {
        kind: NonSuccessKind::Failure,
        message: Some(message),
        ..
    } = &incident.status
    else {
        panic!("the incident is a failure: {:?}", incident.status);
    };
    assert!(
        message
            .as_str()
            .starts_with("failed at steps[10] {\"expect_allowed\":\"book_table\"}: expected book_table to be allowed"),
        "{}",
        message.as_str()
    );
    let orphan = cases
        .iter()
        .find(|case| case.name.as_str() == "first-visit")
        .unwrap();
    assert!(matches!(
        orphan.status,
        TestCaseStatus::NonSuccess {
            kind: NonSuccessKind::Error,
            ..
        }
    ));
    let escalation = cases
        .iter()
        .find(|case| case.name.as_str() == "escalation")
        .unwrap();
    assert!(matches!(escalation.status, TestCaseStatus::Success { .. }));
}

#[test]
fn a_failing_scenario_alone_exits_1_and_json_names_the_step() {
    let out = livesim(&[
        "flow",
        "ci",
        "tests/fixtures/flow-ci/strict",
        "--format",
        "json",
    ])
    .expect(1);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    let results = report["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    let failed = results
        .iter()
        .find(|r| r["outcome"]["status"] == "failed")
        .unwrap();
    assert_eq!(failed["label"], "incident");
    assert_eq!(failed["outcome"]["failure"]["index"], 10);
    assert_eq!(
        failed["outcome"]["failure"]["step"],
        serde_json::json!({"expect_allowed": "book_table"})
    );
}

#[test]
fn files_that_cannot_be_used_are_errors_naming_file_and_line() {
    let dir = scratch("ci-broken");
    let spec = std::fs::read_to_string(package().join("sim/booking/booking.spec.json")).unwrap();
    let scenario =
        std::fs::read_to_string(package().join("sim/booking/booking.incident.scenario.json"))
            .unwrap();
    // A good spec with a broken scenario beside it.
    std::fs::create_dir_all(dir.join("good")).unwrap();
    std::fs::write(dir.join("good/booking.spec.json"), &spec).unwrap();
    std::fs::write(
        dir.join("good/booking.broken.scenario.json"),
        "{\"name\": \"x\", \"steps\": [\n  \"turn\",\n  {\"expect_alowed\": \"a\"}\n]}",
    )
    .unwrap();
    // A spec that does not compile, with a scenario beside it.
    std::fs::create_dir_all(dir.join("bad")).unwrap();
    std::fs::write(
        dir.join("bad/pay.spec.json"),
        "{\"v\": 1, \"kind\": \"flow\",\n \"steps\": [{\"id\": \"pay\", \"after\": [\"verify\"]}]}",
    )
    .unwrap();
    std::fs::write(dir.join("bad/pay.first.scenario.json"), &scenario).unwrap();
    // Ignored: other files, and hidden folders.
    std::fs::write(dir.join("good/booking.agent.json"), "not a scenario").unwrap();
    std::fs::create_dir_all(dir.join(".cache")).unwrap();
    std::fs::write(dir.join(".cache/x.y.scenario.json"), "{").unwrap();

    let out = livesim(&["flow", "ci", &arg(&dir)]).expect(2);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{}", out.stdout);
    assert!(
        lines[0].starts_with(&format!(
            "ERROR bad/pay.first.scenario.json against bad/pay.spec.json: its spec cannot be \
             used: {}:2:35: at steps[0].after: step `pay` comes after `verify`",
            dir.join("bad/pay.spec.json").display()
        )),
        "{}",
        out.stdout
    );
    assert!(
        lines[1].starts_with(&format!(
            "ERROR good/booking.broken.scenario.json against good/booking.spec.json: {}:3:3: at \
             steps[1]: unknown variant `expect_alowed`",
            dir.join("good/booking.broken.scenario.json").display()
        )),
        "{}",
        out.stdout
    );
    assert!(lines[2].starts_with("flow ci: 0 passed, 0 failed, 2 errors"));
}

#[test]
fn a_folder_with_nothing_to_run_is_an_error() {
    let dir = scratch("ci-empty");
    std::fs::write(
        dir.join("booking.spec.json"),
        std::fs::read_to_string(package().join("sim/booking/booking.spec.json")).unwrap(),
    )
    .unwrap();
    let out = livesim(&["flow", "ci", &arg(&dir)]).expect(2);
    assert!(
        out.stderr
            .contains("no scenario files (`<name>.<label>.scenario.json`) under it"),
        "{}",
        out.stderr
    );
    let out = livesim(&["flow", "ci", "no/such/folder"]).expect(2);
    assert!(
        out.stderr
            .starts_with("livesim flow ci: no/such/folder: cannot read it"),
        "{}",
        out.stderr
    );
}

/// A spec name with dots: the longest name with a spec beside the scenario
/// wins, and the rest is the label.
#[test]
fn a_scenario_runs_against_the_longest_spec_name_beside_it() {
    let dir = scratch("ci-dotted");
    let spec = std::fs::read_to_string(package().join("sim/booking/booking.spec.json")).unwrap();
    let scenario =
        std::fs::read_to_string(package().join("sim/booking/booking.incident.scenario.json"))
            .unwrap();
    std::fs::write(dir.join("booking.spec.json"), &spec).unwrap();
    std::fs::write(dir.join("booking.v2.spec.json"), &spec).unwrap();
    std::fs::write(dir.join("booking.v2.incident.scenario.json"), &scenario).unwrap();
    std::fs::write(dir.join("booking.scenario.json"), &scenario).unwrap();
    let report = Corpus::discover(&*dir).unwrap().run();
    let runs: Vec<(String, String, bool)> = report
        .results
        .iter()
        .map(|r| {
            (
                r.spec.display().to_string(),
                r.label.clone(),
                matches!(r.outcome, ScenarioOutcome::Passed { .. }),
            )
        })
        .collect();
    assert_eq!(
        runs,
        [
            ("booking.spec.json".to_string(), String::new(), true),
            (
                "booking.v2.spec.json".to_string(),
                "incident".to_string(),
                true
            ),
        ]
    );
}

#[test]
fn a_junit_file_that_cannot_be_written_is_an_error_after_the_results() {
    let dir = scratch("ci-junit-unwritable");
    let out = livesim(&[
        "flow",
        "ci",
        "--junit",
        &arg(&dir.join("no/such/folder/ci.xml")),
    ])
    .expect(2);
    assert!(out.stdout.contains("flow ci: "), "{}", out.stdout);
    assert!(
        out.stderr
            .contains("ci.xml: cannot write the JUnit report: "),
        "{}",
        out.stderr
    );
}
