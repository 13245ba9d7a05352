//! The seeded runtime's cost against plain tokio, on the same program.
//!
//! The program is session-shaped: a producer task feeds two lanes (fast and
//! control) over channels with small timer gaps, control hands work to a
//! short-lived task and waits for its answer, and a telemetry lane ticks on
//! a timer. It is written twice, once on livesim's executor API (lane set,
//! spawn facade, yield points, trace records) and once on tokio alone
//! (`tokio::join!`, `tokio::spawn`), and each version runs in a fresh
//! runtime per iteration:
//!
//! * `plain_tokio`: the tokio version on a paused `current_thread` runtime;
//! * `same_program_plain_tokio`: the livesim version on that same plain
//!   runtime, where lane sets, yield points and records fall back to
//!   plain tokio behaviour;
//! * `livesim_calm`: the livesim version under simulation, no perturbation;
//! * `livesim_seeded`: under simulation with each seed's drawn swarm.
//!
//! `virtual_sleep_30s` measures a 30-second virtual sleep's wall time.
//! Figures and ratios are recorded in benches/README.md.

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use livesim::Seed;
use livesim::executor::{Simulation, Swarm};

#[path = "programs/three_lanes.rs"]
mod three_lanes;
use three_lanes::{livesim_program, paused_runtime, tokio_program};

fn session_program(c: &mut Criterion) {
    let mut group = c.benchmark_group("three_lane_program");
    group.bench_function("plain_tokio", |b| {
        b.iter(|| paused_runtime().block_on(tokio_program()))
    });
    group.bench_function("same_program_plain_tokio", |b| {
        b.iter(|| paused_runtime().block_on(livesim_program()))
    });
    group.bench_function("livesim_calm", |b| {
        let sim = Simulation::new(Seed::new(1)).swarm(Swarm::calm());
        b.iter(|| sim.run(livesim_program).unwrap())
    });
    group.bench_function("livesim_seeded", |b| {
        let mut seed = 0;
        b.iter(|| {
            seed += 1;
            Simulation::new(Seed::new(seed))
                .run(livesim_program)
                .unwrap()
        })
    });
    group.finish();
}

fn virtual_sleep(c: &mut Criterion) {
    c.bench_function("virtual_sleep_30s", |b| {
        let sim = Simulation::new(Seed::new(1));
        b.iter(|| {
            let out = sim
                .run(|| tokio::time::sleep(Duration::from_secs(30)))
                .unwrap();
            assert_eq!(out.elapsed, Duration::from_secs(30));
        })
    });
}

criterion_group!(benches, session_program, virtual_sleep);
criterion_main!(benches);
