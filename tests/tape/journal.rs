//! Journals written by `FileJournalSink` read back through the same JSONL
//! reader as tapes.

use std::sync::Arc;
use std::time::Duration;

use livesim::clock::{ManualClock, Timestamp};
use livesim::jsonl::JsonlError;
use livesim::state::{FileJournalSink, MemoryJournalSink, State};
use serde_json::json;

use super::TempFile;

/// Writes the same session to a memory journal and a file journal. The
/// clock moves in whole milliseconds, the file's unit, so both hold equal
/// timestamps.
fn write_session(file: &TempFile) -> Vec<livesim::state::StateMutation> {
    let clock = Arc::new(ManualClock::starting_at(Timestamp::from_unix_millis(
        1_767_225_600_000,
    )));
    let memory = Arc::new(MemoryJournalSink::new());
    let on_disk = Arc::new(FileJournalSink::create(file.path()).unwrap());
    let state = State::new()
        .with_clock(clock.clone())
        .with_journal_sink(memory.clone())
        .with_journal_sink(on_disk.clone());

    state.set("party_size", 4);
    clock.advance(Duration::from_millis(250));
    state.set(
        "guest",
        json!({"name": "Zoë", "notes": "window seat\n\"quiet\""}),
    );
    state.scoped("flow:").set("active", json!(["verify"]));
    clock.advance(Duration::from_secs(2));
    state.remove("party_size");
    state.set("tags", json!([1, null, true, 2.5]));
    on_disk.check().unwrap();
    memory.entries()
}

#[test]
fn a_file_journal_reads_back_equal_to_a_memory_journal_of_the_same_writes() {
    let file = TempFile::new("journal_read_back");
    let expected = write_session(&file);
    assert_eq!(expected.len(), 5);
    assert!(expected[3].removed);
    assert_eq!(expected[2].key, "flow:active");

    let read = FileJournalSink::read(file.path()).unwrap();
    assert_eq!(read.records, expected);
    assert!(read.torn.is_none());
}

#[test]
fn a_torn_last_journal_line_is_reported_and_the_entries_before_it_kept() {
    let file = TempFile::new("journal_torn");
    let expected = write_session(&file);
    let mut bytes = file.read();
    bytes.extend_from_slice(br#"{"seq":6,"key":"par"#);
    file.write(&bytes);

    let read = FileJournalSink::read(file.path()).unwrap();
    assert_eq!(read.records, expected);
    let torn = read.torn.expect("the torn line is reported");
    // Line 1 is the header, lines 2–6 the entries.
    assert_eq!((torn.line, torn.bytes), (7, 19));
    assert_eq!(torn.file, file.path().display().to_string());
}

/// Appending to a journal whose last line is torn cuts the torn bytes off
/// first: the new entry gets its own line and the file reads back clean.
#[test]
fn appending_after_a_torn_line_repairs_the_end_first() {
    let file = TempFile::new("journal_append_torn");
    let expected = write_session(&file);
    let mut bytes = file.read();
    bytes.extend_from_slice(br#"{"seq":6,"key":"par"#);
    file.write(&bytes);

    let sink = Arc::new(FileJournalSink::append(file.path()).unwrap());
    let state = State::new().with_journal_sink(sink.clone());
    state.set("after", true);
    sink.check().unwrap();

    let read = FileJournalSink::read(file.path()).unwrap();
    assert!(read.torn.is_none(), "the torn line was cut off");
    assert_eq!(read.records.len(), expected.len() + 1);
    assert_eq!(read.records[..expected.len()], expected[..]);
    assert_eq!(read.records[expected.len()].key, "after");
}

#[test]
fn a_bad_journal_line_is_an_error_naming_the_file_and_the_line() {
    let file = TempFile::new("journal_bad_line");
    write_session(&file);
    let text = String::from_utf8(file.read()).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[1] = r#"{"seq":2,"key":"guest"}"#;
    file.write(format!("{}\n", lines.join("\n")).as_bytes());

    let err = FileJournalSink::read(file.path()).unwrap_err();
    let JsonlError::BadLine {
        file: name,
        line,
        problem,
    } = &err
    else {
        panic!("expected a bad line, got {err:?}");
    };
    assert_eq!(
        (name.as_str(), *line),
        (file.path().display().to_string().as_str(), 2)
    );
    assert!(problem.contains("missing field `value`"), "{problem}");
}

#[test]
fn a_missing_journal_is_an_error_naming_it() {
    let file = TempFile::new("journal_missing");
    let err = FileJournalSink::read(file.path()).unwrap_err();
    assert!(
        matches!(&err, JsonlError::Io { file: name, .. } if name == &file.path().display().to_string()),
        "{err:?}"
    );
}
