//! Every row of the aggregation table (R's answer) played through the
//! public API: the rows' raw frames from a scripted server, back to back
//! and 20 ms apart, each over 200 seeds. The stored log must equal the
//! row's stored list exactly, on every seed and at every spacing: R's
//! events in wire order, with the session's own stored events where the
//! documented rule puts them (`connected` first, a tool's response right
//! after the call that carried it, `disconnected` last).

use std::time::Duration;

use livesim::executor::{Runner, TestId};
use livesim::prelude::*;
use serde_json::{Value, json};

use super::notation::*;

/// Frames back to back, and 20 ms apart.
const SPACINGS: [Duration; 2] = [Duration::ZERO, Duration::from_millis(20)];

/// Plays `frames` at both spacings over 200 seeds (or `LIVESIM_SEEDS`);
/// the stored log must be `connected`, then `stored`, then (after the
/// client disconnects) `disconnected`.
fn check(test: TestId, frames: Vec<Value>, stored: &[&str]) {
    play(test, frames, stored, Ending::ClientDisconnects);
}

/// How a row's connection ends.
#[derive(Clone, Copy, PartialEq)]
enum Ending {
    /// The test disconnects once the run has settled.
    ClientDisconnects,
    /// The script closes the connection after its frames.
    ServerCloses,
}

fn play(test: TestId, frames: Vec<Value>, stored: &[&str], ending: Ending) {
    let mut expected: Vec<String> = vec!["connected".into()];
    expected.extend(stored.iter().map(|s| s.to_string()));
    for spacing in SPACINGS {
        let (frames, expected) = (frames.clone(), expected.clone());
        Runner::new(test.clone()).seeds(200).run(move |seed| {
            let (frames, expected) = (frames.clone(), expected.clone());
            async move {
                let mut script = script(&frames, spacing);
                if ending == Ending::ServerCloses {
                    script = script.pause(spacing).close(1000, "done");
                }
                let run = script.play(Live::builder().tools(tools())).await.unwrap();
                let log = tokens(&run.session_log());
                assert_eq!(
                    log, expected,
                    "seed {seed}, frames {spacing:?} apart: the stored log"
                );
                if ending == Ending::ClientDisconnects {
                    run.disconnect().await;
                    let log = tokens(&run.session_log());
                    assert_eq!(
                        log.last().map(String::as_str),
                        Some("disconnected"),
                        "seed {seed}, frames {spacing:?} apart"
                    );
                    assert_eq!(
                        log[..log.len() - 1],
                        expected[..],
                        "seed {seed}: disconnected comes last"
                    );
                }
            }
        });
    }
}

