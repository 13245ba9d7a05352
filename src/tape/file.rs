//! A tape kept in a JSONL file, one [`TapeEntry`] per line.
//!
//! The in-memory side (matching, replay order, what was replayed) is a
//! [`MemoryTape`]; this file adds only what a file needs: loading through
//! the project's JSONL reader, writing each entry as it is recorded, and
//! what to do with a file a crash left torn.
//!
//! Every key, and what a damaged tape gives: `docs/formats/tape.md`.

use std::borrow::Cow;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use super::entry::{Tape, TapeEntry, TapeError, entry_problem};
use super::memory::MemoryTape;
use crate::jsonl::{
    Bound, FileHeader, JsonlError, LineAppender, Parsed, Refused, parse_versioned_with,
};

/// The header's `kind` in a tape file.
pub const TAPE_KIND: &str = "tape";

/// The tape file format version: 1 has a header line
/// (`{"v":1,"kind":"tape"}`); files without one (version 0) still load.
pub const TAPE_VERSION: u32 = 1;

/// A tape kept in a JSONL file: a header line (`{"v":1,"kind":"tape"}`),
/// then one [`TapeEntry`] per line.
///
/// [`create`](FileTape::create) starts a file and records into it;
/// [`open`](FileTape::open) loads every entry of an existing file for
/// replay and appends any call recorded later. Matching and replay order
/// are those of [`MemoryTape`]: the first not-yet-replayed entry of the
/// same kind and canonical input answers.
///
/// Each entry is written whole, with one write, when it is recorded, so a
/// crash leaves at most a torn last line (and, on some file systems, NUL
/// bytes or half a block after it). [`open`](FileTape::open) reports such
/// a damaged end ([`torn_line`](FileTape::torn_line) and a `tracing`
/// warning, with its line and byte offset) and replays the entries before
/// it; the damaged bytes stay in the file until the next
/// [`record`](Tape::record), which first cuts the file back to the end of
/// its last complete entry so that the new entry starts a line of its own.
///
/// One `FileTape` should own its file while it records: it remembers where
/// the file's complete lines end, and does not expect others to append.
///
/// ```
/// use livesim::tape::{FileTape, Tape, TapeEntry, canonical_json};
/// use serde_json::json;
///
/// let path = std::env::temp_dir().join(format!("filetape-doc-{}.jsonl", std::process::id()));
/// let tape = FileTape::create(&path)?;
/// tape.record(TapeEntry::ok("resolver:balance", json!({"id": 1}), json!(10)))?;
/// drop(tape);
///
/// let tape = FileTape::open(&path)?;
/// assert!(tape.torn_line().is_none());
/// let input = canonical_json(&json!({"id": 1}));
/// assert_eq!(tape.next("resolver:balance", &input).unwrap().output, Some(json!(10)));
/// # std::fs::remove_file(&path).unwrap();
/// # Ok::<(), livesim::tape::TapeError>(())
/// ```
#[derive(Debug)]
pub struct FileTape {
    path: PathBuf,
    calls: MemoryTape,
    writer: Mutex<LineAppender>,
    torn: Option<TornEntry>,
}

/// The damaged end found by [`FileTape::open`]: what a crash in the middle
/// of a write left after the last complete entry (a torn line, and any
/// garbage after it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TornEntry {
    /// The tape file.
    pub file: String,
    /// The 1-based line the damage starts on.
    pub line: u64,
    /// Where that line starts, in bytes from the start of the file.
    pub offset: u64,
    /// The damaged bytes, exactly as they were in the file.
    pub bytes: Vec<u8>,
    /// The JSON parser's account of what is wrong with the first of them.
    pub problem: String,
}

impl TornEntry {
    /// The torn bytes as text (an invalid UTF-8 sequence, as a cut in the
    /// middle of a character leaves, shows as `U+FFFD`).
    pub fn text(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.bytes)
    }
}

impl fmt::Display for TornEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "tape {}, line {}: damaged end ({} bytes from byte {}, as a crash mid-write leaves \
             it): {}",
            self.file,
            self.line,
            self.bytes.len(),
            self.offset,
            self.problem
        )
    }
}

impl FileTape {
    /// Creates the tape file at `path`, or empties it if it exists, and
    /// records into it.
    pub fn create(path: impl AsRef<Path>) -> Result<Self, TapeError> {
        let path = path.as_ref();
        let mut file = LineAppender::create(path).map_err(|e| io_error(path, e))?;
        file.append(&FileHeader::line(TAPE_KIND, TAPE_VERSION))
            .map_err(|e| io_error(path, e))?;
        Ok(FileTape {
            path: path.to_path_buf(),
            calls: MemoryTape::new(),
            writer: Mutex::new(file),
            torn: None,
        })
    }

    /// Loads every entry of the tape file at `path` for replay; calls
    /// recorded later are appended to the file.
    ///
    /// A missing or unreadable file is [`TapeError::Io`]; a line that is not
    /// a tape entry is [`TapeError::BadLine`], naming the file and the line.
    /// A torn last line is not an error: see
    /// [`torn_line`](FileTape::torn_line). The file is read within the
    /// bounds of a JSONL file ([`read_bytes`](crate::jsonl::read_bytes)):
    /// past them it is refused, naming the bound (and the line too long).
    pub fn open(path: impl AsRef<Path>) -> Result<Self, TapeError> {
        Self::open_checked(path.as_ref(), |_| None)
    }

