//! `livesim sim run --html/--format json` and `livesim sim soak
//! --html/--format json`, run as a user runs them.

use std::path::Path;
use std::process::Command;

use super::{failing_weather, repo, temp};

fn livesim(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_livesim"))
        .current_dir(repo())
        .args(args)
        .output()
        .expect("the livesim binary runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `sim run --html` writes the page and still prints the run; `--format
/// json` prints the timeline as JSON and nothing else.
#[test]
fn sim_run_writes_its_timeline_and_prints_it_as_json() {
    let dir = temp("cli-run");
    let page = dir.join("payment-0x5.html");
    let (code, out, err) = livesim(&[
        "sim",
        "run",
        "payment",
        "--seed",
        "0x5",
        "--html",
        page.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("trace hash: "), "{out}");
    assert!(
        err.contains(&format!("timeline written to {}", page.display())),
        "{err}"
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<svg id=\"chart\""));
    assert!(html.contains("payment seed 0x5"));

    let (code, out, err) = livesim(&["sim", "run", "payment", "--seed", "0x5", "--format", "json"]);
    assert_eq!(code, Some(0), "{err}");
    let json: serde_json::Value = serde_json::from_str(&out).expect("stdout is JSON alone");
    assert_eq!(json["kind"], "timeline");
    assert_eq!(json["title"], "payment seed 0x5");
    assert_eq!(json["lanes"][0]["name"], "wire");
    assert!(json["entries"].as_array().unwrap().len() > 100);
    assert!(
        json["verdicts"]
            .as_array()
            .unwrap()
            .iter()
            .all(|v| v["failed"].is_null())
    );
}

/// A failing soak with `--html`: the page, each failure's timeline in the
/// folder beside it (linked from the page and named in the JSON), exit 1.
#[test]
fn sim_soak_writes_its_report_with_failure_timelines_beside_it() {
    let agent = failing_weather("cli-soak");
    let dir = temp("cli-soak-out");
    let page = dir.join("nightly report.html");
    let (code, out, err) = livesim(&[
        "sim",
        "soak",
        agent.to_str().unwrap(),
        "--seeds",
        "0..10",
        "--jobs",
        "1",
        "--html",
        page.to_str().unwrap(),
        "--format",
        "json",
        "--no-save",
    ]);
    assert_eq!(code, Some(1), "{out}{err}");
    let json: serde_json::Value = serde_json::from_str(&out).expect("stdout is JSON alone");
    assert_eq!(json["kind"], "soak_report");
    let failures = json["agents"][0]["failures"].as_array().unwrap();
    assert!(!failures.is_empty(), "{json:#}");
    let html = std::fs::read_to_string(&page).unwrap();
    for failure in failures.iter().take(livesim::timeline::FAILURES_SHOWN) {
        let link = failure["timeline"].as_str().unwrap();
        assert!(
            link.starts_with("nightly_report-timelines/weather-0x"),
            "{link}"
        );
        assert!(html.contains(&format!("href=\"{link}\"")), "{link}");
        let timeline = std::fs::read_to_string(dir.join(Path::new(link))).unwrap();
        assert!(timeline.contains("FAILED: before(get_forecast, get_weather)"));
        assert!(
            failure["script"]["actions"]
                .as_array()
                .is_some_and(|a| !a.is_empty())
        );
    }
    assert!(err.contains("report written to"), "{err}");

    // Saving failures while stdout carries JSON: each saved failure is
    // shrunk first, the report shows the shrunk script and draws its
    // timeline from the shrunk case; what was saved is told on stderr, and
    // stdout stays JSON alone.
    let corpus = dir.join("corpus");
    let shrunk_page = dir.join("shrunk.html");
    let (code, out, err) = livesim(&[
        "sim",
        "soak",
        agent.to_str().unwrap(),
        "--seeds",
        "0..10",
        "--format",
        "json",
        "--html",
        shrunk_page.to_str().unwrap(),
        "--save",
        corpus.to_str().unwrap(),
        "--save-limit",
        "1",
    ]);
    assert_eq!(code, Some(1), "{out}{err}");
    let json: serde_json::Value = serde_json::from_str(&out).expect("stdout is JSON alone");
    assert!(err.contains("saved "), "{err}");
    assert_eq!(
        std::fs::read_dir(corpus.join("weather")).unwrap().count(),
        1
    );
    let first = &json["agents"][0]["failures"][0];
    let before = first["shrunk_from"]
        .as_u64()
        .expect("the first failure was shrunk");
    let after = first["script"]["actions"].as_array().unwrap().len() as u64;
    assert!(after < before, "{after} actions, shrunk from {before}");
    let html = std::fs::read_to_string(&shrunk_page).unwrap();
    assert!(html.contains(&format!("({after} actions, shrunk from {before})")));
}
