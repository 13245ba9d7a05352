//! The engine: shards, jobs, time budgets, the summary and its JUnit.

use std::collections::BTreeSet;
use std::time::Duration;

use livesim::soak::{Shard, Soak, Summary};

use super::agent;
use super::scratch::scratch;

/// For every N up to 7 and several ranges, shards 1..=N are pairwise
/// disjoint, together cover the range exactly, and count what they take.
#[test]
fn shards_are_disjoint_and_cover_the_range() {
    for range in [0..0, 0..1, 0..10, 5..23, 1000..1037] {
        for of in 1..=7 {
            let mut seen = BTreeSet::new();
            for index in 1..=of {
                let shard = Shard { index, of };
                let seeds: Vec<u64> = shard.seeds(range.clone()).collect();
                assert_eq!(
                    seeds.len() as u64,
                    shard.count(&range),
                    "{shard} of {range:?}"
                );
                for seed in seeds {
                    assert!(range.contains(&seed));
                    assert!(seen.insert(seed), "seed {seed} is in two shards of {of}");
                }
            }
            assert_eq!(
                seen.into_iter().collect::<Vec<_>>(),
                range.clone().collect::<Vec<_>>()
            );
        }
    }
    assert_eq!("3/8".parse::<Shard>(), Ok(Shard { index: 3, of: 8 }));
    for bad in ["0/3", "4/3", "3", "a/b", "1/0"] {
        let err = bad.parse::<Shard>().unwrap_err();
        assert!(err.contains(&format!("`{bad}` is not a shard")), "{err}");
    }
}

