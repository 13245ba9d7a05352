//! Reconnection with resumption, against scripts that span connections:
//! goAway moves make-before-break with the latest handle after the turn
//! (and, before any handle, does not move);
//! 1011 or a dropped connection mid-tool-call resumes, the tool having
//! run once and its stale answer never sent; session not found starts a
//! fresh session; fatal closes end; attempts are capped; a disconnect
//! during backoff stops everything; transparent resumption replays what
//! the server had not consumed; the handle is in no event, trace, log,
//! journal or error.

use std::io;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use livesim::Seed;
use livesim::executor::{Runner, Simulation};
use livesim::prelude::*;
use livesim::session::{LiveHandle, Resumption};
use livesim::testing::{ReplayControl, ScriptedServer};
use serde_json::{Value, json};

/// Connects `builder` (resumption on) to `script` over its connector and
/// releases the script.
async fn connect(script: ScriptedServer, builder: LiveBuilder) -> (LiveHandle, ReplayControl) {
    let (connector, control) = script.into_connector();
    let handle = builder
        .resumption(Resumption::on())
        .connect_with_connector(connector)
        .await
        .unwrap();
    control.release();
    (handle, control)
}

/// Connects a text session of `tools` governed by `flow`, its state
/// journaled, to `script`, and plays the script to its end (a turn's end
/// last) with no error. The journal is returned with the session.
async fn governed(
    script: ScriptedServer,
    tools: ToolComposite,
    flow: FlowSpec,
) -> (
    LiveHandle,
    ReplayControl,
    Arc<livesim::state::MemoryJournalSink>,
) {
    let journal = Arc::new(livesim::state::MemoryJournalSink::new());
    let state = livesim::state::State::new();
    state.add_journal_sink(journal.clone());
    let builder = Live::builder()
        .text_only()
        .tools(tools)
        .govern(flow)
        .state(state);
    let (handle, control) = connect(script, builder).await;
    let mut events = handle.events();
    until(&mut events, turn_complete).await;
    control.drained().await;
    assert_eq!(control.errors(), vec![]);
    (handle, control, journal)
}

/// Waits for the first event that `pick` accepts; panics if the session
/// ends first.
async fn until(
    events: &mut livesim::session::EventStream,
    pick: impl Fn(&LiveEvent) -> bool,
) -> LiveEvent {
    while let Some(event) = events.next().await {
        if pick(&event) {
            return event;
        }
    }
    panic!("the session ended first");
}

/// The warnings among the events up to the first that `stop` accepts.
/// (Warnings are notices: the stream has them, the stored log not.)
async fn warnings_until(
    events: &mut livesim::session::EventStream,
    stop: impl Fn(&LiveEvent) -> bool,
) -> Vec<String> {
    let mut warnings = Vec::new();
    while let Some(event) = events.next().await {
        if stop(&event) {
            break;
        }
        if let LiveEvent::Warning { message } = event {
            warnings.push(message);
        }
    }
    warnings
}

fn turn_complete(e: &LiveEvent) -> bool {
    matches!(e, LiveEvent::TurnComplete { .. })
}

/// Every setup the session sent, in order.
fn setups(control: &ReplayControl) -> Vec<Value> {
    control
        .sent()
        .into_iter()
        .filter_map(|m| m.get("setup").cloned())
        .collect()
}

fn kinds(log: &[LiveEvent]) -> Vec<String> {
    log.iter()
        .map(|e| match e {
            LiveEvent::TextComplete { text, .. } => format!("text {text}"),
            LiveEvent::Resumed { connection, fresh } => {
                format!("resumed #{connection} fresh={fresh}")
            }
            LiveEvent::Reconnecting { attempt, .. } => format!("reconnecting {attempt}"),
            other => other.kind().to_string(),
        })
        .collect()
}

fn go_away_script(handle: &str) -> ScriptedServer {
    ScriptedServer::new()
        .named("go-away mid-turn")
        .resumption_update("first-handle", true)
        .expects("clientContent")
        .text("Hel")
        .go_away(Duration::from_secs(2))
        .pause(Duration::from_millis(300))
        .text("lo")
        .turn_complete()
        .resumption_update(handle, true)
        .reconnect_resuming(handle)
        .expects("clientContent")
        .says("Second")
}

