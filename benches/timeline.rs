//! Timelines of 1,000 and 100,000 trace entries (the synthetic session of
//! `tests/timeline/synthetic.rs`), measured in the same run:
//!
//! * `html/<entries>`: reading the trace into a timeline and writing its
//!   page, in Rust.
//! * `chromium/<entries>`: the page rendered by a real headless Chromium:
//!   each iteration navigates to the file and waits two animation frames
//!   after the load event; the time is the page's own `performance.now()`
//!   then (since navigation started), so the DevTools round trips are not
//!   in it. Needs Chromium (see `tests/timeline/browser.rs`).
//!
//! `cargo bench --bench timeline`; figures in benches/README.md.

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use livesim::timeline::Timeline;

#[path = "../tests/timeline/browser.rs"]
#[allow(dead_code)]
mod browser;
#[path = "../tests/timeline/synthetic.rs"]
mod synthetic;

const SIZES: [usize; 2] = [1_000, 100_000];

fn html(c: &mut Criterion) {
    let mut group = c.benchmark_group("html");
    group.sample_size(10);
    for entries in SIZES {
        let trace = synthetic::session_trace(entries);
        group.bench_with_input(BenchmarkId::from_parameter(entries), &trace, |b, trace| {
            b.iter(|| Timeline::from_trace(trace).html().len())
        });
    }
    group.finish();
}

fn chromium(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut browser = runtime
        .block_on(browser::Browser::launch())
        .unwrap_or_else(|e| panic!("{e}"));
    let dir = std::env::temp_dir().join(format!("livesim-bench-timeline-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut group = c.benchmark_group("chromium");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    for entries in SIZES {
        let page = dir.join(format!("synthetic-{entries}.html"));
        let html = Timeline::from_trace(&synthetic::session_trace(entries)).html();
        println!("chromium/{entries}: the page is {} bytes", html.len());
        std::fs::write(&page, html).unwrap();
        group.bench_function(BenchmarkId::from_parameter(entries), |b| {
            b.iter_custom(|iterations| {
                let mut total = Duration::ZERO;
                for _ in 0..iterations {
                    let ms = runtime
                        .block_on(browser.open(&page))
                        .unwrap_or_else(|e| panic!("{e}"));
                    total += Duration::from_secs_f64(ms / 1000.0);
                }
                total
            })
        });
    }
    group.finish();
    assert!(browser.errors().is_empty(), "{:?}", browser.errors());
    runtime.block_on(browser.close());
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, html, chromium);
criterion_main!(benches);
