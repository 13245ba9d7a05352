//! Reconnection with resumption over turmoil: the session's real
//! WebSocket connections go through held and partitioned links, and the
//! server restarts; the session resumes (or starts fresh) and the
//! conversation completes.

use std::time::Duration;

use livesim::executor::{Outcome, Runner};
use livesim::network::{FaultKind, Faults, Network, NetworkConnector};
use livesim::prelude::*;
use livesim::session::Resumption;
use livesim::testing::ScriptedServer;

/// The first turn is cut by a goAway mid-turn; the session moves after
/// it, with the handle that follows it, and the second turn completes.
pub(crate) fn go_away_mid_turn() -> ScriptedServer {
    ScriptedServer::new()
        .named("go-away mid-turn")
        .resumption_update_transparent("before-first")
        .expects("clientContent")
        .text("Hel")
        .go_away(Duration::from_secs(2))
        .pause(Duration::from_millis(100))
        .text("lo")
        .turn_complete()
        .resumption_update_transparent("after-first")
        .reconnect_resuming("after-first")
        .expects("clientContent")
        .says("Second")
}

/// The client: one user turn, then a second once the first completed;
/// done when the second answer arrives. What it saw, in a line.
pub(crate) async fn two_turns(connector: NetworkConnector) -> Result<Seen, String> {
    let handle = Live::builder()
        .text_only()
        .resumption(
            Resumption::on()
                .transparent(true)
                .attempts(10)
                .backoff(Duration::from_millis(50), Duration::from_millis(800)),
        )
        .connect_with_connector(connector)
        .await
        .map_err(|e| e.to_string())?;
    let mut events = handle.events();
    handle.send_text("first").map_err(|e| e.to_string())?;
    let mut seen = Seen::default();
    while let Some(event) = events.next().await {
        match &event {
            LiveEvent::TurnComplete { .. } if !seen.second_sent => {
                seen.second_sent = true;
                handle.send_text("second").map_err(|e| e.to_string())?;
            }
            LiveEvent::TextComplete { text, .. } if text == "Second" => {
                seen.resumed = handle
                    .session_log()
                    .iter()
                    .filter(|e| matches!(e, LiveEvent::Resumed { fresh: false, .. }))
                    .count();
                handle.disconnect().await;
                return Ok(seen);
            }
            LiveEvent::Disconnected { .. } => return Err(format!("the session ended: {event}")),
            _ => {}
        }
    }
    Err("the session ended without the second answer".to_string())
}

#[derive(Debug, Default)]
pub(crate) struct Seen {
    second_sent: bool,
    resumed: usize,
}

/// Property: whatever latency, holds and partitions the seed draws, a
/// goAway mid-turn ends with the session resumed on a new connection and
/// both turns complete. 30 seeds in `cargo test`; nightly runs set
/// `LIVESIM_SEEDS=1000` (or more).
#[test]
fn go_away_mid_turn_resumes_and_completes_over_latency_and_partitions() {
    let network = Network::new(go_away_mid_turn()).faults(
        Faults::drawn()
            .only(&[FaultKind::Hold, FaultKind::Partition, FaultKind::LinkDown])
            .count(0..=2)
            .lasting(Duration::from_millis(20)..=Duration::from_millis(600)),
    );
    Runner::new(livesim::test_id!()).seeds(30).run_with(|sim| {
        let outcome = network.run(sim, two_turns)?;
        let value = outcome.value.and_then(|seen| {
            (seen.resumed >= 1)
                .then_some(())
                .ok_or_else(|| format!("never resumed: {seen:?}"))
        });
        Ok(Outcome {
            value,
            trace: outcome.trace,
            elapsed: outcome.elapsed,
            warnings: outcome.warnings,
        })
    });
}

/// A turn with a payment and a goAway; the conversation ends with "Done".
fn pay_and_move() -> ScriptedServer {
    ScriptedServer::new()
        .named("pay and move")
        .resumption_update_transparent("h0")
        .expects("clientContent")
        .calls("pay", serde_json::json!({ "amount": 5 }))
        .resumption_update_transparent("h1")
        .go_away(Duration::from_secs(1))
        .text("Paid.")
        .turn_complete()
        .resumption_update_transparent("h2")
        .reconnect_resuming("h2")
        .expects("clientContent")
        .says("Done")
}