/// A `goAway` before the server gave any handle: there is nothing to
/// resume, so the session does not move. It says so in a warning, stays
/// on its connection for as long as the server keeps it (the turn after
/// the `goAway` completes there), and ends with the connection, without a
/// reconnect: a session with no handle does not reconnect.
#[test]
fn a_go_away_before_any_handle_keeps_the_connection_until_it_ends() {
    let out = Simulation::new(Seed::new(3))
        .run(|| async {
            let script = ScriptedServer::new()
                .named("go-away without a handle")
                .go_away(Duration::from_secs(2))
                .expects("clientContent")
                .says("Still here.")
                .pause(Duration::from_millis(1500))
                .close(1000, "");
            let (handle, control) = connect(script, Live::builder().text_only()).await;
            let mut events = handle.events();
            handle.send_text("hello?").unwrap();
            let warnings =
                warnings_until(&mut events, |e| matches!(e, LiveEvent::Disconnected { .. })).await;
            control.drained().await;
            assert_eq!(control.errors(), vec![]);
            (
                kinds(&handle.session_log()),
                warnings,
                setups(&control).len(),
            )
        })
        .expect("the simulation finishes");
    let (log, warnings, setups) = out.value;
    assert_eq!(setups, 1, "no second connection");
    assert_eq!(
        log,
        [
            "connected",
            "go_away",
            "text Still here.",
            "turn_complete",
            "disconnected"
        ]
    );
    assert!(
        warnings.iter().any(|w| w
            == "goAway, and no resumption handle yet: the session stays until the server ends the connection"),
        "{warnings:?}"
    );
}

/// After a fresh start (the server no longer knew the handle) the
/// session holds no handle. A `goAway` that comes before any turn then
/// waits for the new session's first handle, within half its time left,
/// and moves with it. (It moved at once, found no handle, and stayed for
/// good, though the handle came a few milliseconds later: found by the
/// hostile tests' changed frames.)
#[test]
fn a_go_away_after_a_fresh_start_waits_for_the_first_handle_and_moves_with_it() {
    let out = Simulation::new(Seed::new(9))
        .run(|| async {
            let script = ScriptedServer::new()
                .named("go-away after a fresh start")
                .resumption_update("stale", true)
                .abort()
                .reconnect_resuming("stale")
                .rejects_setup(1008, "BidiGenerateContent session not found")
                .reconnect_fresh()
                .go_away(Duration::from_secs(10))
                .pause(Duration::from_millis(5))
                .resumption_update("new-session", true)
                .reconnect_resuming("new-session")
                .says("Moved.");
            let (handle, control) = connect(script, Live::builder().text_only()).await;
            let mut events = handle.events();
            let warnings = warnings_until(&mut events, turn_complete).await;
            control.drained().await;
            let errors = control.errors();
            let setups = setups(&control);
            handle.disconnect().await;
            (kinds(&handle.session_log()), warnings, errors, setups)
        })
        .expect("the simulation finishes");
    let (log, warnings, errors, setups) = out.value;
    assert_eq!(errors, vec![]);
    assert_eq!(setups.len(), 4, "{setups:?}");
    assert_eq!(setups[3]["sessionResumption"]["handle"], "new-session");
    assert!(
        !warnings
            .iter()
            .any(|w| w.contains("no resumption handle yet")),
        "{warnings:?}"
    );
    let from = log.iter().position(|k| k == "go_away").expect("the notice");
    assert_eq!(
        log[from..],
        [
            "go_away",
            "resumption_update",
            "reconnecting 1",
            "resumed #3 fresh=false",
            "text Moved.",
            "turn_complete",
            "disconnected"
        ]
    );
}

/// A `goAway` whose `timeLeft` is past protobuf's largest duration (here
/// u64::MAX seconds) is no deadline any server means: the session leaves
/// the notice out with a warning naming it and goes on, on its
/// connection. (It panicked: its deadline overflowed the clock.)
#[test]
fn a_go_away_past_protobufs_range_is_left_out_not_a_panic() {
    let out = Simulation::new(Seed::new(5))
        .run(|| async {
            let script = ScriptedServer::new()
                .named("go-away past the range")
                .resumption_update("first-handle", true)
                .frame(json!({ "goAway": { "timeLeft": "18446744073709551615s" } }))
                .expects("clientContent")
                .says("Still here.")
                .close(1000, "");
            let (handle, control) = connect(script, Live::builder().text_only()).await;
            let mut events = handle.events();
            handle.send_text("hello?").unwrap();
            let warnings =
                warnings_until(&mut events, |e| matches!(e, LiveEvent::TurnComplete { .. })).await;
            control.drained().await;
            handle.disconnect().await;
            (kinds(&handle.session_log()), warnings, control.errors())
        })
        .expect("the simulation finishes");
    let (log, warnings, errors) = out.value;
    assert!(errors.is_empty(), "{errors:?}");
    assert!(!log.iter().any(|k| k == "go_away"), "{log:?}");
    assert!(log.iter().any(|k| k == "text Still here."), "{log:?}");
    assert!(
        warnings.iter().any(|w| w.contains("largest duration")),
        "{warnings:?}"
    );
}

