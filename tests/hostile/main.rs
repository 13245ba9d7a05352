//! livesim probed as an attacker and a clumsy user would probe it: a
//! planted API key at every log level, adversarial text for the
//! redactor, `livesim serve` against bad clients (huge and malformed
//! frames, silent clients, plain HTTP, escape sequences), the files it
//! writes (recordings, its certificate) against links and earlier runs,
//! damaged and typo'd files, named pipes where a file should be, escape
//! sequences in files (and in a soak's names) reaching the terminal,
//! numbers beyond u64, and the wording of failure reports.
//!
//! Every test here runs in `cargo test`; the large sizes (a 60 MiB
//! message, 600 junk frames, 10 MB of adversarial text) run when
//! `LIVESIM_HOSTILE_LARGE=1` is set, as the nightly job does.

// The serve suite's harness (run the built `livesim serve`, read what it
// printed), shared rather than copied; not every helper is used here.
#[path = "../serve/harness.rs"]
#[allow(dead_code)]
mod harness;

mod files;
mod json_changes;
mod mutated_agents;
mod mutated_entries;
mod mutated_logs;
mod mutated_scenarios;
mod mutated_servers;
mod numbers;
mod pipes;
mod redaction;
mod reports;
mod secrets;
mod serve_files;
mod serve_limits;
mod serve_protocol;
mod serve_secrets;
mod terminal;
mod typos;

/// Whether the nightly sizes were asked for.
pub fn large() -> bool {
    std::env::var("LIVESIM_HOSTILE_LARGE").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// A file under the temp directory, unique in this process, removed when
/// dropped; or a folder, when the test makes one there.
pub struct Scratch(std::path::PathBuf);

impl Scratch {
    pub fn new(label: &str) -> Self {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!(
            "livesim-hostile-{}-{n}-{label}",
            std::process::id()
        ));
        let _ = std::fs::remove_file(&path);
        Scratch(path)
    }

    pub fn path(&self) -> &std::path::Path {
        &self.0
    }

    pub fn write(&self, bytes: &[u8]) {
        std::fs::write(&self.0, bytes).unwrap();
    }

    pub fn read(&self) -> Vec<u8> {
        std::fs::read(&self.0).unwrap()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // A folder goes with everything in it; a link, not what it leads to.
        match std::fs::symlink_metadata(&self.0) {
            Ok(meta) if meta.is_dir() => {
                let _ = std::fs::remove_dir_all(&self.0);
            }
            _ => {
                let _ = std::fs::remove_file(&self.0);
            }
        }
    }
}
