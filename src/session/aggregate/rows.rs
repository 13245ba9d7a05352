//! The aggregation table: one test per row, what is emitted and what is
//! stored. Rows 3, 5, 13, 14, 15, 19, 20 and 21 are where ADK's Python and
//! Java ports disagree; livesim's answer is fixed here on purpose. The
//! integration suite `tests/aggregation` plays the same rows as raw frames
//! through a whole session.

use serde_json::json;

use super::script::*;
use super::{MessageView, TranscriptView};

fn check(messages: &[MessageView], emitted: &[&str], kept: &[&str]) {
    let events = run(messages);
    assert_eq!(tokens(&events), emitted, "emitted");
    assert_eq!(stored(&events), kept, "stored");
}

fn with(mut msg: MessageView, f: impl FnOnce(&mut MessageView)) -> MessageView {
    f(&mut msg);
    msg
}

#[test]
fn row_01_chunks_then_turn_complete() {
    check(
        &[msg_text("Hel"), msg_text("lo"), tc()],
        &[
            r#"partial "Hel""#,
            r#"partial "lo""#,
            r#"full "Hello""#,
            "turnComplete",
        ],
        &[r#"full "Hello""#, "turnComplete"],
    );
}

#[test]
fn row_02_turn_complete_false_changes_nothing() {
    // Each chunk carries `turnComplete: false`, decoded from the wire.
    let open = |t: &str| {
        decoded(json!({ "serverContent": {
            "modelTurn": { "parts": [{ "text": t }] },
            "turnComplete": false
        } }))
    };
    check(
        &[open("Hel"), open("lo"), tc()],
        &[
            r#"partial "Hel""#,
            r#"partial "lo""#,
            r#"full "Hello""#,
            "turnComplete",
        ],
        &[r#"full "Hello""#, "turnComplete"],
    );
}

#[test]
fn row_03_last_chunk_shares_the_turn_complete_message() {
    check(
        &[
            msg_text("Hel"),
            with(msg_text("lo"), |m| m.turn_complete = true),
        ],
        &[
            r#"partial "Hel""#,
            r#"partial "lo""#,
            r#"full "Hello""#,
            "turnComplete",
        ],
        &[r#"full "Hello""#, "turnComplete"],
    );
}

#[test]
fn row_04_interruption_ends_pending_text() {
    check(
        &[msg_text("Hel"), int()],
        &[r#"partial "Hel""#, r#"full "Hel" +int"#],
        &[r#"full "Hel" +int"#],
    );
}

#[test]
fn row_05_last_chunk_shares_the_interruption() {
    check(
        &[
            msg_text("Hel"),
            with(msg_text("lo"), |m| m.interrupted = true),
        ],
        &[
            r#"partial "Hel""#,
            r#"partial "lo""#,
            r#"full "Hello" +int"#,
        ],
        &[r#"full "Hello" +int"#],
    );
}

#[test]
fn row_06_interruption_with_turn_complete() {
    check(
        &[msg_text("Hel"), with(int(), |m| m.turn_complete = true)],
        &[
            r#"partial "Hel""#,
            r#"full "Hel" +int"#,
            "turnComplete +int",
        ],
        &[r#"full "Hel" +int"#, "turnComplete +int"],
    );
}

#[test]
fn row_07_interruption_with_nothing_pending() {
    check(&[int()], &["interrupted"], &["interrupted"]);
    check(
        &[with(int(), |m| m.turn_complete = true)],
        &["turnComplete +int"],
        &["turnComplete +int"],
    );
}

#[test]
fn row_08_tool_call_flushes_text() {
    check(
        &[msg_text("Checking"), tool("f"), tc()],
        &[
            r#"partial "Checking""#,
            r#"full "Checking""#,
            "tool(f)",
            "turnComplete",
        ],
        &[r#"full "Checking""#, "tool(f)", "turnComplete"],
    );
}

#[test]
fn row_09_tool_calls_are_emitted_at_once() {
    check(
        &[tool("f"), parts(vec![audio()]), tool("g"), tc()],
        &["tool(f)", "audio", "tool(g)", "turnComplete"],
        &["tool(f)", "tool(g)", "turnComplete"],
    );
}

#[test]
fn row_10_thoughts_aggregate_separately() {
    check(
        &[
            parts(vec![thought("Plan")]),
            parts(vec![thought(" more")]),
            msg_text("Hi"),
            tc(),
        ],
        &[
            r#"partial "Plan" +th"#,
            r#"partial " more" +th"#,
            r#"full "Plan more" +th"#,
            r#"partial "Hi""#,
            r#"full "Hi""#,
            "turnComplete",
        ],
        &[r#"full "Plan more" +th"#, r#"full "Hi""#, "turnComplete"],
    );
}

#[test]
fn row_11_audio_does_not_end_text() {
    check(
        &[msg_text("Hel"), parts(vec![audio()]), msg_text("lo"), tc()],
        &[
            r#"partial "Hel""#,
            "audio",
            r#"partial "lo""#,
            r#"full "Hello""#,
            "turnComplete",
        ],
        &[r#"full "Hello""#, "turnComplete"],
    );
}

#[test]
fn row_12_code_ends_text() {
    check(
        &[msg_text("Hel"), parts(vec![code()]), msg_text("lo"), tc()],
        &[
            r#"partial "Hel""#,
            r#"full "Hel""#,
            "code",
            r#"partial "lo""#,
            r#"full "lo""#,
            "turnComplete",
        ],
        &[r#"full "Hel""#, "code", r#"full "lo""#, "turnComplete"],
    );
}

#[test]
fn row_13_text_then_code_in_one_message() {
    check(
        &[parts(vec![text("Run"), code()]), tc()],
        &[r#"partial "Run""#, r#"full "Run""#, "code", "turnComplete"],
        &[r#"full "Run""#, "code", "turnComplete"],
    );
}

#[test]
fn row_14_code_then_text_in_one_message() {
    check(
        &[parts(vec![code(), text("Done")]), tc()],
        &[
            "code",
            r#"partial "Done""#,
            r#"full "Done""#,
            "turnComplete",
        ],
        &["code", r#"full "Done""#, "turnComplete"],
    );
}

#[test]
fn row_15_audio_with_turn_complete() {
    check(
        &[
            msg_text("Hel"),
            with(parts(vec![audio()]), |m| m.turn_complete = true),
        ],
        &[r#"partial "Hel""#, "audio", r#"full "Hel""#, "turnComplete"],
        &[r#"full "Hel""#, "turnComplete"],
    );
}

#[test]
fn row_16_output_transcription_aggregates() {
    let out_tx = |t: &str| MessageView {
        output_transcript: Some(TranscriptView {
            text: t.into(),
            finished: false,
        }),
        ..MessageView::default()
    };
    check(
        &[out_tx("How"), out_tx(" are"), tc()],
        &[
            r#"p-outTx "How""#,
            r#"p-outTx " are""#,
            r#"outTx "How are""#,
            "turnComplete",
        ],
        &[r#"outTx "How are""#, "turnComplete"],
    );
}

#[test]
fn row_17_input_transcription_finishes_on_its_flag() {
    let msg = |t: &str, finished| MessageView {
        input_transcript: Some(in_tx(t, finished)),
        ..MessageView::default()
    };
    check(
        &[msg("Hi", false), msg(" there", true)],
        &[r#"p-inTx "Hi""#, r#"p-inTx " there""#, r#"inTx "Hi there""#],
        &[r#"inTx "Hi there""#],
    );
}

#[test]
fn row_18_transcript_beside_text_then_interruption() {
    check(
        &[
            with(msg_text("Hel"), |m| {
                m.input_transcript = Some(in_tx("wait", false))
            }),
            int(),
        ],
        &[
            r#"partial "Hel""#,
            r#"p-inTx "wait""#,
            r#"inTx "wait""#,
            r#"full "Hel" +int"#,
        ],
        &[r#"inTx "wait""#, r#"full "Hel" +int"#],
    );
}

#[test]
fn row_19_interrupted_audio_with_nothing_pending() {
    let out_tx = MessageView {
        output_transcript: Some(TranscriptView {
            text: "So".into(),
            finished: false,
        }),
        ..MessageView::default()
    };
    check(
        &[out_tx, with(parts(vec![audio()]), |m| m.interrupted = true)],
        &[
            r#"p-outTx "So""#,
            "audio +int",
            r#"outTx "So""#,
            "interrupted",
        ],
        &[r#"outTx "So""#, "interrupted"],
    );
}

#[test]
fn row_20_empty_text_parts_are_ignored() {
    check(
        &[msg_text("Hel"), msg_text(""), msg_text("lo"), tc()],
        &[
            r#"partial "Hel""#,
            r#"partial "lo""#,
            r#"full "Hello""#,
            "turnComplete",
        ],
        &[r#"full "Hello""#, "turnComplete"],
    );
}

#[test]
fn row_21_usage_comes_first() {
    check(
        &[with(msg_text("Hi"), |m| {
            m.turn_complete = true;
            m.usage = Some(json!({ "totalTokenCount": 3 }));
        })],
        &["usage", r#"partial "Hi""#, r#"full "Hi""#, "turnComplete"],
        &["usage", r#"full "Hi""#, "turnComplete"],
    );
}

#[test]
fn row_22_close_drops_pending_text() {
    let mut aggregator = super::Aggregator::default();
    let events = aggregator.push(&msg_text("Hel"), crate::clock::Timestamp::EPOCH);
    aggregator.close();
    assert!(!aggregator.has_pending_text());
    assert_eq!(tokens(&events), [r#"partial "Hel""#]);
    assert!(stored(&events).is_empty());
    // Nothing pending survives into a later turn either.
    let after = aggregator.push(&tc(), crate::clock::Timestamp::EPOCH);
    assert_eq!(tokens(&after), ["turnComplete"]);
}
