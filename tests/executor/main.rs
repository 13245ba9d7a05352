//! The deterministic executor, tested from the outside: what a seed fixes,
//! what it varies, and how a failure is reported and replayed.

mod determinism;
mod escapes;
mod interleaving;
mod liveness;
mod program;
mod record;
mod regressions;
mod replay;
mod runner;

// Scratch folders removed when each test ends, shared with the other test
// binaries rather than copied.
#[path = "../common/scratch.rs"]
mod scratch;
