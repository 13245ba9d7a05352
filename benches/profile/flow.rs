//! Runs one flow benchmark variant many times, for counting instructions
//! under callgrind, which (unlike wall time) repeats exactly:
//!
//! ```text
//! cargo build --release --example profile_flow
//! valgrind --tool=callgrind target/release/examples/profile_flow linear_admit
//! ```
//!
//! Variants (see `benches/flow.rs`): `lookup` (the baseline allow-set
//! look-up), `linear_admit`, `linear_refuse`, `wide_admit` (batches of 100
//! gated calls on a fresh monitor copy each), `turn_empty`, `turn_linear`,
//! `turn_wide` (turn evaluations). The optional second argument is the
//! number of operations (default 10,000); running twice with different
//! counts and dividing the difference gives instructions per operation,
//! free of start-up and set-up.

use std::collections::{BTreeMap, BTreeSet};
use std::hint::black_box;

use livesim::flow::{Enforcement, FlowMonitor, FlowSpec};
use serde_json::Value;

#[path = "../programs/flows.rs"]
mod flows;
use flows::{STEPS, linear_halfway, wide, wide_state};

fn gate_batches(start: &FlowMonitor, tool: &str, state: &BTreeMap<String, Value>, ops: usize) {
    let ids: Vec<String> = (0..100).map(|i| format!("call-{i}")).collect();
    for _ in 0..ops / 100 {
        let mut monitor = start.clone();
        for id in &ids {
            black_box(monitor.gate(tool, id, state).expect("fresh ids"));
        }
    }
}

fn turns(mut monitor: FlowMonitor, state: &BTreeMap<String, Value>, ops: usize) {
    for _ in 0..ops {
        black_box(monitor.evaluate_turn(state));
    }
}

fn main() {
    let variant = std::env::args().nth(1).unwrap_or_default();
    let ops: usize = std::env::args()
        .nth(2)
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000);
    let empty = BTreeMap::new();
    match variant.as_str() {
        "lookup" => {
            let allowed: BTreeSet<String> = (0..STEPS).map(|i| format!("tool{i}")).collect();
            for _ in 0..ops {
                black_box(black_box(&allowed).contains(black_box("tool25")));
            }
        }
        "linear_admit" => gate_batches(&linear_halfway(&empty), "tool25", &empty, ops),
        "linear_refuse" => gate_batches(&linear_halfway(&empty), "tool40", &empty, ops),
        "wide_admit" => gate_batches(
            &FlowMonitor::new(wide(), Enforcement::Enforce),
            "tool49",
            &wide_state(),
            ops,
        ),
        "turn_empty" => turns(
            FlowMonitor::new(FlowSpec::empty(), Enforcement::Enforce),
            &empty,
            ops,
        ),
        "turn_linear" => turns(linear_halfway(&empty), &empty, ops),
        "turn_wide" => turns(
            FlowMonitor::new(wide(), Enforcement::Enforce),
            &wide_state(),
            ops,
        ),
        _ => {
            eprintln!(
                "usage: profile_flow lookup|linear_admit|linear_refuse|wide_admit|turn_empty|turn_linear|turn_wide"
            );
            std::process::exit(2);
        }
    }
}
