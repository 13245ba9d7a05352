//! Damaged files, as a crash leaves them: good records, then a torn line
//! followed by garbage (NUL bytes from a block the file system extended
//! but never wrote, or half of a block). Every good record is kept, the
//! damage is reported with its line and byte offset, and the tape and the
//! journal go on appending after it; a malformed line that is not crash
//! damage is still an error, naming the line.

use livesim::jsonl::parse_bytes;
use livesim::state::{FileJournalSink, State};
use livesim::tape::{FileTape, Tape, TapeEntry};
use livesim::transport::wire_log::WireLog;
use serde_json::{Value, json};

use super::Scratch;

fn records() -> usize {
    if super::large() { 100_000 } else { 1_000 }
}

/// The garbage a crash can leave after a torn line.
fn damages() -> Vec<(&'static str, Vec<u8>)> {
    let mut half_block = b"{\"seq\":99,\"ke".to_vec();
    half_block.extend_from_slice(b"\n\x00\x00{\"kind\":\"llm\",\"inp");
    half_block.extend(std::iter::repeat_n(0u8, 1000));
    vec![
        (
            "NUL bytes",
            [&b"{\"kind\":\"llm\",\"in"[..], &[0u8; 4096]].concat(),
        ),
        ("half a block", half_block),
        (
            "NUL lines",
            [&b"{\"a\":"[..], b"\n", &[0u8; 512], b"\n", &[0u8; 512]].concat(),
        ),
    ]
}

#[test]
fn a_tape_keeps_every_good_entry_and_appends_after_the_damage() {
    for (what, garbage) in damages() {
        let file = Scratch::new("tape.jsonl");
        let tape = FileTape::create(file.path()).unwrap();
        for i in 0..records() {
            tape.record(TapeEntry::ok("resolver:n", json!(i), json!(i * 2)))
                .unwrap();
        }
        drop(tape);
        let good = file.read();
        file.write(&[&good[..], &garbage].concat());

        let tape = FileTape::open(file.path()).unwrap();
        assert_eq!(tape.entries().len(), records(), "{what}");
        let torn = tape.torn_line().expect("the damage is reported");
        // Line 1 is the header.
        assert_eq!(torn.line, records() as u64 + 2, "{what}");
        assert_eq!(torn.offset, good.len() as u64, "{what}");
        assert_eq!(torn.bytes, garbage, "{what}");
        assert!(
            torn.to_string()
                .contains(&format!("from byte {}", good.len())),
            "{torn}"
        );

        tape.record(TapeEntry::ok("resolver:n", json!("after"), json!(1)))
            .unwrap();
        drop(tape);
        let reopened = FileTape::open(file.path()).unwrap();
        assert!(
            reopened.torn_line().is_none(),
            "{what}: the damage was cut off"
        );
        assert_eq!(reopened.entries().len(), records() + 1, "{what}");
        assert_eq!(reopened.entries()[records()].input, json!("after"));
    }
}

#[test]
fn a_journal_keeps_every_good_entry_and_appends_after_the_damage() {
    for (what, garbage) in damages() {
        let file = Scratch::new("journal.jsonl");
        let sink = std::sync::Arc::new(FileJournalSink::create(file.path()).unwrap());
        let state = State::new().with_journal_sink(sink.clone());
        for i in 0..records() {
            state.set("n", i);
        }
        sink.check().unwrap();
        drop((state, sink));
        let good = file.read();
        file.write(&[&good[..], &garbage].concat());

        let read = FileJournalSink::read(file.path()).unwrap();
        assert_eq!(read.records.len(), records(), "{what}");
        let torn = read.torn.expect("the damage is reported");
        assert_eq!(
            (torn.line, torn.offset, torn.bytes),
            (records() as u64 + 2, good.len() as u64, garbage.len()),
            "{what}"
        );

        let sink = std::sync::Arc::new(FileJournalSink::append(file.path()).unwrap());
        let state = State::new().with_journal_sink(sink.clone());
        state.set("after", true);
        sink.check().unwrap();
        let read = FileJournalSink::read(file.path()).unwrap();
        assert!(read.torn.is_none(), "{what}: the damage was cut off");
        assert_eq!(read.records.len(), records() + 1, "{what}");
        assert_eq!(read.records[records()].key, "after");
    }
}

#[test]
fn a_wire_log_keeps_every_good_frame() {
    let mut log = br#"{"v":1,"kind":"wire_log","started_at_ms":0}"#.to_vec();
    log.push(b'\n');
    for i in 0..records() {
        log.extend_from_slice(
            json!({ "dir": "in", "t_ms": i, "type": "text", "json": { "n": i } })
                .to_string()
                .as_bytes(),
        );
        log.push(b'\n');
    }
    for (what, garbage) in damages() {
        let bytes = [&log[..], &garbage].concat();
        let read = WireLog::parse("w.jsonl", &bytes).unwrap();
        assert_eq!(read.frames.len(), records(), "{what}");
        let torn = read.torn.expect("the damage is reported");
        assert_eq!(
            (torn.line, torn.offset),
            (records() as u64 + 2, log.len() as u64),
            "{what}"
        );
    }
}

/// Only crash damage is recovered: a complete line that is malformed, or
/// any bad line with a good record after it, is an error naming the line.
#[test]
fn malformed_lines_are_still_errors() {
    // Malformed, complete, last: a typo, not a crash.
    let error = parse_bytes::<Value>("x.jsonl", b"{\"a\":1}\n{\"a\":1,}\n").unwrap_err();
    assert!(
        error.to_string().starts_with("x.jsonl:2: trailing comma"),
        "{error}"
    );
    // Garbage with a good record after it: a bad line in the middle.
    let error = parse_bytes::<Value>("x.jsonl", b"{\"a\":1}\n\x00\x00\n{\"a\":2}\n").unwrap_err();
    assert!(error.to_string().starts_with("x.jsonl:2: "), "{error}");
    // A tape line of the wrong shape at the end is no crash either.
    let file = Scratch::new("shape.jsonl");
    file.write(b"{\"v\":1,\"kind\":\"tape\"}\n{\"kind\":\"llm\",\"input\":1,\"outptu\":2}\n");
    let error = FileTape::open(file.path()).unwrap_err().to_string();
    assert!(error.contains("line 2: unknown key `outptu`"), "{error}");
}

/// A whole-file input far larger than any script, agent file or corpus
/// entry (a mistaken path, a damaged disk) is refused before it is read:
/// parsing it would take ten times its size in memory. The file is
/// sparse, so the test writes no data.
#[test]
fn an_oversized_input_file_is_refused_unread() {
    let big = Scratch::new("big.json");
    std::fs::File::create(big.path())
        .unwrap()
        .set_len(livesim::jsonl::MAX_TEXT_FILE + 1)
        .unwrap();
    let file = big.path().to_str().unwrap();
    for args in [
        vec!["serve", file],
        vec!["sim", "passk", file],
        vec!["sim", "replay", file],
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_livesim"))
            .args(&args)
            .output()
            .expect("the livesim binary runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "{file}: it holds 67,108,865 bytes, past the 64 MiB livesim reads from one such file"
            )),
            "{args:?}: {stderr}"
        );
    }
}
