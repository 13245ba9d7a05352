//! Record, then replay: in memory, and through a file reopened twice.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use livesim::llm::{BaseLlm, LlmRequest, LlmResponse, MockLlm};
use livesim::tape::{FileTape, LLM_CALL, MemoryTape, Tape, TapeMode, TapedLlm, taped_resolver};
use serde_json::json;

use super::TempFile;
use super::seeds::counting_fetch;

fn geography() -> MockLlm {
    MockLlm::script([
        LlmResponse::from_text("Paris"),
        LlmResponse::from_text("Rome"),
    ])
}

fn first_question() -> LlmRequest {
    LlmRequest::from_text("Capital of France?").with_system_instruction("Answer in one word.")
}

fn second_question() -> LlmRequest {
    first_question()
        .with_model_turn("Paris")
        .with_user_turn("And of Italy?")
}

/// Records two model calls and one resolver call on `tape`.
async fn record_session<T: Tape + 'static>(tape: Arc<T>, fetches: Arc<AtomicUsize>) {
    let model = TapedLlm::recording(geography(), tape.clone());
    assert_eq!(
        model.generate(first_question()).await.unwrap().text(),
        "Paris"
    );
    assert_eq!(
        model.generate(second_question()).await.unwrap().text(),
        "Rome"
    );
    let balance = taped_resolver(tape, TapeMode::Record, "balance", counting_fetch(fetches));
    balance(json!({"account_id": "a1"})).await.unwrap();
}

/// Replays what `record_session` recorded, with no model and no fetch.
async fn replay_session<T: Tape + 'static>(tape: Arc<T>, fetches: Arc<AtomicUsize>) {
    let before = fetches.load(Ordering::SeqCst);
    let model = TapedLlm::replaying("gemini-2.5-flash", tape.clone());
    assert_eq!(
        model.generate(first_question()).await.unwrap().text(),
        "Paris"
    );
    assert_eq!(
        model.generate(second_question()).await.unwrap().text(),
        "Rome"
    );
    let balance = taped_resolver(
        tape,
        TapeMode::Replay,
        "balance",
        counting_fetch(fetches.clone()),
    );
    let answer = balance(json!({"account_id": "a1"})).await.unwrap();
    assert_eq!(answer, json!({"account_id": "a1", "balance": 42}));
    assert_eq!(
        fetches.load(Ordering::SeqCst),
        before,
        "a replay called the fetch"
    );
}

#[tokio::test]
async fn a_memory_tape_replays_what_it_recorded() {
    let fetches = Arc::new(AtomicUsize::new(0));
    let tape = Arc::new(MemoryTape::new());
    record_session(tape.clone(), fetches.clone()).await;
    assert_eq!(fetches.load(Ordering::SeqCst), 1);

    let kinds: Vec<String> = tape.entries().into_iter().map(|e| e.kind).collect();
    assert_eq!(kinds, [LLM_CALL, LLM_CALL, "resolver:balance"]);

    // The same tape, and a copy loaded from its entries, both replay.
    replay_session(
        Arc::new(MemoryTape::from_entries(tape.entries())),
        fetches.clone(),
    )
    .await;
    replay_session(tape, fetches).await;
}

#[tokio::test]
async fn a_file_tape_replays_after_reopening_and_keeps_calls_recorded_later() {
    let file = TempFile::new("file_round_trip");
    let fetches = Arc::new(AtomicUsize::new(0));

    let recorder = Arc::new(FileTape::create(file.path()).unwrap());
    record_session(recorder.clone(), fetches.clone()).await;
    let recorded = recorder.entries();
    drop(recorder);
    let text = String::from_utf8(file.read()).unwrap();
    assert_eq!(
        text.lines().count(),
        4,
        "a header, then one entry per line:\n{text}"
    );
    assert_eq!(text.lines().next(), Some(r#"{"v":1,"kind":"tape"}"#));
    assert!(text.ends_with('\n'));

    // Reopen: everything replays, and a new call is appended to the file.
    let tape = Arc::new(FileTape::open(file.path()).unwrap());
    assert_eq!(tape.entries(), recorded);
    assert!(tape.torn_line().is_none());
    replay_session(tape.clone(), fetches.clone()).await;
    let extra = TapedLlm::recording(geography(), tape.clone());
    let question = LlmRequest::from_text("Capital of Spain?");
    extra.generate(question.clone()).await.unwrap();
    assert_eq!(tape.entries().len(), 4);
    drop((extra, tape));

    // Reopen again: the old entries and the new one, in recording order.
    let tape = Arc::new(FileTape::open(file.path()).unwrap());
    let entries = tape.entries();
    assert_eq!(entries.len(), 4);
    assert_eq!(entries[..3], recorded[..]);
    assert_eq!(entries[3].input, serde_json::to_value(&question).unwrap());
    replay_session(tape.clone(), fetches.clone()).await;
    let offline = TapedLlm::replaying("gemini-2.5-flash", tape);
    // The scripted model answered the fresh conversation with its first reply.
    assert_eq!(offline.generate(question).await.unwrap().text(), "Paris");
}

#[test]
fn create_empties_an_existing_tape_file() {
    let file = TempFile::new("create_empties");
    file.write(b"{\"kind\":\"llm\",\"input\":1,\"output\":2}\n");
    let tape = FileTape::create(file.path()).unwrap();
    assert!(tape.entries().is_empty());
    assert_eq!(
        file.read(),
        b"{\"v\":1,\"kind\":\"tape\"}\n",
        "only the header is left"
    );
    assert!(FileTape::open(file.path()).unwrap().entries().is_empty());
}
