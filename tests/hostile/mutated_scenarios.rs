//! Scenario files and the specs they run against, changed value by value:
//! `flow ci` runs what it can read, and names the file of what it cannot,
//! never a panic.

use std::path::Path;

use livesim::simulation::{Corpus, ScenarioOutcome};
use proptest::prelude::*;

use super::Scratch;
use super::json_changes::{CHANGES, cases, changed};

/// The `sim/` agents with scenario files, and each one's files.
fn folders() -> Vec<(String, Vec<String>)> {
    let sim = Path::new(env!("CARGO_MANIFEST_DIR")).join("sim");
    let mut found = Vec::new();
    for name in ["booking", "checkout", "payment", "refunds"] {
        let mut files: Vec<String> = std::fs::read_dir(sim.join(name))
            .expect("an agent folder")
            .map(|e| {
                e.expect("an entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .filter(|n| n.ends_with(".scenario.json") || n.ends_with(".spec.json"))
            .collect();
        files.sort();
        found.push((name.to_string(), files));
    }
    found
}

proptest! {
    // PROPTEST_CASES (64 by default).
    #![proptest_config(cases(64, 1))]

    /// A changed scenario or spec: every scenario has a result, and each
    /// one that could not run names the file at fault.
    #[test]
    fn a_changed_scenario_or_spec_is_run_or_named(
        folder in any::<prop::sample::Index>(),
        file in any::<prop::sample::Index>(),
        changes in prop::collection::vec((any::<u32>(), 0..CHANGES), 1..3),
    ) {
        let folders = folders();
        let (name, files) = &folders[folder.index(folders.len())];
        let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("sim").join(name);
        let file = &files[file.index(files.len())];
        let scratch = Scratch::new("scenarios");
        std::fs::create_dir_all(scratch.path()).expect("the scratch folder");
        for f in files {
            let text = std::fs::read_to_string(from.join(f)).expect("a file");
            let text = if f == file { changed(&text, &changes) } else { text };
            std::fs::write(scratch.path().join(f), text).expect("written");
        }
        let corpus = match Corpus::discover(scratch.path()) {
            Ok(corpus) => corpus,
            Err(error) => {
                prop_assert!(error.to_string().contains(file.as_str()), "{}", error);
                return Ok(());
            }
        };
        let report = corpus.run();
        let scenarios = files.iter().filter(|f| f.ends_with(".scenario.json")).count();
        prop_assert_eq!(report.results.len(), scenarios);
        for result in &report.results {
            if let ScenarioOutcome::Error { problem } = &result.outcome {
                prop_assert!(problem.contains(file.as_str()), "{}", problem);
            }
        }
    }
}