/// A `goAway` to a session connected over one transport (no connector to
/// open another, resumption on): it does not try to move (the `go_away`
/// event is the user's notice) and stays on its connection until the
/// server ends it.
#[test]
fn a_go_away_over_one_transport_keeps_the_connection_until_it_ends() {
    let out = Simulation::new(Seed::new(3))
        .run(|| async {
            let script = ScriptedServer::new()
                .named("go-away over one transport")
                .resumption_update("a-handle", true)
                .go_away(Duration::from_secs(2))
                .expects("clientContent")
                .says("Still here.")
                .pause(Duration::from_millis(1500))
                .close(1000, "");
            let (transport, control) = script.into_transport();
            let handle = Live::builder()
                .text_only()
                .resumption(Resumption::on())
                .connect_with_transport(transport)
                .await
                .unwrap();
            control.release();
            let mut events = handle.events();
            handle.send_text("hello?").unwrap();
            until(&mut events, |e| matches!(e, LiveEvent::Disconnected { .. })).await;
            control.drained().await;
            assert_eq!(control.errors(), vec![]);
            kinds(&handle.session_log())
        })
        .expect("the simulation finishes");
    assert_eq!(
        out.value,
        [
            "connected",
            "resumption_update",
            "go_away",
            "text Still here.",
            "turn_complete",
            "disconnected"
        ]
    );
}

/// Property: whatever the seed, a goAway mid-turn lets the turn finish
/// on the old connection, then the session moves (make-before-break, with
/// the latest handle, history not resent) and the next turn completes.
#[test]
fn go_away_mid_turn_moves_after_the_turn_with_the_latest_handle() {
    Runner::new(livesim::test_id!())
        .seeds(20)
        .run(|_seed| async {
            let (handle, control) =
                connect(go_away_script("latest-handle"), Live::builder().text_only()).await;
            let mut events = handle.events();
            handle.send_text("first").unwrap();
            until(&mut events, turn_complete).await;
            until(&mut events, |e| matches!(e, LiveEvent::Resumed { .. })).await;
            handle.send_text("second").unwrap();
            until(&mut events, turn_complete).await;
            control.drained().await;
            assert_eq!(control.errors(), vec![]);
            let setups = setups(&control);
            assert_eq!(setups.len(), 2);
            assert_eq!(setups[0]["sessionResumption"], json!({}));
            assert_eq!(
                setups[1]["sessionResumption"],
                json!({ "handle": "latest-handle" })
            );
            assert_eq!(
                kinds(&handle.session_log()),
                [
                    "connected",
                    "resumption_update",
                    "go_away",
                    "text Hello",
                    "turn_complete",
                    "resumption_update",
                    "reconnecting 1",
                    "resumed #2 fresh=false",
                    "text Second",
                    "turn_complete",
                ]
            );
            assert_eq!(handle.state().get("session:connection"), Some(json!(2)));
            handle.disconnect().await;
        });
}

/// A payment tool that counts its runs and takes 200 ms.
fn pay(runs: Arc<AtomicU32>) -> ToolComposite {
    T::simple("pay", "Pays", move |_args| {
        let runs = runs.clone();
        async move {
            runs.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(200)).await;
            Ok(json!({ "paid": true }))
        }
    })
}