/// What a summary says apart from wall time and the number of jobs.
fn facts(summary: &Summary) -> String {
    summary
        .agents
        .iter()
        .map(|a| {
            let failures: Vec<String> = a
                .failures
                .iter()
                .map(|f| format!("{} {}", f.seed, f.invariant))
                .collect();
            format!(
                "{} {} {} {} {:?} {:?} {:?} {:?}",
                a.name,
                a.sessions,
                a.explored,
                a.orders,
                a.virtual_time,
                a.checks,
                a.goals,
                failures
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The same seeds give the same summary on one job or two, variants
/// explored and all; three shards of a range add up to the whole range.
#[test]
fn a_summary_is_the_same_whatever_the_jobs_and_shards_add_up() {
    let booking = agent("booking");
    let exploring = || Soak::agent(&booking).seed_range(0..24);
    let one = exploring().jobs(1).run();
    let two = exploring().jobs(2).run();
    assert_eq!(facts(&one), facts(&two));
    assert!(one.explored() > 0, "{one}");
    assert_eq!(one.sessions(), 24 + one.explored());
    // Shards explore apart; their fresh seeds add up.
    let soak = || exploring().explore(false);
    let one = soak().jobs(1).run();
    assert_eq!(one.sessions(), 24);
    let shards: Vec<Summary> = (1..=3)
        .map(|index| soak().shard(Shard { index, of: 3 }).run())
        .collect();
    assert_eq!(shards.iter().map(Summary::sessions).sum::<u64>(), 24);
    assert_eq!(
        shards.iter().map(Summary::virtual_time).sum::<Duration>(),
        one.virtual_time()
    );
    for (goal, hits) in &one.agents[0].goals {
        let sum: u64 = shards
            .iter()
            .map(|s| s.agents[0].goals.iter().find(|(g, _)| g == goal).unwrap().1)
            .sum();
        assert_eq!(sum, *hits, "{goal}");
    }
}

/// A time budget stops the soak before a range too long for it.
#[test]
fn a_time_budget_stops_starting_sessions() {
    let summary = Soak::agent(&agent("weather"))
        .seed_range(0..1_000_000)
        .duration(Duration::from_millis(300))
        .jobs(2)
        .run();
    assert!(summary.stopped_by_budget);
    assert!(
        summary.sessions() > 0 && summary.sessions() < 1_000_000,
        "{}",
        summary.sessions()
    );
    assert!(
        summary
            .to_string()
            .contains("the time budget ran out before the seeds did")
    );
}

/// Goals no run reached are flagged in the summary, once enough
/// sessions ran for it to mean something; a run of one seed (a replay)
/// flags none.
#[test]
fn goals_never_reached_are_flagged() {
    use livesim::soak::GOALS_JUDGED_FROM;
    let one = Soak::agent(&agent("weather"))
        .sometimes("snow-in-july", |_| false)
        .seed_range(3..4)
        .run();
    assert!(one.never_reached().is_empty());
    let text = one.to_string();
    assert!(!text.contains("NEVER REACHED"), "{text}");
    assert!(text.contains("(not judged over 1 session: "), "{text}");
    assert!(one.line().contains("goals not judged"), "{}", one.line());

    let summary = Soak::agent(&agent("weather"))
        .sometimes("snow-in-july", |_| false)
        .seed_range(0..GOALS_JUDGED_FROM)
        .run();
    assert!(
        summary.line().contains("goals never reached: snow-in-july"),
        "{}",
        summary.line()
    );
    assert!(
        summary
            .never_reached()
            .contains(&("weather", "snow-in-july"))
    );
    assert!(
        summary
            .to_string()
            .contains("snow-in-july 0 (NEVER REACHED)"),
        "{summary}"
    );
}

/// The JUnit file parses: a suite per agent, a case per invariant, the
/// broken one failed with its seed and replay line, the goals as
/// properties.
#[test]
fn junit_parses_and_says_what_broke() {
    let summary = Soak::agent(&agent("payment"))
        .invariant("no-payments", |run| {
            match run.executions_of("take_payment").next() {
                Some(e) => Err(format!("take_payment ran at {:?}", e.started)),
                None => Ok(()),
            }
        })
        .replay_line(|seed| format!("livesim sim run payment --seed {seed}"))
        .seed_range(0..40)
        .keep(false) // it fails on purpose: keep nothing
        .try_run()
        .expect_err("payment takes payments");
    let dir = scratch("junit");
    let path = dir.join("soak.xml");
    summary.write_junit(&path).unwrap();
    let xml = std::fs::read_to_string(&path).unwrap();
    let report = quick_junit::Report::deserialize_from_str(&xml).unwrap();
    assert_eq!(report.test_suites.len(), 1);
    let suite = &report.test_suites[0];
    assert_eq!(suite.name.as_str(), "payment");
    let case = |name: &str| {
        suite
            .test_cases
            .iter()
            .find(|c| c.name.as_str() == name)
            .unwrap_or_else(|| panic!("no case {name}"))
    };
    assert!(matches!(
        case("refused-never-runs").status,
        quick_junit::TestCaseStatus::Success { .. }
    ));
    let broken = case("no-payments");
    assert!(matches!(
        broken.status,
        quick_junit::TestCaseStatus::NonSuccess { .. }
    ));
    let text = format!("{:?}", broken.status);
    let first = summary.failures().next().unwrap();
    assert!(
        text.contains(&format!("first: seed {}", first.seed)),
        "{text}"
    );
    assert!(
        text.contains(&format!("livesim sim run payment --seed {}", first.seed)),
        "{text}"
    );
    assert!(
        suite
            .properties
            .iter()
            .any(|p| p.name.as_str() == "sometimes.refusal")
    );
}

/// A soak where every run fails keeps the first failures of each agent,
/// scripts and all, and counts the rest.
#[test]
fn failures_past_the_kept_ones_are_counted() {
    use livesim::soak::KEPT_PER_AGENT;
    use livesim::testing::ScriptedServer;
    let runs = KEPT_PER_AGENT as u64 + 30;
    let summary = Soak::agent(&agent("weather"))
        .script(|_, _| ScriptedServer::new().hears("Hi").says("Hello."))
        .invariant("always-fails", |_| Err("on purpose".to_string()))
        .seed_range(0..runs)
        .explore(false)
        .check_determinism_every(0)
        .keep(false) // it fails on purpose: keep nothing
        .try_run()
        .expect_err("every run fails");
    let weather = &summary.agents[0];
    assert_eq!(weather.failures.len(), KEPT_PER_AGENT);
    assert_eq!(weather.failures_found(), runs);
    let text = summary.to_string();
    assert!(text.contains(&format!("failures: {runs}\n")), "{text}");
    assert!(
        text.contains(&format!("… and {} more weather failures", runs - 10)),
        "{text}"
    );
}

/// Every shard of any split checks determinism on its share: with the
/// range 0..512 cut into 8 shards, each shard's soak runs some seeds twice
/// (the summary counts `determinism` checks per shard), and together
/// they check about one run in 64.
#[test]
fn every_shard_checks_determinism() {
    let weather = agent("weather");
    let mut total = 0;
    for index in 1..=8 {
        let summary = Soak::agent(&weather)
            .seed_range(0..512)
            .shard(Shard { index, of: 8 })
            .explore(false)
            .keep(false)
            .jobs(2)
            .run();
        let checked = summary.agents[0]
            .checks
            .iter()
            .find(|(name, ..)| name == "determinism")
            .map_or(0, |(_, held, broke)| held + broke);
        assert!(checked > 0, "shard {index}/8 checked no seed twice");
        total += checked;
    }
    // Each shard checks its first seed and every 64th after it.
    assert_eq!(total, 8, "{total} checks over 512 runs");
}
