//! Same seed, same run; and what breaks that is caught.

use std::collections::BTreeSet;

use livesim::Seed;
use livesim::executor::{Runner, SeedPlan, Simulation, check_determinism, record, record_with};

use crate::program::{MESSAGES, interleaving, three_lanes};

fn seeds() -> SeedPlan {
    // Nightly runs widen this with LIVESIM_SEEDS; 1,000 keeps `cargo test` fast.
    SeedPlan::from_env(SeedPlan::Range(0..1000)).unwrap()
}

/// For every seed, two runs of the three-lane program leave the same trace
/// hash; across 1,000 seeds they choose at least 100 distinct interleavings.
#[test]
fn a_thousand_seeds_replay_exactly_and_explore() {
    let mut interleavings = BTreeSet::new();
    let plan = seeds();
    for seed in plan.seeds() {
        let sim = Simulation::new(seed);
        let first = sim.run(three_lanes).expect("the program finishes");
        let second = sim.run(three_lanes).expect("the program finishes");
        assert_eq!(
            first.trace.hash(),
            second.trace.hash(),
            "seed {seed}: {}",
            first.trace.first_divergence(&second.trace).unwrap()
        );
        let order = interleaving(&first.trace);
        // Every message reached both lanes, whatever the order.
        assert_eq!(order.matches('f').count(), MESSAGES as usize);
        assert_eq!(order.matches('c').count(), MESSAGES as usize);
        interleavings.insert(order);
    }
    assert!(
        plan.len() < 1000 || interleavings.len() >= 100,
        "only {} distinct interleavings",
        interleavings.len()
    );
}

/// Seeds differ in what they draw, not only in scheduling: the swarm header
/// that opens every trace varies too.
#[test]
fn every_trace_opens_with_its_swarm_header() {
    let headers: BTreeSet<String> = (0..50)
        .map(|s| {
            let out = Simulation::new(Seed::new(s)).run(|| async {}).unwrap();
            let first = out.trace.get(0).unwrap();
            assert_eq!(first.label, "runtime");
            assert!(
                first
                    .event
                    .starts_with(&format!("run seed={}", Seed::new(s)))
            );
            first.event.split("swarm: ").nth(1).unwrap().to_string()
        })
        .collect();
    assert!(headers.len() > 10, "{headers:?}");
}

/// A program that reads the wall clock into its trace is caught: the two
/// runs diverge at that entry, and the report shows both values.
#[test]
fn reading_the_wall_clock_is_caught() {
    #[allow(clippy::disallowed_methods)] // the leak under test
    fn leak() -> String {
        format!("{:?}", std::time::Instant::now())
    }
    let err = check_determinism(&Simulation::new(Seed::new(1)), || async {
        record("before");
        record(&leak());
    })
    .unwrap_err();
    assert_eq!(err.divergence.index, 2, "{err}"); // header, "before", leak
    let (a, b) = (
        err.divergence.first.unwrap(),
        err.divergence.second.unwrap(),
    );
    assert_ne!(a.event, b.event);
    assert_eq!(err.divergence.before.unwrap().event, "before");
}

/// A program that records `HashMap` iteration order is caught too.
#[test]
fn hash_map_order_is_caught() {
    #[allow(clippy::disallowed_types, clippy::disallowed_methods)] // the leak under test
    fn leak() -> String {
        let map: std::collections::HashMap<u32, ()> = (0..64).map(|k| (k, ())).collect();
        map.keys()
            .map(|k| k.to_string())
            .collect::<Vec<_>>()
            .join(",")
    }
    let err = check_determinism(&Simulation::new(Seed::new(1)), || async {
        record_with(leak);
    })
    .unwrap_err();
    assert_eq!(err.divergence.index, 1, "{err}");
}

/// The runner's check (LIVESIM_CHECK_DETERMINISM=1 or the API) fails the
/// seed and names the diverging entry in its report.
#[test]
fn the_runner_reports_nondeterminism() {
    #[allow(clippy::disallowed_methods)] // the leak under test
    fn leak() -> String {
        format!("{:?}", std::time::SystemTime::now())
    }
    let report = Runner::new(livesim::test_id!())
        .check_determinism(true)
        .try_run(|_| async { record(&leak()) })
        .unwrap_err();
    let text = report.to_string();
    assert!(text.contains("non-determinism: seed 0x0"), "{text}");
    assert!(text.contains("diverge at trace entry #1"), "{text}");
    assert!(
        text.contains("replay: LIVESIM_CHECK_DETERMINISM=1 LIVESIM_SEED=0x0 cargo test --test executor determinism::the_runner_reports_nondeterminism -- --exact"),
        "{text}"
    );
}

/// A deterministic program passes the runner's check.
#[test]
fn a_clean_program_passes_the_check() {
    let summary = Runner::new(livesim::test_id!())
        .seeds(20)
        .check_determinism(true)
        .run(|_| three_lanes());
    let planned = SeedPlan::from_env(SeedPlan::Range(0..20)).unwrap().len();
    assert_eq!(summary.seeds, planned);
}

/// Whether the environment decides the determinism check for this run.
fn check_set_by_env() -> bool {
    std::env::var_os("LIVESIM_CHECK_DETERMINISM").is_some()
}

#[allow(clippy::disallowed_methods)] // the leak under test
fn wall_clock() -> String {
    format!("{:?}", std::time::SystemTime::now())
}

/// A run of several seeds checks its first seed by default: a leak of real
/// time fails it there, before the other seeds are spent.
#[test]
fn a_multi_seed_run_checks_its_first_seed() {
    if check_set_by_env() {
        return;
    }
    let report = Runner::new(livesim::test_id!())
        .seeds(50)
        .try_run(|_| async { record(&wall_clock()) })
        .unwrap_err();
    assert_eq!(report.position.0, 1, "{report}");
    assert!(report.nondeterminism.is_some(), "{report}");
    assert!(
        report
            .replay_command()
            .starts_with("LIVESIM_CHECK_DETERMINISM=1 "),
        "{report}"
    );
}

/// The first-seed check is an opt-out: `check_determinism(false)` runs
/// each seed once.
#[test]
fn the_first_seed_check_can_be_turned_off() {
    if check_set_by_env() {
        return;
    }
    let summary = Runner::new(livesim::test_id!())
        .seeds(5)
        .check_determinism(false)
        .run(|_| async { record(&wall_clock()) });
    assert!(summary.seeds >= 1);
}
