//! The decoders under hostile input: random bytes and mutated valid frames
//! (bit flips, truncations, insertions) must give a message or an error,
//! never a panic.

use std::sync::OnceLock;

use livesim::jsonl::parse_bytes;
use livesim::transport::wire_log::WireLog;
use livesim::wire::{ClientMessage, Frame, ServerMessage, decode};
use proptest::prelude::*;

use super::{fixture_bytes, fixture_names};

/// Every valid frame in the corpus, as mutation seeds (read once).
fn corpus() -> &'static [Vec<u8>] {
    static CORPUS: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    CORPUS.get_or_init(|| {
        ["server", "client"]
            .iter()
            .flat_map(|sub| {
                fixture_names(sub)
                    .into_iter()
                    .map(move |n| fixture_bytes(sub, &n))
            })
            .collect()
    })
}

#[derive(Clone, Debug)]
enum Mutation {
    FlipBit(usize, u8),
    Truncate(usize),
    Insert(usize, Vec<u8>),
    Remove(usize, usize),
}

fn mutate(mut bytes: Vec<u8>, mutations: &[Mutation]) -> Vec<u8> {
    for m in mutations {
        let len = bytes.len().max(1);
        match m {
            Mutation::FlipBit(at, bit) => {
                if !bytes.is_empty() {
                    bytes[at % len] ^= 1 << (bit % 8);
                }
            }
            Mutation::Truncate(at) => bytes.truncate(at % len),
            Mutation::Insert(at, extra) => {
                let at = at % (bytes.len() + 1);
                bytes.splice(at..at, extra.iter().copied());
            }
            Mutation::Remove(at, n) => {
                let at = at % len;
                let end = (at + n % 16).min(bytes.len());
                if at < end {
                    bytes.drain(at..end);
                }
            }
        }
    }
    bytes
}

fn arb_mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(a, b)| Mutation::FlipBit(a, b)),
        any::<usize>().prop_map(Mutation::Truncate),
        (
            any::<usize>(),
            prop_oneof![
                prop::collection::vec(any::<u8>(), 1..8),
                prop::sample::select(vec![
                    b"{".to_vec(),
                    b"}".to_vec(),
                    b"\"".to_vec(),
                    b"\\u".to_vec(),
                    b"null".to_vec(),
                    b"[[[[".to_vec(),
                    b"1e999".to_vec(),
                    b"\"turnComplete\":".to_vec(),
                    b"\xff".to_vec(),
                ]),
            ]
        )
            .prop_map(|(a, b)| Mutation::Insert(a, b)),
        (any::<usize>(), any::<usize>()).prop_map(|(a, n)| Mutation::Remove(a, n)),
    ]
}

/// Runs every decoder livesim has over `bytes`; any panic fails the test.
fn decode_everything(bytes: &[u8]) {
    let _ = decode::<ServerMessage>(&Frame::Binary(bytes.to_vec()));
    let _ = decode::<ClientMessage>(&Frame::Binary(bytes.to_vec()));
    if let Ok(text) = std::str::from_utf8(bytes) {
        let _ = decode::<ServerMessage>(&Frame::Text(text.to_owned()));
    }
    if let Ok(msg) = ServerMessage::from_slice(bytes) {
        // Whatever decoded also encodes and decodes again.
        let again = ServerMessage::from_slice(msg.to_json().as_bytes());
        assert_eq!(again.as_ref(), Ok(&msg));
        for part in msg
            .server_content
            .iter()
            .flat_map(|c| c.model_turn.iter())
            .flat_map(|t| t.parts.iter())
        {
            let _ = part.kind();
            if let Some(blob) = &part.inline_data {
                let _ = blob.bytes();
            }
        }
        let _ = msg.in_band_error();
    }
    let _ = parse_bytes::<serde_json::Value>("fuzz.jsonl", bytes);
    let _ = WireLog::parse("fuzz.jsonl", bytes);
}

proptest! {
    /// Arbitrary bytes never panic any decoder.
    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        decode_everything(&bytes);
    }

    /// Valid frames with bit flips, truncations, insertions and removals never panic any decoder.
    #[test]
    fn mutated_frames_never_panic(
        pick in any::<prop::sample::Index>(),
        mutations in prop::collection::vec(arb_mutation(), 1..6),
    ) {
        let corpus = corpus();
        let seed = corpus[pick.index(corpus.len())].clone();
        decode_everything(&mutate(seed, &mutations));
    }
}

#[test]
fn deeply_nested_json_is_an_error_not_a_stack_overflow() {
    let deep = "[".repeat(100_000);
    assert!(ServerMessage::from_slice(deep.as_bytes()).is_err());
    let deep_args = format!(
        r#"{{"toolCall":{{"functionCalls":[{{"name":"f","args":{}}}]}}}}"#,
        "[".repeat(10_000)
    );
    assert!(ServerMessage::from_slice(deep_args.as_bytes()).is_err());
}
