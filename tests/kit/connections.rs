//! Scripts across connections, driven by hand: the frames a client would
//! send (a Python SDK's, say), over the connector a script provides. The
//! player checks each new connection's setup (the handle it resumes),
//! keeps call ids to their connection, and checks transparent replays.

use std::time::Duration;

use livesim::Seed;
use livesim::executor::Simulation;
use livesim::testing::{ReplayControl, ScriptedServer};
use livesim::transport::Transport;
use livesim::transport::connector::{BoxedTransport, Connector};
use livesim::wire::{CloseFrame, Frame};
use serde_json::{Value, json};

/// Opens a connection and sends a setup resuming `handle` (or asking for
/// resumption without one); returns the connection and the server's
/// answer (`None`: a close came instead).
async fn open(
    connector: &impl Connector,
    handle: Option<&str>,
    transparent: bool,
) -> (BoxedTransport, Option<Value>) {
    let mut conn = connector.connect().await.unwrap();
    let mut resumption = json!({});
    if let Some(handle) = handle {
        resumption["handle"] = json!(handle);
    }
    if transparent {
        resumption["transparent"] = json!(true);
    }
    let setup = json!({ "setup": { "model": "models/m", "sessionResumption": resumption } });
    conn.send(Frame::Text(setup.to_string())).await.unwrap();
    let answer = next(&mut conn).await;
    (conn, answer)
}

/// The next server message, or `None` at a close or the end.
async fn next(conn: &mut BoxedTransport) -> Option<Value> {
    match conn.recv().await {
        Some(Ok(frame)) if !frame.is_close() => serde_json::from_slice(frame.payload()?).ok(),
        _ => None,
    }
}

/// Reads until a message with `key` arrives (or the connection ends).
async fn until(conn: &mut BoxedTransport, key: &str) -> Option<Value> {
    loop {
        let message = next(conn).await?;
        if message.get(key).is_some() {
            return Some(message);
        }
    }
}

/// Sends a user turn of `text`, as a client does when the user types.
async fn types(conn: &mut BoxedTransport, text: &str) {
    let typed = json!({ "clientContent": {
        "turns": [{ "role": "user", "parts": [{ "text": text }] }],
        "turnComplete": true
    } });
    conn.send(Frame::Text(typed.to_string())).await.unwrap();
}

/// The model text of the next turn, read through its `turnComplete`.
async fn said(conn: &mut BoxedTransport) -> String {
    let mut text = String::new();
    loop {
        let message = until(conn, "serverContent").await.unwrap();
        if let Some(part) = message.pointer("/serverContent/modelTurn/parts/0/text") {
            text.push_str(part.as_str().unwrap());
        }
        if message.pointer("/serverContent/turnComplete") == Some(&json!(true)) {
            return text;
        }
    }
}

fn run<F: std::future::Future<Output = ()> + 'static>(test: impl FnOnce() -> F) {
    Simulation::new(Seed::new(3)).run(test).unwrap();
}

fn errors(control: &ReplayControl) -> Vec<String> {
    control.errors().iter().map(ToString::to_string).collect()
}

fn go_away_script() -> ScriptedServer {
    ScriptedServer::new()
        .named("go-away")
        .resumption_update("h1", true)
        .text("Hel")
        .go_away(Duration::from_secs(2))
        .text("lo")
        .turn_complete()
        .resumption_update("h2", true)
        .reconnect_resuming("h2")
        .says("Again")
}

#[test]
fn go_away_then_make_before_break_with_the_latest_handle() {
    run(|| async {
        let (connector, control) = go_away_script().into_connector();
        let (mut first, answer) = open(&connector, None, false).await;
        assert!(answer.unwrap().get("setupComplete").is_some());
        control.release();
        let go_away = until(&mut first, "goAway").await.unwrap();
        assert_eq!(go_away["goAway"]["timeLeft"], "2s");
        let update = until(&mut first, "sessionResumptionUpdate").await.unwrap();
        assert_eq!(update["sessionResumptionUpdate"]["newHandle"], "h2");
        // The new connection first, then the old one is closed.
        let (mut second, answer) = open(&connector, Some("h2"), false).await;
        assert!(answer.unwrap().get("setupComplete").is_some());
        first
            .close(Some(CloseFrame::new(1000, "moved")))
            .await
            .unwrap();
        assert_eq!(said(&mut second).await, "Again");
        control.drained().await;
        assert_eq!(errors(&control), Vec::<String>::new());
        assert_eq!(control.connections(), 2);
    });
}

