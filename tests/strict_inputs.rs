//! Inputs livesim must refuse, or name, rather than use as if they were
//! fine: agent folders whose `agent.json` cannot be read, scenario folders
//! reached through links, wire logs and journals that break their format,
//! misspelt tape kinds, scenario files that say a key twice, agent
//! invariants that can never hold, corpus entries replayed against another
//! agent, and files that start with a byte-order mark. Each is an error
//! naming the file, the line or entry and what is wrong (exit status 2
//! from the CLI), never a pass, a panic, or an input quietly skipped.

mod strict_inputs {
    pub mod agents;
    pub mod boms;
    pub mod corpus;
    pub mod flow_ci;
    pub mod imports;
    pub mod journals;
    pub mod tapes;
    mod wrong_files;
}

// Scratch folders removed when each test ends, shared with the other test
// binaries rather than copied.
#[path = "common/scratch.rs"]
mod scratch;

use scratch::{Scratch, scratch};

use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository (its `sim/` and `seeds/`).
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A fresh scratch folder for one test, removed when dropped.
pub fn temp(name: &str) -> Scratch {
    scratch(&format!("strict-{name}"))
}

/// Runs `livesim` in `dir`: exit status, stdout, stderr.
pub fn livesim_in(dir: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_livesim"))
        .current_dir(dir)
        .args(args)
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("LIVESIM_HANG")
        .output()
        .expect("the livesim binary runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Asserts `livesim args` in `dir` refuses its input: exit status 2,
/// every one of `said` on stderr, no panic. Returns stderr.
pub fn refused(dir: &Path, args: &[&str], said: &[&str]) -> String {
    let (code, out, err) = livesim_in(dir, args);
    assert_eq!(code, Some(2), "{args:?}\n{out}{err}");
    for said in said {
        assert!(err.contains(said), "{args:?}: wanted {said:?} in\n{err}");
    }
    assert!(!err.contains("panicked"), "{args:?}\n{err}");
    err
}

/// `p` as an argument.
pub fn arg(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Copies the files of `from` (not its subfolders) into `to`.
pub fn copy_files(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            std::fs::copy(&path, to.join(path.file_name().unwrap())).unwrap();
        }
    }
}
