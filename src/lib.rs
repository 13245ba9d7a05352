//! # livesim
//!
//! Build Live agent sessions (bidirectional streaming voice and text on the
//! Gemini Live wire protocol) and test them deterministically: given a
//! seed, a run is identical every time, from the scripted server to the
//! order in which the session's lanes interleave; across seeds, all of it
//! varies. A failing test prints its seed and one command that replays it.
//!
//! The crate is built in layers, bottom up; each knows only those below:
//!
//! 1. [`executor`]: the deterministic executor (seeds, virtual time, seeded
//!    interleaving, traces, the seed runner). Knows nothing of Live.
//! 2. [`wire`]: the Live protocol's frames and messages as serde types
//!    (every key optional, unknown keys kept, camelCase out and snake_case
//!    in), decoding that never panics, close codes classified for
//!    reconnecting, and redaction of secrets.
//! 3. [`transport`]: the one [`Transport`](transport::Transport) trait the
//!    session talks to, an in-memory pair that delivers at seeded virtual
//!    times under simulation, the WebSocket client for the real service, a
//!    recording wrapper that writes a secret-free wire log, and a seeded
//!    text splitter for fakes.
//!
//! Beside them, [`jsonl`] reads our JSONL files (wire logs now; tapes and
//! journals later) incrementally, reporting a torn last line apart from a
//! bad line.
//!
//! Later layers (clock and state, flow governance, the session runtime,
//! models and tapes, the offline test kit, scenarios and the soak) are
//! described in `DESIGN.md` and land as they are built; the README says
//! which exist today.
//!
//! ```
//! // A seeded test: 50 seeds, each in a fresh simulated runtime.
//! livesim::executor::Runner::new(livesim::test_id!())
//!     .seeds(50)
//!     .run(|_seed| async {
//!         tokio::time::sleep(std::time::Duration::from_secs(30)).await; // instant
//!         assert_eq!(livesim::executor::now().as_secs(), 30);
//!     });
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod executor;
pub mod jsonl;
pub mod transport;
pub mod wire;

pub use executor::Seed;

/// Marks an async function as a seeded test, run by the
/// [`Runner`](executor::Runner) in fresh simulated runtimes.
///
/// Arguments: `seeds = N` (run seeds `0..N`, default 1), `seed = 0x…` (run
/// one seed), `time_limit_secs = N`. The environment (`LIVESIM_SEED`,
/// `LIVESIM_SEEDS`) overrides the seeds. The function may take the
/// [`Seed`] as its one argument and may return `()` or a `Result`.
///
/// ```
/// #[livesim::test(seeds = 10)]
/// async fn thirty_seconds_pass_instantly() {
///     tokio::time::sleep(std::time::Duration::from_secs(30)).await;
///     assert_eq!(livesim::executor::now().as_secs(), 30);
/// }
/// # fn main() {}
/// ```
pub use livesim_macros::test;
