//! Recorded wire logs changed value by value, line by line, as a damaged
//! or hand-edited recording could hold them: a frame's field of the wrong
//! type, a time past u64, a direction or type emptied. `sim import` reads
//! what it can (each damaged line named with its file and line), and the
//! script it makes, replayed against `sim/weather`, never panics.

use std::path::Path;

use livesim::Seed;
use livesim::soak::{Agent, Case, Soak, import_wire_log, invariants};
use proptest::prelude::*;
use serde_json::Value;

use super::json_changes::{CHANGES, broken, cases, change_value};

/// The recorded logs, as lines.
fn logs() -> Vec<Vec<String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut files = vec![root.join("import/weather-python-sdk.jsonl")];
    for name in ["audio_turn", "text_turn", "tool_turn"] {
        files.push(root.join(format!("wire/logs/{name}.jsonl")));
    }
    files
        .iter()
        .map(|f| {
            std::fs::read_to_string(f)
                .expect("a recorded log")
                .lines()
                .map(str::to_string)
                .collect()
        })
        .collect()
}

proptest! {
    // PROPTEST_CASES (64 by default): each imported case is one replay.
    #![proptest_config(cases(64, 1))]

    /// A log with a line changed imports (naming each damaged line) or
    /// is refused with a reason, and what it imports replays without a
    /// panic.
    #[test]
    fn a_changed_log_imports_what_it_can_and_replays_without_a_panic(
        log in any::<prop::sample::Index>(),
        line in any::<prop::sample::Index>(),
        changes in prop::collection::vec((any::<u32>(), 0..CHANGES), 1..3),
    ) {
        let logs = logs();
        let mut lines = logs[log.index(logs.len())].clone();
        let at = line.index(lines.len());
        let mut value: Value = serde_json::from_str(&lines[at]).expect("a JSON line");
        change_value(&mut value, &changes);
        lines[at] = value.to_string();
        let bytes = lines.join("\n").into_bytes();
        let imported = match import_wire_log("changed.jsonl", &bytes, "changed") {
            Err(reason) => {
                prop_assert!(!reason.is_empty());
                return Ok(());
            }
            Ok(imported) => imported,
        };
        for damaged in &imported.damaged {
            prop_assert!(damaged.starts_with("changed.jsonl:"), "{}", damaged);
        }
        let weather = Agent::load(Path::new(env!("CARGO_MANIFEST_DIR")).join("sim/weather"))
            .expect("sim/weather");
        let case = Case::calm(Seed::new(1), imported.script);
        let run = Soak::agent(&weather).run_case(&case);
        let panics = broken(&run, &[invariants::PANIC]);
        prop_assert!(panics.is_empty(), "{:?}", panics);
    }
}
