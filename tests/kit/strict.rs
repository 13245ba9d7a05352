//! Strict replay: when a client does what the script does not allow, the
//! error names what it did, the action and the script, the connection is
//! closed as the real service would, and nothing hangs.

use livesim::prelude::*;
use livesim::testing::{ReplayControl, ScriptedServer};
use livesim::transport::Transport;
use livesim::wire::Frame;
use serde_json::{Value, json};

/// Connects a hand-driven client to `script`: sends setup, reads
/// setupComplete, releases the script.
pub(crate) async fn client(
    script: ScriptedServer,
) -> (livesim::testing::ReplayTransport, ReplayControl) {
    let (mut transport, control) = script.into_transport();
    transport
        .send(Frame::Text(
            json!({ "setup": { "model": "models/m" } }).to_string(),
        ))
        .await
        .unwrap();
    let reply = transport.recv().await.unwrap().unwrap();
    assert_eq!(reply.payload(), Some(&br#"{"setupComplete":{}}"#[..]));
    control.release();
    (transport, control)
}

/// Sends `message`, then reads until the server closes; returns the close
/// code and the script's one error.
async fn violate(
    transport: &mut livesim::testing::ReplayTransport,
    control: &ReplayControl,
    message: Frame,
) -> (u16, String) {
    transport.send(message).await.unwrap();
    // A script that lets the violation pass never closes: fail then,
    // rather than wait for ever.
    let close = async {
        loop {
            match transport.recv().await {
                Some(Ok(Frame::Close(Some(close)))) => break close.code,
                Some(Ok(_)) => continue,
                other => panic!("expected a close, got {other:?}"),
            }
        }
    };
    let code = tokio::time::timeout(std::time::Duration::from_secs(10), close)
        .await
        .expect("the script let the violation pass: no close within 10 s");
    let errors = control.errors();
    assert_eq!(errors.len(), 1, "{errors:?}");
    (code, errors[0].to_string())
}

fn text(message: Value) -> Frame {
    Frame::Text(message.to_string())
}

#[tokio::test]
async fn the_first_message_must_be_setup() {
    let (mut transport, control) = ScriptedServer::new().named("greeting").into_transport();
    transport
        .send(text(json!({ "clientContent": { "turns": [] } })))
        .await
        .unwrap();
    let close = transport.recv().await.unwrap().unwrap();
    assert!(matches!(close, Frame::Close(Some(c)) if c.code == 1007));
    assert_eq!(
        control.errors()[0].to_string(),
        "script \"greeting\", the handshake: the first client message must be setup, got {\"clientContent\":{\"turns\":[]}}"
    );
}

#[tokio::test]
async fn setup_is_sent_once() {
    let (mut t, control) = client(ScriptedServer::new().named("once")).await;
    let (code, error) = violate(
        &mut t,
        &control,
        text(json!({ "setup": { "model": "models/m" } })),
    )
    .await;
    assert_eq!(code, 1007);
    assert!(error.starts_with("script \"once\", "), "{error}");
    assert!(
        error.ends_with(": the client sent setup a second time"),
        "{error}"
    );
}

#[tokio::test]
async fn an_answer_to_a_call_never_made() {
    let script = ScriptedServer::new()
        .named("weather")
        .calls("get_weather", json!({}));
    let (mut t, control) = client(script).await;
    let _call = t.recv().await; // the toolCall
    let (code, error) = violate(
        &mut t,
        &control,
        text(json!({ "toolResponse": { "functionResponses": [
        { "id": "call-9", "name": "get_weather", "response": {} }
    ] } })),
    )
    .await;
    assert_eq!(code, 1008);
    assert_eq!(
        error,
        "script \"weather\", action #1 (call get_weather as call-1): the client answered call-9, which the script never issued (issued: [call-1])"
    );
}

#[tokio::test]
async fn a_call_answered_twice() {
    let script = ScriptedServer::new()
        .named("twice")
        .calls("f", json!({}))
        .pause(std::time::Duration::from_millis(1));
    let (mut t, control) = client(script).await;
    let _call = t.recv().await;
    let answer = json!({ "toolResponse": { "functionResponses": [{ "id": "call-1", "name": "f", "response": {} }] } });
    t.send(text(answer.clone())).await.unwrap();
    let (code, error) = violate(&mut t, &control, text(answer)).await;
    assert_eq!(code, 1008);
    assert!(
        error.ends_with("the client answered call-1 a second time"),
        "{error}"
    );
}

/// A NON_BLOCKING tool may stream its results: responses with
/// `willContinue: true` (either spelling), then a last one without it.
/// Only a response after that last one is a second answer.
#[tokio::test]
async fn a_streamed_answer_goes_on_while_will_continue_and_ends_at_the_last() {
    let script = ScriptedServer::new()
        .named("streamed")
        .calls_without_waiting("track_delivery", json!({}))
        .pause(std::time::Duration::from_millis(1));
    let (mut t, control) = client(script).await;
    let _call = t.recv().await;
    let answer = |extra: Value| {
        let mut response = json!({ "id": "call-1", "name": "track_delivery", "response": {} });
        response
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        text(json!({ "toolResponse": { "functionResponses": [response] } }))
    };
    t.send(answer(
        json!({ "willContinue": true, "scheduling": "WHEN_IDLE" }),
    ))
    .await
    .unwrap();
    t.send(answer(json!({ "will_continue": true })))
        .await
        .unwrap();
    t.send(answer(json!({ "willContinue": false })))
        .await
        .unwrap();
    let (code, error) = violate(&mut t, &control, answer(json!({}))).await;
    assert_eq!(code, 1008);
    assert!(
        error.ends_with("the client answered call-1 a second time"),
        "{error}"
    );
}

/// Nothing was issued before a session's first connection: a setup that
/// resumes a handle there (one kept from an earlier run) is refused as the
/// service refuses it, not played as if it had resumed.
#[tokio::test]
async fn a_first_setup_resuming_a_handle_never_issued_is_refused_session_not_found() {
    let (mut transport, control) = ScriptedServer::new()
        .named("hello")
        .expects("clientContent")
        .says("Hello.")
        .into_transport();
    transport
        .send(text(json!({ "setup": { "model": "models/m",
            "sessionResumption": { "handle": "HANDLE-from-yesterday" } } })))
        .await
        .unwrap();
    let close = transport.recv().await.unwrap().unwrap();
    match close {
        Frame::Close(Some(close)) => {
            assert_eq!(close.code, 1008);
            assert_eq!(close.reason, "BidiGenerateContent session not found");
        }
        other => panic!("expected 1008, got {other:?}"),
    }
    let errors = control.errors();
    assert_eq!(errors.len(), 1, "{errors:?}");
    let error = errors[0].to_string();
    assert!(
        error.contains(
            "connection #1's setup resumes a handle, but this client session has been issued none"
        ),
        "{error}"
    );
    assert!(!error.contains("HANDLE-from-yesterday"), "{error}");
}

#[tokio::test]
async fn a_call_answered_after_its_cancellation() {
    let script = ScriptedServer::new()
        .named("cancelled")
        .calls_without_waiting("f", json!({}))
        .cancels(["call-1"]);
    let (mut t, control) = client(script).await;
    let _call = t.recv().await;
    let _cancellation = t.recv().await;
    let (code, error) = violate(
        &mut t,
        &control,
        text(json!({ "toolResponse": { "functionResponses": [
        { "id": "call-1", "name": "f", "response": {} }
    ] } })),
    )
    .await;
    assert_eq!(code, 1008);
    assert!(
        error.ends_with("the client answered call-1 after the script cancelled it"),
        "{error}"
    );
}

#[tokio::test]
async fn a_response_must_be_an_object_with_an_id() {
    let script = || ScriptedServer::new().named("shapes").calls("f", json!({}));
    let (mut t, control) = client(script()).await;
    let _call = t.recv().await;
    let (code, error) = violate(
        &mut t,
        &control,
        text(json!({ "toolResponse": { "functionResponses": [
        { "id": "call-1", "name": "f", "response": 42 }
    ] } })),
    )
    .await;
    assert_eq!(code, 1007);
    assert!(
        error.contains("the response to call-1 is not a JSON object"),
        "{error}"
    );

    let (mut t, control) = client(script()).await;
    let _call = t.recv().await;
    let (code, error) = violate(
        &mut t,
        &control,
        text(json!({ "toolResponse": { "functionResponses": [
        { "name": "f", "response": {} }
    ] } })),
    )
    .await;
    assert_eq!(code, 1007);
    assert!(error.contains("a function response has no id"), "{error}");
}

#[tokio::test]
async fn client_content_the_script_does_not_expect() {
    let (mut t, control) = client(ScriptedServer::new().named("quiet").says("Hi.")).await;
    let (code, error) = violate(
        &mut t,
        &control,
        text(json!({ "realtimeInput": { "text": "hello?" } })),
    )
    .await;
    assert_eq!(code, 1007);
    assert!(
        error.contains("the client sent realtimeInput, which the script does not expect here"),
        "{error}"
    );
}

#[tokio::test]
async fn unknown_and_malformed_client_messages() {
    let (mut t, control) = client(ScriptedServer::new().named("strict")).await;
    let (code, error) = violate(&mut t, &control, text(json!({ "clientConfig": {} }))).await;
    assert_eq!(code, 1007);
    assert!(
        error.ends_with("the client sent an unknown message \"clientConfig\""),
        "{error}"
    );

    let (mut t, control) = client(ScriptedServer::new().named("strict")).await;
    let (_, error) = violate(&mut t, &control, Frame::Binary(vec![0xff, 0xfe])).await;
    assert!(error.contains("not a JSON object"), "{error}");

    let (mut t, control) = client(ScriptedServer::new().named("strict")).await;
    let (_, error) = violate(
        &mut t,
        &control,
        text(json!({ "clientContent": {}, "realtimeInput": {} })),
    )
    .await;
    assert!(error.contains("exactly one top-level key"), "{error}");
}

/// A session that breaks its script is stopped: the script records the
/// error and closes the connection with the service's code, and the
/// session reports the close; nothing hangs.
#[tokio::test]
async fn a_session_that_breaks_the_script_is_stopped_with_the_error() {
    let (transport, control) = ScriptedServer::new()
        .named("no-input")
        .says("Hello.")
        .into_transport();
    let handle = Live::builder()
        .connect_with_transport(transport)
        .await
        .unwrap();
    let mut events = handle.events();
    control.release();
    handle.send_text("unexpected").unwrap();
    handle.closed().await;
    let errors = control.errors();
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0].to_string().starts_with("script \"no-input\"")
            && errors[0]
                .to_string()
                .contains("the client sent clientContent, which the script does not expect here"),
        "{}",
        errors[0]
    );
    let ended = events
        .drain()
        .into_iter()
        .find(|e| matches!(e, LiveEvent::Disconnected { .. }));
    assert!(
        matches!(
            ended,
            Some(LiveEvent::Disconnected {
                code: Some(1007),
                ..
            })
        ),
        "{ended:?}"
    );
}

