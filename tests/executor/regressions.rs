//! Failing seeds of a `#[livesim::test]` are kept in its regressions file
//! and run first on every later run: shown on a real `#[livesim::test]`
//! run in a child process (this test binary), its files in a temporary
//! folder (`LIVESIM_REGRESSIONS_DIR`).

use std::path::{Path, PathBuf};
use std::process::Command;

use livesim::Seed;

use super::scratch::scratch;

/// Fails on the seed `LIVESIM_TEST_FAIL_SEED` names (when set), and notes
/// every seed it runs in the file `LIVESIM_TEST_ORDER` names. Run only by
/// the test below, in a child process; with neither variable set it
/// passes.
#[livesim::test(seeds = 40)]
#[ignore = "run by kept_seeds_run_first, in a child process"]
async fn fails_on_one_seed(seed: Seed) {
    if let Ok(file) = std::env::var("LIVESIM_TEST_ORDER") {
        use std::io::Write as _;
        let mut out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(file)
            .unwrap();
        writeln!(out, "{seed}").unwrap();
    }
    let failing = std::env::var("LIVESIM_TEST_FAIL_SEED").ok();
    assert_ne!(Some(seed.to_string()), failing, "the seed that fails");
}

struct Child {
    passed: bool,
    output: String,
    order: Vec<String>,
}

/// Runs `fails_on_one_seed` in a child process with its regressions under
/// `dir`, failing on `fail` (if any), with `env` set.
fn run(dir: &Path, fail: Option<&str>, mode: Option<&str>, env: &[(&str, &str)]) -> Child {
    let order = dir.join("order.txt");
    let _ = std::fs::remove_file(&order);
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args(["regressions::fails_on_one_seed", "--exact", "--ignored"])
        .env("LIVESIM_REGRESSIONS_DIR", dir)
        .env("LIVESIM_TEST_ORDER", &order)
        .env_remove("LIVESIM_SEED")
        .env_remove("LIVESIM_SEEDS")
        .env_remove("LIVESIM_REGRESSIONS")
        .env_remove("LIVESIM_TEST_FAIL_SEED");
    if let Some(seed) = fail {
        command.env("LIVESIM_TEST_FAIL_SEED", seed);
    }
    if let Some(mode) = mode {
        command.env("LIVESIM_REGRESSIONS", mode);
    }
    command.envs(env.iter().copied());
    let out = command.output().unwrap();
    Child {
        passed: out.status.success(),
        output: format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
        order: std::fs::read_to_string(&order)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect(),
    }
}

/// The first run fails on seed 0x17 (its 24th seed) and records it; the
/// next run tries 0x17 first; once fixed, every run still starts with it,
/// a run of one seed too (`LIVESIM_SEEDS=1`), and a replay of one seed
/// (`LIVESIM_SEED`) runs it alone; with `LIVESIM_REGRESSIONS=read` (CI) a
/// new failing seed is not written.
#[test]
fn kept_seeds_run_first() {
    let dir = scratch("regressions");
    let file: PathBuf = dir.join("tests/livesim-regressions/executor/regressions.seeds");

    let first = run(&dir, Some("0x17"), None, &[]);
    assert!(!first.passed, "{}", first.output);
    assert!(
        first.output.contains("seed 0x17 failed (run 24 of 40)"),
        "{}",
        first.output
    );
    assert!(
        first.output.contains(&format!(
            "seed 0x17 recorded in {}: it runs first from now on (commit the file)",
            file.display()
        )),
        "{}",
        first.output
    );
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.starts_with("# livesim regressions for tests/executor/regressions.rs"),
        "{text}"
    );
    assert!(
        text.contains("\nregressions::fails_on_one_seed 0x17  # "),
        "{text}"
    );

    let second = run(&dir, Some("0x17"), None, &[]);
    assert!(!second.passed);
    assert_eq!(
        second.order.first().map(String::as_str),
        Some("0x17"),
        "{:?}",
        second.order
    );
    assert!(
        second.output.contains("seed 0x17 failed (run 1 of 40)"),
        "{}",
        second.output
    );
    assert!(
        second.output.contains("is a recorded regression"),
        "{}",
        second.output
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        text,
        "recorded once"
    );

    let fixed = run(&dir, None, None, &[]);
    assert!(fixed.passed, "{}", fixed.output);
    assert_eq!(fixed.order.first().map(String::as_str), Some("0x17"));
    let seeds: std::collections::BTreeSet<&String> = fixed.order.iter().collect();
    assert_eq!(
        seeds.len(),
        40,
        "every seed once (and 0x17 not twice): {:?}",
        fixed.order
    );
    assert!(
        fixed.output.contains("livesim: 40 seeds passed in ")
            && fixed
                .output
                .contains("; 1 recorded regression seed ran first"),
        "{}",
        fixed.output
    );

    // However few the seeds, the recorded one runs first; a failing seed
    // of a run of one is not recorded (it needs no file to run again).
    // (The first seed of a run of several runs twice, for determinism.)
    let ran = |child: &Child| {
        let mut order = child.order.clone();
        order.dedup();
        order
    };
    let one = run(&dir, None, None, &[("LIVESIM_SEEDS", "1")]);
    assert!(one.passed, "{}", one.output);
    assert_eq!(ran(&one), ["0x17", "0x0"], "{}", one.output);
    let one = run(&dir, Some("0x5"), None, &[("LIVESIM_SEEDS", "5..6")]);
    assert!(!one.passed);
    assert_eq!(ran(&one), ["0x17", "0x5"], "{}", one.output);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text, "not written");
    // A replay of one seed runs that seed alone.
    let replay = run(&dir, None, None, &[("LIVESIM_SEED", "0x3")]);
    assert!(replay.passed, "{}", replay.output);
    assert_eq!(replay.order, ["0x3"]);

    let ci = run(&dir, Some("0x5"), Some("read"), &[]);
    assert!(!ci.passed);
    assert_eq!(ci.order.first().map(String::as_str), Some("0x17"));
    assert!(!ci.output.contains("recorded in"), "{}", ci.output);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text, "read only");
}
