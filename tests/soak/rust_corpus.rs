//! A Rust soak's corpus as its user meets it: an entry naming a check
//! the soak does not run is refused (its replay would pass whatever
//! happened), a failing entry's replay line is the test's own `cargo
//! test` line and replays that entry alone, and the kept cases run first
//! however few the seeds; a replay of one seed runs that seed alone.
//!
//! What the environment steers (`LIVESIM_CASE`, `LIVESIM_SEEDS`,
//! `LIVESIM_SEED`) is run in a child process, this test binary running
//! [`child`] alone, so no test here sets a variable of its own process.

use std::path::{Path, PathBuf};
use std::process::Command;

use livesim::Seed;
use livesim::prelude::*;
use livesim::soak::{CorpusEntry, Soak};
use serde_json::json;

use super::scratch::{Scratch, scratch};

/// A library agent with one tool.
pub(super) fn library() -> LiveBuilder {
    Live::builder().tools(T::simple("lend_book", "Lends a book", |args| async move {
        Ok(json!({ "lent": args["title"] }))
    }))
}

/// A corpus folder holding two entries of `library`, each saying it
/// broke `lent-once` (at seeds 0x17 and 0x2a); removed when dropped.
fn corpus(name: &str) -> Scratch {
    let dir = scratch(&format!("rust-corpus-{name}"));
    let soak = Soak::new("library", library)
        .invariant("lent-once", |_| Err("lent twice".to_string()))
        .check_determinism_every(0);
    for seed in [0x17, 0x2a] {
        let run = soak.run_seed(Seed::new(seed));
        let failure = run.failures.first().expect("the invariant always fails");
        CorpusEntry::from_failure(failure).save(&dir).unwrap();
    }
    dir
}

/// The soak the child runs: `library`, checking `lent-once` (or the
/// name `LIVESIM_TEST_INVARIANT` gives it), which fails when
/// `LIVESIM_TEST_FAIL` is set; `LIVESIM_TEST_DO` says whether it replays
/// the corpus in `LIVESIM_TEST_CORPUS` or runs seeds after its kept cases.
#[test]
#[ignore = "run by the tests below, in a child process"]
fn child() {
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let corpus = PathBuf::from(var("LIVESIM_TEST_CORPUS"));
    let name = std::env::var("LIVESIM_TEST_INVARIANT").unwrap_or("lent-once".to_string());
    let fail = std::env::var_os("LIVESIM_TEST_FAIL").is_some();
    let soak = Soak::new("library", library)
        .invariant(name, move |_| match fail {
            true => Err("lent twice".to_string()),
            false => Ok(()),
        })
        .corpus(&corpus)
        .pages(corpus.join("pages"))
        .shrink_runs(0);
    match var("LIVESIM_TEST_DO").as_str() {
        "replay" => {
            soak.replay_corpus_in(&corpus);
        }
        "run" => {
            soak.seeds(50).run();
        }
        other => panic!("LIVESIM_TEST_DO={other}"),
    }
}