/// Google's Python SDK sends top-level keys in snake_case: accepted.
#[tokio::test]
async fn snake_case_client_messages_are_accepted() {
    let script = ScriptedServer::new()
        .named("sdk")
        .calls("f", json!({}))
        .expects("client_content");
    let (mut t, control) = client(script).await;
    let _call = t.recv().await;
    t.send(text(json!({ "tool_response": { "function_responses": [
        { "id": "call-1", "name": "f", "response": { "ok": true } }
    ] } })))
    .await
    .unwrap();
    t.send(text(
        json!({ "client_content": { "turns": [], "turnComplete": true } }),
    ))
    .await
    .unwrap();
    control.drained().await;
    assert!(control.errors().is_empty(), "{:?}", control.errors());
    assert!(control.unanswered_calls().is_empty());
}

/// The Python SDK's exact shape (snake_case at the top, camelCase inside)
/// and `realtime_input` are accepted; a snake_case answer to a call the
/// script never made is refused like any other.
#[tokio::test]
async fn python_sdk_shapes_are_checked_like_any_other() {
    let script = ScriptedServer::new()
        .named("sdk")
        .calls("f", json!({}))
        .expects("realtimeInput")
        .calls("g", json!({}));
    let (mut t, control) = client(script).await;
    let _call = t.recv().await;
    t.send(text(json!({ "tool_response": { "functionResponses": [
        { "id": "call-1", "name": "f", "response": { "ok": true } }
    ] } })))
    .await
    .unwrap();
    t.send(text(json!({ "realtime_input": { "text": "next" } })))
        .await
        .unwrap();
    let (code, error) = violate(
        &mut t,
        &control,
        text(json!({ "tool_response": { "function_responses": [
            { "id": "call-9", "name": "g", "response": {} }
        ] } })),
    )
    .await;
    assert_eq!(code, 1008);
    assert!(
        error.contains(
            "the client answered call-9, which the script never issued (issued: [call-1, call-2])"
        ),
        "{error}"
    );
}