    /// [`open`](FileTape::open), with `check` saying why an entry cannot
    /// serve where this tape is used (a model call's output that is no
    /// model response, for an extractor): refused as a bad line.
    pub(crate) fn open_checked(
        path: &Path,
        check: impl Fn(&TapeEntry) -> Option<String>,
    ) -> Result<Self, TapeError> {
        let name = path.display().to_string();
        let bytes = crate::jsonl::read_path(path, Bound::JSONL).map_err(|e| match e {
            Refused::Io(e) => io_error(path, e),
            refused => from_jsonl(refused.into_jsonl(&name)),
        })?;
        // An empty file gets its header, as a new one does.
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return FileTape::create(path);
        }
        // An entry no call could replay (of a kind no call has, saying
        // neither or both of output and error) is refused, naming its
        // line, rather than kept where nothing can use it.
        let mut records = Vec::new();
        let torn = parse_versioned_with(
            &name,
            &bytes,
            TAPE_KIND,
            TAPE_VERSION,
            |line, entry: TapeEntry| {
                let problem = entry_problem(&entry).or_else(|| check(&entry));
                if let Some(problem) = problem {
                    return Err(JsonlError::BadLine {
                        file: name.clone(),
                        line,
                        problem,
                    });
                }
                records.push(entry);
                Ok(())
            },
        )
        .map_err(from_jsonl)?;
        let parsed = Parsed { records, torn };
        // A crash tears one line (and may leave NULs after it). Damage
        // with nothing good before it that runs over several lines is no
        // torn write but a file that is not a tape, which appending would
        // cut off.
        let blank = |line: &[u8]| line.iter().all(|b| b.is_ascii_whitespace() || *b == 0);
        if let Some(torn) = &parsed.torn
            && blank(&bytes[..torn.offset as usize])
            && bytes[torn.offset as usize..]
                .split(|b| *b == b'\n')
                .filter(|line| !blank(line))
                .count()
                > 1
        {
            return Err(TapeError::BadLine {
                path: name,
                line: torn.line,
                message: format!("not a tape entry, and no entry before it: {}", torn.problem),
            });
        }

        let torn = parsed.torn.map(|t| TornEntry {
            file: t.file,
            line: t.line,
            offset: t.offset,
            bytes: bytes[t.offset as usize..].to_vec(),
            problem: t.problem,
        });
        if let Some(torn) = &torn {
            tracing::warn!(
                path = %path.display(),
                line = torn.line,
                offset = torn.offset,
                bytes = torn.bytes.len(),
                "tape file has a damaged end: its complete entries are replayed, and the damaged \
                 bytes are cut off before the next record"
            );
        }
        let writer = LineAppender::after(path, &bytes, torn.as_ref().map(|t| t.offset));
        Ok(FileTape {
            path: path.to_path_buf(),
            calls: MemoryTape::from_entries(parsed.records),
            writer: Mutex::new(writer),
            torn,
        })
    }

    /// The torn last line [`open`](FileTape::open) found, if the file ended
    /// in the middle of an entry. Its entry is not replayed; the bytes are
    /// cut from the file before the next record.
    pub fn torn_line(&self) -> Option<&TornEntry> {
        self.torn.as_ref()
    }

    /// Every call loaded or recorded so far, in order.
    pub fn entries(&self) -> Vec<TapeEntry> {
        self.calls.entries()
    }

    /// The tape file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn writer(&self) -> MutexGuard<'_, LineAppender> {
        // The writer's fields change only after a write's outcome is known,
        // so a poisoned lock still guards a consistent writer.
        self.writer.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Tape for FileTape {
    /// Writes the entry to the file, then keeps it for replay. An entry
    /// whose write failed is not kept, so the tape in memory never holds
    /// more than its file.
    fn record(&self, entry: TapeEntry) -> Result<(), TapeError> {
        // What `open` would refuse is not written: the file must read back.
        if let Some(problem) = entry_problem(&entry) {
            return Err(io_error(
                &self.path,
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("cannot record this call: {problem}"),
                ),
            ));
        }
        let mut line = serde_json::to_vec(&entry).map_err(|e| {
            io_error(
                &self.path,
                io::Error::new(io::ErrorKind::InvalidData, format!("entry not JSON: {e}")),
            )
        })?;
        line.push(b'\n');
        // Held until the entry is in memory too, so the file's order and
        // the replay order are the same.
        let mut writer = self.writer();
        writer.append(&line).map_err(|e| io_error(&self.path, e))?;
        self.calls.record(entry)
    }

    fn next(&self, kind: &str, canonical_input: &str) -> Option<TapeEntry> {
        self.calls.next(kind, canonical_input)
    }
}

fn io_error(path: &Path, source: io::Error) -> TapeError {
    TapeError::Io {
        path: path.display().to_string(),
        source,
    }
}

fn from_jsonl(error: JsonlError) -> TapeError {
    match error {
        JsonlError::BadLine {
            file,
            line,
            problem,
        } => TapeError::BadLine {
            path: file,
            line,
            message: problem,
        },
        // `parse_bytes` reads no files, but keep the file's name if it ever
        // reports one.
        JsonlError::Io { file, problem } => TapeError::Io {
            path: file,
            source: io::Error::other(problem),
        },
    }
}
