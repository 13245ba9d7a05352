//! `sim import` of a wire log, and `WireLog::read`: what the format
//! forbids is refused (a header) or named as damaged (a line), never
//! imported as if it were fine.

use livesim::soak::import_wire_log;
use livesim::transport::wire_log::WireLog;

use crate::{arg, refused, repo, temp};

/// The recorded session of Google's Python SDK, as lines.
fn recorded() -> Vec<String> {
    let text =
        std::fs::read_to_string(repo().join("tests/fixtures/import/weather-python-sdk.jsonl"))
            .unwrap();
    text.lines().map(str::to_string).collect()
}

fn joined(lines: &[String]) -> Vec<u8> {
    let mut bytes = lines.join("\n").into_bytes();
    bytes.push(b'\n');
    bytes
}

// Item 3: a header of version 2, or with a key no header has, was
// imported (exit 0), though the format refuses both.
#[test]
fn a_wire_log_header_the_format_refuses_refuses_the_import() {
    let dir = temp("wire-headers");
    for (header, said) in [
        (
            r#"{"v":2,"kind":"wire_log","started_at_ms":0}"#,
            "prod.jsonl:1: wire log version 2 is not supported (this build reads 1)",
        ),
        (
            r#"{"v":1,"kind":"wire_log","started_at_ms":0,"bogus":1}"#,
            "prod.jsonl:1: not a wire log header: unknown key `bogus`",
        ),
        (
            r#"{"v":1,"v":1,"kind":"wire_log","started_at_ms":0}"#,
            "prod.jsonl:1: not a wire log header: duplicate key `v`",
        ),
    ] {
        let mut lines = recorded();
        lines[0] = header.to_string();
        let bytes = joined(&lines);
        let err = import_wire_log("prod.jsonl", &bytes, "w").unwrap_err();
        assert!(err.starts_with(said), "{err}");
        assert!(WireLog::parse("prod.jsonl", &bytes).is_err(), "{header}");
        let log = dir.join("prod.jsonl");
        std::fs::write(&log, &bytes).unwrap();
        refused(
            &repo(),
            &[
                "sim",
                "import",
                arg(&log),
                "--agent",
                "weather",
                "--no-save",
            ],
            &[said],
        );
    }
}

// Item 3: a frame line that says `dir` twice, or gives both `json` and
// `raw`, was imported with one of its values chosen silently.
#[test]
fn a_frame_that_says_a_thing_twice_is_damaged() {
    let whole = import_wire_log("prod.jsonl", &joined(&recorded()), "w").unwrap();
    assert!(whole.damaged.is_empty(), "{:?}", whole.damaged);
    for (edit, said) in [
        (
            ("{\"dir\":\"in\"", "{\"dir\":\"out\",\"dir\":\"in\""),
            "prod.jsonl:3: a damaged wire log line: duplicate key `dir` at column 14",
        ),
        (
            (
                "\"json\":{\"setupComplete\":{}}",
                "\"json\":{\"setupComplete\":{}},\"raw\":\"x\"",
            ),
            "prod.jsonl:3: a damaged wire log line: both `json` and `raw` are given",
        ),
        (
            (
                "\"json\":{\"setupComplete\":{}}",
                "\"json\":{\"setupComplete\":{\"a\":1,\"a\":2}}",
            ),
            "prod.jsonl:3: a damaged wire log line: duplicate key `a`",
        ),
    ] {
        let mut lines = recorded();
        assert!(lines[2].contains(edit.0), "{}", lines[2]);
        lines[2] = lines[2].replacen(edit.0, edit.1, 1);
        let bytes = joined(&lines);
        let imported = import_wire_log("prod.jsonl", &bytes, "w").unwrap();
        assert_eq!(imported.damaged.len(), 1, "{:?}", imported.damaged);
        assert!(
            imported.damaged[0].starts_with(said),
            "{:?}",
            imported.damaged
        );
        assert_eq!(imported.frames, whole.frames - 1);
        // The strict reader refuses the log, naming the line.
        let err = WireLog::parse("prod.jsonl", &bytes)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("prod.jsonl:3: "), "{err}");
    }
}

// Item 3: bytes that are not UTF-8 were read as U+FFFD without a word.
#[test]
fn a_line_that_is_not_utf8_is_damaged_not_mended() {
    let lines = recorded();
    let at = lines
        .iter()
        .position(|l| l.contains("It is sunny"))
        .unwrap();
    let mut bytes = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if i == at {
            bytes.extend_from_slice(line.replace("sunny", "sun\u{1}ny").as_bytes());
            let cut = bytes.iter().rposition(|&b| b == 1).unwrap();
            bytes.splice(cut..=cut, [0xff, 0xfe]);
        } else {
            bytes.extend_from_slice(line.as_bytes());
        }
        bytes.push(b'\n');
    }
    let imported = import_wire_log("prod.jsonl", &bytes, "w").unwrap();
    let said = format!("prod.jsonl:{}: a damaged wire log line: column ", at + 1);
    assert_eq!(imported.damaged.len(), 1, "{:?}", imported.damaged);
    assert!(
        imported.damaged[0].starts_with(&said),
        "{:?}",
        imported.damaged
    );
    assert!(
        imported.damaged[0].ends_with("0xff is not UTF-8"),
        "{:?}",
        imported.damaged
    );
    let script = imported.script.to_json().to_string();
    assert!(!script.contains('\u{fffd}'), "{script}");
}

// Item 3: a close reason longer than a close frame carries was cut
// without a note.
#[test]
fn a_close_reason_cut_to_fit_is_noted() {
    let mut lines = recorded();
    let reason = "x".repeat(200);
    lines.push(format!(
        r#"{{"dir":"in","t_ms":30,"type":"close","close":{{"code":1000,"reason":"{reason}"}}}}"#
    ));
    let imported = import_wire_log("prod.jsonl", &joined(&lines), "w").unwrap();
    assert!(imported.damaged.is_empty(), "{:?}", imported.damaged);
    assert!(
        imported
            .notes
            .iter()
            .any(|n| n.contains("the close reason is 200 bytes, more than the 123")),
        "{:?}",
        imported.notes
    );
    // A reason that fits needs no note.
    lines.pop();
    lines.push(
        r#"{"dir":"in","t_ms":30,"type":"close","close":{"code":1000,"reason":"bye"}}"#.into(),
    );
    let imported = import_wire_log("prod.jsonl", &joined(&lines), "w").unwrap();
    assert!(imported.notes.is_empty(), "{:?}", imported.notes);
}
