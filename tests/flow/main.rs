//! Flow governance and scenarios, tested from the outside: what the monitor
//! admits and refuses, what it journals, how conversations compile, what
//! explanations and spec files say, and the invariants fuzzed over
//! generated specs.

mod build_errors;
mod conversation;
mod escalation;
mod explain;
mod governance;
mod misuse;
mod observe;
mod properties;
mod scenarios;
mod spec_file;

// Scratch folders removed when each test ends, shared with the other test
// binaries rather than copied.
#[path = "../common/scratch.rs"]
mod scratch;