/// A script still waiting at an `expect` the session never met did not
/// play: `play` says so, naming the action; a run whose call is still
/// running at the cap (a slow tool) is only unsettled.
#[test]
fn a_script_left_waiting_at_an_expect_is_an_error_a_slow_tool_is_not() {
    use livesim::Seed;
    use livesim::executor::Simulation;
    use std::time::Duration;
    let outcome = Simulation::new(Seed::new(1))
        .run(|| async {
            let waiting = ScriptedServer::new()
                .named("waits")
                .expects("clientContent")
                .says("Hi.")
                .settle_cap(Duration::from_secs(5))
                .play(Live::builder())
                .await
                .map(|run| run.settled());
            let slow = ScriptedServer::new()
                .named("slow")
                .calls("nap", json!({}))
                .settle_cap(Duration::from_secs(5))
                .play(
                    Live::builder().tools(T::simple("nap", "Sleeps an hour", |_| async {
                        tokio::time::sleep(Duration::from_secs(3600)).await;
                        Ok(json!({}))
                    })),
                )
                .await
                .map(|run| run.settled());
            (
                waiting.map_err(|e| e.to_string()),
                slow.map_err(|e| e.to_string()),
            )
        })
        .expect("the simulation finishes")
        .value;
    let (waiting, slow) = outcome;
    let error = waiting.unwrap_err();
    assert!(
        error.contains("script \"waits\", action #1 (expect clientContent)")
            && error.contains("the session never sent what the script waits for here"),
        "{error}"
    );
    assert_eq!(slow, Ok(false));
}

/// An `expect` of a member (`realtimeInput.audio`) waits for a message
/// holding that member: a `realtimeInput` of text is not it.
#[tokio::test]
async fn an_expect_of_a_member_is_not_met_by_another_member() {
    let (mut t, control) = client(
        ScriptedServer::new()
            .named("audio")
            .expects("realtimeInput.audio"),
    )
    .await;
    let (code, error) = violate(
        &mut t,
        &control,
        text(json!({ "realtimeInput": { "text": "hello" } })),
    )
    .await;
    assert_eq!(code, 1007);
    assert!(
        error.ends_with(
            "the client sent realtimeInput, which the script does not expect here: \
             {\"realtimeInput\":{\"text\":\"hello\"}}"
        ),
        "{error}"
    );
}