#[test]
fn a_tool_call_cut_off_by_1011_or_a_drop_runs_once_and_is_not_answered_after() {
    for cut in ["1011", "drop"] {
        Simulation::new(Seed::new(5))
            .run(move || async move {
                let script = ScriptedServer::new()
                    .named("cut mid-call")
                    .resumption_update("h-pay", true)
                    .calls_without_waiting("pay", json!({ "amount": 5 }))
                    .pause(Duration::from_millis(20));
                let script = match cut {
                    "1011" => script.close(1011, "Internal error encountered."),
                    _ => script.abort(),
                };
                let script = script
                    .reconnect_resuming("h-pay")
                    .pause(Duration::from_millis(500))
                    .says("Let me check on that payment.");
                let runs = Arc::new(AtomicU32::new(0));
                let builder = Live::builder().text_only().tools(pay(runs.clone()));
                let (handle, control) = connect(script, builder).await;
                let mut events = handle.events();
                let warning = until(&mut events, |e| {
                    matches!(e, LiveEvent::Warning { message } if message.contains("after its connection ended"))
                })
                .await;
                until(&mut events, turn_complete).await;
                control.drained().await;
                assert_eq!(runs.load(Ordering::SeqCst), 1, "{cut}: the tool ran once");
                assert_eq!(control.errors(), vec![], "{cut}: no stale answer was sent");
                assert!(
                    !control.sent().iter().any(|m| m.get("toolResponse").is_some()),
                    "{cut}: no answer on either connection (the first had closed)"
                );
                let log = handle.session_log();
                assert!(!log.iter().any(|e| e.kind() == "tool_response"), "{cut}: {log:?}");
                let LiveEvent::Reconnecting { cause, .. } = log
                    .iter()
                    .find(|e| e.kind() == "reconnecting")
                    .unwrap()
                else {
                    unreachable!()
                };
                assert!(cause.contains("1006") || cause.contains("1011"), "{cause}");
                assert!(warning.to_string().contains("pay (call-1)"), "{warning}");
                assert_eq!(setups(&control)[1]["sessionResumption"]["handle"], "h-pay");
                handle.disconnect().await;
            })
            .unwrap();
    }
}

#[test]
fn session_not_found_drops_the_handle_and_starts_fresh() {
    Simulation::new(Seed::new(6))
        .run(|| async {
            let script = ScriptedServer::new()
                .named("server restart")
                .resumption_update("stale", true)
                .abort()
                .reconnect_resuming("stale")
                .rejects_setup(1008, "BidiGenerateContent session not found")
                .reconnect_fresh()
                .says("Hello again");
            let (handle, control) = connect(script, Live::builder().text_only()).await;
            let mut events = handle.events();
            until(&mut events, turn_complete).await;
            control.drained().await;
            assert_eq!(control.errors(), vec![]);
            let setups = setups(&control);
            assert_eq!(setups.len(), 3);
            assert_eq!(setups[1]["sessionResumption"]["handle"], "stale");
            assert_eq!(setups[2]["sessionResumption"], json!({}));
            let log = kinds(&handle.session_log());
            let from = log.iter().position(|k| k == "reconnecting 1").unwrap();
            assert_eq!(
                log[from..],
                [
                    "reconnecting 1",
                    "resumption_failed",
                    "reconnecting 1",
                    "resumed #2 fresh=true",
                    "text Hello again",
                    "turn_complete",
                ]
            );
            assert_eq!(handle.state().get("session:resumed"), Some(json!("fresh")));
            handle.disconnect().await;
        })
        .unwrap();
}

#[test]
fn fatal_closes_end_and_no_handle_means_no_reconnect() {
    for (close, handle_first) in [(1007, true), (1008, true), (1011, false)] {
        Simulation::new(Seed::new(7))
            .run(move || async move {
                let mut script = ScriptedServer::new().named("ends");
                if handle_first {
                    script = script.resumption_update("h", true);
                }
                let script = script
                    .close(close, "Request contains an invalid argument.")
                    .reconnect_resuming("h")
                    .says("never");
                let script = if handle_first {
                    script
                } else {
                    // Issued after the close: the session never had it.
                    ScriptedServer::new()
                        .named("no handle")
                        .close(close, "Internal error encountered.")
                };
                let (handle, control) = connect(script, Live::builder().text_only()).await;
                handle.closed().await;
                assert_eq!(control.connections(), 1, "{close}");
                let log = handle.session_log();
                assert!(
                    !log.iter().any(|e| e.kind() == "reconnecting"),
                    "{close}: {log:?}"
                );
                assert!(matches!(
                    log.last(),
                    Some(LiveEvent::Disconnected { code: Some(c), .. }) if *c == close
                ));
            })
            .unwrap();
    }
}

/// A reconnect whose setup the server refuses for good (a bad key, 1007)
/// ends the session there, with the server's code: no further attempts.
#[test]
fn a_fatal_refusal_while_reconnecting_ends_the_session() {
    Simulation::new(Seed::new(9))
        .run(|| async {
            let script = ScriptedServer::new()
                .named("refused for good")
                .resumption_update("h", true)
                .close(1011, "Internal error encountered.")
                .reconnect_resuming("h")
                .rejects_setup(1007, "API key not valid. Please pass a valid API key.");
            let (handle, control) = connect(script, Live::builder().text_only()).await;
            handle.closed().await;
            let log = handle.session_log();
            let attempts = log.iter().filter(|e| e.kind() == "reconnecting").count();
            assert_eq!(attempts, 1, "{log:?}");
            assert!(
                matches!(
                    log.last(),
                    Some(LiveEvent::Disconnected { code: Some(1007), reason, .. })
                        if reason.starts_with("reconnecting: setup rejected")
                ),
                "{log:?}"
            );
            assert_eq!(control.connections(), 1);
        })
        .unwrap();
}