#[test]
fn row_01_chunks_then_turn_complete() {
    check(
        livesim::test_id!(),
        vec![msg_text("Hel"), msg_text("lo"), tc()],
        &[r#"full "Hello""#, "turnComplete"],
    );
}

#[test]
fn row_02_turn_complete_false_changes_nothing() {
    let open = |t: &str| with(msg_text(t), "turnComplete", json!(false));
    check(
        livesim::test_id!(),
        vec![open("Hel"), open("lo"), tc()],
        &[r#"full "Hello""#, "turnComplete"],
    );
}

#[test]
fn row_03_last_chunk_shares_the_turn_complete_message() {
    check(
        livesim::test_id!(),
        vec![
            msg_text("Hel"),
            with(msg_text("lo"), "turnComplete", json!(true)),
        ],
        &[r#"full "Hello""#, "turnComplete"],
    );
}

#[test]
fn row_04_interruption_ends_pending_text() {
    check(
        livesim::test_id!(),
        vec![msg_text("Hel"), int()],
        &[r#"full "Hel" +int"#],
    );
}

#[test]
fn row_05_last_chunk_shares_the_interruption() {
    check(
        livesim::test_id!(),
        vec![
            msg_text("Hel"),
            with(msg_text("lo"), "interrupted", json!(true)),
        ],
        &[r#"full "Hello" +int"#],
    );
}

#[test]
fn row_06_interruption_with_turn_complete() {
    check(
        livesim::test_id!(),
        vec![msg_text("Hel"), with(int(), "turnComplete", json!(true))],
        &[r#"full "Hel" +int"#, "turnComplete +int"],
    );
}

#[test]
fn row_07_interruption_with_nothing_pending() {
    check(livesim::test_id!(), vec![int()], &["interrupted"]);
    check(
        livesim::test_id!(),
        vec![with(int(), "turnComplete", json!(true))],
        &["turnComplete +int"],
    );
}

#[test]
fn row_08_tool_call_flushes_text() {
    check(
        livesim::test_id!(),
        vec![msg_text("Checking"), tool("f"), tc()],
        &[
            r#"full "Checking""#,
            "tool(f)",
            "response(f call-f)",
            "turnComplete",
        ],
    );
}

#[test]
fn row_09_tool_calls_are_emitted_at_once() {
    check(
        livesim::test_id!(),
        vec![tool("f"), parts(vec![audio()]), tool("g"), tc()],
        &[
            "tool(f)",
            "response(f call-f)",
            "tool(g)",
            "response(g call-g)",
            "turnComplete",
        ],
    );
}

#[test]
fn row_10_thoughts_aggregate_separately() {
    check(
        livesim::test_id!(),
        vec![
            parts(vec![thought("Plan")]),
            parts(vec![thought(" more")]),
            msg_text("Hi"),
            tc(),
        ],
        &[r#"full "Plan more" +th"#, r#"full "Hi""#, "turnComplete"],
    );
}

#[test]
fn row_11_audio_does_not_end_text() {
    check(
        livesim::test_id!(),
        vec![msg_text("Hel"), parts(vec![audio()]), msg_text("lo"), tc()],
        &[r#"full "Hello""#, "turnComplete"],
    );
}

#[test]
fn row_12_code_ends_text() {
    check(
        livesim::test_id!(),
        vec![msg_text("Hel"), parts(vec![code()]), msg_text("lo"), tc()],
        &[r#"full "Hel""#, "code", r#"full "lo""#, "turnComplete"],
    );
}

#[test]
fn row_13_text_then_code_in_one_message() {
    check(
        livesim::test_id!(),
        vec![parts(vec![text("Run"), code()]), tc()],
        &[r#"full "Run""#, "code", "turnComplete"],
    );
}

#[test]
fn row_14_code_then_text_in_one_message() {
    check(
        livesim::test_id!(),
        vec![parts(vec![code(), text("Done")]), tc()],
        &["code", r#"full "Done""#, "turnComplete"],
    );
}

#[test]
fn row_15_audio_with_turn_complete() {
    check(
        livesim::test_id!(),
        vec![
            msg_text("Hel"),
            with(parts(vec![audio()]), "turnComplete", json!(true)),
        ],
        &[r#"full "Hel""#, "turnComplete"],
    );
}

#[test]
fn row_16_output_transcription_aggregates() {
    check(
        livesim::test_id!(),
        vec![out_tx("How"), out_tx(" are"), tc()],
        &[r#"outTx "How are""#, "turnComplete"],
    );
}

#[test]
fn row_17_input_transcription_finishes_on_its_flag() {
    let heard = |t: &str, finished| json!({ "serverContent": { "inputTranscription": in_tx(t, finished) } });
    check(
        livesim::test_id!(),
        vec![heard("Hi", false), heard(" there", true)],
        &[r#"inTx "Hi there""#],
    );
}

#[test]
fn row_18_transcript_beside_text_then_interruption() {
    check(
        livesim::test_id!(),
        vec![
            with(msg_text("Hel"), "inputTranscription", in_tx("wait", false)),
            int(),
        ],
        &[r#"inTx "wait""#, r#"full "Hel" +int"#],
    );
}

#[test]
fn row_19_interrupted_audio_with_nothing_pending() {
    check(
        livesim::test_id!(),
        vec![
            out_tx("So"),
            with(parts(vec![audio()]), "interrupted", json!(true)),
        ],
        &[r#"outTx "So""#, "interrupted"],
    );
}

#[test]
fn row_20_empty_text_parts_are_ignored() {
    check(
        livesim::test_id!(),
        vec![msg_text("Hel"), msg_text(""), msg_text("lo"), tc()],
        &[r#"full "Hello""#, "turnComplete"],
    );
}

#[test]
fn row_21_usage_comes_first() {
    let mut message = with(msg_text("Hi"), "turnComplete", json!(true));
    message["usageMetadata"] = json!({ "totalTokenCount": 3 });
    check(
        livesim::test_id!(),
        vec![message],
        &["usage", r#"full "Hi""#, "turnComplete"],
    );
}

#[test]
fn row_22_close_drops_pending_text() {
    // R stores nothing of the turn; the session's own `disconnected`
    // stands last.
    play(
        livesim::test_id!(),
        vec![msg_text("Hel")],
        &["disconnected"],
        Ending::ServerCloses,
    );
}
