//! Tape files as a crash or a hand edit leaves them: a torn last line, a
//! last line without its newline, a bad line in the middle, a missing file.

use livesim::jsonl::parse_bytes;
use livesim::tape::{FileTape, Tape, TapeEntry, TapeError, canonical_json};
use serde_json::json;

use super::TempFile;

fn entry(n: u64) -> TapeEntry {
    TapeEntry::ok(
        "resolver:balance",
        json!({"account_id": n}),
        json!({"balance": n * 10}),
    )
}

fn line(entry: &TapeEntry) -> Vec<u8> {
    let mut line = serde_json::to_vec(entry).unwrap();
    line.push(b'\n');
    line
}

fn input(n: u64) -> String {
    canonical_json(&json!({"account_id": n}))
}

/// The records of a tape file, which must read back with no torn line.
fn read_back_cleanly(file: &TempFile) -> Vec<TapeEntry> {
    let parsed = parse_bytes::<TapeEntry>("read back", &file.read()).unwrap();
    assert!(parsed.torn.is_none(), "{:?}", parsed.torn);
    parsed.records
}

#[test]
fn a_torn_last_line_is_reported_and_the_next_record_starts_its_own_line() {
    let file = TempFile::new("torn_last_line");
    let complete = [line(&entry(1)), line(&entry(2))].concat();
    let third = line(&entry(3));
    let torn = &third[..third.len() / 2];
    file.write(&[&complete[..], torn].concat());

    let tape = FileTape::open(file.path()).unwrap();
    let report = tape.torn_line().expect("the torn line is reported");
    assert_eq!(report.line, 3);
    assert_eq!(report.bytes, torn);
    assert_eq!(report.text(), String::from_utf8_lossy(torn));
    assert_eq!(report.file, file.path().display().to_string());
    assert!(report.to_string().contains("line 3"), "{report}");
    assert_eq!(tape.entries(), [entry(1), entry(2)]);

    // Opening changed nothing on disk: the torn bytes are still there.
    assert_eq!(file.read(), [&complete[..], torn].concat());

    // The complete entries replay; the torn one does not exist.
    assert_eq!(tape.next("resolver:balance", &input(1)), Some(entry(1)));
    assert_eq!(tape.next("resolver:balance", &input(2)), Some(entry(2)));
    assert_eq!(tape.next("resolver:balance", &input(3)), None);

    // A new record replaces the torn bytes, on a line of its own.
    tape.record(entry(4)).unwrap();
    assert_eq!(file.read(), [&complete[..], &line(&entry(4))[..]].concat());
    assert_eq!(read_back_cleanly(&file), [entry(1), entry(2), entry(4)]);
    drop(tape);

    let reopened = FileTape::open(file.path()).unwrap();
    assert!(reopened.torn_line().is_none());
    assert_eq!(reopened.entries(), [entry(1), entry(2), entry(4)]);
}

#[test]
fn a_torn_first_line_leaves_an_empty_tape_that_records() {
    let file = TempFile::new("torn_first_line");
    let first = line(&entry(1));
    file.write(&first[..7]);

    let tape = FileTape::open(file.path()).unwrap();
    assert_eq!(tape.torn_line().unwrap().line, 1);
    assert!(tape.entries().is_empty());
    tape.record(entry(2)).unwrap();
    assert_eq!(file.read(), line(&entry(2)));
}

/// A file that is not a tape (another JSON file, named by mistake) is an
/// error naming its first line, and is left as it was: a crash tears one
/// line, so damage over several lines with nothing good before it is no
/// torn write, and appending after "the torn end" would cut the file off.
#[test]
fn a_file_that_is_not_a_tape_is_refused_and_left_whole() {
    let file = TempFile::new("not_a_tape");
    let text = b"{\n  \"v\": 1,\n  \"user\": [\"Hi\"]\n}\n";
    file.write(text);
    let Err(error) = FileTape::open(file.path()) else {
        panic!("a file that is not a tape opened as one");
    };
    assert!(
        error
            .to_string()
            .contains(", line 1: not a tape entry, and no entry before it"),
        "{error}"
    );
    assert_eq!(file.read(), text);
}

