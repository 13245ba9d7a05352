//! Transports, tested from the outside: the in-memory pair under the
//! simulated runtime, the seeded text splitter, the WebSocket client
//! against a real local server, recording, and keeping secrets out of
//! every file, error and log.

mod bad_peers;
mod memory;
mod recording;
mod secrets;
mod server;
mod split;
mod websocket;
