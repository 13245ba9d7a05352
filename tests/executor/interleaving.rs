//! The points where concurrency is decided, and how the seed decides them.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use livesim::Seed;
use livesim::executor::{Deliveries, LaneSet, LaneStrategy, Simulation, Swarm, spawn, yield_point};

/// Three lanes that each log three steps, yielding in between.
async fn three_lane_log() -> Vec<String> {
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut lanes = LaneSet::new("log");
    for name in ["a", "b", "c"] {
        let log = log.clone();
        lanes.add(name, async move {
            for i in 0..3 {
                log.lock().unwrap().push(format!("{name}{i}"));
                tokio::task::yield_now().await;
            }
        });
    }
    lanes.await;
    log.lock().unwrap().clone()
}

fn run_with(strategy: LaneStrategy, seed: u64) -> Vec<String> {
    let swarm = Swarm {
        lanes: strategy,
        ..Swarm::calm()
    };
    Simulation::new(Seed::new(seed))
        .swarm(swarm)
        .run(three_lane_log)
        .unwrap()
        .value
}

/// Each lane's own steps stay in order under every strategy and seed.
#[test]
fn lanes_keep_their_own_order() {
    for strategy in [
        LaneStrategy::Fixed,
        LaneStrategy::Random,
        LaneStrategy::Pct { depth: 2 },
    ] {
        for seed in 0..50 {
            let log = run_with(strategy, seed);
            for lane in ["a", "b", "c"] {
                let own: Vec<&String> = log.iter().filter(|s| s.starts_with(lane)).collect();
                let expected: Vec<String> = (0..3).map(|i| format!("{lane}{i}")).collect();
                assert_eq!(
                    own,
                    expected.iter().collect::<Vec<_>>(),
                    "{strategy:?} {seed}"
                );
            }
        }
    }
}

/// Fixed order is the production order: lanes in the order they were added.
#[test]
fn fixed_order_is_insertion_order() {
    let log = run_with(LaneStrategy::Fixed, 0);
    assert_eq!(log, ["a0", "b0", "c0", "a1", "b1", "c1", "a2", "b2", "c2"]);
}

/// Random and PCT picking both explore several orders across seeds.
#[test]
fn random_and_pct_explore_orders() {
    for strategy in [LaneStrategy::Random, LaneStrategy::Pct { depth: 3 }] {
        let orders: BTreeSet<Vec<String>> = (0..200).map(|s| run_with(strategy, s)).collect();
        assert!(orders.len() >= 5, "{strategy:?}: {} orders", orders.len());
    }
}

/// Outside a simulation a lane set is a plain future in fixed order.
#[tokio::test]
async fn lane_sets_run_outside_simulation() {
    assert!(!livesim::executor::is_simulated());
    let log = three_lane_log().await;
    assert_eq!(log, ["a0", "b0", "c0", "a1", "b1", "c1", "a2", "b2", "c2"]);
    yield_point("free").await; // completes at once
}

/// Tasks spawned through the facade run in varying orders across seeds
/// when the swarm perturbs them, and in spawn order when it does not.
#[test]
fn spawned_tasks_are_perturbed_by_the_seed() {
    async fn race() -> Vec<u32> {
        let log = Arc::new(Mutex::new(Vec::new()));
        let handles: Vec<_> = (0..4)
            .map(|i| {
                let log = log.clone();
                spawn(format!("task{i}"), async move {
                    log.lock().unwrap().push(i);
                })
            })
            .collect();
        for h in handles {
            h.await.unwrap();
        }
        log.lock().unwrap().clone()
    }
    let perturbed = Swarm {
        task_yield_chance: 0.5,
        ..Swarm::calm()
    };
    let orders: BTreeSet<Vec<u32>> = (0..100)
        .map(|s| {
            Simulation::new(Seed::new(s))
                .swarm(perturbed.clone())
                .run(race)
                .unwrap()
                .value
        })
        .collect();
    assert!(orders.len() >= 5, "{orders:?}");
    let calm = Simulation::new(Seed::new(0))
        .swarm(Swarm::calm())
        .run(race)
        .unwrap()
        .value;
    assert_eq!(calm, [0, 1, 2, 3]);
}

