//! The mutation journal: one [`StateMutation`] per state write, in order,
//! sent to sinks that keep them in memory or in a JSONL file.
//!
//! A journal file starts with a header line, `{"v":1,"kind":"journal"}`
//! (files written before it existed still load); each line after it looks like
//! `{"seq":3,"key":"party_size","value":4,"timestamp":1767225600250}`
//! (timestamp in milliseconds since the Unix epoch; `"removed":true` marks a
//! key's removal). Sequence numbers strictly increase and timestamps never
//! go backwards, whatever the clock does. [`FileJournalSink::read`] reads a
//! journal file back.
//!
//! Every key, and what a damaged journal gives: `docs/formats/journal.md`.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::clock::Timestamp;
use crate::jsonl::{Bound, FileHeader, JsonlError, LineAppender, Parsed, Refused, parse_versioned};

/// The header's `kind` in a journal file.
pub const JOURNAL_KIND: &str = "journal";

/// The journal file format version: 1 has a header line
/// (`{"v":1,"kind":"journal"}`); files without one (version 0) still load.
pub const JOURNAL_VERSION: u32 = 1;

/// One write to the session state. Unknown keys are refused when a
/// journal is read (a typo'd `removd` would otherwise read as a write).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct StateMutation {
    /// Position in the journal: 1 for the first write, strictly increasing.
    pub seq: u64,
    /// The full key written.
    pub key: String,
    /// The value written (`null` for a removal).
    pub value: Value,
    /// When, by the state's clock (milliseconds since the epoch in JSON).
    pub timestamp: Timestamp,
    /// Whether this write removed the key.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub removed: bool,
}

// Read from an object only, never from an array of its fields.
crate::jsonl::object_record!(StateMutation, "a journal entry");

/// Where journal entries go. Called in sequence order, one call per write.
pub trait JournalSink: Send + Sync {
    /// Keeps one entry.
    fn record(&self, mutation: &StateMutation);
}

/// A journal kept in memory.
///
/// ```
/// use std::sync::Arc;
/// use livesim::state::{MemoryJournalSink, State};
///
/// let journal = Arc::new(MemoryJournalSink::new());
/// let state = State::new().with_journal_sink(journal.clone());
/// state.set("party_size", 4);
/// let entries = journal.entries();
/// assert_eq!((entries[0].seq, entries[0].key.as_str()), (1, "party_size"));
/// ```
#[derive(Debug, Default)]
pub struct MemoryJournalSink {
    entries: Mutex<Vec<StateMutation>>,
}

