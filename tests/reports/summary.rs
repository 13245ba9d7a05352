//! What a run prints to stderr, seen from outside the test process as a
//! person at a terminal (or a nightly job's log) sees it: the one line of
//! a passing multi-seed run, the note when the environment overrides a
//! pinned seed, the warning about a task spawned around the facade, and a
//! failure's panic header pointing at the test, not at livesim. Each case runs one of the demos below in a child process of
//! this test binary; the demos do nothing unless `LIVESIM_DEMO` names
//! them.

use std::process::Command;

use livesim::Seed;

/// Whether this process was started to run the demo `name`.
fn demo(name: &str) -> bool {
    std::env::var("LIVESIM_DEMO").is_ok_and(|v| v == name)
}

#[livesim::test(seeds = 50)]
async fn passing_demo(seed: Seed) {
    if !demo("passing") {
        return;
    }
    livesim::executor::yield_point("demo").await;
    assert_eq!(livesim::executor::seed(), Some(seed));
}

#[livesim::test(seed = 0x24)]
async fn pinned_demo() {
    if !demo("pinned") {
        return;
    }
    livesim::executor::yield_point("demo").await;
}

#[livesim::test(seeds = 5)]
async fn failing_demo(seed: Seed) {
    if !demo("failing") {
        return;
    }
    assert!(seed.value() < 2, "seed {seed} is too big");
}

#[livesim::test(seeds = 20)]
async fn escaping_demo() {
    if !demo("escaping") {
        return;
    }
    tokio::spawn(async {}).await.unwrap();
}

#[livesim::test(seeds = 10)]
async fn leaking_demo() {
    if !demo("leaking") {
        return;
    }
    // Real time in the trace: each run of a seed differs.
    #[allow(clippy::disallowed_methods)]
    let now = std::time::SystemTime::now();
    livesim::record!("{now:?}");
}

/// Runs `test` of this binary in a child process with `LIVESIM_DEMO` set
/// to `name` and `env` added; returns whether it passed and what it
/// printed (the harness prints a failure's panic to stdout, livesim's
/// summary goes to stderr).
fn run_demo(test: &str, name: &str, env: &[(&str, &str)]) -> (bool, String) {
    let mut command = Command::new(std::env::current_exe().expect("the test binary"));
    command
        .args([test, "--exact", "--test-threads=1"])
        .env("LIVESIM_DEMO", name)
        // The demos fail on purpose: keep their seeds out of the repository.
        .env("LIVESIM_REGRESSIONS", "off")
        .env_remove("LIVESIM_SEED")
        .env_remove("LIVESIM_SEEDS")
        .env_remove("LIVESIM_CHECK_DETERMINISM")
        .env_remove("LIVESIM_LOG")
        .env_remove("RUST_LOG")
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

/// A passing run of 50 seeds prints one line, with the seeds, the wall
/// time and the interleavings, past the harness's output capture.
#[test]
fn a_passing_multi_seed_run_prints_one_summary_line() {
    let (passed, stderr) = run_demo("summary::passing_demo", "passing", &[]);
    assert!(passed, "{stderr}");
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("livesim: "))
        .collect();
    assert_eq!(lines.len(), 1, "one summary line:\n{stderr}");
    let line = lines[0];
    assert!(
        line.starts_with("livesim: 50 seeds passed in ")
            && line.contains(" s; ")
            && line.ends_with("distinct interleavings")
            || line.ends_with("distinct interleaving"),
        "{line}"
    );
    // The environment's plan shows in the line, so a nightly can tell it
    // took effect.
    let (passed, stderr) = run_demo(
        "summary::passing_demo",
        "passing",
        &[("LIVESIM_SEEDS", "120..200")],
    );
    assert!(passed, "{stderr}");
    assert!(
        stderr.contains("livesim: 80 seeds passed in ")
            && stderr.contains("(seeds from LIVESIM_SEEDS=120..200)"),
        "{stderr}"
    );
}

/// A test pinned to `seed = 0x24` says so when the environment runs other
/// seeds instead; run as pinned, it prints nothing.
#[test]
fn an_overridden_pinned_seed_is_named_in_the_summary() {
    let (passed, stderr) = run_demo("summary::pinned_demo", "pinned", &[("LIVESIM_SEEDS", "3")]);
    assert!(passed, "{stderr}");
    assert!(
        stderr.contains("livesim: 3 seeds passed in ")
            && stderr.contains("(LIVESIM_SEEDS=3 overrides the test's pinned seed 0x24)"),
        "{stderr}"
    );
    let (passed, stderr) = run_demo("summary::pinned_demo", "pinned", &[("LIVESIM_SEED", "7")]);
    assert!(passed, "{stderr}");
    assert!(
        stderr.contains("livesim: 1 seed passed in ")
            && stderr.contains("(LIVESIM_SEED=7 overrides the test's pinned seed 0x24)"),
        "{stderr}"
    );
    let (passed, stderr) = run_demo("summary::pinned_demo", "pinned", &[]);
    assert!(passed, "{stderr}");
    assert!(!stderr.contains("livesim: "), "{stderr}");
}

