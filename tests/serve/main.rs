//! `livesim serve`, tested as a user runs it: the built binary serving a
//! script file, real WebSocket clients (livesim's own session, and raw
//! frames shaped as Google's Python SDK sends them), over `ws://` and
//! `wss://`, with its exit status and everything it printed checked.

mod broken;
mod clients;
mod harness;
mod sdks;
mod secrets;
mod tls;
mod usage;

// Scratch folders removed when each test ends, shared with the other test
// binaries rather than copied.
#[path = "../common/scratch.rs"]
mod scratch;
