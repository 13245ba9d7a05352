//! Seeing a run: timelines and the soak report as pages.
//!
//! `model` reads real runs into timelines (lanes, spans, frames, the
//! failure where it happened) and checks what the HTML and JSON hold,
//! hostile text and secrets included; `cli` drives `livesim sim run/soak
//! --html/--format json`; `failing_test` shows a failing
//! `#[livesim::test]` writing its page and naming it. `pages` opens the
//! pages in a real headless Chromium and checks what a person sees; it
//! needs Chromium, so its tests are `#[ignore]`d and `.ci/run` runs them
//! (`cargo test --test timeline -- --include-ignored`), installing
//! Chromium first when it is missing. A plain `cargo test` stays runnable
//! on a machine without a browser, and a run that asks for the browser
//! tests fails, saying how to install it, when there is none.

mod browser;
mod cli;
mod failing_test;
mod model;
mod pages;
mod synthetic;

// Scratch folders removed when each test ends, shared with the other test
// binaries rather than copied.
#[path = "../common/scratch.rs"]
mod scratch;

use scratch::{Scratch, scratch};

use std::path::{Path, PathBuf};
use std::time::Duration;

use livesim::executor::{Report, Runner};
use livesim::prelude::*;
use livesim::testing::ScriptedServer;
use serde_json::json;

/// How long the scenario's tool takes.
pub const LOOKUP: Duration = Duration::from_millis(250);

/// A session whose tool takes 250 ms, then a check that fails: what a
/// user's failing test looks like.
pub async fn a_lookup_then_a_wrong_total() {
    let run = ScriptedServer::new()
        .hears("What does my basket cost?")
        .calls("lookup", json!({ "basket": "b-1" }))
        .says("It costs 12 pounds.")
        .play(
            Live::builder().tools(T::simple("lookup", "Prices a basket", |_args| async move {
                tokio::time::sleep(LOOKUP).await;
                Ok(json!({ "total": 12 }))
            })),
        )
        .await
        .unwrap();
    run.disconnect().await;
    assert_eq!(12, 13, "the basket total is wrong");
}

/// The report of the scenario failing on seed 0x2a.
pub fn lookup_report() -> Report {
    *Runner::new(livesim::test_id!())
        .seed(livesim::Seed::new(0x2a))
        .try_run(|_| a_lookup_then_a_wrong_total())
        .expect_err("the scenario fails")
}

/// Where this suite keeps what it leaves behind (screenshots, pages).
pub fn artifacts() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("timeline");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A fresh folder for one test, removed when dropped.
pub fn temp(name: &str) -> Scratch {
    scratch(&format!("timeline-{name}"))
}

/// A copy of a `sim/` agent in a fresh folder, its agent file changed;
/// the folder is removed when dropped.
pub fn copy_agent(name: &str, test: &str, change: impl FnOnce(&mut serde_json::Value)) -> Scratch {
    let dir = temp(test).inside(name);
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::fs::read_dir(repo().join("sim").join(name)).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, dir.join(path.file_name().unwrap())).unwrap();
    }
    let file = dir.join("agent.json");
    let mut agent: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    change(&mut agent);
    std::fs::write(&file, serde_json::to_string_pretty(&agent).unwrap()).unwrap();
    dir
}

/// The lowest seed (below 40) whose run breaks an invariant, and the run.
pub fn first_failing_seed(soak: &livesim::soak::Soak) -> (livesim::Seed, livesim::soak::SeedRun) {
    (0..40)
        .map(livesim::Seed::new)
        .map(|seed| (seed, soak.run_seed(seed)))
        .find(|(_, run)| !run.failures.is_empty())
        .expect("a seed that breaks an invariant")
}

/// The weather agent with an invariant its sessions break on some seeds:
/// `get_weather` may not start before a forecast succeeded.
pub fn failing_weather(test: &str) -> Scratch {
    copy_agent("weather", test, |a| {
        a["invariants"] = json!([{"before": ["get_forecast", "get_weather"]}]);
    })
}
