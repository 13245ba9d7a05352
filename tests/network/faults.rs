//! Faults drawn from the seed, applied between steps and traced: the
//! server host restarts and forgets its handles; a client that resumes
//! is told `1008 session not found` and starts fresh.

use std::time::Duration;

use livesim::Seed;
use livesim::executor::Simulation;
use livesim::network::{FaultKind, Faults, Network};
use livesim::testing::ScriptedServer;
use livesim::transport::Transport;
use livesim::transport::connector::{BoxedTransport, Connector};
use livesim::wire::Frame;
use serde_json::{Value, json};

async fn open(connector: &impl Connector, handle: Option<&str>) -> Option<(BoxedTransport, Value)> {
    let mut conn = connector.connect().await.ok()?;
    let resumption = match handle {
        Some(h) => json!({ "handle": h }),
        None => json!({}),
    };
    let setup = json!({ "setup": { "model": "m", "sessionResumption": resumption } });
    conn.send(Frame::Text(setup.to_string())).await.ok()?;
    match conn.recv().await {
        Some(Ok(Frame::Close(close))) => {
            Some((conn, json!({ "closed": close.map(|c| (c.code, c.reason)) })))
        }
        Some(Ok(frame)) => Some((conn, serde_json::from_slice(frame.payload()?).ok()?)),
        _ => None,
    }
}

#[test]
fn a_restart_loses_the_handles_so_resuming_finds_no_session() {
    let script = ScriptedServer::new()
        .named("restart")
        .resumption_update("h1", true)
        .pause(Duration::from_secs(5));
    let faults = Faults::drawn()
        .only(&[FaultKind::Restart])
        .count(1..=1)
        .apart(Duration::from_millis(50)..=Duration::from_millis(50))
        .lasting(Duration::from_millis(100)..=Duration::from_millis(100));
    let network = Network::new(script).faults(faults);
    let outcome = network
        .run(&Simulation::new(Seed::new(2)), |connector| async move {
            let (mut first, answer) = open(&connector, None).await.unwrap();
            assert!(answer.get("setupComplete").is_some());
            // The update, then the restart kills the connection.
            let mut seen = Vec::new();
            while let Some(Ok(frame)) = first.recv().await {
                if frame.is_close() {
                    break;
                }
                seen.push(String::from_utf8_lossy(frame.payload().unwrap()).into_owned());
            }
            // Back up after the restart: the handle is unknown.
            let refused = loop {
                tokio::time::sleep(Duration::from_millis(20)).await;
                if let Some((_, answer)) = open(&connector, Some("h1")).await {
                    break answer;
                }
            };
            let (_, fresh) = open(&connector, None).await.unwrap();
            (seen, refused, fresh)
        })
        .unwrap();
    let (seen, refused, fresh) = outcome.value;
    assert!(seen[0].contains("\"newHandle\":\"h1\""), "{seen:?}");
    assert_eq!(
        refused,
        json!({ "closed": [1008, "BidiGenerateContent session not found"] })
    );
    assert!(fresh.get("setupComplete").is_some(), "{fresh}");
    let trace = outcome.trace.tail(usize::MAX);
    assert!(
        trace.contains("restart at +50ms for 100ms begins"),
        "{trace}"
    );
    assert!(trace.contains("restart ends"), "{trace}");
}

#[test]
fn plans_are_drawn_from_the_seed_and_never_overlap() {
    let faults = Faults::drawn().count(3..=3);
    let mut kinds = std::collections::BTreeSet::new();
    for seed in 0..50 {
        let plan = faults.plan(Seed::new(seed));
        assert_eq!(plan, faults.plan(Seed::new(seed)));
        assert!(
            plan.faults()
                .windows(2)
                .all(|w| w[0].at + w[0].lasts <= w[1].at)
        );
        kinds.extend(plan.faults().iter().map(|f| f.kind));
        let latency = plan.latency();
        assert!(latency.start() <= latency.end());
    }
    assert_eq!(kinds.len(), 4, "every kind is drawn by some seed");
}
