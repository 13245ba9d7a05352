//! A failing `#[livesim::test]` writes its seed's timeline under the
//! target directory and names it in the failure report.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::temp;

/// Set in the child that runs the failing test.
const CHILD_ENV: &str = "LIVESIM_TIMELINE_CHILD";

/// A fixture, not a check: fails on purpose when the test below runs it
/// as a child (with `LIVESIM_TIMELINE_CHILD` set); anywhere else (an
/// `--include-ignored` run) it does nothing.
#[livesim::test(seed = 0x2a)]
#[ignore = "a fixture: a_failing_livesim_test_writes_its_timeline runs it"]
async fn fails_after_a_lookup() {
    if std::env::var_os(CHILD_ENV).is_some() {
        super::a_lookup_then_a_wrong_total().await;
    }
}

const CHILD: &str = "failing_test::fails_after_a_lookup";

/// Runs the failing test as a child with `target_dir` as its
/// `CARGO_TARGET_DIR` (`None`: unset); returns the report's timeline path.
fn run_child(target_dir: Option<&Path>) -> (PathBuf, String) {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args([CHILD, "--exact", "--include-ignored"])
        .env(CHILD_ENV, "1");
    match target_dir {
        Some(dir) => command.env("CARGO_TARGET_DIR", dir),
        None => command.env_remove("CARGO_TARGET_DIR"),
    };
    let output = command.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!output.status.success(), "{text}");
    let path = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("timeline: "))
        .unwrap_or_else(|| panic!("no timeline line in:\n{text}"));
    // The timeline line comes just before the replay line.
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("timeline: "))
        .unwrap();
    assert!(
        lines[at + 1].starts_with("replay: LIVESIM_SEED=0x2a "),
        "{text}"
    );
    (PathBuf::from(path), text)
}

/// With `CARGO_TARGET_DIR` set, the page goes under it, at the
/// documented place; without, under the target directory holding the
/// test binary. Either way the page shows the panic and the tool span.
#[test]
fn a_failing_livesim_test_writes_its_timeline_and_names_it() {
    let target = temp("failing-test-target");
    let (path, text) = run_child(Some(&*target));
    assert_eq!(
        path,
        target.join("livesim/timeline/failing_test.fails_after_a_lookup/0x2a.html"),
        "{text}"
    );
    let html = std::fs::read_to_string(&path).unwrap();
    assert!(html.contains("FAILED: panic"), "the failure is on the page");
    assert!(html.contains("the basket total is wrong"));
    assert!(
        html.contains("data-call=\"call-1\""),
        "the lookup's span is drawn"
    );

    let (path, text) = run_child(None);
    let exe = std::env::current_exe().unwrap();
    let own_target = exe
        .ancestors()
        .find(|d| d.join("CACHEDIR.TAG").is_file())
        .expect("the test binary sits in a cargo target directory");
    assert!(path.starts_with(own_target.join("livesim")), "{text}");
    assert!(path.is_file());
}