#[test]
fn resuming_an_older_handle_is_an_error_that_names_the_actions_not_the_handles() {
    run(|| async {
        let (connector, control) = go_away_script().into_connector();
        let (mut first, _) = open(&connector, None, false).await;
        control.release();
        until(&mut first, "goAway").await.unwrap();
        first
            .close(Some(CloseFrame::new(1000, "leaving")))
            .await
            .unwrap();
        let (_second, answer) = open(&connector, Some("h1"), false).await;
        assert_eq!(answer, None, "the setup is refused");
        control.drained().await;
        let errors = errors(&control);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0].contains(
                "connection #2's setup resumes the handle of action #1; the script expects the handle of action #6"
            ),
            "{errors:?}"
        );
        assert!(!errors[0].contains("h1") && !errors[0].contains("h2"));
    });
}

#[test]
fn a_setup_that_does_not_ask_for_resumption_is_refused() {
    run(|| async {
        let (connector, control) = go_away_script().into_connector();
        let mut conn = connector.connect().await.unwrap();
        let setup = json!({ "setup": { "model": "models/m" } });
        conn.send(Frame::Text(setup.to_string())).await.unwrap();
        assert_eq!(next(&mut conn).await, None);
        control.drained().await;
        assert!(errors(&control)[0].contains("does not ask for them (no sessionResumption"));
    });
}

#[test]
fn a_call_left_on_the_old_connection_cannot_be_answered_on_the_new_one() {
    let script = || {
        ScriptedServer::new()
            .named("stale")
            .resumption_update("h1", true)
            .calls_without_waiting("pay", json!({ "amount": 5 }))
            .pause(Duration::from_millis(10))
            .close(1011, "Internal error encountered.")
            .reconnect_resuming("h1")
            .says("Where were we?")
    };
    // Answering on the new connection: an error.
    run(move || async move {
        let (connector, control) = script().into_connector();
        let (mut first, _) = open(&connector, None, false).await;
        control.release();
        let call = until(&mut first, "toolCall").await.unwrap();
        let id = call["toolCall"]["functionCalls"][0]["id"].clone();
        assert_eq!(next(&mut first).await, None, "closed with 1011");
        let (mut second, _) = open(&connector, Some("h1"), false).await;
        let answer = json!({ "toolResponse": { "functionResponses": [
            { "id": id, "name": "pay", "response": { "ok": true } }
        ] } });
        second.send(Frame::Text(answer.to_string())).await.unwrap();
        control.drained().await;
        let errors = errors(&control);
        assert!(
            errors.iter().any(|e| e
                .contains("answered call-1 on connection #2, but it was issued on connection #1")),
            "{errors:?}"
        );
    });
    // Not answering: the script goes on, the call counts as abandoned.
    run(move || async move {
        let (connector, control) = script().into_connector();
        let (mut first, _) = open(&connector, None, false).await;
        control.release();
        until(&mut first, "toolCall").await.unwrap();
        assert_eq!(next(&mut first).await, None);
        let (mut second, _) = open(&connector, Some("h1"), false).await;
        assert_eq!(said(&mut second).await, "Where were we?");
        control.drained().await;
        assert_eq!(errors(&control), Vec::<String>::new());
        assert!(control.unanswered_calls().is_empty());
        assert_eq!(control.abandoned_calls(), ["call-1"]);
    });
}