#[test]
fn a_last_line_without_its_newline_is_an_entry_and_the_next_record_follows_it() {
    let file = TempFile::new("no_final_newline");
    let mut bytes = [line(&entry(1)), line(&entry(2))].concat();
    bytes.pop(); // as an editor may save it
    file.write(&bytes);

    let tape = FileTape::open(file.path()).unwrap();
    assert!(tape.torn_line().is_none());
    assert_eq!(tape.entries(), [entry(1), entry(2)]);
    tape.record(entry(3)).unwrap();
    assert_eq!(read_back_cleanly(&file), [entry(1), entry(2), entry(3)]);
}

#[test]
fn a_bad_line_in_the_middle_is_an_error_naming_the_file_and_the_line() {
    let file = TempFile::new("bad_middle_line");
    file.write(
        &[
            line(&entry(1)),
            b"{\"kind\": \"llm\", oops}\n".to_vec(),
            line(&entry(3)),
        ]
        .concat(),
    );

    let err = FileTape::open(file.path()).unwrap_err();
    let TapeError::BadLine {
        path,
        line,
        message,
    } = &err
    else {
        panic!("expected a bad line, got {err:?}");
    };
    assert_eq!(path, &file.path().display().to_string());
    assert_eq!(*line, 2);
    assert!(message.contains("key must be a string"), "{message}");
    let shown = err.to_string();
    assert!(
        shown.contains(path.as_str()) && shown.contains("line 2"),
        "{shown}"
    );
}

/// What a call returned comes back as it was recorded, `null` included:
/// a resolver that found nothing and returned `null` replays `null`, not
/// a call that returned nothing (which replays as an error).
#[test]
fn a_call_that_returned_null_replays_null() {
    let file = TempFile::new("null_output");
    let tape = FileTape::create(file.path()).unwrap();
    let found_nothing = TapeEntry::ok("resolver:lookup", json!({"id": 7}), json!(null));
    tape.record(found_nothing.clone()).unwrap();
    drop(tape);
    let tape = FileTape::open(file.path()).unwrap();
    assert_eq!(tape.entries(), vec![found_nothing]);
    let replayed = tape.next("resolver:lookup", &canonical_json(&json!({"id": 7})));
    assert_eq!(replayed.and_then(|e| e.output), Some(json!(null)));
}

#[test]
fn a_line_that_is_json_but_not_an_entry_is_a_bad_line() {
    let file = TempFile::new("not_an_entry");
    file.write(
        &[
            line(&entry(1)),
            line(&entry(2)),
            b"{\"kind\": \"llm\"}\n".to_vec(),
        ]
        .concat(),
    );

    let err = FileTape::open(file.path()).unwrap_err();
    assert!(matches!(err, TapeError::BadLine { line: 3, .. }), "{err:?}");
    assert!(err.to_string().contains("missing field `input`"), "{err}");
    // An entry's fields as an array, in order, are not an entry.
    file.write(
        &[
            line(&entry(1)),
            b"[\"llm\", {\"q\": 1}, {\"a\": 2}, null]\n".to_vec(),
        ]
        .concat(),
    );
    let err = FileTape::open(file.path()).unwrap_err();
    assert!(matches!(err, TapeError::BadLine { line: 2, .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("invalid type: a list, expected a tape entry, a JSON object"),
        "{err}"
    );
}

#[test]
fn a_missing_file_is_an_io_error_naming_it() {
    let file = TempFile::new("missing");
    let err = FileTape::open(file.path()).unwrap_err();
    let TapeError::Io { path, source } = &err else {
        panic!("expected an I/O error, got {err:?}");
    };
    assert_eq!(path, &file.path().display().to_string());
    assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
}

#[test]
fn a_record_that_cannot_be_written_is_an_error_and_is_not_kept() {
    let file = TempFile::new("unwritable");
    file.write(&line(&entry(1)));
    let tape = FileTape::open(file.path()).unwrap();
    // The file goes away after loading: appending to it fails.
    std::fs::remove_file(file.path()).unwrap();

    let err = tape.record(entry(2)).unwrap_err();
    assert!(
        matches!(&err, TapeError::Io { path, .. } if path == &file.path().display().to_string()),
        "{err:?}"
    );
    assert_eq!(
        tape.entries(),
        [entry(1)],
        "the memory side never holds more than the file"
    );
}
