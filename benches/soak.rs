//! The soak's costs, one core (criterion runs one thread).
//!
//! * `own_mix/<agent>`: one whole soak run of each `sim/` agent as
//!   `livesim sim soak` runs it (its own 1 to 20 turns, its own faults,
//!   its network share, a determinism rerun one seed in sixty-four), a new seed
//!   each iteration: the soak's real sessions per second per core.
//! * `own_mix_floor/<agent>`: those agents' own conversations (generated
//!   beforehand) played as a run plays them, with no check and no log
//!   capture: what a run costs above it is the generation and the checks.
//! * `twenty_turns/<agent>`: one whole soak run of a twenty-turn
//!   conversation for each `sim/` agent (faults drawn per seed, the
//!   session, the liveness phase, every invariant and goal), a new seed
//!   each iteration. Sessions per second per core is one over the time.
//! * `checks/<agent>`: only the invariant checks, over runs recorded
//!   beforehand: their share of a run is `checks / twenty_turns`.
//! * `idle_heavy/weather`: twenty turns with 30 to 120 s of silence
//!   between them; the simulated time per run is printed once, so the
//!   simulated seconds per wall second can be worked out.
//! * `baseline/one_turn`: the seed 000 weather test (one scripted turn,
//!   one tool call) under the seeded runtime, measured in the same run.
//! * `floor/<agent>`: the same twenty-turn conversations (generated
//!   beforehand) played as a run plays them (the session, the script, the
//!   typing user, the record), with no check: what a run costs above it is
//!   the generation and the checks.
//! * `scale/turns/<n>`: a `payment` soak run of n turns (1, 5, 20, 100).
//! * `scale/calls/<k>`: a scripted session of five turns, each calling
//!   one tool k times at once (1, 3, 10), under the seeded runtime.

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use livesim::Seed;
use livesim::executor::Simulation;
use livesim::prelude::*;
use livesim::soak::{Agent, Case, RunRecord, Soak, invariants};
use livesim::testing::{Action, Call, ScriptedServer};
use serde_json::json;

const AGENTS: [&str; 4] = ["weather", "payment", "booking", "support"];

/// Every agent in `sim/`, as the default soak runs them.
const ALL_AGENTS: [&str; 8] = [
    "weather",
    "payment",
    "booking",
    "support",
    "checkout",
    "resumable",
    "pharmacy",
    "refunds",
];

fn twenty_turns(name: &str) -> Agent {
    let mut agent = Agent::load(format!("sim/{name}")).expect("a sim/ agent");
    agent.repertoire.turns = 20..=20;
    agent
}

fn soak(agent: &Agent) -> Soak {
    Soak::agent(agent).check_determinism_every(0)
}

/// A group of whole soak runs, one per agent of `soaks`, a new seed each
/// iteration; a failing run stops the benchmark.
fn whole_runs(c: &mut Criterion, group: &str, soaks: Vec<(&str, Soak)>) {
    let mut group = c.benchmark_group(group);
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(8));
    for (name, soak) in soaks {
        let mut seed = 0;
        group.bench_function(name, |b| {
            b.iter(|| {
                seed += 1;
                let run = soak.run_seed(Seed::new(seed));
                assert!(run.failures.is_empty(), "{name} seed {seed} failed");
                run
            })
        });
    }
    group.finish();
}

/// A group of floors: `cases` of each agent's conversations, generated
/// beforehand, played as runs play them, with no check.
fn floors(c: &mut Criterion, group: &str, soaks: Vec<(&str, Soak)>, cases: u64) {
    let mut group = c.benchmark_group(group);
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(8));
    for (name, soak) in soaks {
        let cases: Vec<Case> = (1..=cases).map(|s| soak.case(Seed::new(s))).collect();
        let mut next = 0;
        group.bench_function(name, |b| {
            b.iter(|| {
                next = (next + 1) % cases.len();
                soak.play_unchecked(&cases[next])
                    .expect("the simulation ran")
            })
        });
    }
    group.finish();
}

fn twenty_turn_soaks() -> Vec<(&'static str, Soak)> {
    AGENTS
        .into_iter()
        .map(|name| (name, soak(&twenty_turns(name))))
        .collect()
}

/// Every `sim/` agent as `livesim sim soak` runs it.
fn own_soaks() -> Vec<(&'static str, Soak)> {
    ALL_AGENTS
        .into_iter()
        .map(|name| {
            let agent = Agent::load(format!("sim/{name}")).expect("a sim/ agent");
            (name, Soak::agent(&agent))
        })
        .collect()
}

fn runs(c: &mut Criterion) {
    whole_runs(c, "twenty_turns", twenty_turn_soaks());
}

fn own_mix(c: &mut Criterion) {
    whole_runs(c, "own_mix", own_soaks());
}

