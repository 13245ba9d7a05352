//! Shrinking, one failure of each kind the soak produces from outside the
//! library, each made by a deliberately broken agent or invariant:
//!
//! | kind | the broken part |
//! |---|---|
//! | `refused-never-runs` | the planted bug (`--features planted-bug`) |
//! | `before(get_forecast, get_weather)` | weather's file declares an order it does not keep |
//! | `at-most-once(get_weather)` | weather's file declares get_weather runs once |
//! | a Rust user's invariant | `ascii-only`, broken by the non-ASCII text faults add |
//! | a timing invariant | `verify-is-quick`: one tool run longer than its shortest latency (needs one seeded decision) |
//! | `journal-replays-clean` | payment's journals replayed against a spec that allows paying at once |
//! | `liveness` | a tool that never returns |
//! | `determinism` | a tool whose latency reads a counter shared by every run |
//! | `panic` | a builder that panics in half the seeds |
//!
//! For each: the first failing seed under 500, then its shrink. The table
//! of sizes (actions before and after, decisions kept, candidate runs) is
//! printed once; criterion times each shrink (`shrink/<kind>`) and one run
//! of the original case (`original_run/<kind>`), the baseline its time is
//! compared with.
//!
//! `cargo bench --bench shrink --features planted-bug` (without the
//! feature the planted bug's row is left out).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use livesim::Seed;
use livesim::flow::Flow;
use livesim::prelude::*;
use livesim::soak::{Agent, AgentInvariant, Case, DEFAULT_BUDGET, FaultKind, Soak};
use serde_json::json;

fn agent(name: &str) -> Agent {
    Agent::load(format!("sim/{name}")).expect("a sim/ agent")
}

/// Each broken agent, and the invariant it breaks.
fn broken() -> Vec<(&'static str, Soak, String)> {
    let mut out = Vec::new();
    #[cfg(feature = "planted-bug")]
    out.push((
        "planted bug",
        Soak::agent(&agent("payment").with_planted_bug(true)),
        "refused-never-runs".to_string(),
    ));
    let mut before = agent("weather");
    before.invariants = vec![AgentInvariant::Before(
        "get_forecast".into(),
        "get_weather".into(),
    )];
    out.push((
        "agent: before",
        Soak::agent(&before),
        "before(get_forecast, get_weather)".into(),
    ));
    let mut once = agent("weather");
    once.invariants = vec![AgentInvariant::AtMostOnce("get_weather".into())];
    out.push((
        "agent: at-most-once",
        Soak::agent(&once),
        "at-most-once(get_weather)".into(),
    ));
    out.push((
        "user invariant",
        Soak::new("ascii-only", || {
            Live::builder().instruction("Plain English.")
        })
        .lines(["Hello"], ["Hello, how can I help?"])
        .faults(&[(FaultKind::NonAscii, 0.5)])
        .invariant("ascii-only", |run| {
            match run
                .delivered()
                .find(|e| e.kind() == "text_complete" && !e.to_string().is_ascii())
            {
                Some(e) => Err(format!("non-ASCII text: {e}")),
                None => Ok(()),
            }
        }),
        "ascii-only".into(),
    ));
    out.push((
        "timing",
        Soak::agent(&agent("payment")).invariant("verify-is-quick", |run| {
            match run.executions_of("verify_identity").find(|e| {
                e.finished
                    .is_some_and(|f| f - e.started > Duration::from_millis(30))
            }) {
                Some(_) => Err("verify_identity took longer than 30 ms".into()),
                None => Ok(()),
            }
        }),
        "verify-is-quick".into(),
    ));
    let lax = Flow::new()
        .step("any")
        .allow(["verify_identity", "get_balance", "take_payment"])
        .build()
        .expect("a one-step flow");
    out.push((
        "journal replay",
        Soak::agent(&agent("payment")).spec(lax),
        "journal-replays-clean".into(),
    ));
    let tool = |name: &'static str, body: fn(u64) -> Duration| {
        let calls = Arc::new(AtomicU64::new(0));
        move || {
            let calls = calls.clone();
            Live::builder().tools(
                T::simple(name, "Looks something up", move |_| {
                    let n = calls.fetch_add(1, Ordering::Relaxed);
                    async move {
                        tokio::time::sleep(body(n)).await;
                        Ok(json!({ "ok": true }))
                    }
                })
                .parameters(json!({"type": "OBJECT", "properties": {}})),
            )
        }
    };
    out.push((
        "liveness",
        Soak::new("hanging", tool("lookup", |_| Duration::from_secs(1 << 30)))
            .liveness_bound(Duration::from_secs(60)),
        "liveness".into(),
    ));
    out.push((
        "determinism",
        Soak::new(
            "leaky",
            tool("lookup", |n| Duration::from_millis(10 + n % 7)),
        ),
        "determinism".into(),
    ));
    out.push((
        "panic",
        Soak::new("fragile", || {
            let unlucky = livesim::executor::draw("fragile", |s| s.chance(0.5)).unwrap_or(false);
            assert!(!unlucky, "the builder broke");
            Live::builder()
        }),
        "panic".into(),
    ));
    out
}

/// The first seed under 500 that breaks `invariant`.
fn first_failing(soak: &Soak, invariant: &str) -> Case {
    (0..500)
        .find_map(|s| {
            let run = soak.run_seed(Seed::new(s));
            run.failures
                .iter()
                .find(|f| f.invariant == invariant)
                .map(Case::from)
        })
        .unwrap_or_else(|| panic!("no seed under 500 breaks {invariant}"))
}

fn shrinking(c: &mut Criterion) {
    let cases: Vec<(&str, Soak, String, Case)> = broken()
        .into_iter()
        .map(|(kind, soak, invariant)| {
            // The determinism check doubles every run: only where it is
            // the failure.
            let every = u64::from(invariant == "determinism");
            let soak = soak.check_determinism_every(every);
            let case = first_failing(&soak, &invariant);
            (kind, soak, invariant, case)
        })
        .collect();
    println!(
        "| kind | seed | actions before | after | decisions kept | candidate runs | finished |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (kind, soak, invariant, case) in &cases {
        let shrunk = soak
            .shrink(case, invariant, DEFAULT_BUDGET, &|_| {})
            .expect("it fails");
        let decisions = match &shrunk.case.decisions {
            None => "as drawn".to_string(),
            Some(d) if d.is_empty() => "0 (all calm)".to_string(),
            Some(d) => {
                let names: Vec<String> = d.iter().map(ToString::to_string).collect();
                format!("{} ({})", d.len(), names.join(" "))
            }
        };
        println!(
            "| {kind} | {} | {} | {} | {decisions} | {} | {} |",
            case.seed,
            shrunk.actions_before,
            shrunk.case.actions(),
            shrunk.runs,
            shrunk.finished
        );
    }
    let mut group = c.benchmark_group("shrink");
    group.sample_size(10);
    for (kind, soak, invariant, case) in &cases {
        group.bench_function(*kind, |b| {
            b.iter(|| soak.shrink(case, invariant, DEFAULT_BUDGET, &|_| {}))
        });
    }
    group.finish();
    let mut group = c.benchmark_group("original_run");
    group.sample_size(10);
    for (kind, soak, _, case) in &cases {
        group.bench_function(*kind, |b| b.iter(|| soak.run_case(case)));
    }
    group.finish();
}

criterion_group!(benches, shrinking);
criterion_main!(benches);
