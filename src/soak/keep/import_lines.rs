//! Reading a recording to import, line by line, keeping what can be read:
//! a production file may be torn by a crash or mangled in transit, and an
//! import keeps every good line and names each bad one (file, line, what
//! is wrong). Shared by the wire log and the journal importers.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::simulation::{not_a_flow_key, out_of_order};
use crate::state::{JOURNAL_KIND, JOURNAL_VERSION, StateMutation};
use crate::transport::wire_log::{self, FrameLine};

/// What a recording's lines held.
pub(super) struct Lines<T> {
    /// Every good line, in file order.
    pub items: Vec<T>,
    /// Each damaged line: `file:line: what is wrong`.
    pub damaged: Vec<String>,
    /// Whether the file had its header line.
    pub header_seen: bool,
}

/// The kind of recording being read: its header's `kind`, and how a
/// message calls the file and one of its lines.
pub(super) struct Kind {
    /// The header's `kind`.
    pub header: &'static str,
    /// The file, in a message (`wire log`).
    pub file: &'static str,
    /// One line, in a message (`wire log line`).
    pub line: &'static str,
    /// What a good line holds, in a message (`frame`).
    pub item: &'static str,
    /// What wrote the file, in a message about a torn line (`recorder`).
    pub writer: &'static str,
}

/// A record of a recording, held to the checks of its file's own reader
/// (`WireLog::read`, `JournalFile::read`), so an import never takes as
/// whole what that reader refuses.
pub(super) trait Checked: DeserializeOwned {
    /// The reader's check of a header line (its text): a header it
    /// refuses (another version, an unknown key) refuses the whole file.
    fn check_header(text: &str) -> Result<(), String>;

    /// What makes this record damaged though it reads (a frame that gives
    /// two payloads, an entry out of order), given the last good record
    /// before it and that record's line.
    fn problem(&self, last: Option<(u64, &Self)>) -> Option<String>;
}

impl Checked for FrameLine {
    fn check_header(text: &str) -> Result<(), String> {
        wire_log::check_header(text).map(|_| ())
    }

    fn problem(&self, _: Option<(u64, &Self)>) -> Option<String> {
        FrameLine::problem(self)
    }
}

impl Checked for StateMutation {
    fn check_header(text: &str) -> Result<(), String> {
        crate::jsonl::check_header(text, JOURNAL_KIND, JOURNAL_VERSION).map(|_| ())
    }

    fn problem(&self, last: Option<(u64, &Self)>) -> Option<String> {
        if let Some(problem) = not_a_flow_key(&self.key) {
            return Some(format!("entry seq {} ({}): {problem}", self.seq, self.key));
        }
        last.and_then(|(line, before)| out_of_order(before, line, self))
    }
}

/// Reads `bytes` (named `file` in messages) as lines of `kind`, each a `T`.
///
/// A line is damaged, named and skipped, when it is not UTF-8 (the bytes
/// would otherwise read as U+FFFD, a change no one asked for), not JSON,
/// gives a key twice (which value was meant cannot be told), is not a
/// `T`, or is a `T` its file's reader refuses ([`Checked::problem`],
/// judged against the last good line). `Err` when nothing can be used: no
/// good line, a byte-order mark, or a header of another kind of file, or
/// one the file's reader refuses (another version, a key no header has).
pub(super) fn read<T: Checked>(file: &str, bytes: &[u8], kind: &Kind) -> Result<Lines<T>, String> {
    if let Some(problem) = crate::jsonl::bom(bytes) {
        return Err(format!("{file}:1: {problem}"));
    }
    let ends_whole = bytes.ends_with(b"\n");
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let lines: Vec<&[u8]> = if body.is_empty() {
        Vec::new()
    } else {
        body.split(|&b| b == b'\n').collect()
    };
    let mut read = Lines {
        items: Vec::new(),
        damaged: Vec::new(),
        header_seen: false,
    };
    // The line of the last good record.
    let mut last_good: Option<u64> = None;
    let damaged = |number: usize, problem: String| {
        format!("{file}:{number}: a damaged {}: {problem}", kind.line)
    };
    for (i, line) in lines.iter().enumerate() {
        let number = i + 1;
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let Ok(line) = std::str::from_utf8(line) else {
            let problem = crate::jsonl::line_not_utf8(line).unwrap_or_default();
            read.damaged.push(damaged(number, problem));
            continue;
        };
        let value: Value = match serde_json::from_str(line) {
            Ok(value) => value,
            Err(e) if i + 1 == lines.len() && !ends_whole => {
                read.damaged.push(format!(
                    "{file}:{number}: a torn last line (the {} stopped mid-write): {e}",
                    kind.writer
                ));
                continue;
            }
            Err(e) => {
                read.damaged
                    .push(format!("{file}:{number}: not a {}: {e}", kind.line));
                continue;
            }
        };
        if value.get("v").is_some() {
            match value.get("kind").and_then(Value::as_str) {
                Some(other) if other != kind.header => {
                    return Err(format!(
                        "{file}:{number}: this is a {other} file, not a {}",
                        kind.file
                    ));
                }
                Some(_) if read.header_seen => read
                    .damaged
                    .push(format!("{file}:{number}: a second header line, skipped")),
                Some(_) => {
                    T::check_header(line)
                        .map_err(|problem| format!("{file}:{number}: {problem}"))?;
                    read.header_seen = true;
                }
                None => read.damaged.push(format!(
                    "{file}:{number}: a header line without a kind, skipped"
                )),
            }
            continue;
        }
        // `Value` keeps the last of a key given twice and drops the other.
        if let Some(problem) = crate::jsonl::duplicate_key_in_line(line) {
            read.damaged.push(damaged(number, problem));
            continue;
        }
        // Every line is an object; serde's words for another value (an
        // array read as a struct's fields) would name its own internals.
        if !value.is_object() {
            read.damaged.push(format!(
                "{file}:{number}: not a {}: expected an object, found {}",
                kind.line,
                crate::soak::file_reader::describe(&value)
            ));
            continue;
        }
        match serde_json::from_value::<T>(value) {
            Ok(item) => match item.problem(last_good.zip(read.items.last())) {
                None => {
                    read.items.push(item);
                    last_good = Some(number as u64);
                }
                Some(problem) => read.damaged.push(damaged(number, problem)),
            },
            Err(e) => read
                .damaged
                .push(format!("{file}:{number}: not a {}: {e}", kind.line)),
        }
    }
    if read.items.is_empty() {
        let why = read
            .damaged
            .first()
            .map(|d| format!(" (first problem: {d})"))
            .unwrap_or_default();
        return Err(format!("{file}: no {} could be read{why}", kind.item));
    }
    Ok(read)
}
