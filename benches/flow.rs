//! The flow gate's cost per tool call and the evaluation's cost per turn,
//! each next to a baseline measured in the same run.
//!
//! Two 50-step flows:
//!
//! * `linear`: step `s{i}` allows `tool{i}`, comes after `s{i-1}`, and is
//!   done on `called_ok(tool{i})`; the monitor is positioned with the first
//!   25 steps done, so one step is active;
//! * `wide`: 50 independent steps, all active, each done on
//!   `is_true(k{i})` (state holds 50 keys, none true) and gating its tool on
//!   `equals(k{i}, 1)`: the worst case, every guard read on every event.
//!
//! Benchmarks:
//!
//! * `gate/*`: [`FlowMonitor::gate`] for an admitted call and a refused one
//!   (the refusal formats its reason). Each timed batch gates 100 calls with
//!   distinct ids on a fresh copy of the positioned monitor (the copy is
//!   set-up, not timed); criterion reports the time per batch, so per call
//!   is a hundredth of it. Baseline: `gate/baseline_allow_set_lookup`,
//!   100 look-ups of the tool name in a precomputed `BTreeSet` of allowed
//!   tools, the least a gate can do.
//! * `turn/*`: [`FlowMonitor::evaluate_turn`]. Baseline:
//!   `turn/baseline_empty_flow`, evaluating a flow with no steps.
//!
//! Figures and ratios are recorded in benches/README.md.

use std::collections::{BTreeMap, BTreeSet};
use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use livesim::flow::{Enforcement, FlowMonitor, FlowSpec};

#[path = "programs/flows.rs"]
mod flows;
use flows::{STEPS, linear_halfway, wide, wide_state};

/// Calls gated per timed batch: a fresh monitor copy takes this many calls
/// with distinct ids, so the call table grows as in a session and the cost
/// of a cold copy is spread out.
const CALLS: usize = 100;

fn gate(c: &mut Criterion) {
    let mut group = c.benchmark_group("gate");
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(3));
    group.throughput(Throughput::Elements(CALLS as u64));
    let ids: Vec<String> = (0..CALLS).map(|i| format!("call-{i}")).collect();

    let allowed: BTreeSet<String> = (0..STEPS).map(|i| format!("tool{i}")).collect();
    group.bench_function("baseline_allow_set_lookup", |b| {
        b.iter(|| {
            for id in &ids {
                black_box((black_box(&allowed).contains(black_box("tool25")), id));
            }
        })
    });

    let empty = BTreeMap::new();
    let halfway = linear_halfway(&empty);
    let state = wide_state();
    let wide_monitor = FlowMonitor::new(wide(), Enforcement::Enforce);
    for (name, start, tool, view, admitted) in [
        ("linear50_admitted", &halfway, "tool25", &empty, true),
        ("linear50_refused", &halfway, "tool40", &empty, false),
        (
            "wide50_gated_admitted",
            &wide_monitor,
            "tool49",
            &state,
            true,
        ),
    ] {
        group.bench_function(name, |b| {
            b.iter_batched(
                || start.clone(),
                |mut monitor| {
                    for id in &ids {
                        let decision = monitor.gate(tool, id, view).unwrap();
                        assert_eq!(decision.admitted(), admitted);
                    }
                    monitor
                },
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
}

fn turn(c: &mut Criterion) {
    let mut group = c.benchmark_group("turn");
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(3));

    let empty = BTreeMap::new();
    let mut nothing = FlowMonitor::new(FlowSpec::empty(), Enforcement::Enforce);
    group.bench_function("baseline_empty_flow", |b| {
        b.iter(|| black_box(nothing.evaluate_turn(&empty)))
    });

    let mut halfway = linear_halfway(&empty);
    group.bench_function("linear50", |b| {
        b.iter(|| black_box(halfway.evaluate_turn(&empty)))
    });

    let state = wide_state();
    let mut wide_monitor = FlowMonitor::new(wide(), Enforcement::Enforce);
    group.bench_function("wide50", |b| {
        b.iter(|| black_box(wide_monitor.evaluate_turn(&state)))
    });
    group.finish();
}

criterion_group!(benches, gate, turn);
criterion_main!(benches);