#[test]
fn attempts_are_capped_and_backoff_waits_in_virtual_time() {
    Simulation::new(Seed::new(8))
        .run(|| async {
            // The script ends at its close: no server answers afterwards.
            let script = ScriptedServer::new()
                .named("gone")
                .resumption_update("h", true)
                .close(1011, "The service is currently unavailable.");
            let (connector, _control) = script.into_connector();
            let handle = Live::builder()
                .text_only()
                .resumption(
                    Resumption::on()
                        .attempts(3)
                        .backoff(Duration::from_millis(100), Duration::from_millis(400)),
                )
                .connect_with_connector(connector)
                .await
                .unwrap();
            _control.release();
            let started = livesim::executor::now();
            handle.closed().await;
            let log = handle.session_log();
            let attempts: Vec<u32> = log
                .iter()
                .filter_map(|e| match e {
                    LiveEvent::Reconnecting { attempt, .. } => Some(*attempt),
                    _ => None,
                })
                .collect();
            assert_eq!(attempts, [1, 2, 3]);
            let LiveEvent::Disconnected { reason, .. } = log.last().unwrap() else {
                panic!("{log:?}")
            };
            assert!(
                reason.starts_with("gave up after 3 attempts to reconnect"),
                "{reason}"
            );
            // Backoff waits: at most 100 + 200 + 400 ms, at least half.
            let waited = livesim::executor::now() - started;
            assert!(
                waited >= Duration::from_millis(350) && waited <= Duration::from_millis(800),
                "{waited:?}"
            );
        })
        .unwrap();
}

#[test]
fn a_disconnect_during_backoff_stops_every_attempt() {
    Simulation::new(Seed::new(9))
        .run(|| async {
            let script = ScriptedServer::new()
                .named("backoff")
                .resumption_update("h", true)
                .close(1011, "Internal error encountered.")
                .reconnect_resuming("h")
                .says("too late");
            let (connector, control) = script.into_connector();
            let handle = Live::builder()
                .text_only()
                .resumption(
                    Resumption::on().backoff(Duration::from_secs(10), Duration::from_secs(10)),
                )
                .connect_with_connector(connector)
                .await
                .unwrap();
            let mut events = handle.events();
            control.release();
            until(&mut events, |e| e.kind() == "reconnecting").await;
            handle.disconnect().await;
            assert!(livesim::executor::now() < Duration::from_secs(1));
            assert_eq!(control.connections(), 1);
            let LiveEvent::Disconnected { reason, .. } = handle.session_log().pop().unwrap() else {
                panic!()
            };
            assert_eq!(reason, "disconnected by the client while reconnecting");
        })
        .unwrap();
}

/// Property: with transparent resumption, every message the server had
/// not consumed is sent again after the drop, in order, once; the script
/// checks each replay and fails on a lost or repeated one.
#[test]
fn transparent_resumption_replays_unconsumed_messages_once_in_order() {
    Runner::new(livesim::test_id!())
        .seeds(20)
        .run(|_seed| async {
            let script = ScriptedServer::new()
                .named("transparent")
                .resumption_update_transparent("h")
                .expects("realtimeInput")
                .expects("realtimeInput")
                .abort()
                .reconnect_resuming("h")
                .expects("realtimeInput")
                .says("Got all three");
            let (connector, control) = script.into_connector();
            let handle = Live::builder()
                .text_only()
                .resumption(Resumption::on().transparent(true))
                .connect_with_connector(connector)
                .await
                .unwrap();
            let mut events = handle.events();
            control.release();
            handle.send_realtime_text("one").unwrap();
            handle.send_realtime_text("two").unwrap();
            until(&mut events, |e| matches!(e, LiveEvent::Resumed { .. })).await;
            handle.send_realtime_text("three").unwrap();
            until(&mut events, turn_complete).await;
            control.drained().await;
            assert_eq!(control.errors(), vec![]);
            let inputs: Vec<String> = control
                .sent()
                .iter()
                .filter_map(|m| m.pointer("/realtimeInput/text").and_then(Value::as_str))
                .map(String::from)
                .collect();
            // What the server had consumed when it issued the handle (none,
            // "one", or both, as the seed times it) is not sent again; the
            // rest is, in order; the player checked each replay.
            assert_eq!(inputs[..2], ["one", "two"]);
            assert_eq!(inputs.last().map(String::as_str), Some("three"));
            let replayed = &inputs[2..inputs.len() - 1];
            let whole = ["one".to_string(), "two".to_string()];
            assert!(whole.ends_with(replayed), "{inputs:?}");
            assert_eq!(
                setups(&control)[1]["sessionResumption"],
                json!({ "handle": "h", "transparent": true })
            );
            handle.disconnect().await;
        });
}