/// What a run of `pay_and_move` showed.
#[derive(Debug, Default)]
struct Run {
    /// Tool runs and tool calls received, per call id.
    runs: std::collections::BTreeMap<String, u32>,
    calls: std::collections::BTreeMap<String, u32>,
    log: Vec<LiveEvent>,
    finished: bool,
    /// The first connection's setup completed (faults begin once the
    /// server has answered it, so its answer can still be lost: the
    /// first connection is never retried).
    connected: bool,
}

async fn pay_client(
    connector: NetworkConnector,
    runs: std::sync::Arc<std::sync::Mutex<std::collections::BTreeMap<String, u32>>>,
) -> Run {
    let counter = runs.clone();
    let policy = Resumption::on()
        .transparent(true)
        .attempts(12)
        .backoff(Duration::from_millis(50), Duration::from_millis(800));
    let Ok(handle) = Live::builder()
        .text_only()
        .resumption(policy.clone())
        .tools(T::simple("pay", "Pays", move |_args| {
            let counter = counter.clone();
            async move {
                // Counted by the args' amount; ids come from the events.
                *counter.lock().unwrap().entry("pay".into()).or_default() += 1;
                tokio::time::sleep(Duration::from_millis(30)).await;
                Ok(serde_json::json!({ "paid": true }))
            }
        }))
        .connect_with_connector(connector)
        .await
    else {
        return Run::default();
    };
    let mut events = handle.events();
    let _ = handle.send_text("first");
    let mut run = Run {
        connected: true,
        ..Run::default()
    };
    let mut second_sent = false;
    while let Some(event) = events.next().await {
        match &event {
            LiveEvent::ToolCall { calls } => {
                for _ in calls {
                    *run.calls.entry("pay".into()).or_default() += 1;
                }
            }
            // A fresh session knows nothing: the conversation starts over.
            LiveEvent::Resumed { fresh: true, .. } => {
                second_sent = false;
                let _ = handle.send_text("first");
            }
            LiveEvent::TurnComplete { .. }
                if !second_sent && run.calls.values().sum::<u32>() > 0 =>
            {
                second_sent = true;
                let _ = handle.send_text("second");
            }
            LiveEvent::TextComplete { text, .. } if text == "Done" => {
                run.finished = true;
                break;
            }
            LiveEvent::Disconnected { .. } => break,
            _ => {}
        }
    }
    handle.disconnect().await;
    run.log = handle.session_log();
    run.runs = runs.lock().unwrap().clone();
    run
}

/// The invariants a run must keep, as one error naming the first broken.
fn check(run: &Run, attempts: u32) -> Result<(), String> {
    if !run.connected {
        return Ok(());
    }
    // No tool runs twice for one call, across reconnects.
    for (tool, runs) in &run.runs {
        let calls = run.calls.get(tool).copied().unwrap_or(0);
        if *runs > calls {
            return Err(format!("{tool} ran {runs} times for {calls} calls"));
        }
    }
    // Every reconnect ends resumed, fresh or failed within its bound.
    let mut open: Option<u32> = None;
    for event in &run.log {
        match event {
            LiveEvent::Reconnecting { attempt, .. } => {
                if *attempt > attempts {
                    return Err(format!("attempt {attempt} past the bound {attempts}"));
                }
                open = Some(*attempt);
            }
            LiveEvent::Resumed { .. } | LiveEvent::Disconnected { .. } => open = None,
            _ => {}
        }
    }
    if let Some(attempt) = open {
        return Err(format!("a reconnect (attempt {attempt}) never ended"));
    }
    // The stored log has no duplicate: one answer per call per connection,
    // one `resumed` per connection.
    let mut connection = 1;
    let mut seen = std::collections::BTreeSet::new();
    for event in &run.log {
        let key = match event {
            LiveEvent::Resumed { connection: n, .. } => {
                connection = *n;
                format!("resumed {n}")
            }
            LiveEvent::ToolResponse { id, .. } => format!("response {id} on {connection}"),
            _ => continue,
        };
        if !seen.insert(key.clone()) {
            return Err(format!("stored twice: {key}"));
        }
    }
    if !run.finished {
        return Err(format!(
            "the conversation did not finish: {:?}",
            run.log.last()
        ));
    }
    Ok(())
}

