//! Journal files read for scenarios: every entry with the line it came
//! from, so a problem anywhere (a line that is not a journal entry, a
//! `flow:*` value of the wrong shape) is reported as `file:line`.
//!
//! A journal file is what [`FileJournalSink`](crate::state::FileJournalSink)
//! writes: one [`StateMutation`] per line. The lines are decoded by the
//! project's JSONL decoder ([`crate::jsonl`]), so the rules are the same
//! as everywhere else: blank lines are skipped, a line that is not an entry
//! is an error, and a torn last line (a crash mid-write) is kept aside in
//! [`JournalFile::torn`] with the entries before it intact.

use std::path::Path;

use serde_json::Value;

use super::from_journal::JournalRecord;
use super::scenario::Scenario;
use crate::jsonl::{Bound, JsonlError, Refused, TornLine, parse_versioned_with};
use crate::state::{JOURNAL_KIND, JOURNAL_VERSION, StateMutation};

/// A journal read from a file or a stream.
///
/// ```
/// use livesim::simulation::{JournalFile, Step};
///
/// let text = br#"{"seq":1,"key":"flow:tool_call","value":{"tool":"set_party","id":"call-1"},"timestamp":0}
///
/// {"seq":2,"key":"party_size","value":4,"timestamp":5}
/// "#;
/// let journal = JournalFile::parse("user-123.journal.jsonl", text).unwrap();
/// assert_eq!(journal.entries[1].line, 3);
/// let scenario = journal.scenario("booking-incident").unwrap();
/// assert_eq!(scenario.steps[0], Step::ExpectAllowed("set_party".into()));
///
/// let err = JournalFile::parse("j.jsonl", b"{\"seq\":1}\n").unwrap_err();
/// assert!(err.to_string().starts_with("j.jsonl:1: not a journal entry"), "{err}");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct JournalFile {
    /// The file (or the name given to the stream), as errors name it.
    pub origin: String,
    /// Every entry, in file order.
    pub entries: Vec<JournalLine>,
    /// The torn last line, if the file ends in the middle of an entry.
    pub torn: Option<TornLine>,
}

/// One journal entry and the line it is on.
#[derive(Debug, Clone, PartialEq)]
pub struct JournalLine {
    /// 1-based line number in the file.
    pub line: u64,
    /// The entry.
    pub mutation: StateMutation,
}

/// Why a journal cannot be used: the file, the line when there is one, and
/// what was wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}{}: {problem}", self.line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct JournalFileError {
    /// The file (or stream name).
    pub file: String,
    /// The 1-based line, when the problem is on one.
    pub line: Option<u64>,
    /// What was wrong.
    pub problem: String,
}

impl JournalFile {
    /// Reads the journal file at `path`, within the bounds of a JSONL
    /// file ([`read_bytes`](crate::jsonl::read_bytes)): a file past them
    /// (or a line, with its number) is refused, naming the bound.
    pub fn read(path: impl AsRef<Path>) -> Result<JournalFile, JournalFileError> {
        let path = path.as_ref();
        let origin = path.display().to_string();
        let bytes = crate::jsonl::read_path(path, Bound::JSONL).map_err(|e| match e {
            Refused::Io(e) => JournalFileError {
                file: origin.clone(),
                line: None,
                problem: format!("cannot read it: {e}"),
            },
            Refused::TooLarge(problem) => JournalFileError {
                file: origin.clone(),
                line: None,
                problem,
            },
            Refused::LongLine(line, problem) => JournalFileError {
                file: origin.clone(),
                line: Some(line),
                problem,
            },
        })?;
        JournalFile::parse(&origin, &bytes)
    }

