//! The JSONL reader: line outcomes, and the byte-split property over every
//! wire log in the fixtures.

use livesim::jsonl::{JsonlDecoder, JsonlError, Parsed, parse_bytes, read_file};
use livesim::transport::wire_log::{Direction, LineType, Record, WireLog};
use proptest::prelude::*;
use serde_json::Value;

use super::{fixture_bytes, fixture_dir, fixture_names};

/// Everything a decoder yields for `bytes` fed in `chunks` (given as cut
/// positions): the records, then the torn line or the first error.
fn decode_split<T: serde::de::DeserializeOwned>(
    bytes: &[u8],
    cuts: &[usize],
) -> (Vec<T>, Result<Option<livesim::jsonl::TornLine>, JsonlError>) {
    let mut decoder = JsonlDecoder::<T>::new("split.jsonl");
    let mut records = Vec::new();
    let mut from = 0;
    let mut bounds: Vec<usize> = cuts.to_vec();
    bounds.push(bytes.len());
    for to in bounds {
        decoder.feed(&bytes[from..to]);
        from = to;
        while let Some(record) = decoder.next_record() {
            match record {
                Ok(r) => records.push(r),
                Err(e) => return (records, Err(e)),
            }
        }
    }
    decoder.end();
    while let Some(record) = decoder.next_record() {
        match record {
            Ok(r) => records.push(r),
            Err(e) => return (records, Err(e)),
        }
    }
    (records, Ok(decoder.torn().cloned()))
}

fn wire_logs() -> Vec<(String, Vec<u8>)> {
    let logs: Vec<_> = fixture_names("logs")
        .into_iter()
        .map(|n| {
            let bytes = fixture_bytes("logs", &n);
            (n, bytes)
        })
        .collect();
    assert!(logs.len() >= 5);
    logs
}

#[test]
fn the_wire_log_fixtures_read_as_expected() {
    for (name, bytes) in wire_logs() {
        let log = WireLog::parse(&name, &bytes).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(log.header.v, 1);
        assert_eq!(log.torn.is_some(), name == "torn_tail.jsonl", "{name}");
        assert!(!log.frames.is_empty());
        for frame in &log.frames {
            if let Some(f) = frame.to_frame() {
                assert_eq!(f.is_close(), frame.line_type == LineType::Close);
            }
        }
    }
    let audio = WireLog::read(fixture_dir("logs").join("audio_turn.jsonl")).unwrap();
    let types: Vec<_> = audio.frames.iter().map(|f| f.line_type).collect();
    assert!(types.contains(&LineType::Error));
    let raw = audio
        .frames
        .iter()
        .find(|f| f.raw_base64.is_some())
        .unwrap();
    assert_eq!(
        raw.to_frame().unwrap().payload().unwrap(),
        [0xff, 0xfe, 0x7b]
    );
    assert_eq!(audio.frames[0].dir, Direction::Out);
    let crlf = WireLog::parse(
        "crlf",
        &fixture_bytes("logs", "crlf_blank_unterminated.jsonl"),
    )
    .unwrap();
    // The unterminated last line is complete, so it is a record, not torn.
    assert_eq!((crlf.frames.len(), crlf.torn), (2, None));
}

#[test]
fn every_two_way_split_of_every_wire_log_decodes_the_same() {
    for (name, bytes) in wire_logs() {
        let whole = decode_split::<Record>(&bytes, &[]);
        assert!(whole.1.is_ok(), "{name}");
        for cut in 0..=bytes.len() {
            assert_eq!(
                decode_split::<Record>(&bytes, &[cut]),
                whole,
                "{name} split at {cut}"
            );
        }
    }
}

fn arb_log_and_cuts() -> impl Strategy<Value = (Vec<u8>, Vec<usize>)> {
    prop::sample::select(wire_logs()).prop_flat_map(|(_, bytes)| {
        let len = bytes.len();
        (
            Just(bytes),
            prop::collection::vec(0..=len, 0..24).prop_map(|mut cuts| {
                cuts.sort();
                cuts
            }),
        )
    })
}

