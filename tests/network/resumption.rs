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
