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
//! 1. [`executor`]: the deterministic executor (seeds and named streams,
//!    the simulated runtime, lane sets, yield points, deliveries, settle,
//!    traces and the determinism check, the seed runner). Knows nothing of
//!    Live.
//! 2. [`wire`]: the Live protocol's frames and messages as serde types
//!    (every key optional, unknown keys kept, camelCase out and snake_case
//!    in), decoding that never panics, close codes classified, redaction of
//!    secrets.
//! 3. [`transport`]: the one [`Transport`](transport::Transport) trait the
//!    session talks to; an in-memory pair delivering at seeded virtual
//!    times, the WebSocket client, a recording wrapper writing secret-free
//!    wire logs. Beside it, [`jsonl`] reads our JSONL files incrementally.
//! 4. [`clock`] and [`state`]: clocks (system, manual, virtual), the
//!    session's key/value state and its mutation journal.
//! 5. [`flow`]: flow governance: flows and conversations compiled to one
//!    spec, guards, the monitor that gates tool calls (Enforce or Observe)
//!    and owns the `flow:*` journal vocabulary, explanations, spec files.
//! 6. [`session`]: the Live session runtime: builders, the wire, fast,
//!    control and telemetry lanes, text aggregation, tools ([`compose`]),
//!    phases, temporal patterns, watchers, events.
//! 7. [`llm`] and [`tape`]: models called out of band, a scripted model,
//!    and tapes that record and replay model and resolver calls.
//! 8. [`testing`]: the offline test kit: scripted servers, replay
//!    transports, failure fixtures.
//! 9. [`simulation`]: scenarios run against a flow spec, and scenarios
//!    derived from recorded journals.
//! 10. [`soak`]: seeded sessions generated against an agent (from a
//!     `sim/` folder or your own builder), faults drawn per seed,
//!     invariants checked after every run, a summary with replay lines.
//! 11. [`timeline`]: a run as a page: lanes over virtual time, frames,
//!     tool spans, aggregated text, the failure where it happened; the
//!     soak's report as a page; both as JSON.
//!
//! [`prelude`] gathers the names most sessions and tests use.
//!
//! **Features.** Layers 2 to 9 over in-memory transports are always built.
//! `websocket` adds the real WebSocket client (`connect()`); `serve` the
//! `serve` module (a scripted server on a real port); `simulation` tokio's
//! paused clock and with it `executor::Simulation`, the seed runner,
//! `#[livesim::test]` and the soak; `junit` JUnit XML reports; `network`
//! turmoil's simulated TCP; `cli` the `livesim` binary. All are on by
//! default; `default-features = false, features = ["simulation"]` is the
//! test kit alone.
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
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

pub mod clock;
pub mod compose;
pub mod executor;
pub mod flow;
pub mod jsonl;
pub mod llm;
#[cfg(feature = "network")]
#[cfg_attr(docsrs, doc(cfg(feature = "network")))]
pub mod network;
pub mod prelude;
#[cfg(feature = "serve")]
#[cfg_attr(docsrs, doc(cfg(feature = "serve")))]
pub mod serve;
pub mod session;
pub mod simulation;
#[cfg(feature = "simulation")]
#[cfg_attr(docsrs, doc(cfg(feature = "simulation")))]
pub mod soak;
pub mod state;
pub mod tape;
pub mod testing;
#[cfg(feature = "simulation")]
#[cfg_attr(docsrs, doc(cfg(feature = "simulation")))]
pub mod timeline;
pub mod transport;
pub mod wire;

pub use executor::seed::Seed;

/// Marks an async function as a seeded test, run by the
/// [`Runner`](executor::Runner) in fresh simulated runtimes.
///
/// Arguments: `seeds = N` (run seeds `0..N`, default 1), `seed = 0x…` (run
/// one seed), `time_limit_secs = N`. The environment (`LIVESIM_SEED`,
/// `LIVESIM_SEEDS`) overrides the seeds, and a passing run of several seeds
/// (or of a pinned seed the environment overrode) prints one summary line
/// to stderr. A run of several seeds checks its first seed's determinism
/// (`LIVESIM_CHECK_DETERMINISM=0` turns that off). A failure panics at the
/// test, with the report of the first failing seed, and writes that seed's
/// timeline page under the target directory, naming it in the report (see
/// [`timeline::test_timeline_path`]). The function may take
/// the [`Seed`] as its one argument and may return `()` or a `Result`.
///
/// ```
/// #[livesim::test(seeds = 10)]
/// async fn thirty_seconds_pass_instantly() {
///     tokio::time::sleep(std::time::Duration::from_secs(30)).await;
///     assert_eq!(livesim::executor::now().as_secs(), 30);
/// }
/// # fn main() {}
/// ```
#[cfg(feature = "simulation")]
#[cfg_attr(docsrs, doc(cfg(feature = "simulation")))]
pub use livesim_macros::test;

#[doc(hidden)]
pub use livesim_macros::record_pieces as __record_pieces;

/// The README's Rust examples, compiled by `cargo test --doc` so they
/// cannot drift from the API (they use every default feature).
#[cfg(all(doctest, feature = "cli", feature = "network"))]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// `docs/guide/testing-an-agent.md`'s Rust examples, compiled by `cargo test --doc`.
#[cfg(all(doctest, feature = "cli", feature = "network"))]
#[doc = include_str!("../docs/guide/testing-an-agent.md")]
pub struct TestingAnAgentDoctests;

/// `docs/guide/seeds-and-replays.md`'s Rust examples, compiled by `cargo test --doc`.
#[cfg(all(doctest, feature = "cli", feature = "network"))]
#[doc = include_str!("../docs/guide/seeds-and-replays.md")]
pub struct SeedsAndReplaysDoctests;

/// `docs/guide/soaking-your-agent.md`'s Rust examples, compiled by `cargo test --doc`.
#[cfg(all(doctest, feature = "cli", feature = "network"))]
#[doc = include_str!("../docs/guide/soaking-your-agent.md")]
pub struct SoakingYourAgentDoctests;

/// `docs/guide/governance.md`'s Rust examples, compiled by `cargo test --doc`.
#[cfg(all(doctest, feature = "cli", feature = "network"))]
#[doc = include_str!("../docs/guide/governance.md")]
pub struct GovernanceDoctests;

/// `docs/guide/resumption.md`'s Rust examples, compiled by `cargo test --doc`.
#[cfg(all(doctest, feature = "cli", feature = "network"))]
#[doc = include_str!("../docs/guide/resumption.md")]
pub struct ResumptionDoctests;

/// `docs/invariants.md`'s Rust examples, compiled by `cargo test --doc`.
#[cfg(all(doctest, feature = "simulation"))]
#[doc = include_str!("../docs/invariants.md")]
pub struct InvariantsDoctests;