/// Property: over seeds and generated fault schedules (latency, holds,
/// partitions, one-way link failures, server restarts), no tool runs
/// twice for one call, the player finds no lost or repeated transparent
/// replay and no stale answer (it would fail the script, and the
/// conversation would not finish), every reconnect ends within its bound,
/// and the stored log holds nothing twice. 30 seeds in `cargo test`;
/// nightly, `LIVESIM_SEEDS=1000` or more.
#[test]
fn the_invariants_hold_under_generated_fault_schedules() {
    let network = Network::new(pay_and_move()).faults(Faults::drawn().count(0..=3));
    let (fresh, resumed) = (std::cell::Cell::new(0), std::cell::Cell::new(0));
    Runner::new(livesim::test_id!()).seeds(30).run_with(|sim| {
        let runs = std::sync::Arc::new(std::sync::Mutex::new(Default::default()));
        let outcome = network.run(sim, |connector| pay_client(connector, runs))?;
        for event in &outcome.value.log {
            match event {
                LiveEvent::Resumed { fresh: true, .. } => fresh.set(fresh.get() + 1),
                LiveEvent::Resumed { fresh: false, .. } => resumed.set(resumed.get() + 1),
                _ => {}
            }
        }
        Ok(Outcome {
            value: check(&outcome.value, 12),
            trace: outcome.trace,
            elapsed: outcome.elapsed,
            warnings: outcome.warnings,
        })
    });
    // The schedules did reach the cases: restarts (fresh sessions) and
    // resumptions both happened.
    assert!(
        fresh.get() > 0 && resumed.get() > 0,
        "fresh {} resumed {}",
        fresh.get(),
        resumed.get()
    );
}

/// A server restart: the session's handle is stale, the restarted server
/// answers 1008 session not found, and the session reports a fresh one.
#[test]
fn a_server_restart_ends_in_a_fresh_session_reported_as_such() {
    let script = ScriptedServer::new()
        .named("restart")
        .resumption_update("before-restart", true)
        .expects("clientContent")
        .says("Hi");
    let network = Network::new(script).faults(
        Faults::drawn()
            .only(&[FaultKind::Restart])
            .count(1..=1)
            .apart(Duration::from_millis(30)..=Duration::from_millis(30))
            .lasting(Duration::from_millis(200)..=Duration::from_millis(200)),
    );
    Runner::new(livesim::test_id!()).seeds(10).run_with(|sim| {
        let outcome = network.run(sim, |connector| async move {
            let handle = Live::builder()
                .text_only()
                .resumption(Resumption::on().attempts(10))
                .connect_with_connector(connector)
                .await
                .map_err(|e| e.to_string())?;
            let mut events = handle.events();
            while let Some(event) = events.next().await {
                match event {
                    LiveEvent::Resumed { fresh: true, .. } => {
                        handle.send_text("hello").map_err(|e| e.to_string())?;
                    }
                    LiveEvent::TurnComplete { .. } => break,
                    LiveEvent::Disconnected { .. } => return Err(format!("{event}")),
                    _ => {}
                }
            }
            let kinds: Vec<&str> = handle.session_log().iter().map(LiveEvent::kind).collect();
            handle.disconnect().await;
            let failed = kinds.iter().position(|k| *k == "resumption_failed");
            let fresh = handle
                .session_log()
                .iter()
                .position(|e| matches!(e, LiveEvent::Resumed { fresh: true, .. }));
            match (failed, fresh) {
                (Some(f), Some(r)) if f < r => Ok(()),
                _ => Err(format!(
                    "expected resumption_failed then a fresh session: {kinds:?}"
                )),
            }
        })?;
        Ok(Outcome {
            value: outcome.value,
            trace: outcome.trace,
            elapsed: outcome.elapsed,
            warnings: outcome.warnings,
        })
    });
}
