//! Tapes, tested from the outside: every tape example of seeds 000 and
//! 001, record→replay round trips in memory and in files, matching and
//! misses, the honest scripted model, torn and bad tape files, the reader
//! under byte splits, and journals read back.

mod file_tape;
mod journal;
mod matching;
mod mock_llm;
mod round_trip;
mod seeds;
mod splits;

use std::path::{Path, PathBuf};

/// A file under the temp directory, unique to one test in this process,
/// removed when dropped (also when the test fails).
pub struct TempFile(PathBuf);

impl TempFile {
    /// `<temp>/livesim-tape-<test>-<pid>.jsonl`, not yet created.
    pub fn new(test: &str) -> Self {
        let path =
            std::env::temp_dir().join(format!("livesim-tape-{test}-{}.jsonl", std::process::id()));
        let _ = std::fs::remove_file(&path);
        TempFile(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn read(&self) -> Vec<u8> {
        std::fs::read(&self.0).unwrap()
    }

    pub fn write(&self, bytes: &[u8]) {
        std::fs::write(&self.0, bytes).unwrap();
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
