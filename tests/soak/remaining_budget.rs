//! `session:remaining_budget_ms` counts the session's one budget down,
//! whatever its connections (`telemetry`).

use livesim::Seed;
use livesim::soak::{Soak, invariants};
use serde_json::json;

use super::{agent, verdict};

/// A session whose remaining budget starts over (here: 1 s more from the
/// third tick on, as one counting from its latest connection would give)
/// or reads 0 before the budget is spent fails `telemetry`, naming the
/// journal entry.
#[test]
fn the_remaining_budget_counts_one_budget_down() {
    let soak = Soak::agent(&agent("resumable")).check_determinism_every(0);
    let good = (0..20)
        .find_map(|s| {
            let run = soak.run_seed(Seed::new(s));
            let record = run.record.filter(|_| run.failures.is_empty())?;
            let ticks = record
                .journal
                .iter()
                .filter(|m| m.key == "session:remaining_budget_ms")
                .count();
            (ticks >= 4).then_some(record)
        })
        .expect("a resumable seed under 20 with four ticks");
    assert_eq!(verdict(invariants::TELEMETRY, &good), Ok(()));
    let remaining: Vec<usize> = (0..good.journal.len())
        .filter(|&i| good.journal[i].key == "session:remaining_budget_ms")
        .collect();

    let mut restarted = good.clone();
    for &i in &remaining[2..] {
        let value = restarted.journal[i].value.as_u64().unwrap();
        restarted.journal[i].value = json!(value + 1000);
    }
    let err = verdict(invariants::TELEMETRY, &restarted).unwrap_err();
    assert!(
        err.contains(&format!(
            "(journal #{})",
            restarted.journal[remaining[2]].seq
        )) && err.ends_with("the session's budget counts from its start, whatever its connections"),
        "{err}"
    );

    let mut spent = good.clone();
    spent.journal[remaining[1]].value = json!(0);
    let err = verdict(invariants::TELEMETRY, &spent).unwrap_err();
    assert!(
        err.starts_with("session:remaining_budget_ms is 0 at elapsed"),
        "{err}"
    );
}
