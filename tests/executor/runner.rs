//! The seed runner and `#[livesim::test]`: plans, reports, logs.

use std::time::Duration;

use livesim::Seed;
use livesim::executor::{Runner, Swarm};

/// A failing seed's report carries the seed, the message, the swarm, the
/// trace before the failure, the runtime's logs and the replay line.
#[test]
fn a_failure_report_has_everything_to_replay_it() {
    let report = Runner::new(livesim::test_id!())
        .seeds(10)
        .try_run(|seed| async move {
            livesim::executor::record("about to check");
            tokio::time::sleep(Duration::from_millis(40)).await;
            assert!(seed.value() < 3, "seed {seed} is too big");
        })
        .unwrap_err();
    assert_eq!(report.failure.seed, Seed::new(3));
    assert_eq!(report.position, (4, 10));
    let text = report.to_string();
    for needle in [
        "livesim: seed 0x3 failed (run 4 of 10)",
        "panic at t=0.040s, seed 0x3",
        "seed 0x3 is too big",
        "swarm: lanes=",
        "main       | about to check",
        "logs (livesim=debug",
        "replay: LIVESIM_SEED=0x3 cargo test --test executor runner::a_failure_report_has_everything_to_replay_it -- --exact",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
}

/// A test that returns `Err` fails its seed with the error.
#[test]
fn an_error_result_fails_the_seed() {
    let report = Runner::new(livesim::test_id!())
        .seeds(3)
        .try_run(|seed| async move {
            if seed.value() == 1 {
                Err(format!("no luck with {seed}"))
            } else {
                Ok(())
            }
        })
        .unwrap_err();
    assert_eq!(report.failure.seed, Seed::new(1));
    assert!(report.to_string().contains("no luck with 0x1"));
}

/// Passing seeds are counted with their hashes and virtual time.
#[test]
fn a_passing_plan_is_summarised() {
    let summary = Runner::new(livesim::test_id!())
        .seeds(5)
        .swarm(Swarm::calm())
        .run(|_| tokio::time::sleep(Duration::from_secs(2)));
    if std::env::var("LIVESIM_SEED").is_err() && std::env::var("LIVESIM_SEEDS").is_err() {
        assert_eq!(summary.seeds, 5);
        assert_eq!(summary.virtual_time, Duration::from_secs(10));
        let seeds: Vec<u64> = summary.hashes.iter().map(|(s, _)| s.value()).collect();
        assert_eq!(seeds, [0, 1, 2, 3, 4]);
    }
}

/// The log formatter stamps lines with virtual time, seed and lane.
#[test]
fn logs_are_stamped_with_virtual_time_seed_and_lane() {
    let report = Runner::new(livesim::test_id!())
        .seed(Seed::new(0x51))
        .try_run(|_| async {
            tokio::time::sleep(Duration::from_millis(1250)).await;
            tracing::info!(target: "livesim::test", "checking");
            Err("stop")
        })
        .unwrap_err();
    let (_, lines, _) = report.logs.as_ref().unwrap();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("t=1.250s seed=0x51 lane=main INFO livesim::test: checking")),
        "{lines:#?}"
    );
}

/// `#[livesim::test]` runs the body once per seed and passes the seed in.
#[livesim::test(seeds = 25)]
async fn the_attribute_runs_every_seed(seed: Seed) {
    assert_eq!(livesim::executor::seed(), Some(seed));
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert_eq!(livesim::executor::now(), Duration::from_secs(30));
}
