//! The JSONL reader under byte splits, over a tape file written by
//! `FileTape` (with a torn tail, as a crash leaves it).

use std::sync::OnceLock;

use livesim::jsonl::{JsonlDecoder, TornLine, parse_bytes};
use livesim::tape::{FileTape, LLM_CALL, Tape, TapeEntry};
use proptest::prelude::*;
use serde_json::json;

use super::TempFile;

/// A small tape file's entry lines (its header line left out): entries of
/// both kinds, a failure, non-ASCII text and escapes, then half of one
/// more entry.
fn tape_bytes() -> Vec<u8> {
    let file = TempFile::new("splits");
    let tape = FileTape::create(file.path()).unwrap();
    let entries = [
        TapeEntry::ok(
            LLM_CALL,
            json!({"contents": [{"role": "user", "parts": [{"text": "Capital de l'Île-de-France ?"}]}]}),
            json!({"content": {"role": "model", "parts": [{"text": "Paris 🗼"}]}}),
        ),
        TapeEntry::failed(
            LLM_CALL,
            json!({"contents": []}),
            json!({"kind": "refused", "message": "quota \"exceeded\"\n"}),
        ),
        TapeEntry::ok(
            "resolver:balance",
            json!({"account_id": "a1"}),
            json!({"balance": 42}),
        ),
    ];
    for entry in entries {
        tape.record(entry).unwrap();
    }
    let mut bytes = file.read();
    // The entries as the decoder sees them: after the file's header line.
    let header_end = bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
    assert_eq!(&bytes[..header_end], b"{\"v\":1,\"kind\":\"tape\"}\n");
    bytes.drain(..header_end);
    let one_more = serde_json::to_vec(&TapeEntry::ok(
        "resolver:balance",
        json!({"account_id": "é"}),
        json!(1),
    ))
    .unwrap();
    bytes.extend_from_slice(&one_more[..one_more.len() - 9]);
    bytes
}

/// The entries and torn line a decoder yields for `bytes` fed in pieces
/// cut at `cuts` (ascending positions).
fn decode_in_pieces(bytes: &[u8], cuts: &[usize]) -> (Vec<TapeEntry>, Option<TornLine>) {
    let mut decoder = JsonlDecoder::<TapeEntry>::new("tape.jsonl");
    let mut entries = Vec::new();
    let mut from = 0;
    for &to in cuts.iter().chain([&bytes.len()]) {
        decoder.feed(&bytes[from..to]);
        from = to;
        while let Some(entry) = decoder.next_record() {
            entries.push(entry.unwrap());
        }
    }
    decoder.end();
    while let Some(entry) = decoder.next_record() {
        entries.push(entry.unwrap());
    }
    (entries, decoder.torn().cloned())
}

type Whole = (Vec<u8>, Vec<TapeEntry>, Option<TornLine>);

/// The tape file's bytes, and what reading them whole gives: written once
/// per test process (the two tests below share it).
fn whole() -> &'static Whole {
    static WHOLE: OnceLock<Whole> = OnceLock::new();
    WHOLE.get_or_init(|| {
        let bytes = tape_bytes();
        let parsed = parse_bytes::<TapeEntry>("tape.jsonl", &bytes).unwrap();
        assert_eq!(parsed.records.len(), 3);
        assert_eq!(parsed.torn.as_ref().map(|t| t.line), Some(4));
        (bytes, parsed.records, parsed.torn)
    })
}

#[test]
fn every_two_way_split_of_a_tape_file_decodes_to_the_same_entries() {
    let (bytes, entries, torn) = whole();
    for at in 0..=bytes.len() {
        let (split_entries, split_torn) = decode_in_pieces(bytes, &[at]);
        assert_eq!(&split_entries, entries, "split at byte {at}");
        assert_eq!(&split_torn, torn, "split at byte {at}");
    }
}

// Invariant: however a tape file's bytes are cut into pieces, feeding the
// pieces to the reader yields the same entries and the same torn line as
// reading the file whole.
proptest! {
    #[test]
    fn any_n_way_split_of_a_tape_file_decodes_to_the_same_entries(
        raw_cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..24)
    ) {
        let (bytes, entries, torn) = whole();
        let mut cuts: Vec<usize> = raw_cuts.iter().map(|i| i.index(bytes.len() + 1)).collect();
        cuts.sort_unstable();
        let (split_entries, split_torn) = decode_in_pieces(bytes, &cuts);
        prop_assert_eq!(&split_entries, entries);
        prop_assert_eq!(&split_torn, torn);
    }
}