/// A failing seed's panic header names the test's file, not livesim's
/// runner, and the report names the line where the test panicked.
#[test]
fn a_failure_points_at_the_test() {
    let (passed, stderr) = run_demo("summary::failing_demo", "failing", &[]);
    assert!(!passed, "the demo fails:\n{stderr}");
    let header = stderr
        .lines()
        .find(|l| l.contains("panicked at"))
        .unwrap_or_else(|| panic!("no panic header in:\n{stderr}"));
    assert!(
        header.contains("panicked at tests/reports/summary.rs:"),
        "the header points at the test: {header}"
    );
    assert!(!stderr.contains("src/executor/"), "{stderr}");
    let assertion = format!(
        "'main' panicked at tests/reports/summary.rs:{}:",
        line_of("seed {seed} is too big")
    );
    assert!(
        stderr.contains(&assertion),
        "missing {assertion:?} in:\n{stderr}"
    );
}

/// The line of this file that holds `needle`.
fn line_of(needle: &str) -> usize {
    include_str!("summary.rs")
        .lines()
        .position(|l| l.contains(needle) && !l.contains("line_of"))
        .expect("the needle is in this file")
        + 1
}

/// A test that spawns with `tokio::spawn` is warned once per run (not once
/// per seed), with what to use instead, and still passes.
#[test]
fn a_task_spawned_around_the_facade_is_warned_once() {
    let (passed, printed) = run_demo("summary::escaping_demo", "escaping", &[]);
    assert!(passed, "{printed}");
    let warnings: Vec<&str> = printed
        .lines()
        .filter(|l| l.contains("spawned outside livesim::executor::spawn"))
        .collect();
    assert_eq!(warnings.len(), 1, "{printed}");
    assert!(
        warnings[0].starts_with("livesim: a task spawned outside")
            && warnings[0].contains("livesim::executor::spawn(label, future)"),
        "{}",
        warnings[0]
    );
    assert!(printed.contains("livesim: 20 seeds passed"), "{printed}");
}

/// A multi-seed run checks its first seed's determinism by default, and
/// `LIVESIM_CHECK_DETERMINISM=0` turns the check off.
#[test]
fn the_first_seed_check_is_on_by_default_and_can_be_turned_off() {
    let (passed, printed) = run_demo("summary::leaking_demo", "leaking", &[]);
    assert!(!passed, "{printed}");
    assert!(
        printed.contains("failed (run 1 of 10)") && printed.contains("non-determinism: seed 0x0"),
        "{printed}"
    );
    let (passed, printed) = run_demo(
        "summary::leaking_demo",
        "leaking",
        &[("LIVESIM_CHECK_DETERMINISM", "0")],
    );
    assert!(passed, "{printed}");
    assert!(printed.contains("livesim: 10 seeds passed"), "{printed}");
}

#[livesim::test(seeds = 3)]
async fn hanging_demo(seed: Seed) {
    if !demo("hanging") {
        return;
    }
    livesim::record!("about to spin on seed {seed}");
    livesim::executor::yield_point("before the loop").await;
    // User code that never yields: a busy loop with no .await, for five
    // seconds of wall time (far past the bound the demo is given).
    #[allow(clippy::disallowed_methods)]
    let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
    #[allow(clippy::disallowed_methods)]
    while std::time::Instant::now() < until {
        std::hint::spin_loop();
    }
}

/// A test whose own code never yields does not hang the test run: past
/// the hang bound (`LIVESIM_HANG`), the guard prints what was running,
/// its last trace entries and the line that replays it, and ends the
/// process with status 101 — well before the loop would have ended.
#[test]
fn a_busy_loop_in_a_test_is_reported_as_a_hang() {
    let (passed, printed) = run_demo(
        "summary::hanging_demo",
        "hanging",
        &[("LIVESIM_HANG", "300ms")],
    );
    assert!(!passed, "{printed}");
    assert!(
        printed.contains("HANG summary::hanging_demo seed 0x0"),
        "{printed}"
    );
    assert!(printed.contains("about to spin on seed 0x0"), "{printed}");
    assert!(printed.contains("replay: LIVESIM_SEED=0x0"), "{printed}");
}
