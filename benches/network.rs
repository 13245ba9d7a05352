//! The cost of the simulated network, and of reconnecting.
//!
//! * `session/memory` and `session/turmoil`: one scripted session (a
//!   user turn, a tool call, the answer) driven to its end, under the
//!   seeded runtime over the in-memory transport, and over turmoil's TCP
//!   with the real WebSocket transport (1 ms tick, no fault). Their ratio
//!   is the price of the network under the seed.
//! * `reconnects/memory` and `reconnects/turmoil`: a session whose script
//!   closes its connection with 1011 ten times, each time resumed with
//!   its handle (backoff 1 ms): reconnects per second are 10 / time.

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use livesim::Seed;
use livesim::executor::{Simulation, Swarm};
use livesim::network::{Faults, Network};
use livesim::prelude::*;
use livesim::session::Resumption;
use livesim::testing::ScriptedServer;
use livesim::transport::connector::Connector;
use serde_json::json;

fn turn() -> ScriptedServer {
    ScriptedServer::new()
        .expects("clientContent")
        .calls("lookup", json!({ "q": "x" }))
        .says("Found it.")
}

fn reconnecting(times: usize) -> ScriptedServer {
    let mut script = ScriptedServer::new();
    for i in 0..times {
        let handle = format!("h{i}");
        script = script
            .resumption_update(handle.clone(), true)
            .close(1011, "Internal error encountered.")
            .reconnect_resuming(handle);
    }
    script.says("Still here.")
}

fn builder() -> LiveBuilder {
    Live::builder()
        .text_only()
        .resumption(Resumption::on().backoff(Duration::from_millis(1), Duration::from_millis(1)))
        .tools(T::simple("lookup", "Looks up", |_| async {
            Ok(json!({ "hit": true }))
        }))
}

/// Runs `builder` against a connector until the final turn completes.
async fn converse(connector: impl Connector, send: bool) {
    let handle = builder().connect_with_connector(connector).await.unwrap();
    let mut events = handle.events();
    if send {
        handle.send_text("find x").unwrap();
    }
    while let Some(event) = events.next().await {
        if matches!(event, LiveEvent::TurnComplete { .. }) {
            break;
        }
    }
    handle.disconnect().await;
}

fn memory(script: ScriptedServer, send: bool) {
    Simulation::new(Seed::new(1))
        .swarm(Swarm::calm())
        .run(|| async move {
            let (connector, control) = script.into_connector();
            control.release();
            converse(connector, send).await;
        })
        .unwrap();
}

fn turmoil(script: ScriptedServer, send: bool) {
    let network = Network::new(script).faults(Faults::none());
    network
        .run(
            &Simulation::new(Seed::new(1)).swarm(Swarm::calm()),
            |connector| converse(connector, send),
        )
        .unwrap();
}

fn session(c: &mut Criterion) {
    let mut group = c.benchmark_group("session");
    group.sample_size(20);
    group.bench_function("memory", |b| b.iter(|| memory(turn(), true)));
    group.bench_function("turmoil", |b| b.iter(|| turmoil(turn(), true)));
    group.finish();
}

fn reconnects(c: &mut Criterion) {
    let mut group = c.benchmark_group("reconnects");
    group.sample_size(20);
    group.bench_function("memory", |b| b.iter(|| memory(reconnecting(10), false)));
    group.bench_function("turmoil", |b| b.iter(|| turmoil(reconnecting(10), false)));
    group.finish();
}

criterion_group!(benches, session, reconnects);
criterion_main!(benches);
