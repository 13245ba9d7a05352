//! The three-lane session-shaped program the executor benchmarks run,
//! written twice: on livesim's executor API, and on tokio alone. Shared by
//! `benches/executor.rs` (criterion) and `benches/profile/executor.rs`
//! (instruction counts under callgrind).

use std::time::Duration;

use livesim::executor::{LaneSet, draw, record, spawn, yield_point};
use tokio::sync::{mpsc, oneshot, watch};

const MESSAGES: u32 = 100;

pub async fn livesim_program() {
    let (fast_tx, mut fast_rx) = mpsc::unbounded_channel::<u32>();
    let (control_tx, mut control_rx) = mpsc::unbounded_channel::<u32>();
    let (done_tx, mut done_rx) = watch::channel(false);
    let producer = spawn("producer", async move {
        for i in 0..MESSAGES {
            fast_tx.send(i).unwrap();
            control_tx.send(i).unwrap();
            let gap = draw("producer", |s| s.range(0..=2)).unwrap_or(i as u64 % 3);
            tokio::time::sleep(Duration::from_millis(gap)).await;
        }
    });
    let mut lanes = LaneSet::new("session");
    lanes.add("fast", async move {
        while let Some(i) = fast_rx.recv().await {
            livesim::record!("text {i}");
            yield_point("fast").await;
        }
    });
    lanes.add("control", async move {
        while let Some(i) = control_rx.recv().await {
            livesim::record!("turn {i}");
            if i % 10 == 0 {
                let (tx, rx) = oneshot::channel();
                spawn("tool", async move {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    tx.send(i).ok();
                });
                rx.await.unwrap();
            }
            yield_point("control").await;
        }
        done_tx.send(true).unwrap();
    });
    lanes.add("telemetry", async move {
        let mut ticks = tokio::time::interval(Duration::from_millis(50));
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

pub async fn tokio_program() {
    let (fast_tx, mut fast_rx) = mpsc::unbounded_channel::<u32>();
    let (control_tx, mut control_rx) = mpsc::unbounded_channel::<u32>();
    let (done_tx, mut done_rx) = watch::channel(false);
    let producer = tokio::spawn(async move {
        for i in 0..MESSAGES {
            fast_tx.send(i).unwrap();
            control_tx.send(i).unwrap();
            tokio::time::sleep(Duration::from_millis(i as u64 % 3)).await;
        }
    });
    let fast = async move {
        while let Some(i) = fast_rx.recv().await {
            std::hint::black_box(i);
        }
    };
    let control = async move {
        while let Some(i) = control_rx.recv().await {
            std::hint::black_box(i);
            if i % 10 == 0 {
                let (tx, rx) = oneshot::channel();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    tx.send(i).ok();
                });
                rx.await.unwrap();
            }
        }
        done_tx.send(true).unwrap();
    };
    let telemetry = async move {
        let mut ticks = tokio::time::interval(Duration::from_millis(50));
        loop {
            tokio::select! {
                biased;
                _ = done_rx.changed() => break,
                _ = ticks.tick() => { std::hint::black_box(()); }
            }
        }
    };
    tokio::join!(fast, control, telemetry);
    producer.await.unwrap();
}

pub fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap()
}