/// Runs [`child`] with `env` set (and nothing else of livesim's) over
/// `corpus`; whether it passed, and what it printed.
fn run_child(corpus: &Path, what: &str, env: &[(&str, &str)]) -> (bool, String) {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args(["rust_corpus::child", "--exact", "--ignored", "--nocapture"])
        .env("LIVESIM_TEST_CORPUS", corpus)
        .env("LIVESIM_TEST_DO", what);
    for name in [
        "LIVESIM_SEED",
        "LIVESIM_SEEDS",
        "LIVESIM_CASE",
        "LIVESIM_REGRESSIONS",
        "LIVESIM_REGRESSIONS_DIR",
        "LIVESIM_TEST_FAIL",
        "LIVESIM_TEST_INVARIANT",
    ] {
        command.env_remove(name);
    }
    command.envs(env.iter().copied());
    let out = command.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// An entry whose invariant this soak does not check (renamed since,
/// or another test's) fails the replay, naming the file, the invariant,
/// the soak's own checks and what to do; so does a run, whose kept cases
/// ran first.
#[test]
fn an_entry_naming_a_check_the_soak_does_not_run_is_refused() {
    let dir = corpus("renamed");
    let soak = Soak::new("library", library).invariant("lent-at-most-once", |_| Ok(()));
    let replay = soak.try_replay_corpus(&dir);
    assert!(!replay.passed(), "{replay}");
    assert!(replay.passed.is_empty(), "{replay}");
    assert_eq!(replay.unreadable.len(), 2, "{replay}");
    let file = dir.join("library").join("0x17.json");
    let expected = format!(
        "{}: the entry says it broke `lent-once`, which soak `library` does not check (it \
         checks lent-at-most-once, and livesim's built-in checks), so its replay could not \
         show whether that bug is back. Add that invariant to this soak \
         (`.invariant(\"lent-once\", …)`), or delete the entry if its bug is gone for good",
        file.display()
    );
    assert_eq!(replay.unreadable[0], expected);
    let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        soak.replay_corpus_in(&dir);
    }))
    .expect_err("the one-liner fails");
    let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(message.contains(&expected), "{message}");

    // A run says the same of its kept cases, and fails.
    let (passed, output) = run_child(
        &dir,
        "run",
        &[
            ("LIVESIM_TEST_INVARIANT", "lent-at-most-once"),
            ("LIVESIM_SEEDS", "2"),
        ],
    );
    assert!(!passed, "{output}");
    assert!(output.contains(&format!("corpus: {expected}")), "{output}");
}

/// Without `.test(…)`, a soak in a test names that test: its replay
/// lines are `cargo test` lines, not the test binary's path.
#[test]
fn replay_lines_name_the_test_they_run_in() {
    let soak = Soak::new("library", library);
    let file = Path::new("seeds/library/0x17.json");
    assert_eq!(
        soak.replay_case_command(file),
        "LIVESIM_CASE=seeds/library/0x17.json cargo test --test soak \
         rust_corpus::replay_lines_name_the_test_they_run_in -- --exact"
    );
}

/// A failing entry's replay line replays that entry alone, in the test
/// it failed in.
#[test]
fn a_failing_entry_s_replay_line_replays_it_alone() {
    let dir = corpus("one-case");
    let (passed, output) = run_child(&dir, "replay", &[("LIVESIM_TEST_FAIL", "1")]);
    assert!(!passed, "{output}");
    assert!(
        output.contains("0 passed, 2 failed, 0 unreadable"),
        "{output}"
    );
    let line = "LIVESIM_CASE=".to_string()
        + &dir.join("library").join("0x17.json").display().to_string()
        + " cargo test --test soak rust_corpus::child -- --exact --include-ignored";
    assert!(output.contains(&format!("replay: {line}")), "{output}");

    let case = dir.join("library").join("0x17.json");
    let case = case.to_str().unwrap();
    let (passed, output) = run_child(
        &dir,
        "replay",
        &[("LIVESIM_TEST_FAIL", "1"), ("LIVESIM_CASE", case)],
    );
    assert!(!passed, "{output}");
    assert!(
        output.contains(&format!("corpus {case}: 0 passed, 1 failed, 0 unreadable")),
        "{output}"
    );
    assert!(!output.contains("0x2a.json"), "{output}");
    let (passed, output) = run_child(&dir, "replay", &[("LIVESIM_CASE", case)]);
    assert!(passed, "{output}");
}

/// The kept cases run first whatever the seeds, one included; a replay
/// of one seed runs it alone, and the summary names it as its replay
/// line does (`seed 0x5`).
#[test]
fn kept_cases_run_first_however_few_the_seeds() {
    let dir = corpus("kept-first");
    for (seeds, expected) in [
        (("LIVESIM_SEEDS", "1"), "(seed 0x0 after 2 kept cases)"),
        (("LIVESIM_SEEDS", "5..6"), "(seed 0x5 after 2 kept cases)"),
        (("LIVESIM_SEED", "0x5"), "(seed 0x5)"),
    ] {
        let (passed, output) = run_child(&dir, "run", &[seeds]);
        assert!(passed, "{output}");
        assert!(output.contains(expected), "{seeds:?}: {output}");
    }
}