/// Property: a transparent handle whose consumed index lags behind what
/// the server received is resumed by replaying from that index, so the
/// messages the server had received but not processed are sent again,
/// in order, once.
#[test]
fn a_lagging_handle_is_resumed_from_its_index() {
    Runner::new(livesim::test_id!())
        .seeds(10)
        .run(|_seed| async {
            let script = ScriptedServer::new()
                .named("lagging")
                .expects("realtimeInput")
                .expects("realtimeInput")
                .resumption_update_behind("h", 1)
                .abort()
                .reconnect_resuming("h")
                .expects("realtimeInput")
                .says("Got all three");
            let (connector, control) = script.into_connector();
            let handle = Live::builder()
                .text_only()
                .resumption(Resumption::on().transparent(true))
                .connect_with_connector(connector)
                .await
                .unwrap();
            let mut events = handle.events();
            control.release();
            handle.send_realtime_text("one").unwrap();
            handle.send_realtime_text("two").unwrap();
            until(&mut events, |e| matches!(e, LiveEvent::Resumed { .. })).await;
            handle.send_realtime_text("three").unwrap();
            until(&mut events, turn_complete).await;
            control.drained().await;
            assert_eq!(control.errors(), vec![]);
            // The handle keeps the setup it opened with, as the server got it.
            assert_eq!(Some(&handle.setup()["setup"]), setups(&control).first());
            let sent = control.sent();
            let inputs: Vec<&str> = sent
                .iter()
                .filter_map(|m| m.pointer("/realtimeInput/text").and_then(Value::as_str))
                .collect();
            assert_eq!(inputs, ["one", "two", "two", "three"]);
            handle.disconnect().await;
        });
}

#[derive(Clone, Default)]
struct Sink(Arc<Mutex<Vec<u8>>>);

impl io::Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn the_handle_is_in_no_event_trace_log_line_or_journal() {
    const SECRET: &str = "HANDLE-Zq81-do-not-print";
    let logs = Sink::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer({
            let logs = logs.clone();
            move || logs.clone()
        })
        .finish();
    // Global, so no callsite's interest is decided without it (a scoped
    // one races with the other tests' threads); they log into it too.
    tracing::subscriber::set_global_default(subscriber).expect("the only global subscriber");
    let outcome = Simulation::new(Seed::new(11))
        .run(|| async {
            let journal = Arc::new(livesim::state::MemoryJournalSink::new());
            let state = livesim::state::State::new().with_journal_sink(journal.clone());
            let (handle, control) = connect(
                go_away_script(SECRET),
                Live::builder().text_only().state(state),
            )
            .await;
            let mut events = handle.events();
            let seen = Arc::new(Mutex::new(Vec::new()));
            handle.send_text("first").unwrap();
            until(&mut events, |e| matches!(e, LiveEvent::Resumed { .. })).await;
            handle.send_text("second").unwrap();
            until(&mut events, turn_complete).await;
            control.drained().await;
            // The session did resume with it, so it was held.
            assert_eq!(setups(&control)[1]["sessionResumption"]["handle"], SECRET);
            seen.lock()
                .unwrap()
                .push(format!("{:?}", handle.session_log()));
            seen.lock().unwrap().push(format!("{handle:?}"));
            for entry in journal.entries() {
                seen.lock().unwrap().push(format!("{entry:?}"));
            }
            handle.disconnect().await;
            seen.lock().unwrap().clone()
        })
        .unwrap();
    let logs = String::from_utf8_lossy(&logs.0.lock().unwrap()).into_owned();
    assert!(!logs.is_empty(), "trace-level logs were captured");
    for (what, text) in [
        ("the trace", outcome.trace.tail(usize::MAX)),
        ("the logs", logs),
        ("the log, handle and journal", outcome.value.join("\n")),
    ] {
        assert!(!text.contains(SECRET), "the handle is in {what}");
    }
}

