//! Matching: kind and canonical input; repeated inputs in recording order;
//! failures replay as failures; misses quote the input and never call out.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::FutureExt;
use livesim::llm::{BaseLlm, LlmError, LlmRequest, LlmResponse, MockLlm};
use livesim::tape::{
    LLM_CALL, MemoryTape, Tape, TapeEntry, TapeMode, TapedLlm, canonical_json, taped_resolver,
};
use serde_json::{Value, json};

use super::seeds::counting_fetch;

fn canonical_request(request: &LlmRequest) -> String {
    canonical_json(&serde_json::to_value(request).unwrap())
}

/// A resolver that must not run: replays never call out.
fn never(_: Value) -> futures::future::BoxFuture<'static, Result<Value, String>> {
    async { panic!("a replay called the real fetch") }.boxed()
}

#[tokio::test]
async fn the_same_request_recorded_twice_replays_both_answers_in_order_then_misses() {
    let tape = Arc::new(MemoryTape::new());
    let question = LlmRequest::from_text("Capital of France?");
    for answer in ["Paris", "Paris, France"] {
        let model = TapedLlm::recording(
            MockLlm::script([LlmResponse::from_text(answer)]),
            tape.clone(),
        );
        model.generate(question.clone()).await.unwrap();
    }

    let offline = TapedLlm::replaying("gemini-2.5-flash", tape);
    assert_eq!(
        offline.generate(question.clone()).await.unwrap().text(),
        "Paris"
    );
    assert_eq!(
        offline.generate(question.clone()).await.unwrap().text(),
        "Paris, France"
    );
    let third = offline.generate(question.clone()).await.unwrap_err();
    let LlmError::Config(message) = third else {
        panic!("a miss is a configuration error, got {third:?}");
    };
    assert!(message.contains(&canonical_request(&question)), "{message}");
}