#[test]
fn session_not_found_then_a_fresh_session() {
    run(|| async {
        let script = ScriptedServer::new()
            .named("restart")
            .resumption_update("h1", true)
            .abort()
            .reconnect_resuming("h1")
            .rejects_setup(1008, "BidiGenerateContent session not found")
            .reconnect_fresh()
            .says("Hello again");
        let (connector, control) = script.into_connector();
        let (mut first, _) = open(&connector, None, false).await;
        control.release();
        until(&mut first, "sessionResumptionUpdate").await.unwrap();
        assert_eq!(next(&mut first).await, None, "dropped");
        let mut second = connector.connect().await.unwrap();
        let setup = json!({ "setup": { "model": "m", "sessionResumption": { "handle": "h1" } } });
        second.send(Frame::Text(setup.to_string())).await.unwrap();
        match second.recv().await {
            Some(Ok(Frame::Close(Some(close)))) => {
                assert_eq!(close.code, 1008);
                assert_eq!(close.reason, "BidiGenerateContent session not found");
            }
            other => panic!("expected the setup refused, got {other:?}"),
        }
        let (mut third, answer) = open(&connector, None, false).await;
        assert!(answer.unwrap().get("setupComplete").is_some());
        assert_eq!(said(&mut third).await, "Hello again");
        control.drained().await;
        assert_eq!(errors(&control), Vec::<String>::new());
        assert_eq!(control.connections(), 2);
    });
}

/// A transparent script: the server consumed nothing when it issued h1,
/// then two messages arrived, then the connection died.
fn transparent_script() -> ScriptedServer {
    ScriptedServer::new()
        .named("transparent")
        .resumption_update_transparent("h1")
        .expects("realtimeInput")
        .expects("realtimeInput")
        .abort()
        .reconnect_resuming("h1")
        .expects("realtimeInput")
        .says("Got all three")
}

fn input(text: &str) -> Frame {
    Frame::Text(json!({ "realtimeInput": { "text": text } }).to_string())
}

#[test]
fn transparent_resumption_replays_what_was_not_consumed_once_in_order() {
    run(|| async {
        let (connector, control) = transparent_script().into_connector();
        let (mut first, _) = open(&connector, None, true).await;
        control.release();
        let update = until(&mut first, "sessionResumptionUpdate").await.unwrap();
        assert_eq!(
            update["sessionResumptionUpdate"]["lastConsumedClientMessageIndex"],
            "0"
        );
        first.send(input("one")).await.unwrap();
        first.send(input("two")).await.unwrap();
        assert_eq!(next(&mut first).await, None, "dropped");
        let (mut second, _) = open(&connector, Some("h1"), true).await;
        for text in ["one", "two", "three"] {
            second.send(input(text)).await.unwrap();
        }
        assert_eq!(said(&mut second).await, "Got all three");
        control.drained().await;
        assert_eq!(errors(&control), Vec::<String>::new());
    });
}

#[test]
fn a_lost_or_repeated_replay_is_an_error() {
    for replayed in [&["two", "three"][..], &["one", "one", "two"][..]] {
        run(move || async move {
            let (connector, control) = transparent_script().into_connector();
            let (mut first, _) = open(&connector, None, true).await;
            control.release();
            until(&mut first, "sessionResumptionUpdate").await.unwrap();
            first.send(input("one")).await.unwrap();
            first.send(input("two")).await.unwrap();
            assert_eq!(next(&mut first).await, None);
            let (mut second, _) = open(&connector, Some("h1"), true).await;
            for text in replayed {
                let _ = second.send(input(text)).await;
            }
            control.drained().await;
            let errors = errors(&control);
            assert!(
                errors
                    .iter()
                    .any(|e| e.contains("should replay what the server received")),
                "{replayed:?}: {errors:?}"
            );
        });
    }
}

/// A transparent resume refused as `session not found` owes no replay:
/// the fresh session after it has consumed nothing, and counts its
/// messages from 1 again.
#[test]
fn a_refused_resume_owes_no_replay_and_a_fresh_session_counts_from_one() {
    run(|| async {
        let script = ScriptedServer::new()
            .named("stale")
            .resumption_update_transparent("h1")
            .expects("realtimeInput")
            .close(1011, "Internal error encountered.")
            .reconnect_resuming("h1")
            .rejects_setup(1008, "BidiGenerateContent session not found")
            .reconnect_fresh()
            .expects("realtimeInput")
            .resumption_update_transparent("h2")
            .says("Fresh");
        let (connector, control) = script.into_connector();
        let (mut first, _) = open(&connector, None, true).await;
        control.release();
        until(&mut first, "sessionResumptionUpdate").await.unwrap();
        first.send(input("one")).await.unwrap();
        assert_eq!(next(&mut first).await, None, "closed with 1011");
        let (_refused, answer) = open(&connector, Some("h1"), true).await;
        assert_eq!(answer, None, "session not found");
        let (mut fresh, answer) = open(&connector, None, true).await;
        assert!(answer.unwrap().get("setupComplete").is_some());
        fresh.send(input("two")).await.unwrap();
        let update = until(&mut fresh, "sessionResumptionUpdate").await.unwrap();
        assert_eq!(
            update["sessionResumptionUpdate"]["lastConsumedClientMessageIndex"],
            "1"
        );
        assert_eq!(said(&mut fresh).await, "Fresh");
        control.drained().await;
        assert_eq!(errors(&control), Vec::<String>::new());
        // The 1011 close had a reconnect after it: the script did not end
        // the session there.
        assert!(!control.ended_by_script());
    });
}