/// A handle the server gives on a connection the session moved to after a
/// goAway is the one the next reconnect resumes, even when the connection
/// closes in the same instant it came.
#[test]
fn a_handle_given_on_a_moved_to_connection_is_the_one_resumed_next() {
    for gap in [Duration::ZERO, Duration::from_millis(1)] {
        let outcome = Simulation::new(Seed::new(0))
            .run(move || async move {
                let script = ScriptedServer::new()
                    .resumption_update("h1", true)
                    .says("one")
                    .resumption_update("h2", true)
                    .go_away(Duration::from_secs(2))
                    .reconnect_resuming("h2")
                    .says("mid")
                    .resumption_update("h3", true)
                    .pause(gap)
                    .close(1011, "y")
                    .reconnect_resuming("h3")
                    .says("two");
                script
                    .play(Live::builder().text_only().resumption(Resumption::on()))
                    .await
                    .map(|run| run.model_text())
                    .map_err(|e| e.to_string())
            })
            .unwrap_or_else(|f| panic!("{}", f.summary()));
        assert_eq!(
            outcome.value,
            Ok("onemidtwo".to_string()),
            "gap {gap:?}\n{}",
            outcome.trace.tail(80)
        );
    }
}

/// Call ids belong to their connection, for the flow gate too: a server
/// that resumes from a handle older than a call may issue that call's id
/// again, and the new connection's call is gated, run and answered as a
/// call of its own (the gate once refused it as "already decided", and it
/// went unanswered).
#[test]
fn a_governed_call_id_issued_again_on_a_resumed_connection_is_a_new_call() {
    use livesim::testing::{Action, Call};
    Simulation::new(Seed::new(3))
        .run(|| async {
            let lookup = |n: u64| {
                Action::Call(Call {
                    id: "call-1".into(),
                    name: "lookup".into(),
                    args: json!({ "n": n }),
                    wait: true,
                })
            };
            let script = ScriptedServer::new()
                .named("id again")
                .resumption_update("h1", true)
                .action(lookup(1))
                .close(1011, "Internal error encountered.")
                .reconnect_resuming("h1")
                .action(lookup(2))
                .says("Found it.");
            let looked = Arc::new(Mutex::new(Vec::new()));
            let tool = {
                let looked = looked.clone();
                T::simple("lookup", "Looks up", move |args| {
                    looked.lock().unwrap().push(args["n"].clone());
                    async move { Ok(json!({ "found": args["n"] })) }
                })
            };
            let flow = Flow::new().step("look").allow(["lookup"]).build().unwrap();
            let (handle, control, journal) = governed(script, tool, flow).await;
            assert_eq!(*looked.lock().unwrap(), vec![json!(1), json!(2)]);
            let answers: Vec<Value> = control
                .sent()
                .into_iter()
                .filter_map(|m| m.pointer("/toolResponse/functionResponses/0").cloned())
                .collect();
            assert_eq!(answers.len(), 2, "{answers:?}");
            assert_eq!(answers[1]["response"], json!({ "found": 2 }));
            let warnings = super::warnings(&handle.session_log());
            assert!(
                !warnings.iter().any(|w| w.contains("flow gate")),
                "{warnings:?}"
            );
            let results = journal
                .entries()
                .iter()
                .filter(|e| e.key == "flow:tool_result")
                .count();
            assert_eq!(results, 2, "both runs are in the flow journal");
            handle.disconnect().await;
        })
        .unwrap();
}

/// A goAway's deadline is its connection's: once the session has moved to
/// a new connection, `session:go_away_remaining_ms` is gone from state
/// (a guard reading it would take the new connection for one about to
/// end) until the new connection's own goAway.
#[test]
fn a_go_away_countdown_ends_with_its_connection() {
    Simulation::new(Seed::new(3))
        .run(|| async {
            let script = ScriptedServer::new()
                .resumption_update("h1", true)
                .says("one")
                .pause(Duration::from_millis(600))
                .go_away(Duration::from_secs(20))
                .pause(Duration::from_millis(1200))
                .reconnect_resuming("h1")
                .says("two")
                .pause(Duration::from_millis(1200));
            let journal = Arc::new(livesim::state::MemoryJournalSink::new());
            let state = livesim::state::State::new().with_journal_sink(journal.clone());
            let run = script
                .play(
                    Live::builder()
                        .text_only()
                        .state(state)
                        .resumption(Resumption::on()),
                )
                .await
                .unwrap();
            let journal = journal.entries();
            let countdown: Vec<_> = journal
                .iter()
                .filter(|m| m.key == "session:go_away_remaining_ms")
                .collect();
            // Counted down on the first connection, then removed once.
            assert!(
                countdown.first().is_some_and(|m| !m.removed),
                "{countdown:?}"
            );
            assert_eq!(
                countdown.iter().filter(|m| m.removed).count(),
                1,
                "{countdown:?}"
            );
            assert!(countdown.last().is_some_and(|m| m.removed), "{countdown:?}");
            assert_eq!(run.state().get("session:go_away_remaining_ms"), None);
            run.disconnect().await;
        })
        .unwrap_or_else(|f| panic!("{}", f.summary()));
}