fn own_mix_floor(c: &mut Criterion) {
    floors(c, "own_mix_floor", own_soaks(), 100);
}

fn checks(c: &mut Criterion) {
    let mut group = c.benchmark_group("checks");
    group.sample_size(10);
    for name in AGENTS {
        let agent = twenty_turns(name);
        let soak = soak(&agent);
        let records: Vec<RunRecord> = (0..50)
            .filter_map(|s| soak.run_seed(Seed::new(s)).record)
            .collect();
        let all = invariants::builtin();
        let mut next = 0;
        group.bench_function(name, |b| {
            b.iter(|| {
                next = (next + 1) % records.len();
                let record = &records[next];
                let mut held = all.iter().filter(|i| i.check(record).is_ok()).count();
                held += agent
                    .invariants
                    .iter()
                    .filter(|i| i.check(record).is_ok())
                    .count();
                held
            })
        });
    }
    group.finish();
}

fn idle_heavy(c: &mut Criterion) {
    let mut agent = twenty_turns("weather");
    agent.repertoire.pauses = Duration::from_secs(30)..=Duration::from_secs(120);
    let soak = soak(&agent);
    let simulated: Duration = (0..20)
        .filter_map(|s| soak.run_seed(Seed::new(s)).record)
        .map(|r| r.virtual_time)
        .sum::<Duration>()
        / 20;
    eprintln!(
        "idle_heavy/weather: {:.1} simulated seconds per run (mean of seeds 0..20)",
        simulated.as_secs_f64()
    );
    let mut group = c.benchmark_group("idle_heavy");
    group.sample_size(10);
    let mut seed = 0;
    group.bench_function("weather", |b| {
        b.iter(|| {
            seed = (seed + 1) % 20;
            soak.run_seed(Seed::new(seed))
        })
    });
    group.finish();
}

async fn weather() {
    let run = ScriptedServer::new()
        .hears("What's the weather in Paris?")
        .calls("get_weather", json!({ "city": "Paris" }))
        .says("It is sunny in Paris.")
        .play(Live::builder().tools(T::simple(
            "get_weather",
            "Weather for a city",
            |args| async move { Ok(json!({ "city": args["city"], "sky": "sunny" })) },
        )))
        .await
        .unwrap();
    run.disconnect().await;
}

fn baseline(c: &mut Criterion) {
    let mut group = c.benchmark_group("baseline");
    group.sample_size(10);
    let mut seed = 0;
    group.bench_function("one_turn", |b| {
        b.iter(|| {
            seed += 1;
            Simulation::new(Seed::new(seed)).run(weather).unwrap()
        })
    });
    group.finish();
}

fn floor(c: &mut Criterion) {
    floors(c, "floor", twenty_turn_soaks(), 50);
}

fn scale_turns(c: &mut Criterion) {
    let mut group = c.benchmark_group("scale/turns");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(6));
    for turns in [1, 5, 20, 100] {
        let mut agent = Agent::load("sim/payment").expect("a sim/ agent");
        agent.repertoire.turns = turns..=turns;
        let soak = soak(&agent);
        let mut seed = 0;
        group.bench_function(turns.to_string(), |b| {
            b.iter(|| {
                seed += 1;
                soak.run_seed(Seed::new(seed))
            })
        });
    }
    group.finish();
}

/// Five turns, each calling `get_weather` `k` times in one message.
fn parallel_calls(k: usize) -> ScriptedServer {
    let mut script = ScriptedServer::new();
    for turn in 0..5 {
        let calls = (0..k)
            .map(|n| Call {
                id: format!("call-{turn}-{n}"),
                name: "get_weather".into(),
                args: json!({ "city": "Paris" }),
                wait: true,
            })
            .collect();
        script = script
            .hears("What's the weather?")
            .action(Action::CallMany(calls))
            .says("Sunny everywhere.");
    }
    script
}

fn scale_calls(c: &mut Criterion) {
    let mut group = c.benchmark_group("scale/calls");
    group.sample_size(10);
    for k in [1, 3, 10] {
        let script = parallel_calls(k);
        let mut seed = 0;
        group.bench_function(k.to_string(), |b| {
            b.iter(|| {
                seed += 1;
                let script = script.clone();
                Simulation::new(Seed::new(seed))
                    .run(move || async move {
                        let run = script
                            .play(Live::builder().tools(T::simple(
                                "get_weather",
                                "Weather for a city",
                                |args| async move {
                                    Ok(json!({ "city": args["city"], "sky": "sunny" }))
                                },
                            )))
                            .await
                            .unwrap();
                        run.disconnect().await;
                    })
                    .unwrap()
            })
        });
    }
    group.finish();
}

criterion_group!(
    benches,
    baseline,
    own_mix,
    own_mix_floor,
    runs,
    floor,
    checks,
    idle_heavy,
    scale_turns,
    scale_calls
);
criterion_main!(benches);
