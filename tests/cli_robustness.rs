//! `livesim` on input and surroundings it cannot use: too many jobs,
//! durations too long for the clock, stdout and stderr that cannot be
//! written, a bad `LIVESIM_HANG`, shrink budgets of zero and invariants
//! the agent does not check. Each ends with a clear message and its exit
//! status (2 for bad input), never a panic.

// The binary is built only with `cli`.
#![cfg(feature = "cli")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

// Scratch folders removed when each test ends, shared with the other test
// binaries rather than copied.
#[path = "common/scratch.rs"]
mod scratch;

use scratch::{Scratch, scratch};

/// `livesim` with `args`, run from the repository (its `sim/`).
fn livesim(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_livesim"));
    command
        .current_dir(repo())
        .args(args)
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("LIVESIM_HANG");
    command
}

/// Runs `command`: its exit status, stdout and stderr.
fn run(mut command: Command) -> (Option<i32>, String, String) {
    let Output {
        status,
        stdout,
        stderr,
    } = command.output().expect("the livesim binary runs");
    (
        status.code(),
        String::from_utf8_lossy(&stdout).into_owned(),
        String::from_utf8_lossy(&stderr).into_owned(),
    )
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A fresh folder for one test, removed when dropped.
fn temp(name: &str) -> Scratch {
    scratch(&format!("robust-{name}"))
}

/// An agent whose seed 0 (and most others) breaks `at-most-once(t)`: its
/// one tool is called, and succeeds, on every turn of three or more.
/// (`before(t, t)`, which every seed broke, is refused when the agent is
/// read: it could never hold.) Its scratch folder is removed when dropped.
fn failing_agent(test: &str) -> Scratch {
    let dir = temp(test).inside("bs");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("agent.json"),
        r#"{"v":1,"user":["a"],"model":["b"],"call_chance":1,"turns":[3,6],"tools":[{"name":"t"}],"invariants":[{"at_most_once":"t"}]}"#,
    )
    .unwrap();
    dir
}

