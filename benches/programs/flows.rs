//! The 50-step flows the flow benchmark and `benches/profile/flow.rs`
//! measure: `linear` (a chain, positioned halfway) and `wide` (all steps
//! active, every guard reading state).

#![allow(dead_code)] // each includer uses its own subset

use std::collections::BTreeMap;

use livesim::flow::{Enforcement, Flow, FlowMonitor, FlowSpec, Guard};
use serde_json::{Value, json};

pub const STEPS: usize = 50;

pub fn linear() -> FlowSpec {
    let mut flow = Flow::new();
    for i in 0..STEPS {
        flow = flow
            .step(format!("s{i}"))
            .allow([format!("tool{i}")])
            .done(Guard::called_ok(format!("tool{i}")));
        if i > 0 {
            flow = flow.after(format!("s{}", i - 1));
        }
    }
    flow.build().unwrap()
}

pub fn wide() -> FlowSpec {
    let mut flow = Flow::new();
    for i in 0..STEPS {
        flow = flow
            .step(format!("s{i}"))
            .allow([format!("free{i}")])
            .gate(format!("tool{i}"), Guard::equals(format!("k{i}"), 1))
            .done(Guard::is_true(format!("k{i}")));
    }
    flow.build().unwrap()
}

pub fn wide_state() -> BTreeMap<String, Value> {
    (0..STEPS).map(|i| (format!("k{i}"), json!(1))).collect()
}

/// A linear monitor with the first 25 steps done.
pub fn linear_halfway(state: &BTreeMap<String, Value>) -> FlowMonitor {
    let mut monitor = FlowMonitor::new(linear(), Enforcement::Enforce);
    for i in 0..STEPS / 2 {
        let id = format!("setup-{i}");
        assert!(
            monitor
                .gate(&format!("tool{i}"), &id, state)
                .unwrap()
                .admitted()
        );
        monitor.record_result(&id, true, state).unwrap();
    }
    assert_eq!(monitor.evaluate_turn(state).active, ["s25"]);
    monitor
}
