//! Where the session's own stored events stand: a tool's response (or its
//! refusal) right after the call that carried it, in call order; an
//! extraction right after the turn it read; notices never. The same on
//! every seed and at every frame spacing, while the delivered order varies.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use livesim::executor::Runner;
use livesim::flow::Flow;
use livesim::prelude::*;
use livesim::session::{Extracted, Extractor, TurnContext};
use livesim::testing::{Action, ScriptedServer};
use serde_json::json;

use super::notation::*;

const SPACINGS: [Duration; 2] = [Duration::ZERO, Duration::from_millis(20)];

/// Three calls in one message, the second refused by the flow: each
/// response stands right after the call message, in call order (the
/// refusal before its response), however the tools finish; the tools do
/// finish in different orders across seeds.
#[test]
fn responses_stand_after_their_call_in_call_order() {
    let delivered = Arc::new(Mutex::new(BTreeSet::new()));
    for spacing in SPACINGS {
        let delivered = delivered.clone();
        Runner::new(livesim::test_id!())
            .seeds(200)
            .run(move |seed| {
                let delivered = delivered.clone();
                async move {
                    let frames = [
                        msg_text("Checking"),
                        tools_called(&[("f", "call-1"), ("g", "call-2"), ("f", "call-3")]),
                        msg_text("Done"),
                        tc(),
                    ];
                    let only_f = Flow::new().step("s").allow(["f"]).build().unwrap();
                    let run = script(&frames, spacing)
                        .play(Live::builder().tools(tools()).govern(only_f))
                        .await
                        .unwrap();
                    assert_eq!(
                        tokens(&run.session_log()),
                        [
                            "connected",
                            r#"full "Checking""#,
                            "tool(f,g,f)",
                            "response(f call-1)",
                            "denied(g call-2)",
                            "response(g call-2)",
                            "response(f call-3)",
                            r#"full "Done""#,
                            "turnComplete",
                        ],
                        "seed {seed}, frames {spacing:?} apart"
                    );
                    let answered: Vec<String> = run
                        .events()
                        .iter()
                        .filter_map(|e| match e {
                            LiveEvent::ToolResponse { id, .. } => Some(id.clone()),
                            _ => None,
                        })
                        .collect();
                    delivered.lock().unwrap().insert(answered);
                    run.disconnect().await;
                }
            });
    }
    assert!(
        delivered.lock().unwrap().len() >= 2,
        "the tools finished in one order on every seed: the test shows nothing"
    );
}

/// Writes how many transcript lines it read and the last one, after a
/// seeded delay long enough for the next turn to end meanwhile.
struct LastLine;

impl Extractor for LastLine {
    fn name(&self) -> &str {
        "last_line"
    }

    fn extract(&self, turn: TurnContext) -> BoxFuture<'static, Result<Extracted, String>> {
        async move {
            let ms = livesim::executor::draw("extractor-latency", |s| s.range(0..=60)).unwrap_or(0);
            tokio::time::sleep(Duration::from_millis(ms)).await;
            let lines = turn.transcript.last(0);
            let last = lines.last().map(|l| l.text.clone()).unwrap_or_default();
            Ok(vec![
                ("lines".to_string(), json!(lines.len())),
                ("last".to_string(), json!(last)),
            ])
        }
        .boxed()
    }
}

/// Two turns back to back, with an extractor slower than a turn: it runs
/// once per turn, in order, each run reading the transcript as it stood at
/// its turn's end, and each extraction stands right after its turn.
#[test]
fn extractions_stand_after_the_turn_they_read() {
    for spacing in SPACINGS {
        Runner::new(livesim::test_id!())
            .seeds(200)
            .run(move |seed| async move {
                let heard =
                    |t: &str| json!({ "serverContent": { "inputTranscription": in_tx(t, true) } });
                let frames = [
                    heard("one"),
                    msg_text("first"),
                    tc(),
                    heard("two"),
                    msg_text("second"),
                    tc(),
                ];
                let run = script(&frames, spacing)
                    .play(Live::builder().extract(LastLine))
                    .await
                    .unwrap();
                assert_eq!(
                    tokens(&run.session_log()),
                    [
                        "connected",
                        r#"inTx "one""#,
                        r#"full "first""#,
                        "turnComplete",
                        r#"extracted(last_line) {"lines":2,"last":"first"}"#,
                        r#"inTx "two""#,
                        r#"full "second""#,
                        "turnComplete",
                        r#"extracted(last_line) {"lines":4,"last":"second"}"#,
                    ],
                    "seed {seed}, frames {spacing:?} apart"
                );
                assert_eq!(
                    run.state().get("last"),
                    Some(json!("second")),
                    "turns in order"
                );
                run.disconnect().await;
            });
    }
}

/// Warnings and phase changes are delivered, never stored.
#[test]
fn notices_are_delivered_not_stored() {
    Runner::new(livesim::test_id!())
        .seeds(50)
        .run(|seed| async move {
            use base64::Engine as _;
            let garbage = base64::engine::general_purpose::STANDARD.encode("not json");
            let run = ScriptedServer::new()
                .action(Action::SendRaw(garbage))
                .frame(tool("f"))
                .says("Done")
                .play(
                    Live::builder()
                        .tools(tools())
                        .phases(
                            Phases::new("greet").transition("greet", "done", |s| s.contains("x")),
                        ),
                )
                .await
                .unwrap();
            let mut stream = run.handle().events();
            run.state().set("x", true);
            tokio::time::sleep(Duration::from_millis(10)).await;
            let kinds = |events: &[LiveEvent]| -> Vec<&'static str> {
                events.iter().map(LiveEvent::kind).collect()
            };
            assert!(
                kinds(run.events()).contains(&"warning"),
                "seed {seed}: the bad frame"
            );
            assert!(
                kinds(&stream.drain()).contains(&"phase_changed"),
                "seed {seed}: the phase moved"
            );
            assert_eq!(
                kinds(&run.session_log()),
                [
                    "connected",
                    "tool_call",
                    "tool_response",
                    "text_complete",
                    "turn_complete"
                ],
                "seed {seed}"
            );
            run.disconnect().await;
        });
}
