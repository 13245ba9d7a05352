//! Decoding and encoding typical Live frames, against `serde_json::Value`.
//!
//! Four frames a session sees all the time: a text chunk, an audio chunk
//! (6000 bytes of PCM, about 8 KB of base64, with its transcript), a tool
//! call with two calls, and a turn's closing frame with usage metadata.
//! For each:
//!
//! * `decode`: `wire::decode::<ServerMessage>` of a binary frame, the
//!   session's path (UTF-8 check, typed decode, unknown keys kept);
//! * `value_parse`: `serde_json::from_slice::<Value>` of the same bytes,
//!   the baseline (untyped, no checks beyond JSON);
//! * `encode`: `ServerMessage::to_json`;
//! * `value_encode`: `serde_json::to_string` of the parsed `Value`.
//!
//! Throughput is set in bytes, so criterion reports MB/s; frames/s is one
//! over the time per iteration. Ratios are recorded in benches/README.md.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use livesim::wire::{Decoded, Frame, ServerMessage, decode};
use serde_json::Value;

#[path = "programs/wire_frames.rs"]
mod wire_frames;
use wire_frames::frames;

fn wire(c: &mut Criterion) {
    for (name, bytes) in frames() {
        let mut group = c.benchmark_group(format!("wire/{name}"));
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.measurement_time(Duration::from_secs(3));
        group.warm_up_time(Duration::from_secs(1));

        let frame = Frame::Binary(bytes.clone());
        group.bench_function("decode", |b| {
            b.iter(|| match decode::<ServerMessage>(black_box(&frame)) {
                Ok(Decoded::Message(msg)) => msg,
                other => panic!("{other:?}"),
            })
        });
        group.bench_function("value_parse", |b| {
            b.iter(|| serde_json::from_slice::<Value>(black_box(&bytes)).unwrap())
        });

        let message = ServerMessage::from_slice(&bytes).unwrap();
        let value: Value = serde_json::from_slice(&bytes).unwrap();
        group.bench_function("encode", |b| b.iter(|| black_box(&message).to_json()));
        group.bench_function("value_encode", |b| {
            b.iter(|| serde_json::to_string(black_box(&value)).unwrap())
        });
        group.finish();
    }
}

criterion_group!(benches, wire);
criterion_main!(benches);