/// A call counts for the tool that ran it, whichever connections have
/// come and gone: a server that numbers its calls from `call-1` again
/// issues `call-1` on two connections, the second connection's call
/// finishes while the session reconnects from it, and the first's (still
/// running, its connection long gone) finishes later. The second call
/// ends either while the session reconnects from its connection or once it
/// has moved on to a third. Either way the flow's journal gives each tool
/// its own outcome (it once filed the second call's failure under the
/// first call's tool, and the first's success under the second's).
#[test]
fn results_of_a_reused_id_count_for_the_tool_that_ran() {
    use livesim::testing::{Action, Call};
    // The reconnect waits at least 125 ms (the first backoff, 250 ms, less
    // at most half for jitter) and at most 250 ms.
    for list_takes in [Duration::from_millis(30), Duration::from_secs(1)] {
        Simulation::new(Seed::new(7))
            .run(move || async move {
                let call = |name: &str| {
                    Action::Call(Call {
                        id: "call-1".into(),
                        name: name.into(),
                        args: json!({}),
                        wait: false,
                    })
                };
                let script = ScriptedServer::new()
                    .named("id reused")
                    .resumption_update("h1", true)
                    .action(call("transfer"))
                    .pause(Duration::from_millis(10))
                    .close(1011, "Internal error encountered.")
                    .reconnect_resuming("h1")
                    .action(call("list"))
                    .pause(Duration::from_millis(10))
                    .close(1011, "Internal error encountered.")
                    .reconnect_resuming("h1")
                    .pause(Duration::from_secs(6))
                    .says("Done.");
                let tools = T::simple("transfer", "Moves money", |_| async {
                    tokio::time::sleep(Duration::from_secs(5)).await;
                    Ok(json!({ "moved": 200 }))
                }) | T::simple("list", "Lists accounts", move |_| async move {
                    tokio::time::sleep(list_takes).await;
                    Err("list failed".into())
                });
                let flow = Flow::new()
                    .step("bank")
                    .allow(["transfer", "list"])
                    .build()
                    .unwrap();
                let (handle, _, journal) = governed(script, tools, flow).await;
                let results: Vec<Value> = journal
                    .entries()
                    .iter()
                    .filter(|e| e.key == "flow:tool_result")
                    .map(|e| e.value.clone())
                    .collect();
                assert_eq!(
                    results,
                    [
                        json!({ "tool": "list", "id": "call-1", "ok": false }),
                        json!({ "tool": "transfer", "id": "call-1", "ok": true }),
                    ],
                    "list took {list_takes:?}"
                );
                handle.disconnect().await;
            })
            .unwrap();
    }
}

/// `Duration::MAX` as a setup timeout or as the reconnect's backoff, as a
/// user meaning "never time out" or "wait as long as it takes" writes it:
/// the session connects, and resumes after a dropped connection (the
/// backoff's jitter takes up to half off; the longest wait is past any
/// test's patience, so the policy here waits a millisecond at first),
/// without a panic. (Deadlines computed from them overflowed the clock.)
#[test]
fn durations_as_long_as_they_go_mean_never_not_a_panic() {
    let out = Simulation::new(Seed::new(2))
        .run(|| async {
            let script = ScriptedServer::new()
                .named("never")
                .resumption_update("h-1", true)
                .expects("clientContent")
                .says("First.")
                .close(1011, "Internal error encountered.")
                .reconnect_resuming("h-1")
                .says("Second.");
            let builder = Live::builder()
                .text_only()
                .setup_timeout(Duration::MAX)
                .resumption(
                    Resumption::on()
                        .attempts(3)
                        .backoff(Duration::from_millis(1), Duration::MAX),
                );
            let (connector, control) = script.into_connector();
            let handle = builder.connect_with_connector(connector).await.unwrap();
            control.release();
            let mut events = handle.events();
            handle.send_text("hello?").unwrap();
            let mut texts = Vec::new();
            while let Some(event) = events.next().await {
                if let LiveEvent::TextComplete { text, .. } = event {
                    texts.push(text);
                    if texts.len() == 2 {
                        break;
                    }
                }
            }
            control.drained().await;
            handle.disconnect().await;
            (texts, control.errors())
        })
        .expect("the simulation finishes");
    let (texts, errors) = out.value;
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(texts, ["First.", "Second."]);
}