#[tokio::test]
async fn the_same_arguments_recorded_twice_replay_both_results_in_order_then_miss() {
    let tape = Arc::new(MemoryTape::new());
    let balances = Arc::new(AtomicUsize::new(10));
    let fetch = move |_args: Value| {
        let balance = balances.fetch_add(2, Ordering::SeqCst);
        async move { Ok(json!(balance)) }.boxed()
    };
    let record = taped_resolver(tape.clone(), TapeMode::Record, "balance", fetch);
    assert_eq!(record(json!({"id": 1})).await.unwrap(), json!(10));
    assert_eq!(record(json!({"id": 1})).await.unwrap(), json!(12));

    let replay = taped_resolver(tape, TapeMode::Replay, "balance", never);
    assert_eq!(replay(json!({"id": 1})).await.unwrap(), json!(10));
    assert_eq!(replay(json!({"id": 1})).await.unwrap(), json!(12));
    let miss = replay(json!({"id": 1})).await.unwrap_err();
    assert!(miss.contains(r#"{"id":1}"#), "{miss}");
}

#[tokio::test]
async fn a_recorded_model_failure_replays_as_the_same_failure() {
    let tape = Arc::new(MemoryTape::new());
    let refused = LlmError::Refused("blocked by safety settings".into());
    let model = TapedLlm::recording(
        MockLlm::script_results([Err(refused.clone())]),
        tape.clone(),
    );
    let question = LlmRequest::from_text("Something unsafe");
    assert_eq!(model.generate(question.clone()).await.unwrap_err(), refused);
    assert!(tape.entries()[0].error.is_some());

    let offline = TapedLlm::replaying("gemini-2.5-flash", tape);
    assert_eq!(offline.generate(question).await.unwrap_err(), refused);
}

#[tokio::test]
async fn a_recorded_resolver_failure_replays_as_the_same_failure() {
    let tape = Arc::new(MemoryTape::new());
    let calls = Arc::new(AtomicUsize::new(0));
    let record = taped_resolver(
        tape.clone(),
        TapeMode::Record,
        "balance",
        counting_fetch(calls),
    );
    let failed = record(json!({"account": "no id"})).await.unwrap_err();
    assert_eq!(failed, "no account_id");

    let replay = taped_resolver(tape, TapeMode::Replay, "balance", never);
    assert_eq!(
        replay(json!({"account": "no id"})).await.unwrap_err(),
        failed
    );
}

/// A resolver failure recorded as JSON other than a string (a tape
/// written by hand, or by another recorder) replays as a failure whose
/// message is that JSON, never as a value.
#[tokio::test]
async fn a_resolver_failure_recorded_as_json_replays_as_a_failure() {
    let tape = Arc::new(MemoryTape::from_entries([
        TapeEntry::failed(
            "resolver:balance",
            json!({"account": "a-1"}),
            json!({"code": 404, "message": "no account"}),
        ),
        TapeEntry::failed("resolver:balance", json!({"account": "a-2"}), json!(7)),
    ]));
    let replay = taped_resolver(tape, TapeMode::Replay, "balance", never);
    assert_eq!(
        replay(json!({"account": "a-1"})).await.unwrap_err(),
        r#"{"code":404,"message":"no account"}"#
    );
    assert_eq!(replay(json!({"account": "a-2"})).await.unwrap_err(), "7");
}

#[tokio::test]
async fn a_miss_quotes_the_request_in_canonical_form_and_consumes_nothing() {
    let tape = Arc::new(MemoryTape::new());
    let question = LlmRequest::from_text("Capital of France?");
    TapedLlm::recording(
        MockLlm::script([LlmResponse::from_text("Paris")]),
        tape.clone(),
    )
    .generate(question.clone())
    .await
    .unwrap();

    let offline = TapedLlm::replaying("gemini-2.5-flash", tape);
    let other = LlmRequest::from_text("Capital of Spain?").with_system_instruction("Be brief.");
    let LlmError::Config(message) = offline.generate(other.clone()).await.unwrap_err() else {
        panic!("a miss is a configuration error");
    };
    assert!(message.contains(&canonical_request(&other)), "{message}");
    assert!(
        message.contains(r#""system_instruction":"Be brief.""#),
        "{message}"
    );
    // The miss took nothing off the tape.
    assert_eq!(offline.generate(question).await.unwrap().text(), "Paris");
}

#[tokio::test]
async fn key_order_does_not_matter() {
    let tape = Arc::new(MemoryTape::new());
    let forward = LlmRequest {
        config: Some(json!({"temperature": 0, "topK": 1, "stop": {"a": 1, "b": 2}})),
        ..LlmRequest::from_text("Capital of France?")
    };
    TapedLlm::recording(
        MockLlm::script([LlmResponse::from_text("Paris")]),
        tape.clone(),
    )
    .generate(forward.clone())
    .await
    .unwrap();
    let record = taped_resolver(tape.clone(), TapeMode::Record, "quote", |_| {
        async { Ok(json!("ok")) }.boxed()
    });
    record(json!({"from": "LHR", "to": "CDG", "when": {"day": 3, "month": 5}}))
        .await
        .unwrap();

    // The same values, keys written in the opposite order.
    let backward = LlmRequest {
        config: Some(json!({"stop": {"b": 2, "a": 1}, "topK": 1, "temperature": 0})),
        ..LlmRequest::from_text("Capital of France?")
    };
    assert_ne!(
        serde_json::to_string(&forward).unwrap(),
        serde_json::to_string(&backward).unwrap(),
        "the two requests must differ in key order for this test to mean anything"
    );
    let offline = TapedLlm::replaying("gemini-2.5-flash", tape.clone());
    assert_eq!(offline.generate(backward).await.unwrap().text(), "Paris");
    let replay = taped_resolver(tape, TapeMode::Replay, "quote", never);
    let args = json!({"when": {"month": 5, "day": 3}, "to": "CDG", "from": "LHR"});
    assert_eq!(replay(args).await.unwrap(), json!("ok"));
}

#[tokio::test]
async fn resolvers_with_different_names_do_not_answer_for_each_other() {
    let tape = Arc::new(MemoryTape::new());
    let record = taped_resolver(tape.clone(), TapeMode::Record, "balance", |_| {
        async { Ok(json!(42)) }.boxed()
    });
    record(json!({"account_id": "a1"})).await.unwrap();

    let limit = taped_resolver(tape.clone(), TapeMode::Replay, "limit", never);
    let miss = limit(json!({"account_id": "a1"})).await.unwrap_err();
    assert!(miss.contains("resolver:limit"), "{miss}");
    assert!(miss.contains(r#"{"account_id":"a1"}"#), "{miss}");
    let balance = taped_resolver(tape, TapeMode::Replay, "balance", never);
    assert_eq!(
        balance(json!({"account_id": "a1"})).await.unwrap(),
        json!(42)
    );
}

#[tokio::test]
async fn a_model_call_does_not_answer_a_resolver_call_nor_the_other_way() {
    let request = LlmRequest::from_text("Capital of France?");
    let input = serde_json::to_value(&request).unwrap();
    let paris = serde_json::to_value(LlmResponse::from_text("Paris")).unwrap();

    // Only a model call on the tape: a resolver asked the same input misses.
    let tape = Arc::new(MemoryTape::from_entries([TapeEntry::ok(
        LLM_CALL,
        input.clone(),
        paris,
    )]));
    let capital = taped_resolver(tape.clone(), TapeMode::Replay, "capital", never);
    let miss = capital(input.clone()).await.unwrap_err();
    assert!(miss.contains(&canonical_json(&input)), "{miss}");
    let offline = TapedLlm::replaying("gemini-2.5-flash", tape);
    assert_eq!(
        offline.generate(request.clone()).await.unwrap().text(),
        "Paris"
    );

    // Only a resolver call on the tape: the model asked the same input misses.
    let tape = Arc::new(MemoryTape::from_entries([TapeEntry::ok(
        "resolver:capital",
        input.clone(),
        json!("Paris"),
    )]));
    let offline = TapedLlm::replaying("gemini-2.5-flash", tape.clone());
    assert!(matches!(
        offline.generate(request).await,
        Err(LlmError::Config(_))
    ));
    assert!(tape.next(LLM_CALL, &canonical_json(&input)).is_none());
    let capital = taped_resolver(tape, TapeMode::Replay, "capital", never);
    assert_eq!(capital(input).await.unwrap(), json!("Paris"));
}
