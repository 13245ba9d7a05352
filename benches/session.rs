//! The session runtime's costs.
//!
//! * `frames/{1000,10000,100000}`: a session fed N inbound frames (text
//!   chunks, a turn boundary every 20 chunks, a tool call every 200) by a
//!   transport that hands them over as fast as they are asked for, under
//!   the simulated runtime with no perturbation. Criterion reports time
//!   per run; benches/README.md divides by N: the per-frame cost should be
//!   flat (no buffer or journal that grows quadratically).
//! * `weather/seeded` and `weather/real_clock`: the seed 000 weather test
//!   (a scripted turn with one tool call, then the 200 ms settle window)
//!   under the seeded runtime, and on a plain tokio runtime in real time.

use std::collections::VecDeque;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use futures::FutureExt;
use futures::future::BoxFuture;
use livesim::Seed;
use livesim::executor::{Simulation, Swarm};
use livesim::prelude::*;
use livesim::transport::{Transport, TransportError};
use livesim::wire::{CloseFrame, Frame};
use serde_json::json;

#[path = "programs/weather.rs"]
mod weather;
use weather::weather;

/// Hands over prepared server frames on demand and swallows what the
/// session sends.
struct Feed {
    frames: VecDeque<Frame>,
}

impl Feed {
    fn new(n: usize) -> Self {
        let mut frames = VecDeque::with_capacity(n + 1);
        frames.push_back(Frame::Text(json!({ "setupComplete": {} }).to_string()));
        for i in 0..n {
            let message = if i % 200 == 199 {
                json!({ "toolCall": { "functionCalls": [{ "id": format!("c{i}"), "name": "lookup", "args": { "i": i } }] } })
            } else if i % 20 == 19 {
                json!({ "serverContent": { "turnComplete": true } })
            } else {
                json!({ "serverContent": { "modelTurn": { "parts": [{ "text": format!("chunk {i} ") }] } } })
            };
            frames.push_back(Frame::Binary(message.to_string().into_bytes()));
        }
        Feed { frames }
    }
}

impl Transport for Feed {
    fn send(&mut self, _frame: Frame) -> BoxFuture<'_, Result<(), TransportError>> {
        async { Ok(()) }.boxed()
    }

    fn recv(&mut self) -> BoxFuture<'_, Option<Result<Frame, TransportError>>> {
        let next = self.frames.pop_front();
        async move {
            match next {
                Some(frame) => Some(Ok(frame)),
                None => Some(Ok(Frame::Close(Some(CloseFrame::new(1000, "done"))))),
            }
        }
        .boxed()
    }

    fn close(&mut self, _close: Option<CloseFrame>) -> BoxFuture<'_, Result<(), TransportError>> {
        async { Ok(()) }.boxed()
    }
}

async fn feed_session(n: usize) {
    let handle = Live::builder()
        .tools(T::simple("lookup", "", |args| async move { Ok(args) }))
        .connect_with_transport(Feed::new(n))
        .await
        .unwrap();
    handle.closed().await;
}

fn frames(c: &mut Criterion) {
    let mut group = c.benchmark_group("frames");
    group.sample_size(10);
    for n in [1_000usize, 10_000, 100_000] {
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, &n| {
            let sim = Simulation::new(Seed::new(1)).swarm(Swarm::calm());
            b.iter(|| sim.run(|| feed_session(n)).unwrap())
        });
    }
    group.finish();
}

fn weather_test(c: &mut Criterion) {
    let mut group = c.benchmark_group("weather");
    group.sample_size(10);
    group.bench_function("seeded", |b| {
        let mut seed = 0;
        b.iter(|| {
            seed += 1;
            Simulation::new(Seed::new(seed)).run(weather).unwrap()
        })
    });
    group.measurement_time(Duration::from_secs(5));
    group.bench_function("real_clock", |b| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        b.iter(|| runtime.block_on(weather()))
    });
    group.finish();
}

criterion_group!(benches, frames, weather_test);
criterion_main!(benches);
