//! What the files a command reads can do to the terminal it prints on: a
//! name or a key from a journal or a spec reaches the command's output
//! and its errors, so its control characters (ESC, CR, BEL, the C1
//! controls), Unicode line separators and direction overrides must come
//! out escaped, and an error quoting a megabyte of what it found is cut.

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