/// Only a close that no reconnect follows ends the session.
#[test]
fn a_close_ends_the_session_only_when_no_reconnect_follows() {
    for (closes_at_end, ended) in [(false, false), (true, true)] {
        run(move || async move {
            let mut script = ScriptedServer::new()
                .named("closes")
                .resumption_update("h1", true)
                .close(1011, "Internal error encountered.")
                .reconnect_resuming("h1")
                .says("Back");
            if closes_at_end {
                script = script.close(1000, "");
            }
            let (connector, control) = script.into_connector();
            let (mut first, _) = open(&connector, None, false).await;
            control.release();
            assert_eq!(
                next(&mut first)
                    .await
                    .map(|m| m.get("sessionResumptionUpdate").is_some()),
                Some(true)
            );
            assert_eq!(next(&mut first).await, None, "closed with 1011");
            let (mut second, _) = open(&connector, Some("h1"), false).await;
            assert_eq!(said(&mut second).await, "Back");
            if closes_at_end {
                assert_eq!(next(&mut second).await, None, "closed with 1000");
            } else {
                second
                    .close(Some(CloseFrame::new(1000, "bye")))
                    .await
                    .unwrap();
            }
            control.drained().await;
            assert_eq!(errors(&control), Vec::<String>::new());
            assert_eq!(
                control.ended_by_script(),
                ended,
                "close at the end: {closes_at_end}"
            );
        });
    }
}

