//! The wire protocol, tested from the outside: the fixture corpus
//! (`tests/fixtures/wire/`), round trips of every message type, the
//! decoder under fuzzing, and the JSONL reader under byte splits.

mod client_frames;
mod close;
mod corpus;
mod fuzz;
mod jsonl;
mod roundtrip;
mod server_frames;

use std::path::PathBuf;

use livesim::wire::{ClientMessage, ServerMessage};

/// `tests/fixtures/wire/<sub>`.
pub fn fixture_dir(sub: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/wire")
        .join(sub)
}

/// The file names (sorted) in a fixture folder.
pub fn fixture_names(sub: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(fixture_dir(sub))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

/// The bytes of a fixture file.
pub fn fixture_bytes(sub: &str, file: &str) -> Vec<u8> {
    std::fs::read(fixture_dir(sub).join(file)).unwrap()
}

/// A server fixture (`server/<name>.json`), decoded.
pub fn server(name: &str) -> ServerMessage {
    let bytes = fixture_bytes("server", &format!("{name}.json"));
    ServerMessage::from_slice(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// A client fixture (`client/<name>.json`), decoded.
pub fn client(name: &str) -> ClientMessage {
    let bytes = fixture_bytes("client", &format!("{name}.json"));
    ClientMessage::from_slice(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"))
}
