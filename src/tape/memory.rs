//! A tape held in memory.

use std::sync::Mutex;

use super::canonical::canonical_json;
use super::entry::{Tape, TapeEntry, TapeError};

/// A tape held in memory: record into it, then replay from it, or load
/// entries saved elsewhere with [`MemoryTape::from_entries`].
///
/// ```
/// use livesim::tape::{MemoryTape, Tape, TapeEntry, canonical_json};
/// use serde_json::json;
///
/// let tape = MemoryTape::new();
/// tape.record(TapeEntry::ok("resolver:balance", json!({"id": 1}), json!(10))).unwrap();
/// tape.record(TapeEntry::ok("resolver:balance", json!({"id": 1}), json!(12))).unwrap();
/// let input = canonical_json(&json!({"id": 1}));
/// assert_eq!(tape.next("resolver:balance", &input).unwrap().output, Some(json!(10)));
/// assert_eq!(tape.next("resolver:balance", &input).unwrap().output, Some(json!(12)));
/// assert!(tape.next("resolver:balance", &input).is_none());
/// ```
#[derive(Debug, Default)]
pub struct MemoryTape {
    calls: Mutex<Vec<Recorded>>,
}

#[derive(Debug)]
struct Recorded {
    entry: TapeEntry,
    canonical_input: String,
    replayed: bool,
}

impl MemoryTape {
    /// An empty tape.
    pub fn new() -> Self {
        Self::default()
    }

    /// A tape holding `entries`, ready to replay them.
    pub fn from_entries(entries: impl IntoIterator<Item = TapeEntry>) -> Self {
        let tape = Self::new();
        tape.lock().extend(entries.into_iter().map(Recorded::new));
        tape
    }

    /// Every call recorded (or loaded) so far, in order.
    pub fn entries(&self) -> Vec<TapeEntry> {
        self.lock().iter().map(|r| r.entry.clone()).collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Recorded>> {
        self.calls.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Recorded {
    fn new(entry: TapeEntry) -> Self {
        Recorded {
            canonical_input: canonical_json(&entry.input),
            entry,
            replayed: false,
        }
    }
}

impl Tape for MemoryTape {
    fn record(&self, entry: TapeEntry) -> Result<(), TapeError> {
        self.lock().push(Recorded::new(entry));
        Ok(())
    }

    fn next(&self, kind: &str, canonical_input: &str) -> Option<TapeEntry> {
        let mut calls = self.lock();
        let found = calls.iter_mut().find(|r| {
            !r.replayed && r.entry.kind == kind && r.canonical_input == canonical_input
        })?;
        found.replayed = true;
        Some(found.entry.clone())
    }
}
