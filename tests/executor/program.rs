//! A small session-shaped program the executor tests share: three lanes
//! (fast, control, telemetry) fed by a producer task over channels, with
//! timers, every step recorded in the trace.

use std::time::Duration;

use livesim::executor::{LaneSet, draw, record, spawn, yield_point};
use tokio::sync::mpsc;

/// How many messages the producer sends to each of fast and control.
pub const MESSAGES: u32 = 12;

/// Runs the three-lane program to completion.
pub async fn three_lanes() {
    let (fast_tx, mut fast_rx) = mpsc::unbounded_channel::<u32>();
    let (control_tx, mut control_rx) = mpsc::unbounded_channel::<u32>();
    let (done_tx, mut done_rx) = tokio::sync::watch::channel(false);

    let producer = spawn("producer", async move {
        for i in 0..MESSAGES {
            // Both lanes get a message at the same instant, so they are
            // often ready together: that is where the seed chooses.
            fast_tx.send(i).unwrap();
            control_tx.send(i).unwrap();
            let gap = draw("producer", |s| s.range(0..=5)).unwrap_or(5);
            tokio::time::sleep(Duration::from_millis(gap)).await;
        }
    });

    let mut lanes = LaneSet::new("program");
    lanes.add("fast", async move {
        while let Some(i) = fast_rx.recv().await {
            livesim::record!("text {i}");
            yield_point("fast").await;
        }
    });
    lanes.add("control", async move {
        while let Some(i) = control_rx.recv().await {
            livesim::record!("turn {i}");
            yield_point("control").await;
            if i % 4 == 3 {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }
        done_tx.send(true).unwrap();
    });
    lanes.add("telemetry", async move {
        let mut ticks = tokio::time::interval(Duration::from_millis(5));
        loop {
            tokio::select! {
                biased;
                _ = done_rx.changed() => break,
                _ = ticks.tick() => record("tick"),
            }
        }
    });
    lanes.await;
    producer.await.unwrap();
}

/// The program's own events in trace order, one letter per lane (`f`, `c`,
/// `t`): the interleaving a run chose.
pub fn interleaving(trace: &livesim::executor::Trace) -> String {
    trace
        .entries()
        .filter_map(|e| match e.event.split(' ').next() {
            Some("text") => Some('f'),
            Some("turn") => Some('c'),
            Some("tick") => Some('t'),
            _ => None,
        })
        .collect()
}
