//! A race the seed finds, and the printed command that replays it.

use std::process::Command;
use std::sync::{Arc, Mutex};

use livesim::executor::{LaneSet, Runner, yield_point};

/// Two lanes increment a shared counter with a read, a hand-off and a
/// write: a lost update whenever the seed interleaves them badly.
async fn lost_update() {
    let counter = Arc::new(Mutex::new(0u32));
    let mut lanes = LaneSet::new("counter");
    for name in ["left", "right"] {
        let counter = counter.clone();
        lanes.add(name, async move {
            for _ in 0..3 {
                let read = *counter.lock().unwrap();
                yield_point("between-read-and-write").await;
                *counter.lock().unwrap() = read + 1;
            }
        });
    }
    lanes.await;
    let total = *counter.lock().unwrap();
    assert_eq!(total, 6, "lost update: the counter ended at {total}");
}

/// The seed runner finds the race within 200 seeds.
#[test]
fn the_seed_finds_a_lost_update() {
    let report = Runner::new(livesim::test_id!())
        .seeds(200)
        .try_run(|_| lost_update())
        .unwrap_err();
    assert!(report.to_string().contains("lost update"), "{report}");
}

/// The target of the replay test: fails when asked to, so that its printed
/// replay line can be run. Without `LIVESIM_DEMO_FAILURE` it does nothing.
#[test]
fn lost_update_demo() {
    if std::env::var_os("LIVESIM_DEMO_FAILURE").is_none() {
        return;
    }
    Runner::new(livesim::test_id!())
        .seeds(200)
        .run(|_| lost_update());
}

/// Runs `line` in a shell as a user would: without the variables cargo
/// sets for a test process (a build script that watches one of them, as
/// ring's watches `CARGO_MANIFEST_DIR`, would otherwise be rebuilt).
fn run_shell(line: &str) -> (bool, String) {
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(line)
        .env("LIVESIM_DEMO_FAILURE", "1")
        .env_remove("LIVESIM_SEED")
        .env_remove("LIVESIM_SEEDS")
        .env_remove("RUST_LOG")
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        let set_by_cargo_for_tests = name == "CARGO"
            || name.starts_with("CARGO_PKG_")
            || name.starts_with("CARGO_BIN_EXE_")
            || [
                "CARGO_MANIFEST_DIR",
                "CARGO_MANIFEST_PATH",
                "CARGO_CRATE_NAME",
                "CARGO_TARGET_TMPDIR",
                "CARGO_PRIMARY_PACKAGE",
                "CARGO_RUSTC_CURRENT_DIR",
            ]
            .contains(&name.as_ref());
        if set_by_cargo_for_tests {
            command.env_remove(name.as_ref());
        }
    }
    let out = command.output().expect("sh runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

fn line_after<'a>(text: &'a str, prefix: &str) -> &'a str {
    text.lines()
        .find_map(|l| l.trim().strip_prefix(prefix))
        .unwrap_or_else(|| panic!("no line starting {prefix:?} in:\n{text}"))
        .trim()
}

/// The replay line a failure prints, run exactly as printed, fails again
/// with the same seed and the same message.
#[test]
fn the_printed_replay_line_reproduces_the_failure() {
    let (ok, first) =
        run_shell("cargo test -q --test executor replay::lost_update_demo -- --exact");
    assert!(!ok, "the demo should fail:\n{first}");
    let replay = line_after(&first, "replay: ");
    assert!(
        replay.starts_with("LIVESIM_SEED=0x")
            && replay.ends_with("cargo test --test executor replay::lost_update_demo -- --exact"),
        "{replay}"
    );
    let summary = line_after(&first, "panic at ");

    let (ok, again) = run_shell(replay);
    assert!(!ok, "the replay should fail:\n{again}");
    assert_eq!(line_after(&again, "panic at "), summary);
    assert_eq!(line_after(&again, "replay: "), replay);
    assert!(again.contains("failed (run 1 of 1)"), "{again}");
}
