//! A Rust user's own agent soaked as livesim soaks its own: the racing
//! cart of `examples/soak_your_agent.rs`, its lost update found, shrunk,
//! kept, replayed from the corpus in one line, and its fix passing.

#[path = "../../examples/soak_your_agent.rs"]
#[allow(dead_code)]
mod cart;

use std::time::Duration;

use livesim::soak::Saved;

use super::scratch::{Scratch, scratch};
use super::seeds;

/// A fresh corpus folder for one test, removed when dropped.
fn temp_corpus(name: &str) -> Scratch {
    scratch(&format!("your-agent-{name}"))
}

/// The race is found within 300 seeds, shrunk to at most 3 actions, kept
/// in the corpus with its page and a replay line for the kept case; the
/// corpus one-liner fails on the racy cart naming the entry, and passes
/// on the fixed one, which also passes seeds 0..2000.
#[test]
fn the_racing_cart_is_found_shrunk_kept_and_fixed() {
    let corpus = temp_corpus("race");
    let pages = corpus.join("pages");
    let summary = cart::cart_soak(false)
        .seeds(300)
        .corpus(&corpus)
        .pages(&pages)
        .test(livesim::test_id!())
        .try_run()
        .expect_err("two parallel add_item calls lose an update");
    let kept = summary.kept.first().expect("the race is kept");
    assert_eq!(kept.entry.invariant, "cart-holds-every-item");
    assert!(
        kept.entry.case.actions() <= 3,
        "{} actions",
        kept.entry.case.actions()
    );
    let Saved::New(file) = &kept.saved else {
        panic!("not written: {:?}", kept.saved);
    };
    assert!(file.starts_with(corpus.join("cart")), "{}", file.display());
    // The report shows the race: both calls, their overlap, the writes.
    let text = summary.to_string();
    for needle in ["overlapped: add_item(", "cart = ", ", by tool:add_item("] {
        assert!(text.contains(needle), "{needle} in:\n{text}");
    }
    // The kept case's own replay line, not the seed's.
    assert!(kept.replay.starts_with("LIVESIM_CASE="), "{}", kept.replay);
    assert!(kept.replay.contains("--test soak"), "{}", kept.replay);
    let page = kept.page.clone().expect("a page").expect("written");
    assert!(page.starts_with(&pages));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("LIVESIM_CASE="),
        "the page names the kept case's replay"
    );

    // One line replays the corpus: the racy cart still fails it, naming
    // the entry.
    let replay = cart::cart_soak(false).try_replay_corpus(&corpus);
    assert!(!replay.passed());
    assert_eq!(replay.failed.len(), summary.kept.len());
    let panic = std::panic::catch_unwind(|| {
        cart::cart_soak(false).replay_corpus_in(&corpus);
    })
    .expect_err("the one-liner fails");
    let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(message.contains(&file.display().to_string()), "{message}");

    // The fix: the kept cases pass, and so do seeds 0..2000.
    let fixed = cart::cart_soak(true)
        .corpus(&corpus)
        .seed_range(seeds(2000))
        .shrink_time(Duration::ZERO);
    let replay = fixed.replay_corpus_in(&corpus);
    assert_eq!(replay.passed.len(), summary.kept.len());
    let summary = fixed.try_run().unwrap_or_else(|s| panic!("{s}"));
    assert_eq!(summary.kept_cases_run, replay.passed.len() as u64);
}

/// A Rust agent's tools are measured before the first seed: the cart's
/// `add_item` (120 to 300 ms) gets a latency range inside that, so the
/// goals that race a running tool are reached, and every goal is.
#[test]
fn timing_goals_are_reached_for_slow_rust_tools() {
    let soak = cart::cart_soak(true).seeds(300).keep(false);
    let latencies = soak.tool_latencies();
    let (_, add) = latencies
        .iter()
        .find(|(name, _)| name == "add_item")
        .expect("add_item measured");
    assert!(
        *add.start() >= Duration::from_millis(120)
            && *add.end() <= Duration::from_millis(300)
            && add.start() < add.end(),
        "{add:?}"
    );
    let summary = soak.try_run().unwrap_or_else(|s| panic!("{s}"));
    let goals = &summary.agents[0].goals;
    for goal in [
        "cancel-race",
        "cancel-aborted",
        "go-away-mid-call",
        "bad-args",
    ] {
        let hits = goals
            .iter()
            .find(|(name, _)| name == goal)
            .map(|(_, hits)| *hits);
        assert!(hits.is_some_and(|h| h > 0), "{goal}: {hits:?}\n{summary}");
    }
    assert!(summary.never_reached().is_empty(), "{summary}");
}

