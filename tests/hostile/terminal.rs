//! What the files a command reads can do to the terminal it prints on: a
//! name or a key from a journal or a spec reaches the command's output
//! and its errors, so its control characters (ESC, CR, BEL, the C1
//! controls), Unicode line separators and direction overrides must come
//! out escaped, and an error or a report quoting a megabyte of what it
//! found is cut. A soak's stderr, quoting an agent's names, is escaped
//! the same way.

use super::Scratch;

/// The spec every test here replays against: one step, one tool.
const SPEC: &str =
    r#"{"v": 1, "kind": "flow", "steps": [{"id": "party", "allow": ["set_party"]}]}"#;

/// A tool name that clears the screen, returns to the line's start, rings
/// the bell, opens a C1 control sequence and reverses the text after it.
const HOSTILE: &str = "set_\u{1b}[2J\r\u{7}\u{9b}31m\u{202e}party";

fn livesim(args: &[&str]) -> (Option<i32>, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_livesim"))
        .args(args)
        .output()
        .expect("the livesim binary runs");
    (
        out.status.code(),
        String::from_utf8(out.stdout).expect("stdout is UTF-8"),
        String::from_utf8(out.stderr).expect("stderr is UTF-8"),
    )
}

/// The characters of `text` that act on a terminal, or make a line read as
/// another.
fn raw(text: &str) -> Vec<char> {
    text.chars()
        .filter(|&c| {
            (c.is_control() && c != '\n')
                || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        })
        .collect()
}

fn journal(tool: &str) -> Scratch {
    let file = Scratch::new("hostile.journal.jsonl");
    let entry = serde_json::json!({
        "seq": 1, "key": "flow:tool_call", "value": {"tool": tool, "id": "call-1"}, "timestamp": 1
    });
    file.write(format!("{{\"v\":1,\"kind\":\"journal\"}}\n{entry}\n").as_bytes());
    file
}

