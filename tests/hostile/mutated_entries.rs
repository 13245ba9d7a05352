//! The seeds corpus's entries changed value by value, as a hand edit or
//! a damaged disk could leave them: a seed, a fault rate, a swarm's
//! numbers, a script's frame or pause. Either livesim refuses the entry
//! with an error naming its file, or replaying it never panics, neither
//! the session nor anything around it. (24,000 changed entries found a
//! `goAway` whose `timeLeft` was u64::MAX seconds overflowing the
//! session's clock: `tests/session/resumption.rs`.)

use std::path::{Path, PathBuf};

use livesim::soak::{Agent, CorpusEntry, Soak, invariants};
use proptest::prelude::*;

use super::Scratch;
use super::json_changes::{CHANGES, broken, cases, changed};

/// Every entry of `seeds/`, with its agent's name.
fn entries() -> Vec<(String, PathBuf)> {
    let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds");
    let mut entries = Vec::new();
    for agent in std::fs::read_dir(&seeds).expect("seeds/") {
        let agent = agent.expect("an entry of seeds/").path();
        if !agent.is_dir() {
            continue;
        }
        let name = agent
            .file_name()
            .expect("a name")
            .to_string_lossy()
            .into_owned();
        for entry in std::fs::read_dir(&agent).expect("an agent's entries") {
            entries.push((name.clone(), entry.expect("an entry").path()));
        }
    }
    entries.sort();
    entries
}

proptest! {
    // PROPTEST_CASES (64 by default): each accepted case is one replay.
    #![proptest_config(cases(64, 1))]

    /// A changed corpus entry is refused naming its file, or replays
    /// without a panic.
    #[test]
    fn a_changed_entry_is_refused_by_name_or_replays_without_a_panic(
        entry in any::<prop::sample::Index>(),
        changes in prop::collection::vec((any::<u32>(), 0..CHANGES), 1..3),
    ) {
        let all = entries();
        let (agent, path) = &all[entry.index(all.len())];
        let text = std::fs::read_to_string(path).expect("the entry");
        let scratch = Scratch::new("entry.json");
        scratch.write(changed(&text, &changes).as_bytes());
        let loaded = CorpusEntry::load(scratch.path());
        let entry = match loaded {
            Err(error) => {
                let said = error.to_string();
                prop_assert!(said.contains("entry.json"), "the error names no file: {}", said);
                return Ok(());
            }
            Ok(entry) => entry,
        };
        let agent = Agent::load(Path::new(env!("CARGO_MANIFEST_DIR")).join("sim").join(agent))
            .expect("a sim/ agent");
        let run = Soak::agent(&agent).replay(&entry);
        let panics = broken(&run, &[invariants::PANIC]);
        prop_assert!(panics.is_empty(), "{:?}", panics);
    }
}