/// Yield points change the interleaving across seeds when the swarm turns
/// them on, and never change what each lane does.
#[test]
fn yield_points_perturb_hand_offs() {
    async fn two_lanes() -> String {
        let log = Arc::new(Mutex::new(String::new()));
        let mut lanes = LaneSet::new("pair");
        for name in ["x", "y"] {
            let log = log.clone();
            lanes.add(name, async move {
                for _ in 0..4 {
                    log.lock().unwrap().push_str(name);
                    yield_point(name).await;
                }
            });
        }
        lanes.await;
        log.lock().unwrap().clone()
    }
    let swarm = Swarm {
        yield_chance: 0.5,
        yield_max: 3,
        sleep_chance: 0.2,
        sleep_max: Duration::from_millis(3),
        ..Swarm::calm()
    };
    let orders: BTreeSet<String> = (0..100)
        .map(|s| {
            Simulation::new(Seed::new(s))
                .swarm(swarm.clone())
                .run(two_lanes)
                .unwrap()
                .value
        })
        .collect();
    assert!(orders.len() >= 5, "{orders:?}");
    for order in &orders {
        assert_eq!(order.matches('x').count(), 4);
        assert_eq!(order.matches('y').count(), 4);
    }
}

/// Deliveries come out by time; items due at the same instant are permuted
/// by the seed, and keep push order outside simulation.
#[test]
fn deliveries_order_by_time_then_seed() {
    async fn deliver() -> Vec<(u32, u128)> {
        let queue = Deliveries::new("frames");
        for i in 0..4 {
            queue.push_after(Duration::from_millis(10), i);
        }
        queue.push_after(Duration::from_millis(5), 99);
        queue.close();
        let mut got = Vec::new();
        while let Some(i) = queue.pop().await {
            got.push((i, livesim::executor::now().as_millis()));
        }
        got
    }
    let mut same_instant_orders = BTreeSet::new();
    for s in 0..50 {
        let got = Simulation::new(Seed::new(s))
            .swarm(Swarm::calm())
            .run(deliver)
            .unwrap()
            .value;
        assert_eq!(got[0], (99, 5), "the earliest item comes first");
        assert!(got[1..].iter().all(|&(_, t)| t == 10));
        same_instant_orders.insert(got.iter().map(|&(i, _)| i).collect::<Vec<_>>());
    }
    assert!(same_instant_orders.len() >= 5, "{same_instant_orders:?}");

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    let plain = rt.block_on(async {
        let queue = Deliveries::new("frames");
        for i in 0..4 {
            queue.push_after(Duration::from_millis(10), i);
        }
        queue.close();
        let mut got = Vec::new();
        while let Some(i) = queue.pop().await {
            got.push(i);
        }
        got
    });
    assert_eq!(plain, [0, 1, 2, 3]);
}

/// Delivery jitter delays items by at most the swarm's bound.
#[test]
fn delivery_jitter_stays_within_its_bound() {
    let swarm = Swarm {
        delivery_jitter: Duration::from_millis(7),
        ..Swarm::calm()
    };
    let mut seen = BTreeSet::new();
    for s in 0..50 {
        let at = Simulation::new(Seed::new(s))
            .swarm(swarm.clone())
            .run(|| async {
                let queue = Deliveries::new("frames");
                queue.push_after(Duration::from_millis(10), ());
                queue.pop().await;
                livesim::executor::now().as_millis()
            })
            .unwrap()
            .value;
        assert!((10..=17).contains(&at), "{at}");
        seen.insert(at);
    }
    assert!(seen.len() > 3, "{seen:?}");
}