/// `flow replay` prints the recorded tool's name in its report: escaped,
/// never raw, in text; and `flow why --format json` gives it back intact
/// to a program that parses the document.
#[test]
fn a_journal_cannot_write_to_the_terminal_through_a_report() {
    let spec = Scratch::new("party.spec.json");
    spec.write(SPEC.as_bytes());
    let journal = journal(HOSTILE);
    let (spec, journal) = (
        spec.path().to_str().unwrap(),
        journal.path().to_str().unwrap(),
    );

    let (code, stdout, stderr) = livesim(&["flow", "replay", "--journal", journal, spec]);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert_eq!(raw(&stdout), [], "{stdout:?}");
    assert!(
        stdout.contains("steps[0] set_\\u001b[2J\\u000d\\u0007\\u009b31m\\u202eparty: admitted"),
        "{stdout}"
    );

    let (code, stdout, stderr) = livesim(&[
        "flow",
        "why",
        "--turn",
        "0",
        "--journal",
        journal,
        "--tool",
        HOSTILE,
        spec,
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(raw(&stdout), [], "{stdout:?}");
    let why: serde_json::Value = serde_json::from_str(&stdout).expect("the JSON still parses");
    assert_eq!(why["tool"], HOSTILE, "{stdout}");
}

/// An unknown key in a spec is quoted by the error, escaped, after the
/// file's name and line.
#[test]
fn an_error_quoting_a_file_cannot_write_to_the_terminal() {
    let spec = Scratch::new("title.spec.json");
    spec.write(r#"{"v": 1, "kind": "flow", "\u001b]0;owned\u0007\r": 1, "steps": []}"#.as_bytes());
    let journal = journal("set_party");
    let file = spec.path().to_str().unwrap();
    let (code, _, stderr) = livesim(&[
        "flow",
        "replay",
        "--journal",
        journal.path().to_str().unwrap(),
        file,
    ]);
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(raw(&stderr), [], "{stderr:?}");
    assert!(
        stderr.starts_with(&format!("livesim flow replay: {file}:1:")),
        "{stderr}"
    );
    assert!(
        stderr.contains("unknown field `\\u{1b}]0;owned\\u{7}\\u{d}`"),
        "{stderr}"
    );
}

/// An error that quotes what it found (here a key of 1 MiB) still names
/// the file and the line, and is cut rather than printed whole.
#[test]
fn an_error_quoting_a_megabyte_is_cut() {
    let spec = Scratch::new("long.spec.json");
    let key = "k".repeat(1 << 20);
    spec.write(format!(r#"{{"v": 1, "kind": "flow", "{key}": 1, "steps": []}}"#).as_bytes());
    let file = spec.path().to_str().unwrap();
    let journal = journal("set_party");
    let (code, _, stderr) = livesim(&[
        "flow",
        "replay",
        "--journal",
        journal.path().to_str().unwrap(),
        file,
    ]);
    assert_eq!(code, Some(2), "{stderr:.300}");
    assert!(
        stderr.starts_with(&format!("livesim flow replay: {file}:1:")),
        "{stderr:.300}"
    );
    assert!(stderr.len() < 16 * 1024, "{} bytes", stderr.len());
    assert!(stderr.trim_end().ends_with(" bytes)"), "{stderr:.300}");
}

/// `flow ci` prints why a scenario cannot run and the step that failed,
/// both quoting the files it read: each line of its report is cut, in
/// text, and each string in JSON (which still parses), and escaped.
#[test]
fn a_corpus_report_quoting_a_megabyte_is_cut() {
    let dir = Scratch::new("ci-corpus");
    std::fs::create_dir(dir.path()).unwrap();
    let long = "k".repeat(1 << 20);
    let write = |name: &str, text: String| std::fs::write(dir.path().join(name), text).unwrap();
    write("party.spec.json", SPEC.to_string());
    // An unknown key the error quotes, and a tool the failing step names.
    write(
        "party.key.scenario.json",
        format!(r#"{{"name": "key", "\u001b{long}": 1, "steps": []}}"#),
    );
    let step = serde_json::json!({"expect_allowed": format!("\u{1b}[2J\u{202e}{long}")});
    write(
        "party.tool.scenario.json",
        serde_json::json!({"name": "tool", "steps": [step]}).to_string(),
    );
    let root = dir.path().to_str().unwrap();

    let (code, stdout, stderr) = livesim(&["flow", "ci", root]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stdout.len() < 32 * 1024, "{} bytes", stdout.len());
    assert_eq!(raw(&stdout), [], "{stdout:.300}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{stdout:.300}");
    assert!(
        lines[0].starts_with("ERROR party.key.scenario.json"),
        "{stdout:.300}"
    );
    assert!(
        lines[1].starts_with("FAIL  party.tool.scenario.json"),
        "{stdout:.300}"
    );
    assert!(lines[1].contains("\\u001b[2J\\u202ekkk"), "{stdout:.300}");
    for line in &lines[..2] {
        assert!(line.len() < 9 * 1024, "{} bytes", line.len());
        assert!(line.ends_with(" bytes)"), "{line:.300}");
    }

    let (code, stdout, stderr) = livesim(&["flow", "ci", "--format", "json", root]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stdout.len() < 64 * 1024, "{} bytes", stdout.len());
    assert_eq!(raw(&stdout), [], "{stdout:.300}");
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("the JSON still parses");
    let problem = report["results"][0]["outcome"]["problem"].as_str().unwrap();
    let reason = report["results"][1]["outcome"]["failure"]["reason"]
        .as_str()
        .unwrap();
    for quoted in [problem, reason] {
        assert!(quoted.len() < 9 * 1024, "{} bytes", quoted.len());
        assert!(quoted.ends_with(" bytes)"), "{quoted:.300}");
    }
    assert!(reason.contains("\u{1b}[2J\u{202e}kkk"), "{reason:.300}");
    let _ = std::fs::remove_dir_all(dir.path());
}

/// Set in the child process that runs the ignored soaks below; without
/// it they do nothing, so a run with `--include-ignored` is not broken
/// by them.
const SOAK_CHILD: &str = "LIVESIM_HOSTILE_TERMINAL_CHILD";

fn echo() -> livesim::prelude::LiveBuilder {
    use livesim::prelude::*;
    Live::builder().tools(T::simple(
        "echo",
        "Says it back",
        |args| async move { Ok(args) },
    ))
}

#[test]
#[ignore = "run by a_soak_cannot_write_to_the_terminal, in a child process"]
fn soak_that_passes() {
    if std::env::var_os(SOAK_CHILD).is_some() {
        // A name a corpus cannot keep: nothing is kept.
        livesim::soak::Soak::new(HOSTILE, echo)
            .keep(false)
            .seeds(1)
            .run();
    }
}

#[test]
#[ignore = "run by a_soak_cannot_write_to_the_terminal, in a child process"]
fn soak_that_fails() {
    if let Some(dir) = std::env::var_os(SOAK_CHILD).filter(|d| !d.is_empty()) {
        let dir = std::path::PathBuf::from(dir);
        livesim::soak::Soak::new("echo", echo)
            .invariant(HOSTILE, |_| Err("broken\u{1b}]0;owned\u{7}".into()))
            .corpus(dir.join("seeds"))
            .pages(dir.join("pages"))
            .shrink_runs(2)
            .seeds(1)
            .run();
    }
}

/// Runs this test binary's ignored `test` as a child, with `dir` for its
/// files; returns what it printed, stdout and stderr together.
fn soak_child(test: &str, dir: &std::path::Path) -> String {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--ignored", "--nocapture"])
        .env(SOAK_CHILD, dir)
        .env_remove("LIVESIM_SEED")
        .env_remove("LIVESIM_SEEDS")
        .env_remove("LIVESIM_CASE")
        .env_remove("LIVESIM_REGRESSIONS")
        .output()
        .unwrap();
    format!(
        "{}{}",
        String::from_utf8(out.stdout).expect("stdout is UTF-8"),
        String::from_utf8(out.stderr).expect("stderr is UTF-8")
    )
}

/// What a soak writes to stderr (its passing line, each shrinking step)
/// and panics with (its failures) quotes the agent's name, an
/// invariant's and why it broke: escaped, never raw.
#[test]
fn a_soak_cannot_write_to_the_terminal() {
    let dir = Scratch::new("soak");
    std::fs::create_dir(dir.path()).unwrap();
    let escaped = "set_\\u{1b}[2J\\u{d}\\u{7}\\u{9b}31m\\u{202e}party";

    let output = soak_child("terminal::soak_that_passes", dir.path());
    assert_eq!(raw(&output), [], "{output:?}");
    assert!(
        output.contains(&format!("livesim: soak {escaped}: 1 sessions passed")),
        "{output}"
    );

    let output = soak_child("terminal::soak_that_fails", dir.path());
    assert_eq!(raw(&output), [], "{output:?}");
    assert!(
        output.contains(&format!("livesim: shrinking echo seed 0x0 ({escaped}, ")),
        "{output}"
    );
    assert!(output.contains("broken\\u{1b}]0;owned\\u{7}"), "{output}");
    let _ = std::fs::remove_dir_all(dir.path());
}
