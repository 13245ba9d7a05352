//! `livesim flow ci`: folders reached through links, and scenario files
//! that say a key twice.

use std::os::unix::fs::symlink;

use crate::{arg, livesim_in, refused, repo, temp};

/// A folder holding the payment spec, the passing scenario (when `good`)
/// and `scenarios` (file name, text).
fn payment_folder(dir: &std::path::Path, good: bool, scenarios: &[(&str, &str)]) {
    std::fs::create_dir_all(dir).unwrap();
    let payment = repo().join("sim/payment");
    let mut files = vec!["payment.spec.json"];
    if good {
        files.push("payment.verified-payment.scenario.json");
    }
    for file in files {
        std::fs::copy(payment.join(file), dir.join(file)).unwrap();
    }
    for (name, text) in scenarios {
        std::fs::write(dir.join(name), text).unwrap();
    }
}

// Item 2: a folder linked into the corpus was passed over: its failing
// scenario never ran and the run passed.
#[test]
fn a_linked_folder_is_walked_once_and_a_broken_link_is_named() {
    let dir = temp("flow-ci-links");
    let corpus = dir.join("f");
    payment_folder(&corpus.join("real"), true, &[]);
    let failing = r#"{"name":"x","steps":[{"expect_allowed":"nope"}]}"#;
    payment_folder(
        &dir.join("other"),
        false,
        &[("payment.fails.scenario.json", failing)],
    );
    symlink("../other", corpus.join("linked")).unwrap();
    // A link back up the tree and a second link to the same folder: each
    // folder is walked once.
    symlink("..", corpus.join("real/up")).unwrap();
    symlink("../other", corpus.join("twice")).unwrap();
    let (code, out, err) = livesim_in(&dir, &["flow", "ci", arg(&corpus)]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(out.contains("linked/payment.fails.scenario.json"), "{out}");
    assert!(!out.contains("twice/"), "walked once: {out}");
    assert!(out.contains("1 passed, 1 failed"), "{out}");
    // A link that cannot be followed may have been a folder of scenarios.
    symlink("/nonexistent", corpus.join("gone")).unwrap();
    refused(
        &dir,
        &["flow", "ci", arg(&corpus)],
        &["gone: a symbolic link that cannot be followed"],
    );
}

// Item 6: a scenario that gave a key twice ran with the last value (both
// of these passed), where a spec that does is refused.
#[test]
fn a_scenario_that_gives_a_key_twice_is_refused_with_its_line() {
    let dir = temp("flow-ci-duplicates");
    let corpus = dir.join("c");
    payment_folder(
        &corpus,
        false,
        &[
            (
                "payment.names.scenario.json",
                "{\"name\":\"a\",\n \"name\":\"b\",\"steps\":[]}",
            ),
            (
                "payment.set.scenario.json",
                "{\"name\":\"s\",\"steps\":[\n  {\"set\":{\"key\":\"a\",\"key\":\"b\",\"value\":1}}]}",
            ),
        ],
    );
    let (code, out, err) = livesim_in(&dir, &["flow", "ci", arg(&corpus)]);
    assert_eq!(code, Some(2), "{out}{err}");
    let said = format!("{out}{err}");
    for expected in [
        "payment.names.scenario.json:2:2: the key `name` is given twice in one object; give it once",
        "payment.set.scenario.json:2:21: the key `key` is given twice in one object; give it once",
    ] {
        assert!(said.contains(expected), "wanted {expected:?} in\n{said}");
    }
    assert!(!said.contains("PASS"), "{said}");
    // The same file with each key once runs.
    let scenario = livesim::simulation::Scenario::from_json(
        "{\"name\":\"s\",\"steps\":[{\"set\":{\"key\":\"b\",\"value\":1}}]}",
        "s.json",
    );
    assert!(scenario.is_ok(), "{scenario:?}");
}
