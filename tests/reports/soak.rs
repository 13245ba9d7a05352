//! What `Soak::run` does in a user's test, seen from outside the test
//! process: a failing soak panics at the test's own line, keeps each
//! failure in the corpus the environment names and prints the line that
//! replays the kept case; that line replays it alone; the next run runs
//! the kept cases first; a passing soak prints one line;
//! `LIVESIM_REGRESSIONS=off` keeps nothing. The soaks are the racing cart
//! of `examples/soak_your_agent.rs`, run as demos in child processes of
//! this test binary.

#[path = "../../examples/soak_your_agent.rs"]
#[allow(dead_code)]
mod cart;

use std::path::{Path, PathBuf};
use std::process::Command;

use super::scratch::{Scratch, scratch};

/// Whether this process was started to run the demo `name`.
fn demo(name: &str) -> bool {
    std::env::var("LIVESIM_DEMO").is_ok_and(|v| v == name)
}

#[test]
fn soak_demo() {
    if demo("racy") {
        cart::cart_soak(false)
            .seeds(300)
            .test(livesim::test_id!())
            .run(); // the racy soak
    }
    if demo("fixed") {
        cart::cart_soak(true)
            .seeds(60)
            .test(livesim::test_id!())
            .run();
    }
}

/// Runs the demo `name` in a child process, with the corpus under `dir`
/// and `env` added; returns whether it passed and what it printed.
fn run_demo(name: &str, dir: &Path, env: &[(&str, &str)]) -> (bool, String) {
    let mut command = Command::new(std::env::current_exe().expect("the test binary"));
    command
        .args(["soak::soak_demo", "--exact", "--test-threads=1"])
        .env("LIVESIM_DEMO", name)
        .env("LIVESIM_REGRESSIONS_DIR", dir)
        .env_remove("LIVESIM_REGRESSIONS")
        .env_remove("LIVESIM_SEED")
        .env_remove("LIVESIM_SEEDS")
        .env_remove("LIVESIM_CASE")
        .env("RUST_BACKTRACE", "0");
    for (key, value) in env {
        command.env(key, value);
    }
    let out = command.output().expect("the test binary runs");
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), printed)
}

/// A fresh folder for one test, removed when dropped.
fn temp(name: &str) -> Scratch {
    scratch(&format!("reports-{name}"))
}

/// The line of this file that holds `needle`.
fn line_of(needle: &str) -> usize {
    include_str!("soak.rs")
        .lines()
        .position(|l| l.contains(needle))
        .expect("the needle is in this file")
        + 1
}

fn entries(dir: &Path) -> Vec<PathBuf> {
    livesim::soak::corpus_files(dir.join("seeds")).unwrap_or_default()
}

#[test]
fn a_failing_soak_keeps_its_failures_and_replays_them_first() {
    let dir = temp("keeps");
    let (passed, out) = run_demo("racy", &dir, &[]);
    assert!(!passed, "the racy cart fails:\n{out}");
    // The panic points at the test's line, not at livesim.
    let header = format!(
        "panicked at tests/reports/soak.rs:{}:",
        line_of("// the racy soak")
    );
    assert!(out.contains(&header), "missing {header:?} in:\n{out}");
    assert!(!out.contains("panicked at src/"), "{out}");
    // Each kept failure: in the corpus, drawn, with its own replay line.
    let kept = entries(&dir);
    assert!(!kept.is_empty() && kept.len() <= 3, "{kept:?}\n{out}");
    for file in &kept {
        assert!(
            out.contains(&format!("kept: {} (it runs first", file.display())),
            "{out}"
        );
        let line = format!(
            "replay: LIVESIM_CASE={} cargo test --test reports soak::soak_demo -- --exact",
            file.display()
        );
        assert!(out.contains(&line), "missing {line:?} in:\n{out}");
    }
    assert!(out.contains("  timeline: "), "{out}");
    assert!(out.contains("overlapped: add_item("), "{out}");

    // The printed line replays the kept case alone.
    let file = kept[0].display().to_string();
    let (passed, again) = run_demo("racy", &dir, &[("LIVESIM_CASE", &file)]);
    assert!(!passed, "{again}");
    assert!(
        again.contains("soak: 1 agent (cart), 1 kept case, "),
        "{again}"
    );
    assert!(
        again.contains("cart-holds-every-item 0 FAILED 1"),
        "{again}"
    );

    // The fixed cart runs the kept cases first, passes them, and says so
    // in its one line.
    let (passed, fixed) = run_demo("fixed", &dir, &[]);
    assert!(passed, "{fixed}");
    let lines: Vec<&str> = fixed
        .lines()
        .filter(|l| l.starts_with("livesim: soak cart: "))
        .collect();
    assert_eq!(lines.len(), 1, "{fixed}");
    let expected = format!(
        "sessions passed (seeds 0..60 after {} kept case",
        kept.len()
    );
    assert!(lines[0].contains(&expected), "{}", lines[0]);
}

#[test]
fn livesim_regressions_off_keeps_nothing() {
    let dir = temp("off");
    let (passed, out) = run_demo("racy", &dir, &[("LIVESIM_REGRESSIONS", "off")]);
    assert!(!passed, "{out}");
    assert!(entries(&dir).is_empty(), "{:?}", entries(&dir));
    assert!(!out.contains("  kept: "), "{out}");
    // Read only: shrunk and told, not written.
    let (passed, out) = run_demo("racy", &dir, &[("LIVESIM_REGRESSIONS", "read")]);
    assert!(!passed, "{out}");
    assert!(entries(&dir).is_empty(), "{:?}", entries(&dir));
    assert!(
        out.contains("kept: not written (the corpus is read only)"),
        "{out}"
    );
}