/// Goals an agent cannot reach are not counted, so never flagged: a tool
/// that answers at once cannot be caught running, one that takes any
/// arguments never refuses bad ones, and one that never fails cannot
/// reach `tool-failure`.
#[test]
fn goals_an_agent_cannot_reach_are_not_counted() {
    use livesim::prelude::*;
    use livesim::soak::Soak;
    let soak = Soak::new("echo", || {
        Live::builder().tools(T::simple(
            "echo",
            "Says it back",
            |args| async move { Ok(args) },
        ))
    })
    .keep(false);
    assert_eq!(
        soak.tool_latencies(),
        [("echo".to_string(), Duration::ZERO..=Duration::ZERO)]
    );
    let summary = soak.seeds(livesim::soak::GOALS_JUDGED_FROM).run();
    let goals: Vec<&str> = summary.agents[0]
        .goals
        .iter()
        .map(|(name, _)| name.as_str())
        .collect();
    for absent in [
        "tool-failure",
        "bad-args",
        "cancel-aborted",
        "go-away-mid-call",
    ] {
        assert!(!goals.contains(&absent), "{absent} in {goals:?}");
    }
    for present in ["parallel-call", "unknown-tool", "cancel-race"] {
        assert!(goals.contains(&present), "{present} not in {goals:?}");
    }
}

/// proptest, drawing conversations as steps, finds the racing cart's lost
/// update too and shrinks it to the two calls that show it; the fixed
/// cart holds.
#[test]
fn proptest_finds_the_race_and_shrinks_it() {
    let steps = cart::race_by_proptest(false).expect("proptest finds the race");
    assert!(steps.len() <= 2, "{steps:?}");
    let calls: usize = steps
        .iter()
        .map(|step| match step {
            livesim::soak::Step::Call { .. } => 1,
            livesim::soak::Step::Parallel(tools) => tools.len(),
            _ => 0,
        })
        .sum();
    assert_eq!(calls, 2, "{steps:?}");
    assert_eq!(cart::race_by_proptest(true), None);
}

/// A failing property case's replay line is the case as code (its seed
/// and its steps: the seed alone does not draw them), to paste into a
/// test of its own.
#[test]
fn a_failing_steps_case_says_itself_as_code() {
    use livesim::Seed;
    use livesim::soak::Step;
    let steps = [
        Step::Call {
            tool: 0,
            wait: false,
        },
        Step::Text {
            text: "Done \"now\"".to_string(),
            cuts: vec![2],
        },
        Step::Call {
            tool: 0,
            wait: false,
        },
    ];
    let (seed, run) = (0..64)
        .map(Seed::new)
        .map(|seed| {
            (
                seed,
                cart::cart_soak(false).keep(false).run_steps(seed, &steps),
            )
        })
        .find(|(_, run)| !run.failures.is_empty())
        .expect("the racing cart's race shows within 64 seeds");
    let code = format!(
        "run_steps(Seed::new({seed}), &vec![Step::Call {{ tool: 0, wait: false }}, \
         Step::Text {{ text: \"Done \\\"now\\\"\".to_string(), cuts: vec![2] }}, \
         Step::Call {{ tool: 0, wait: false }}])"
    );
    for failure in &run.failures {
        assert!(
            failure.replay
                == format!(
                    "the case as code: {code} (a property test's failing case runs first when the test runs again: proptest keeps it beside the test's source)"
                ),
            "{}",
            failure.replay
        );
    }
}

mod property {
    use livesim::soak::fuzz;
    use proptest::prelude::*;

    use super::cart;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(
            std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(64)
        ))]

        /// The fixed cart holds every item `add_item` answered ok, and
        /// every built-in invariant, whatever the model does.
        #[test]
        fn the_fixed_cart_holds_every_item(seed in fuzz::seed(), steps in fuzz::steps(2, 1..12)) {
            let run = cart::cart_soak(true).keep(false).run_steps(seed, &steps);
            prop_assert_eq!(run.verdict(), Ok(()));
        }
    }
}