/// A recorded wire log of `sim/weather`, for `sim import`; its scratch
/// folder is removed when dropped.
fn wire_log(test: &str) -> Scratch {
    let log = temp(test).inside("prod.jsonl");
    std::fs::write(
        &log,
        r#"{"v":1,"kind":"wire_log","started_at_ms":0}
{"dir":"out","t_ms":0,"type":"text","json":{"setup":{"model":"models/m"}}}
{"dir":"in","t_ms":40,"type":"binary","json":{"setupComplete":{}}}
{"dir":"in","t_ms":90,"type":"binary","json":{"serverContent":{"modelTurn":{"parts":[{"text":"Snow."}]},"turnComplete":true}}}
"#,
    )
    .unwrap();
    log
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Asserts a refusal: exit status 2, `message` on stderr, no panic.
fn assert_refused(args: &[&str], message: &str) {
    let (code, out, err) = run(livesim(args));
    assert_eq!(code, Some(2), "{args:?}\n{out}{err}");
    assert!(err.contains(message), "{args:?}\n{err}");
    assert!(!err.contains("panicked"), "{args:?}\n{err}");
}

// Guards bug 1: `--jobs 100000` started a thread per job and aborted (134).
#[test]
fn jobs_beyond_the_cap_are_refused_for_every_command() {
    for jobs in ["257", "100000", "99999999999999999999999"] {
        for command in [
            &["sim", "soak", "sim/weather", "--seeds", "2", "--no-save"][..],
            &["sim", "check", "sim/weather", "--seeds", "2"][..],
        ] {
            let args = [command, &["--jobs", jobs]].concat();
            assert_refused(&args, "give at most 256");
        }
    }
    // The cap itself is allowed.
    let (code, out, err) = run(livesim(&[
        "sim",
        "soak",
        "sim/weather",
        "--seeds",
        "1",
        "--no-save",
        "--jobs",
        "256",
    ]));
    assert_eq!(code, Some(0), "{out}{err}");
}

// Guards bug 2: a duration too long for `Duration` panicked (101) in
// every flag that takes one, on every command.
#[test]
fn durations_too_long_are_refused() {
    let agent = failing_agent("durations-agent");
    let log = wire_log("durations-log");
    let soak = ["sim", "soak", "sim/weather", "--seeds", "1", "--no-save"];
    for (flag, value) in [
        ("--duration", "18446744073709551616s"),
        ("--hang-after", "18446744073709551616s"),
        ("--hang-after", "99999999999999999h"),
        ("--shrink-time", "18446744073709551616s"),
        // Within `Duration`, beyond the clock's arithmetic.
        ("--shrink-time", "10000000000000000000s"),
    ] {
        let args = [&soak[..], &[flag, value]].concat();
        assert_refused(&args, &format!("{flag} `{value}` is too long"));
    }
    let too_long = ["--shrink-time", "18446744073709551616s"];
    let shrink = ["sim", "shrink", path(&agent), "--seed", "0", "--no-save"];
    assert_refused(&[&shrink[..], &too_long].concat(), "is too long");
    let import = [
        "sim",
        "import",
        path(&log),
        "--agent",
        "weather",
        "--no-save",
    ];
    assert_refused(&[&import[..], &too_long].concat(), "is too long");
    // A duration that rounds to nothing is not more than zero.
    assert_refused(
        &[&soak[..], &["--duration", "0.0000000001s"]].concat(),
        "the duration must be more than zero",
    );
}

/// A pipe whose reader is gone: every write to it fails (EPIPE).
fn closed_pipe() -> Stdio {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    Stdio::from(writer)
}

// Guards bug 3: progress and diagnostics on a stderr nobody reads
// panicked (101); now they are dropped and the run ends as it would.
#[test]
fn a_closed_stderr_does_not_end_the_run() {
    let agent = failing_agent("closed-stderr");
    for (args, status) in [
        (
            vec!["sim", "soak", "sim/weather", "--seeds", "3", "--no-save"],
            0,
        ),
        (vec!["sim", "check", "sim/weather", "--seeds", "2"], 0),
        (
            vec!["sim", "shrink", path(&agent), "--seed", "0", "--no-save"],
            1,
        ),
    ] {
        let mut command = livesim(&args);
        command.stdout(Stdio::null()).stderr(closed_pipe());
        let code = command.status().expect("the livesim binary runs").code();
        assert_eq!(code, Some(status), "{args:?}");
    }
}

// Guards the rule bugs 3 and 4 keep: a reader that left (`| head`) ends
// the output, neither a panic nor exit 2; the status stays the command's.
#[test]
fn a_reader_that_left_ends_the_output_not_the_command() {
    let mut command = livesim(&["sim", "run", "sim/weather", "--seed", "1"]);
    command.stdout(closed_pipe()).stderr(Stdio::piped());
    let (code, _, err) = run(command);
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

// Guards bug 3: `serve` whose URL line cannot be written panicked
// ("failed printing to stdout"); now it says so and exits 2.
#[test]
fn serve_without_a_stdout_for_its_url_exits_2() {
    let dir = temp("serve");
    let script = dir.join("s.json");
    std::fs::write(&script, r#"{"v":1,"actions":[]}"#).unwrap();
    let mut command = livesim(&["serve", path(&script)]);
    command.stdout(closed_pipe()).stderr(Stdio::piped());
    let (code, _, err) = run(command);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("livesim serve: cannot write the output"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

// Guards bug 4: every `sim` command exited 0 when its output could not be
// written (a full disk); now it exits 2 and says so, as `flow` does.
#[test]
#[cfg(target_os = "linux")]
fn output_that_cannot_be_written_exits_2() {
    let dir = temp("dev-full");
    let script = dir.join("weather.json");
    let (code, out, err) = run(livesim(&[
        "sim",
        "run",
        "sim/weather",
        "--seed",
        "1",
        "--save-script",
        path(&script),
    ]));
    assert_eq!(code, Some(0), "{out}{err}");
    let agent = failing_agent("dev-full-agent");
    let log = wire_log("dev-full-log");
    let commands: [&[&str]; 8] = [
        &[
            "sim",
            "run",
            "sim/weather",
            "--seed",
            "1",
            "--format",
            "json",
        ],
        &["sim", "run", "sim/weather", "--seed", "1"],
        &["sim", "soak", "sim/weather", "--seeds", "1", "--no-save"],
        &["sim", "check", "sim/weather", "--seeds", "1"],
        &["sim", "replay", "seeds/payment/0x5.json"],
        &[
            "sim",
            "passk",
            path(&script),
            "--agent",
            "weather",
            "--seeds",
            "2",
        ],
        &[
            "sim",
            "import",
            path(&log),
            "--agent",
            "weather",
            "--no-save",
        ],
        &["sim", "shrink", path(&agent), "--seed", "0", "--no-save"],
    ];
    for args in commands {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full");
        let mut command = livesim(args);
        command.stdout(full).stderr(Stdio::piped());
        let (code, _, err) = run(command);
        assert_eq!(code, Some(2), "{args:?}\n{err}");
        assert!(
            err.contains("livesim: cannot write the output: "),
            "{args:?}\n{err}"
        );
    }
}

// Guards bug 5: a range that ends at the largest seed was announced as
// "seeds from 0 until the time is up" without any --duration.
#[test]
fn a_huge_range_is_announced_as_a_range() {
    for (seeds, shown) in [
        ("0..18446744073709551615", "seeds 0..18446744073709551615, "),
        (
            "10..18446744073709551615",
            "seeds 10..18446744073709551615, ",
        ),
    ] {
        let (code, out, err) = run(livesim(&[
            "sim",
            "soak",
            "sim/weather",
            "--no-save",
            "--no-explore",
            "--seeds",
            seeds,
            "--duration",
            "1ms",
        ]));
        assert_eq!(code, Some(0), "{out}{err}");
        let first = err.lines().next().unwrap_or_default();
        assert!(first.contains(shown), "{first}");
        assert!(!err.contains("until the time is up"), "{err}");
    }
    // Without --seeds, only the time budget ends it: that is what it says.
    let (code, out, err) = run(livesim(&[
        "sim",
        "soak",
        "sim/weather",
        "--no-save",
        "--no-explore",
        "--duration",
        "1ms",
    ]));
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(err.contains("seeds from 0 until the time is up"), "{err}");
}

// Guards bug 6: a LIVESIM_HANG that is not a bound fell back to 60s
// without a word.
#[test]
fn a_bad_livesim_hang_is_named_once() {
    for value in ["garbage", "0s"] {
        let mut command = livesim(&["sim", "soak", "sim/weather", "--seeds", "1", "--no-save"]);
        command.env("LIVESIM_HANG", value);
        let (code, out, err) = run(command);
        assert_eq!(code, Some(0), "{out}{err}");
        let warning = format!("LIVESIM_HANG=\"{value}\" is not a hang bound");
        assert_eq!(err.matches(&warning).count(), 1, "{err}");
        assert!(err.contains("the default, 60s, is used"), "{err}");
    }
    let mut command = livesim(&["sim", "soak", "sim/weather", "--seeds", "1", "--no-save"]);
    command.env("LIVESIM_HANG", "30s");
    let (code, out, err) = run(command);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(!err.contains("LIVESIM_HANG"), "{err}");
}

/// `(N actions, from M)` in `sim shrink`'s first line: the kept case's
/// actions and the failure's.
fn actions(out: &str) -> (usize, usize) {
    let line = out.lines().next().unwrap_or_default();
    let (_, tail) = line.rsplit_once(" (").expect("(N actions, from M)");
    let (kept, found) = tail
        .trim_end_matches(')')
        .split_once(" actions, from ")
        .expect("(N actions, from M)");
    (kept.parse().unwrap(), found.parse().unwrap())
}

// Guards bug 7: `sim shrink --shrink-runs 0` (or `--shrink-time 0`)
// shrank anyway, though 0 means "save as found".
#[test]
fn shrink_with_a_budget_of_zero_keeps_the_failure_as_found() {
    let agent = failing_agent("shrink-zero");
    let shrink = ["sim", "shrink", path(&agent), "--seed", "0", "--no-save"];
    let (code, out, err) = run(livesim(&shrink));
    assert_eq!(code, Some(1), "{out}{err}");
    let (kept, found) = actions(&out);
    assert!(kept < found, "shrinks by default: {out}");
    for zero in [
        &["--shrink-runs", "0"][..],
        &["--shrink-time", "0"],
        &["--shrink-time", "0ms"],
    ] {
        let (code, out, err) = run(livesim(&[&shrink[..], zero].concat()));
        assert_eq!(code, Some(1), "{zero:?}\n{out}{err}");
        let (kept, found) = actions(&out);
        assert_eq!(kept, found, "{zero:?}\n{out}");
        assert!(!err.contains("shrinking"), "{zero:?}\n{err}");
        assert!(err.contains("kept as found"), "{zero:?}\n{err}");
    }
}

// Guards bug 8: `--invariant` the seed does not break was shown as Rust
// debug text (`Some("nope")`); a name the agent does not check is bad
// usage.
#[test]
fn shrink_names_the_invariant_in_words() {
    let agent = failing_agent("shrink-invariant");
    let shrink = ["sim", "shrink", path(&agent), "--seed", "0", "--no-save"];
    let (code, out, err) = run(livesim(&[&shrink[..], &["--invariant", "panic"]].concat()));
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains("seed 0x0 breaks at-most-once(t) but not panic: nothing to shrink"),
        "{out}"
    );
    assert!(!out.contains("Some("), "{out}");
    assert_refused(
        &[&shrink[..], &["--invariant", "nope"]].concat(),
        "--invariant `nope`: agent `bs` checks no invariant of that name",
    );
    assert_refused(
        &[&shrink[..], &["--invariant", "at_most_once(t)"]].concat(),
        "Did you mean `at-most-once(t)`?",
    );
    // A check with an argument, named without it.
    assert_refused(
        &[&shrink[..], &["--invariant", "at-most-once"]].concat(),
        "Did you mean `at-most-once(t)`? (a check with an argument is named with it)",
    );
}
