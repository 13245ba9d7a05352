//! Record, then replay, a model the session calls out of band: here an
//! `LlmExtractor` that names each turn's topic. The first pass records
//! every model call on a tape file; the second answers from the tape
//! with no model, no network and no key, and gets the same state. A
//! question the tape never heard is an error quoting it, never a guess.
//!
//! ```sh
//! cargo run --example tape_replay
//! ```
//!
//! `MockLlm` stands in for your real model (any `BaseLlm`); with a real
//! one, record once (`RECORD=1`, say), check the tape in, and replay it in
//! every test run after.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use livesim::llm::{BaseLlm, LlmExtractor, LlmRequest, LlmResponse, MockLlm};
use livesim::prelude::*;
use livesim::tape::{FileTape, TapedLlm};
use livesim::testing::ScriptedServer;
use serde_json::json;

/// The model the extractor asks: recording a live model onto the tape,
/// or replaying the tape. Either way an `Arc<dyn BaseLlm>`.
fn topic_model(record: bool, tape: &Path) -> Result<Arc<dyn BaseLlm>, String> {
    if record {
        let live_model = MockLlm::script([LlmResponse::from_text(r#"{"topic": "billing"}"#)]);
        let tape = Arc::new(FileTape::create(tape).map_err(|e| e.to_string())?);
        Ok(Arc::new(TapedLlm::recording(live_model, tape)))
    } else {
        let tape = Arc::new(FileTape::open(tape).map_err(|e| e.to_string())?);
        Ok(Arc::new(TapedLlm::replaying("gemini-2.5-flash", tape)))
    }
}

/// One scripted turn with the topic extractor; returns what it wrote.
async fn topic_of_a_turn(model: Arc<dyn BaseLlm>) -> Result<serde_json::Value, String> {
    let extractor = LlmExtractor::new("topic", model, "Name the topic of the turn as JSON.", 2);
    let run = ScriptedServer::new()
        .hears("Why is my bill so high this month?")
        .says("Let me look at your bill.")
        .play(Live::builder().extract(extractor))
        .await
        .map_err(|e| e.to_string())?;
    let topic = run.state().get("topic");
    run.disconnect().await;
    topic.ok_or_else(|| "the extractor wrote nothing".to_string())
}

async fn demo(tape: &Path) -> Result<(), String> {
    let recorded = topic_of_a_turn(topic_model(true, tape)?).await?;
    println!("recorded: the extractor wrote topic = {recorded}");
    let lines = std::fs::read_to_string(tape).map_err(|e| e.to_string())?;
    println!(
        "the tape ({} lines: a header, then one call):",
        lines.lines().count()
    );
    for line in lines.lines() {
        let shown: String = line.chars().take(120).collect();
        println!("  {shown}…");
    }

    let replayed = topic_of_a_turn(topic_model(false, tape)?).await?;
    println!("replayed: the extractor wrote topic = {replayed}");
    if replayed != recorded || recorded != json!({ "topic": "billing" }) {
        return Err(format!(
            "replay wrote {replayed}, recording wrote {recorded}"
        ));
    }

    // A request the tape does not hold: an error, and no call goes out.
    let offline = topic_model(false, tape)?;
    match offline
        .generate(LlmRequest::from_text("Something never recorded"))
        .await
    {
        Err(e) => println!("a request the tape never heard: {e}"),
        Ok(reply) => {
            return Err(format!(
                "an unrecorded request was answered: {}",
                reply.text()
            ));
        }
    }
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let tape =
        std::env::temp_dir().join(format!("livesim-tape-example-{}.jsonl", std::process::id()));
    let outcome = demo(&tape).await;
    let _ = std::fs::remove_file(&tape);
    match outcome {
        Ok(()) => {
            println!("tape_replay: ok");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("tape_replay: {e}");
            ExitCode::FAILURE
        }
    }
}
