//! Runs one wire operation on one benchmark frame 20,000 times, for
//! counting instructions under callgrind (exact from run to run, unlike
//! wall time on a shared machine):
//!
//! ```text
//! cargo build --release --example profile_wire
//! valgrind --tool=callgrind target/release/examples/profile_wire text_chunk decode
//! ```
//!
//! Frames: `text_chunk`, `audio_chunk_8k`, `tool_call`, `usage`. Operations:
//! `none` (set-up only, to subtract), `decode`, `value_parse`, `encode`,
//! `value_encode` (as in benches/wire.rs).

use std::hint::black_box;

use livesim::wire::{Frame, ServerMessage, decode};
use serde_json::Value;

#[path = "../programs/wire_frames.rs"]
mod wire_frames;

const RUNS: usize = 20_000;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [frame_name, op] = &args[..] else {
        eprintln!("usage: profile_wire <frame> <none|decode|value_parse|encode|value_encode>");
        std::process::exit(2);
    };
    let Some((_, bytes)) = wire_frames::frames()
        .into_iter()
        .find(|(n, _)| n == frame_name)
    else {
        eprintln!("unknown frame {frame_name}");
        std::process::exit(2);
    };
    let frame = Frame::Binary(bytes.clone());
    let message = ServerMessage::from_slice(&bytes).expect("benchmark frames decode");
    let value: Value = serde_json::from_slice(&bytes).expect("benchmark frames are JSON");
    for _ in 0..RUNS {
        match op.as_str() {
            "none" => {}
            "decode" => drop(black_box(decode::<ServerMessage>(black_box(&frame)))),
            "value_parse" => drop(black_box(serde_json::from_slice::<Value>(black_box(
                &bytes,
            )))),
            "encode" => drop(black_box(black_box(&message).to_json())),
            "value_encode" => drop(black_box(serde_json::to_string(black_box(&value)))),
            other => {
                eprintln!("unknown operation {other}");
                std::process::exit(2);
            }
        }
    }
}
