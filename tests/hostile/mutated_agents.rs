//! Agent files and their specs changed value by value, as a user editing
//! one (or an attacker writing one) could leave them: a number made huge,
//! negative, fractional or past u64, a list emptied or reversed, a key
//! dropped, a string emptied or made long. Either livesim refuses the
//! file with an error naming it, or every session it soaks from the file
//! keeps livesim's own invariants: a file livesim accepted never makes it
//! panic, hang, break the protocol, lose a frame or fail a correct
//! session. (A survey of 12,000 such changes found two false alarms this
//! way, for tools that take minutes: `tests/soak/slow_tools.rs`.)

use std::path::{Path, PathBuf};

use livesim::Seed;
use livesim::soak::{Agent, Soak};
use proptest::prelude::*;

use super::Scratch;
use super::json_changes::{CHANGES, cases, change_value, changed};

/// The agents of `sim/`, each a folder.
fn agents() -> Vec<PathBuf> {
    let sim = Path::new(env!("CARGO_MANIFEST_DIR")).join("sim");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&sim)
        .expect("sim/ is there")
        .map(|e| e.expect("an entry of sim/").path())
        .filter(|p| p.join("agent.json").is_file())
        .collect();
    dirs.sort();
    dirs
}

/// Copies the files of agent folder `from` into a scratch folder named
/// like it, with file `changed` replaced by `text`.
fn folder_with(from: &Path, changed: &str, text: &str, scratch: &Scratch) -> PathBuf {
    let dir = scratch
        .path()
        .join(from.file_name().expect("a folder name"));
    std::fs::create_dir_all(&dir).expect("the scratch folder");
    for entry in std::fs::read_dir(from).expect("the agent folder") {
        let path = entry.expect("an entry").path();
        if path.is_file() {
            std::fs::copy(&path, dir.join(path.file_name().expect("a name"))).expect("copied");
        }
    }
    std::fs::write(dir.join(changed), text).expect("the changed file written");
    dir
}

/// What happened to one changed agent file: `Err` with what went wrong.
fn judge(from: &Path, changed: &str, text: &str) -> Result<(), String> {
    let scratch = Scratch::new("agent");
    std::fs::create_dir_all(scratch.path()).expect("scratch");
    let dir = folder_with(from, changed, text, &scratch);
    let loaded = std::panic::catch_unwind(|| Agent::load(&dir))
        .map_err(|_| "reading the file panicked".to_string())?;
    let agent = match loaded {
        Err(error) => {
            let said = error.to_string();
            return if said.contains(changed) {
                Ok(())
            } else {
                Err(format!("the error names no file: {said}"))
            };
        }
        Ok(agent) => agent,
    };
    let soak = Soak::agent(&agent)
        .check_determinism_every(0)
        .explore(false)
        .keep(false);
    for seed in 0..2 {
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            soak.run_seed(Seed::new(seed))
        }))
        .map_err(|_| format!("seed {seed}: the soak panicked"))?;
        // livesim's own invariants have bare names; the agent's goals
        // name their arguments (`budget(…)`, `final(…)`), and a changed
        // file may well miss them.
        if let Some(f) = run.failures.iter().find(|f| !f.invariant.contains('(')) {
            return Err(format!("seed {seed}: {}: {}", f.invariant, f.message));
        }
    }
    Ok(())
}

/// The files of agent folder `dir` a user writes: `agent.json`, and its
/// spec and its extractor's tape, if it has them.
fn written_files(dir: &Path) -> Vec<String> {
    let mut files = vec!["agent.json".to_string()];
    let mut specs: Vec<String> = std::fs::read_dir(dir)
        .expect("the agent folder")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|n| n.ends_with(".spec.json") || n.ends_with(".tape.jsonl"))
        .collect();
    specs.sort();
    files.extend(specs);
    files
}

proptest! {
    // Half of PROPTEST_CASES (128 by default): an accepted file costs
    // two whole sessions (about one change in six is accepted).
    #![proptest_config(cases(128, 2))]

    /// An agent file, spec or tape livesim accepts never makes a session
    /// break livesim's own invariants, and one it refuses is named.
    #[test]
    fn a_changed_agent_file_is_refused_by_name_or_soaks_clean(
        agent in any::<prop::sample::Index>(),
        file in any::<prop::sample::Index>(),
        line in any::<prop::sample::Index>(),
        changes in prop::collection::vec((any::<u32>(), 0..CHANGES), 1..3),
    ) {
        let dirs = agents();
        let dir = &dirs[agent.index(dirs.len())];
        let files = written_files(dir);
        let file = &files[file.index(files.len())];
        let text = std::fs::read_to_string(dir.join(file)).expect("the file");
        let text = if file.ends_with(".jsonl") {
            // One line of the tape, kept on one line.
            let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
            let at = line.index(lines.len());
            let mut value: serde_json::Value =
                serde_json::from_str(&lines[at]).expect("a JSON line");
            change_value(&mut value, &changes);
            lines[at] = value.to_string();
            lines.join("\n") + "\n"
        } else {
            changed(&text, &changes)
        };
        prop_assert_eq!(judge(dir, file, &text), Ok(()));
    }
}