    /// Decodes journal bytes; `origin` names them in errors.
    pub fn parse(origin: &str, bytes: &[u8]) -> Result<JournalFile, JournalFileError> {
        // Every journal livesim writes starts with its header, even one
        // of a session that wrote nothing: an empty file is something
        // else (a path mixed up, a copy that failed).
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Err(JournalFileError {
                file: origin.to_string(),
                line: None,
                problem: format!(
                    "holds nothing: a state journal starts with its header line \
                     {{\"v\":{JOURNAL_VERSION},\"kind\":\"{JOURNAL_KIND}\"}}"
                ),
            });
        }
        let mut entries = Vec::new();
        let torn = parse_versioned_with(
            origin,
            bytes,
            JOURNAL_KIND,
            JOURNAL_VERSION,
            |line, mutation: StateMutation| {
                entries.push(JournalLine { line, mutation });
                Ok::<(), JsonlError>(())
            },
        )
        .map_err(|error| match error {
            JsonlError::BadLine {
                file,
                line,
                problem,
            } => JournalFileError {
                file,
                line: Some(line),
                problem: format!("{NOT_AN_ENTRY}: {problem}"),
            },
            JsonlError::Io { file, problem } => JournalFileError {
                file,
                line: None,
                problem,
            },
        })?;
        // Damage with no good entry before it is not a crash's torn end
        // but a file that holds no journal at all.
        if let (true, Some(damage)) = (entries.is_empty(), &torn) {
            return Err(JournalFileError {
                file: damage.file.clone(),
                line: Some(damage.line),
                problem: format!("{NOT_AN_ENTRY}: {}", damage.problem),
            });
        }
        // A journal is written in order: an entry out of it was edited in
        // or spliced from another journal, and its place would be a guess.
        for pair in entries.windows(2) {
            if let Some(problem) = out_of_order(&pair[0].mutation, pair[0].line, &pair[1].mutation)
            {
                return Err(JournalFileError {
                    file: origin.to_string(),
                    line: Some(pair[1].line),
                    problem,
                });
            }
        }
        Ok(JournalFile {
            origin: origin.to_string(),
            entries,
            torn,
        })
    }

    /// The scenario the journal implies (see
    /// [`Scenario::from_journal`]); a `flow:*` entry whose value does not
    /// have the documented shape is an error naming its line.
    pub fn scenario(&self, name: impl Into<String>) -> Result<Scenario, JournalFileError> {
        Scenario::try_from_journal(name, &self.entries).map_err(|e| {
            let line = self
                .entries
                .iter()
                .find(|entry| entry.mutation.seq == e.seq && entry.mutation.key == e.key)
                .map(|entry| entry.line);
            JournalFileError {
                file: self.origin.clone(),
                line,
                problem: format!("entry seq {} ({}): {}", e.seq, e.key, e.problem),
            }
        })
    }

    /// The scenario name a journal file suggests: its file name without
    /// `.jsonl` and then `.journal` (`user-123.journal.jsonl` gives
    /// `user-123`). `None` when nothing is left.
    ///
    /// ```
    /// use livesim::simulation::JournalFile;
    ///
    /// assert_eq!(JournalFile::name_for("logs/user-123.journal.jsonl").as_deref(), Some("user-123"));
    /// assert_eq!(JournalFile::name_for("incident.jsonl").as_deref(), Some("incident"));
    /// assert_eq!(JournalFile::name_for(".jsonl"), None);
    /// ```
    pub fn name_for(path: impl AsRef<Path>) -> Option<String> {
        let file = path.as_ref().file_name()?.to_str()?;
        let name = file.strip_suffix(".jsonl").unwrap_or(file);
        let name = name.strip_suffix(".journal").unwrap_or(name);
        (!name.is_empty()).then(|| name.to_string())
    }
}

/// Why `entry` cannot follow `before` (on line `before_line`) in a
/// journal, if it cannot: a journal is written in order, so an entry out
/// of it was edited in or spliced from another journal, and its place
/// would be a guess. The one rule of order, for this reader and for `sim
/// import` (which names such an entry as damaged).
pub(crate) fn out_of_order(
    before: &StateMutation,
    before_line: u64,
    entry: &StateMutation,
) -> Option<String> {
    if entry.seq <= before.seq {
        Some(format!(
            "seq {} after seq {} (line {before_line}): a journal's seq strictly increases",
            entry.seq, before.seq
        ))
    } else if entry.timestamp < before.timestamp {
        Some(format!(
            "timestamp {} is before the previous entry's {} (line {before_line}): a journal's \
             timestamps never go back",
            entry.timestamp.unix_millis(),
            before.timestamp.unix_millis()
        ))
    } else {
        None
    }
}

/// serde's position inside a one-line document ("at line 1 column 7")
/// says "column 7": the file's line is named already.
/// How an error names a line that is not a journal entry.
const NOT_AN_ENTRY: &str = "not a journal entry (one state mutation per line: \
                            {\"seq\", \"key\", \"value\", \"timestamp\"})";

impl JournalRecord for JournalLine {
    fn seq(&self) -> u64 {
        self.mutation.seq
    }
    fn key(&self) -> &str {
        &self.mutation.key
    }
    fn value(&self) -> &Value {
        &self.mutation.value
    }
}