proptest! {
    /// Any n-way split of any fixture wire log decodes to the same records and the same tail as the whole.
    #[test]
    fn random_splits_decode_the_same((bytes, cuts) in arb_log_and_cuts()) {
        prop_assert_eq!(decode_split::<Record>(&bytes, &cuts), decode_split::<Record>(&bytes, &[]));
        prop_assert_eq!(decode_split::<Value>(&bytes, &cuts), decode_split::<Value>(&bytes, &[]));
    }

    /// Any split of arbitrary bytes gives the same outcome as the whole: records, torn tail, or the same error.
    #[test]
    fn random_splits_of_arbitrary_input_agree(
        bytes in prop::collection::vec(prop::sample::select(b"{}[]\":,0123 \n\r\\atrue".to_vec()), 0..200),
        cuts in prop::collection::vec(0usize..200, 0..8),
    ) {
        let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(bytes.len())).collect();
        cuts.sort();
        prop_assert_eq!(decode_split::<Value>(&bytes, &cuts), decode_split::<Value>(&bytes, &[]));
    }
}

#[test]
fn a_bad_middle_line_names_the_file_the_line_and_the_problem() {
    let err =
        parse_bytes::<Value>("journal.jsonl", b"{\"a\":1}\n\n{\"b\":\n{\"c\":3}\n").unwrap_err();
    assert_eq!(
        err,
        JsonlError::BadLine {
            file: "journal.jsonl".into(),
            line: 3,
            problem: "EOF while parsing a value at column 5".into(),
        }
    );
    // The record's shape is checked too.
    let err = parse_bytes::<Vec<u32>>("n.jsonl", b"[1]\n{\"x\":1}\n").unwrap_err();
    assert!(
        err.to_string()
            .starts_with("n.jsonl:2: invalid type: an object, expected a list"),
        "{err}"
    );
}

#[test]
fn a_torn_last_line_is_reported_and_what_came_before_is_kept() {
    let bytes = fixture_bytes("logs", "torn_tail.jsonl");
    let Parsed { records, torn } = parse_bytes::<Value>("torn_tail.jsonl", &bytes).unwrap();
    assert_eq!(records.len(), 3);
    let torn = torn.unwrap();
    assert_eq!((torn.file.as_str(), torn.line), ("torn_tail.jsonl", 4));
    assert!(
        torn.to_string()
            .starts_with("torn_tail.jsonl:4: torn last line ("),
        "{torn}"
    );
    // A last line without newline that is complete but malformed is a bad
    // line, not a torn one: nothing cut it short.
    let err = parse_bytes::<Value>("x.jsonl", b"1\n2 3").unwrap_err();
    assert!(
        matches!(err, JsonlError::BadLine { line: 2, .. }),
        "{err:?}"
    );
    // A last line that is complete is a record.
    assert_eq!(
        parse_bytes::<u8>("x.jsonl", b"1\n2").unwrap().records,
        [1, 2]
    );
}

#[test]
fn reading_a_file_names_the_path() {
    let missing = fixture_dir("logs").join("no_such_log.jsonl");
    let err = read_file::<Value>(&missing).unwrap_err();
    assert!(
        err.to_string().starts_with(&missing.display().to_string()),
        "{err}"
    );
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("jsonl-bad-line");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.jsonl");
    std::fs::write(&path, b"{\"ok\":1}\nnope\n").unwrap();
    let err = read_file::<Value>(&path).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("{}:2: expected ident at column 2", path.display())
    );
    let log = read_file::<Record>(fixture_dir("logs").join("tool_turn.jsonl")).unwrap();
    assert!(matches!(log.records[0], Record::Header(_)));
}

#[test]
fn wire_log_structure_errors_name_the_line() {
    let frame = br#"{"dir":"in","t_ms":1,"type":"text","raw":"x"}"#;
    let err = WireLog::parse("w.jsonl", &[&b"\n"[..], frame, b"\n"].concat()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "w.jsonl:2: a wire log starts with a header line (with \"v\"); found a frame"
    );
    let err =
        WireLog::parse("w.jsonl", br#"{"v":2,"kind":"wire_log","started_at_ms":0}"#).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("w.jsonl:1: wire log version 2 is not supported"),
        "{err}"
    );
    let err = WireLog::parse("w.jsonl", b"").unwrap_err();
    assert!(err.to_string().contains("empty"), "{err}");
    let err = WireLog::parse("w.jsonl", b"{\"v\":1,\"kind\":\"wire_log\",\"started_at_ms\":0}\n{\"dir\":\"sideways\",\"t_ms\":0,\"type\":\"text\"}\n").unwrap_err();
    assert!(
        err.to_string()
            .starts_with("w.jsonl:2: unknown name `sideways` at column 8 (expected `in` or `out`)"),
        "{err}"
    );
}
