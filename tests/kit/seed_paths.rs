//! Every path the reference documents import from, written exactly as they
//! write it (with the crate renamed): if one disappears, this file stops
//! compiling. The examples themselves run in `seed_000.rs` and
//! `tests/tape/seeds.rs`, on these same paths.

use std::any::TypeId;
use std::sync::Arc;

// Seed 000, "Testing Conversations Offline".
#[allow(unused_imports)]
use livesim::compose::tools::ToolComposite;
#[allow(unused_imports)]
use livesim::llm::{BaseLlm, LlmRequest, LlmResponse, MockLlm};
#[allow(unused_imports)]
use livesim::prelude::*;
use livesim::simulation::Scenario;
use livesim::state::MemoryJournalSink;
use livesim::testing::ManualClock;
use livesim::testing::ScriptedServer;
use livesim::testing::{Clock, SharedClock, SystemClock};
use livesim::testing::{FileTape, TapeMode, taped_resolver};
use livesim::testing::{MemoryTape, TapedLlm};
// Seed 001, module `tape`.
use livesim::tape as tape_module;

/// The `testing` names are the canonical types, not copies: a value made
/// through one path is accepted where the other is asked for.
#[test]
fn the_testing_names_are_the_canonical_types() {
    assert_eq!(
        TypeId::of::<ManualClock>(),
        TypeId::of::<livesim::clock::ManualClock>()
    );
    assert_eq!(
        TypeId::of::<SystemClock>(),
        TypeId::of::<livesim::clock::SystemClock>()
    );
    assert_eq!(
        TypeId::of::<SharedClock>(),
        TypeId::of::<livesim::clock::SharedClock>()
    );
    assert_eq!(
        TypeId::of::<MemoryTape>(),
        TypeId::of::<tape_module::MemoryTape>()
    );
    assert_eq!(
        TypeId::of::<TapedLlm>(),
        TypeId::of::<tape_module::TapedLlm>()
    );
    assert_eq!(
        TypeId::of::<FileTape>(),
        TypeId::of::<tape_module::FileTape>()
    );
    assert_eq!(
        TypeId::of::<TapeMode>(),
        TypeId::of::<tape_module::TapeMode>()
    );

    // A clock made through `testing` is a `Clock` and a `SharedClock`.
    let manual = Arc::new(ManualClock::new());
    let shared: SharedClock = manual.clone();
    let system: &dyn Clock = &SystemClock::default();
    let _ = system.now();
    manual.advance(std::time::Duration::from_secs(2));
    assert_eq!(manual.elapsed(), std::time::Duration::from_secs(2));
    let _ = shared.now();

    // The resolver wrapper and the tapes fit together as the seeds use them.
    let tape = Arc::new(MemoryTape::new());
    let _resolver = taped_resolver(tape, TapeMode::Replay, "balance", |_args| async {
        Ok::<_, String>(serde_json::json!({}))
    });
    let _ = (
        ScriptedServer::new(),
        MemoryJournalSink::new(),
        Scenario::from_journal("empty", &MemoryJournalSink::new().entries()),
    );
}
