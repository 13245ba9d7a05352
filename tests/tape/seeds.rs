//! The tape examples of seeds 000 ("Taping model and resolver calls") and
//! 001 (module `tape`), written against livesim.

use std::error::Error;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::TempFile;

/// A stand-in for the real `fetch_balance`: it answers from its arguments
/// and counts its calls, so a test can prove a replay never reached it.
pub fn counting_fetch(
    calls: Arc<AtomicUsize>,
) -> impl Fn(Value) -> BoxFuture<'static, Result<Value, String>> + Send + Sync + 'static {
    move |args: Value| {
        calls.fetch_add(1, Ordering::SeqCst);
        async move {
            match args["account_id"].as_str() {
                Some(id) => Ok(json!({ "account_id": id, "balance": 42 })),
                None => Err("no account_id".to_string()),
            }
        }
        .boxed()
    }
}

#[tokio::test]
async fn seed_000_taped_llm_records_then_replays_with_no_model() -> Result<(), Box<dyn Error>> {
    use livesim::llm::{BaseLlm, LlmRequest, LlmResponse, MockLlm};
    use livesim::testing::{MemoryTape, TapedLlm}; // seed 000's path

    let tape = Arc::new(MemoryTape::new());

    // Record against a real model (here, a scripted one).
    let recording = TapedLlm::recording(
        MockLlm::script([LlmResponse::from_text("Paris")]),
        tape.clone(),
    );
    recording
        .generate(LlmRequest::from_text("Capital of France?"))
        .await?;

    // Replay with no model at all.
    let offline = TapedLlm::replaying("gemini-2.5-flash", tape.clone());
    let reply = offline
        .generate(LlmRequest::from_text("Capital of France?"))
        .await?;
    assert_eq!(reply.text(), "Paris");
    assert_eq!(offline.model_id(), "gemini-2.5-flash");
    assert_eq!(tape.entries().len(), 1);
    Ok(())
}

#[tokio::test]
async fn seed_001_tape_module_example() -> Result<(), Box<dyn Error>> {
    use livesim::llm::{BaseLlm, LlmRequest, LlmResponse, MockLlm};
    use livesim::tape::{MemoryTape, TapedLlm};

    let tape = Arc::new(MemoryTape::new());

    // Record against a real (here: scripted) model.
    let live = TapedLlm::recording(
        MockLlm::script([LlmResponse::from_text("Paris")]),
        tape.clone(),
    );
    live.generate(LlmRequest::from_text("Capital of France?"))
        .await?;

    // Replay with no model at all.
    let offline = TapedLlm::replaying("gemini-2.5-flash", tape);
    let reply = offline
        .generate(LlmRequest::from_text("Capital of France?"))
        .await?;
    assert_eq!(reply.text(), "Paris");
    Ok(())
}

/// Seed 000's resolver example: a `FileTape` opened from a file, a
/// `taped_resolver` in Replay mode, and the record field it fills:
/// `Extract::record("account").field_resolve("balance", ["account_id"], None, …)`
/// run by a session after its turn.
#[tokio::test]
async fn seed_000_extract_field_resolve_replays_a_file_tape() -> Result<(), Box<dyn Error>> {
    use livesim::testing::{FileTape, TapeMode, taped_resolver}; // seed 000's path

    let file = TempFile::new("seed_000_extract_field_resolve");
    let calls = Arc::new(AtomicUsize::new(0));

    // Once, against the real fetch: record the tape.
    let recorder = Arc::new(FileTape::create(file.path())?);
    let record = taped_resolver(
        recorder,
        TapeMode::Record,
        "balance",
        counting_fetch(calls.clone()),
    );
    let recorded = record(json!({"account_id": "a1"})).await?;
    assert_eq!(calls.load(Ordering::SeqCst), 1);

    // `fetch_balance` is the real fetch; in Replay mode it is never called.
    let tape = Arc::new(FileTape::open(file.path())?);
    let resolver = taped_resolver(
        tape,
        TapeMode::Replay,
        "balance",
        counting_fetch(calls.clone()),
    );
    let replayed = resolver(json!({"account_id": "a1"})).await?;
    assert_eq!(replayed, recorded);
    assert_eq!(replayed["balance"], 42);

    // As in the seed: the taped resolver behind a record's field, run by a
    // session after its turn, from a tape opened afresh.
    let tape = Arc::new(FileTape::open(file.path())?);
    let record = livesim::prelude::Extract::record("account")
        .field_resolve(
            "balance",
            ["account_id"],
            None,
            taped_resolver(
                tape,
                TapeMode::Replay,
                "balance",
                counting_fetch(calls.clone()),
            ),
        )
        .build();
    let state = livesim::state::State::new();
    state.set("account_id", "a1");
    let run = livesim::testing::ScriptedServer::new()
        .says("Let me check your balance.")
        .play(
            livesim::prelude::Live::builder()
                .state(state.clone())
                .extract(record),
        )
        .await?;
    assert_eq!(state.get("account:balance"), Some(recorded.clone()));
    run.disconnect().await;

    // A second ask, and an unknown account: misses, still without a fetch.
    let again = resolver(json!({"account_id": "a1"})).await.unwrap_err();
    assert!(again.contains(r#"{"account_id":"a1"}"#), "{again}");
    let unknown = resolver(json!({"account_id": "zz"})).await.unwrap_err();
    assert!(unknown.contains(r#"{"account_id":"zz"}"#), "{unknown}");
    assert_eq!(calls.load(Ordering::SeqCst), 1, "replay called the fetch");
    Ok(())
}
