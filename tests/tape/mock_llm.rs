//! `MockLlm::script` picks its reply by counting the model turns in the
//! request, so a loop that loses a message gets the wrong reply; a taped
//! replay also catches a loop that reorders one.

use std::sync::Arc;

use livesim::llm::{BaseLlm, LlmError, LlmRequest, LlmResponse, MockLlm};
use livesim::tape::{MemoryTape, TapedLlm};

/// How a loop carries the conversation into its second step.
#[derive(Clone, Copy, Debug)]
enum History {
    /// The first answer, then the follow-up: what a correct loop sends.
    Kept,
    /// The follow-up without the first answer.
    Dropped,
    /// The follow-up, then the first answer: both there, out of order.
    Reordered,
}

/// A two-step loop: ask, then ask a follow-up carrying `history`.
async fn two_steps(model: &dyn BaseLlm, history: History) -> Result<[String; 2], LlmError> {
    let first = LlmRequest::from_text("Capital of France?");
    let answer = model.generate(first.clone()).await?.text();
    let second = match history {
        History::Kept => first
            .with_model_turn(&answer)
            .with_user_turn("And of Italy?"),
        History::Dropped => first.with_user_turn("And of Italy?"),
        History::Reordered => first
            .with_user_turn("And of Italy?")
            .with_model_turn(&answer),
    };
    let follow_up = model.generate(second).await?.text();
    Ok([answer, follow_up])
}

fn script() -> MockLlm {
    MockLlm::script([
        LlmResponse::from_text("Paris"),
        LlmResponse::from_text("Rome"),
    ])
}

#[tokio::test]
async fn a_loop_that_drops_the_first_answer_gets_the_wrong_second_reply() {
    assert_eq!(
        two_steps(&script(), History::Kept).await.unwrap(),
        ["Paris", "Rome"]
    );
    // One model turn missing: the script answers the follow-up with its first reply.
    assert_eq!(
        two_steps(&script(), History::Dropped).await.unwrap(),
        ["Paris", "Paris"]
    );
}

#[tokio::test]
async fn a_loop_that_reorders_messages_misses_on_a_tape_recorded_from_the_right_loop() {
    // The script counts model turns only, so a reordered conversation with
    // the same turns gets the right reply from it…
    assert_eq!(
        two_steps(&script(), History::Reordered).await.unwrap(),
        ["Paris", "Rome"]
    );

    // …but a tape matches the whole request, so replaying a recording of the
    // correct loop fails the reordered one, quoting what it sent.
    let tape = Arc::new(MemoryTape::new());
    two_steps(&TapedLlm::recording(script(), tape.clone()), History::Kept)
        .await
        .unwrap();
    let offline = TapedLlm::replaying("gemini-2.5-flash", tape);
    let err = two_steps(&offline, History::Reordered).await.unwrap_err();
    let LlmError::Config(message) = err else {
        panic!("a miss is a configuration error, got {err:?}");
    };
    assert!(
        message.contains(
            r#"{"contents":[{"parts":[{"text":"Capital of France?"}],"role":"user"},{"parts":[{"text":"And of Italy?"}],"role":"user"},{"parts":[{"text":"Paris"}],"role":"model"}]}"#
        ),
        "{message}"
    );
}
