//! What exploration buys: the agents in `sim/`, each soaked with
//! exploration on and off over the same number of sessions, compared on
//! the coverage the sessions reached (distinct event orders, distinct
//! whole-run signatures, goals reached and how often the rare ones were).
//!
//! `cargo bench --bench exploration` (10,000 sessions per agent and mode;
//! `LIVESIM_SESSIONS=N` for another count). Not a timing: the figures are
//! counts, the same on every machine.

use std::path::Path;

use livesim::soak::{Agent, AgentSummary, Soak};

/// The goals the fresh runs reached least often, counted as rare.
const RARE: usize = 3;

fn main() {
    let sessions: u64 = std::env::var("LIVESIM_SESSIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let sim = Path::new(env!("CARGO_MANIFEST_DIR")).join("sim");
    println!("sessions per agent and mode: {sessions}");
    println!(
        "| agent | orders fresh | orders exploring | signatures fresh | signatures exploring | goals fresh | goals exploring | rare-goal hits fresh | rare-goal hits exploring |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut totals = [0u64; 8];
    let agents = match Agent::load_all(&sim) {
        Ok(agents) => agents,
        Err(e) => {
            eprintln!("exploration bench: {e}");
            std::process::exit(2);
        }
    };
    for agent in &agents {
        let soak = |explore: bool, seeds: u64| {
            let summary = Soak::agent(agent)
                .seed_range(0..seeds)
                .explore(explore)
                .keep(false)
                .try_run()
                .unwrap_or_else(|summary| *summary);
            summary.agents.into_iter().next().expect("one agent")
        };
        // Exploring adds up to one variant per four fresh seeds: start
        // from four fifths of the sessions, then run the fresh soak over
        // exactly as many sessions as the exploring one ran.
        let exploring = soak(true, sessions * 4 / 5);
        let fresh = soak(false, exploring.sessions);
        let mut by_hits: Vec<&(String, u64)> = fresh.goals.iter().collect();
        by_hits.sort_by_key(|(goal, hits)| (*hits, goal.clone()));
        let rare: Vec<&str> = by_hits
            .iter()
            .take(RARE)
            .map(|(goal, _)| goal.as_str())
            .collect();
        let rare_hits = |s: &AgentSummary| -> u64 {
            s.goals
                .iter()
                .filter(|(goal, _)| rare.contains(&goal.as_str()))
                .map(|(_, hits)| hits)
                .sum()
        };
        let reached =
            |s: &AgentSummary| s.goals.iter().filter(|(_, hits)| *hits > 0).count() as u64;
        let row = [
            fresh.orders,
            exploring.orders,
            fresh.signatures,
            exploring.signatures,
            reached(&fresh),
            reached(&exploring),
            rare_hits(&fresh),
            rare_hits(&exploring),
        ];
        for (total, value) in totals.iter_mut().zip(row) {
            *total += value;
        }
        println!(
            "| {} ({} sessions, {} explored) | {} |",
            agent.name,
            exploring.sessions,
            exploring.explored,
            row.map(|v| v.to_string()).join(" | ")
        );
    }
    println!("| all | {} |", totals.map(|v| v.to_string()).join(" | "));
    println!(
        "orders: {:+.1}%, rare-goal hits: {:+.1}% with exploration",
        percent(totals[0], totals[1]),
        percent(totals[6], totals[7])
    );
}

fn percent(base: u64, with: u64) -> f64 {
    (with as f64 - base as f64) * 100.0 / (base as f64).max(1.0)
}
