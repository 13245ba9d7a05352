//! Numbers beyond what u64 and f64 hold, in keys livesim does not know: a
//! frame that passes through livesim untouched comes out with the same
//! numbers, digit for digit (decode and encode, a scripted server, a
//! recorded wire log, a tape), and the typed fields still decode. The only
//! change allowed is the spelling of an exponent (`1E400` comes out as
//! `1e+400`), which is the same number.

use std::sync::Arc;

use livesim::tape::{FileTape, Tape, TapeEntry};
use livesim::testing::ScriptedServer;
use livesim::transport::recording::{Recording, WireLogWriter};
use livesim::transport::wire_log::WireLog;
use livesim::transport::{Transport, memory};
use livesim::wire::Frame;
use livesim::wire::{Decoded, ServerMessage, decode};
use proptest::prelude::*;
use serde_json::Value;

use super::Scratch;

/// Numbers that do not survive a trip through u64, i64 or f64.
const NUMBERS: [&str; 8] = [
    "18446744073709551616",
    "-9223372036854775809",
    "123456789012345678901234567890",
    "0.1000000000000000055511151231257827",
    "3.141592653589793238462643383279",
    "1e400",
    "-2.5E-400",
    "9007199254740993",
];

/// A server message carrying every number, in an unknown top-level key
/// and in an unknown key inside a known payload.
fn frame_text() -> String {
    let list = NUMBERS.join(",");
    format!(
        r#"{{"serverContent":{{"turnComplete":true,"future":{{"n":[{list}]}}}},"usageMetadata":{{"totalTokenCount":183}},"newTop":[{list}]}}"#
    )
}

/// A number's spelling with its exponent written one way (`e`, no `+`).
fn canonical(number: &str) -> String {
    number.to_ascii_lowercase().replace("e+", "e")
}

/// Every number token in JSON text, in order, exponents spelled one way.
fn numbers_in(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut in_string = false;
    let mut escaped = false;
    for c in text.chars() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        // A number starts with a digit or `-` (`true` has an `e` too).
        let starts = c.is_ascii_digit() || c == '-';
        let goes_on = c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | 'e' | 'E');
        if (current.is_empty() && starts) || (!current.is_empty() && goes_on) {
            current.push(c);
            continue;
        }
        if !current.is_empty() {
            out.push(canonical(&std::mem::take(&mut current)));
        }
        in_string = c == '"';
    }
    out
}

fn expected() -> Vec<String> {
    let mut want: Vec<String> = NUMBERS.iter().map(|n| canonical(n)).collect();
    want.push("183".into());
    want.extend(NUMBERS.iter().map(|n| canonical(n)));
    want.sort();
    want
}

fn sorted(mut numbers: Vec<String>) -> Vec<String> {
    numbers.sort();
    numbers
}

#[test]
fn a_decoded_message_encodes_its_numbers_digit_for_digit() {
    let frame = Frame::Text(frame_text());
    let Ok(Decoded::Message(message)) = decode::<ServerMessage>(&frame) else {
        panic!("not decoded");
    };
    // The typed field still decodes.
    assert_eq!(
        message.usage_metadata.as_ref().unwrap().total_token_count,
        Some(183)
    );
    assert_eq!(sorted(numbers_in(&message.to_json())), expected());
    // And so does a plain `Value`.
    let value: Value = serde_json::from_str(&frame_text()).unwrap();
    assert_eq!(sorted(numbers_in(&value.to_string())), expected());
}

#[tokio::test]
async fn a_scripted_frame_reaches_the_client_digit_for_digit() {
    let message: Value = serde_json::from_str(&frame_text()).unwrap();
    let script = ScriptedServer::from_json_str(
        &format!(r#"{{"v": 1, "actions": [{{"send": {message}}}]}}"#),
        "numbers.json",
    )
    .unwrap();
    let (mut session_end, control) = script.into_transport();
    session_end
        .send(Frame::Text(r#"{"setup":{"model":"models/m"}}"#.into()))
        .await
        .unwrap();
    control.release();
    let _setup_complete = session_end.recv().await.unwrap().unwrap();
    let frame = session_end.recv().await.unwrap().unwrap();
    let text = String::from_utf8(frame.payload().unwrap().to_vec()).unwrap();
    assert_eq!(sorted(numbers_in(&text)), expected());
}

#[tokio::test]
async fn a_wire_log_and_a_tape_keep_numbers_digit_for_digit() {
    let (client, mut server) = memory::pair();
    let log = Scratch::new("numbers-log.jsonl");
    let writer = WireLogWriter::builder(std::fs::File::create(log.path()).unwrap())
        .start()
        .unwrap();
    let mut recorded = Recording::new(client, writer);
    server.send(Frame::Text(frame_text())).await.unwrap();
    recorded.recv().await.unwrap().unwrap();
    drop(recorded);
    let read = WireLog::read(log.path()).unwrap();
    let replayed = read.frames[0].to_frame().unwrap();
    let text = String::from_utf8(replayed.payload().unwrap().to_vec()).unwrap();
    assert_eq!(sorted(numbers_in(&text)), expected());

    let file = Scratch::new("numbers-tape.jsonl");
    let tape = Arc::new(FileTape::create(file.path()).unwrap());
    let output: Value = serde_json::from_str(&frame_text()).unwrap();
    tape.record(TapeEntry::ok("llm", Value::Null, output))
        .unwrap();
    drop(tape);
    let reopened = FileTape::open(file.path()).unwrap();
    let text = reopened.entries()[0].output.as_ref().unwrap().to_string();
    assert_eq!(sorted(numbers_in(&text)), expected());
}

fn big_number() -> impl Strategy<Value = String> {
    prop_oneof![
        "-?[1-9][0-9]{19,40}",
        "-?[0-9]\\.[0-9]{17,30}",
        "-?[1-9]\\.[0-9]{1,20}[eE][+-]?[1-9][0-9]{2,3}",
        any::<u64>().prop_map(|n| n.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
    ]
}

proptest! {
    /// Any number in an unknown key of a server message comes out of a
    /// decode and an encode with the same digits.
    #[test]
    fn unknown_numbers_round_trip_exactly(numbers in prop::collection::vec(big_number(), 1..12)) {
        let list = numbers.join(",");
        let text = format!(r#"{{"serverContent":{{"future":[{list}]}},"later":{{"x":[{list}]}}}}"#);
        let Ok(Decoded::Message(message)) = decode::<ServerMessage>(&Frame::Text(text.clone())) else {
            panic!("not decoded: {text}");
        };
        prop_assert_eq!(sorted(numbers_in(&message.to_json())), sorted(numbers_in(&text)));
    }
}