impl MemoryJournalSink {
    /// An empty journal.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every entry recorded so far, in order.
    pub fn entries(&self) -> Vec<StateMutation> {
        self.entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Every entry recorded so far, in order, leaving the journal empty:
    /// for a session that is over, without copying what it wrote.
    #[cfg(feature = "simulation")]
    pub(crate) fn take(&self) -> Vec<StateMutation> {
        std::mem::take(&mut *self.entries.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

impl JournalSink for MemoryJournalSink {
    fn record(&self, mutation: &StateMutation) {
        self.entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(mutation.clone());
    }
}

/// A journal kept in a JSONL file, one entry per line.
///
/// Each entry is written whole with one `write` as it happens, so a crash
/// leaves at most a damaged end (a torn last line, perhaps with garbage
/// after it), which the reader reports with its line and byte offset and
/// skips, and [`append`](FileJournalSink::append) cuts off.
/// A write that fails is remembered: [`FileJournalSink::check`] returns it.
#[derive(Debug)]
pub struct FileJournalSink {
    path: PathBuf,
    file: Mutex<Writer>,
}

#[derive(Debug)]
struct Writer {
    file: LineAppender,
    error: Option<io::Error>,
}

impl FileJournalSink {
    /// Creates (or truncates) the journal file at `path`.
    pub fn create(path: impl AsRef<Path>) -> io::Result<Self> {
        let path = path.as_ref();
        let mut file = LineAppender::create(path).map_err(|e| with_path(e, "create", path))?;
        file.append(&FileHeader::line(JOURNAL_KIND, JOURNAL_VERSION))
            .map_err(|e| with_path(e, "write", path))?;
        Ok(Self::from_file(path, file))
    }

    /// Opens the journal file at `path` to append to it, creating it if
    /// needed. A torn last line (a crash mid-write) is cut off before the
    /// first new entry, so it cannot turn into a bad line in the middle; a
    /// file with a bad line in the middle is refused, naming the line.
    pub fn append(path: impl AsRef<Path>) -> io::Result<Self> {
        let path = path.as_ref();
        let bytes = match crate::jsonl::read_path(path, Bound::JSONL) {
            Ok(bytes) => bytes,
            Err(Refused::Io(e)) if e.kind() == io::ErrorKind::NotFound => {
                return Self::create(path);
            }
            Err(Refused::Io(e)) => return Err(with_path(e, "read", path)),
            Err(refused) => {
                let error = refused.into_jsonl(&path.display().to_string());
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    error.to_string(),
                ));
            }
        };
        // An empty file gets its header, as a new one does.
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Self::create(path);
        }
        let parsed = parse_journal(&path.display().to_string(), &bytes)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
        if let Some(torn) = &parsed.torn {
            tracing::warn!(file = %torn.file, line = torn.line, offset = torn.offset, "journal has a damaged end: it is cut off before the next entry");
        }
        let file = LineAppender::after(path, &bytes, parsed.torn.as_ref().map(|t| t.offset));
        Ok(Self::from_file(path, file))
    }

    fn from_file(path: &Path, file: LineAppender) -> Self {
        FileJournalSink {
            path: path.to_path_buf(),
            file: Mutex::new(Writer { file, error: None }),
        }
    }

    /// The file this journal writes.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the journal file at `path` back, one [`StateMutation`] per
    /// line, through the project's JSONL reader ([`crate::jsonl`]).
    ///
    /// A line that is not a journal entry is an error naming the file and
    /// the line. A torn last line (a crash in the middle of a write) is
    /// not: the entries before it are in `records`, the torn line is in
    /// `torn`, and a `tracing` warning says so. Timestamps come back to
    /// the millisecond, the file's unit. The file is read within the bounds
    /// of a JSONL file ([`read_bytes`](crate::jsonl::read_bytes)).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use livesim::state::{FileJournalSink, State};
    ///
    /// let path = std::env::temp_dir().join(format!("journal-doc-{}.jsonl", std::process::id()));
    /// let journal = Arc::new(FileJournalSink::create(&path)?);
    /// let state = State::new().with_journal_sink(journal.clone());
    /// state.set("party_size", 4);
    /// state.remove("party_size");
    /// journal.check()?;
    ///
    /// let read = FileJournalSink::read(&path)?;
    /// assert_eq!(read.records.len(), 2);
    /// assert!(read.records[1].removed);
    /// assert!(read.torn.is_none());
    /// # std::fs::remove_file(&path)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn read(path: impl AsRef<Path>) -> Result<Parsed<StateMutation>, JsonlError> {
        let path = path.as_ref();
        let name = path.display().to_string();
        let bytes = crate::jsonl::read_bytes(path)?;
        let parsed = parse_journal(&name, &bytes)?;
        if let Some(torn) = &parsed.torn {
            tracing::warn!(
                file = %torn.file,
                line = torn.line,
                offset = torn.offset,
                bytes = torn.bytes,
                "journal file has a damaged end; the entries before it are read"
            );
        }
        Ok(parsed)
    }

    /// Flushes to disk and returns the first write error, if any happened.
    pub fn check(&self) -> io::Result<()> {
        let mut writer = self.file.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(e) = writer.error.take() {
            return Err(e);
        }
        writer
            .file
            .sync()
            .map_err(|e| with_path(e, "sync", &self.path))
    }
}

impl JournalSink for FileJournalSink {
    fn record(&self, mutation: &StateMutation) {
        let mut line = match serde_json::to_vec(mutation) {
            Ok(line) => line,
            Err(e) => {
                tracing::warn!(path = %self.path.display(), seq = mutation.seq, "journal entry not serializable: {e}");
                return;
            }
        };
        line.push(b'\n');
        let mut writer = self.file.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(e) = writer.file.append(&line) {
            tracing::warn!(path = %self.path.display(), seq = mutation.seq, "journal write failed: {e}");
            if writer.error.is_none() {
                writer.error = Some(with_path(e, "write", &self.path));
            }
        }
    }
}

/// A journal's entries: after its header, or the whole file for one
/// written before headers.
fn parse_journal(file: &str, bytes: &[u8]) -> Result<Parsed<StateMutation>, JsonlError> {
    parse_versioned(file, bytes, JOURNAL_KIND, JOURNAL_VERSION)
}

fn with_path(e: io::Error, what: &str, path: &Path) -> io::Error {
    io::Error::new(
        e.kind(),
        format!("could not {what} journal {}: {e}", path.display()),
    )
}
