//! Failure reports and run summaries as a user meets them: a test in a
//! user's crate that finds a race and the report it gets, what a run
//! prints to stderr, and the determinism guards a user copies.

mod guards;
mod race;
mod soak;
mod summary;

// Scratch folders removed when each test ends, shared with the other test
// binaries rather than copied.
#[path = "../common/scratch.rs"]
mod scratch;