#[test]
fn script_files_with_connections_round_trip_and_are_checked() {
    let script = go_away_script();
    let text = script.to_json().to_string();
    assert!(text.contains(r#"{"reconnect":{"handle":"h2"}}"#), "{text}");
    assert!(text.contains(r#"{"go_away_ms":2000}"#), "{text}");
    let back = ScriptedServer::from_json_str(&text, "mem").unwrap();
    assert_eq!(back.actions(), script.actions());
    assert!(back.spans_connections());

    let bad = json!({ "v": 1, "actions": [
        { "resumption_update": { "handle": "h1", "resumable": false } },
        { "reconnect": { "handle": "h1" } }
    ]});
    // Pretty-printed, as a script file is written: the error names the
    // action's own line.
    let pretty = serde_json::to_string_pretty(&bad).unwrap();
    let error = ScriptedServer::from_json_str(&pretty, "bad.json").unwrap_err();
    assert_eq!(pretty.lines().nth(9), Some("    {"), "{pretty}");
    assert_eq!(
        error.to_string(),
        "script bad.json: action #2 at line 10, column 5: reconnect resumes a handle that no earlier resumable resumption_update issues"
    );
    let opaque_lag = json!({ "v": 1, "actions": [
        { "resumption_update": { "handle": "h1", "behind": 1 } }
    ]});
    assert_eq!(
        ScriptedServer::from_json_str(&opaque_lag.to_string(), "lag.json")
            .unwrap_err()
            .to_string(),
        "script lag.json: action #1 at line 1, column 19: resumption_update's behind counts unprocessed messages in a transparent update's index: set transparent, or leave behind out"
    );
    // An action's members as an array, in order, are refused: serde's
    // derive would take them by position.
    for (action, what) in [
        (
            json!({ "call": ["call-1", "get_weather", {}, false] }),
            "a tool call",
        ),
        (
            json!({ "resumption_update": ["h1", true, false, 0] }),
            "a resumption update",
        ),
        (json!({ "reconnect": ["h1"] }), "a reconnect"),
        (json!({ "close": [1000, "bye"] }), "a close"),
    ] {
        let script = json!({ "v": 1, "actions": [action] });
        let error = ScriptedServer::from_json_str(&script.to_string(), "array.json")
            .expect_err("an array is not an action's members")
            .to_string();
        assert!(
            error.contains(&format!(
                "invalid type: a list, expected {what}, a JSON object"
            )),
            "{error}"
        );
    }
    let late_reject = json!({ "v": 1, "actions": [
        { "pause_ms": 1 }, { "reject_setup": { "code": 1008 } }
    ]});
    assert!(
        ScriptedServer::from_json_str(&late_reject.to_string(), "x")
            .unwrap_err()
            .to_string()
            .contains("or the first after a reconnect")
    );
    let after_reconnect = json!({ "v": 1, "actions": [
        { "reconnect": {} }, { "reject_setup": { "code": 1008 } }
    ]});
    assert!(ScriptedServer::from_json_str(&after_reconnect.to_string(), "x").is_ok());
    let typo = json!({ "v": 1, "actions": [{ "reconnect": { "handel": "h1" } }] });
    let error = ScriptedServer::from_json_str(&typo.to_string(), "typo.json")
        .unwrap_err()
        .to_string();
    assert!(error.contains("handel"), "{error}");
}

/// A `goAway` that moves a session which does not resume transparently:
/// the server issues h1, says it is going away, reads the old connection
/// a while, and the next connection resumes h1; the user's next message
/// is expected there.
fn opaque_move_script() -> ScriptedServer {
    ScriptedServer::new()
        .named("opaque-move")
        .resumption_update("h1", true)
        .go_away(Duration::from_millis(500))
        .pause(Duration::from_millis(100))
        .reconnect_resuming("h1")
        .expects("realtimeInput")
        .says("Got it")
}

/// Without transparent resumption, what reached the old connection after
/// the handle the new one resumes is lost: content the script expects
/// after the move, sent there, is an error; sent on the new connection,
/// it is not.
#[test]
fn content_sent_on_the_connection_being_left_after_its_handle_is_lost_and_reported() {
    for early in [true, false] {
        run(move || async move {
            let (connector, control) = opaque_move_script().into_connector();
            let (mut first, _) = open(&connector, None, false).await;
            control.release();
            until(&mut first, "goAway").await.unwrap();
            if early {
                first.send(input("typed while moving")).await.unwrap();
            }
            let (mut second, answer) = open(&connector, Some("h1"), false).await;
            assert!(answer.unwrap().get("setupComplete").is_some());
            first
                .close(Some(CloseFrame::new(1000, "moved")))
                .await
                .unwrap();
            if !early {
                second.send(input("typed while moving")).await.unwrap();
            }
            if !early {
                assert_eq!(said(&mut second).await, "Got it");
            }
            drop(second);
            control.drained().await;
            let errors = errors(&control);
            if early {
                assert!(
                    errors.iter().any(|e| e.contains(
                        "1 client content message(s) that the script expects after this reconnect reached the connection being left after the handle of action #1 was issued"
                    )),
                    "{errors:?}"
                );
                assert!(errors.iter().all(|e| !e.contains("h1")), "{errors:?}");
            } else {
                assert_eq!(errors, Vec::<String>::new());
            }
        });
    }
}

/// A script closes only with what a close frame can carry: a code an
/// endpoint may send and a reason of at most 123 bytes; anything else is
/// refused when the file is read, naming the action.
#[test]
fn script_files_close_only_with_codes_and_reasons_a_close_frame_carries() {
    let close = |code: u16, reason: &str| {
        let script = json!({ "v": 1, "actions": [
            { "pause_ms": 1 }, { "close": { "code": code, "reason": reason } }
        ]});
        ScriptedServer::from_json_str(&script.to_string(), "close.json").map(|_| ())
    };
    for code in [1000, 1001, 1003, 1007, 1008, 1011, 1013, 3000, 4999] {
        assert!(close(code, "").is_ok(), "{code}");
    }
    for code in [0, 999, 1004, 1005, 1006, 1014, 1015, 2999, 5000, 65535] {
        let error = close(code, "").unwrap_err().to_string();
        assert_eq!(
            error,
            format!(
                "script close.json: action #2 at line 1, column 34: close code {code} cannot be sent in a close frame (use 1000-1003, 1007-1013 or 3000-4999; `abort` drops the connection without one)"
            )
        );
    }
    // 123 bytes, the last character two bytes wide, is the most a close
    // frame holds.
    let most = format!("{}é", "r".repeat(121));
    assert!(close(1011, &most).is_ok());
    assert_eq!(
        close(1011, &format!("{most}!")).unwrap_err().to_string(),
        "script close.json: action #2 at line 1, column 34: the close reason is 124 bytes; a close frame carries at most 123"
    );
    let reject = json!({ "v": 1, "actions": [{ "reject_setup": { "code": 1006 } }] });
    assert!(
        ScriptedServer::from_json_str(&reject.to_string(), "reject.json")
            .unwrap_err()
            .to_string()
            .starts_with(
                "script reject.json: action #1 at line 1, column 19: close code 1006 cannot be sent"
            )
    );
}

/// A move the server refuses ends only the new connection: the script goes
/// on on the old one (what the client sends there counts), and its next
/// `reconnect` is the connection after the old one ends.
#[test]
fn a_refused_move_goes_on_on_the_connection_being_left() {
    run(|| async {
        let (connector, control) = ScriptedServer::new()
            .named("refused-move")
            .go_away(Duration::from_secs(30))
            .turn_complete()
            .resumption_update("h1", true)
            .reconnect_resuming("h1")
            .rejects_setup(1013, "The service is currently unavailable.")
            .expects("clientContent")
            .says("Still here")
            .close(1000, "")
            .reconnect_resuming("h1")
            .says("Again")
            .into_connector();
        let (mut first, _) = open(&connector, None, false).await;
        control.release();
        until(&mut first, "sessionResumptionUpdate").await.unwrap();
        let (_refused, answer) = open(&connector, Some("h1"), false).await;
        assert_eq!(answer, None, "the move's setup is refused");
        types(&mut first, "hi").await;
        assert_eq!(said(&mut first).await, "Still here");
        assert_eq!(next(&mut first).await, None, "the old connection ends");
        let (mut last, answer) = open(&connector, Some("h1"), false).await;
        assert!(answer.unwrap().get("setupComplete").is_some());
        assert_eq!(said(&mut last).await, "Again");
        control.drained().await;
        assert_eq!(errors(&control), Vec::<String>::new());
        assert_eq!(control.connections(), 2);
    });
}

/// A call issued before a refused move is the old connection's again:
/// not abandoned while the client may still answer it there, and
/// answered there without a complaint.
#[test]
fn a_refused_move_leaves_the_old_connections_calls_to_answer() {
    run(|| async {
        let (connector, control) = ScriptedServer::new()
            .named("refused-move-call")
            .resumption_update("h1", true)
            .calls_without_waiting("pay", json!({ "amount": 5 }))
            .go_away(Duration::from_secs(30))
            .reconnect_resuming("h1")
            .rejects_setup(1013, "The service is currently unavailable.")
            .expects("clientContent")
            .says("Paid")
            .close(1000, "")
            .reconnect_resuming("h1")
            .says("Again")
            .into_connector();
        let (mut first, _) = open(&connector, None, false).await;
        control.release();
        let call = until(&mut first, "toolCall").await.unwrap();
        let id = call["toolCall"]["functionCalls"][0]["id"].clone();
        until(&mut first, "goAway").await.unwrap();
        let (_refused, answer) = open(&connector, Some("h1"), false).await;
        assert_eq!(answer, None, "the move's setup is refused");
        // Virtual time: the player takes the refusal and goes back to the
        // old connection.
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(control.abandoned_calls(), Vec::<String>::new());
        let answer = json!({ "toolResponse": { "functionResponses": [
            { "id": id, "name": "pay", "response": { "ok": true } }
        ] } });
        first.send(Frame::Text(answer.to_string())).await.unwrap();
        types(&mut first, "done?").await;
        assert_eq!(said(&mut first).await, "Paid");
        assert_eq!(next(&mut first).await, None, "the old connection ends");
        let (mut last, _) = open(&connector, Some("h1"), false).await;
        assert_eq!(said(&mut last).await, "Again");
        control.drained().await;
        assert_eq!(errors(&control), Vec::<String>::new());
        assert!(control.unanswered_calls().is_empty());
        assert_eq!(control.abandoned_calls(), Vec::<String>::new());
    });
}
