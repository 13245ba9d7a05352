//! Reading a recording to import, line by line, keeping what can be read:
//! a production file may be torn by a crash or mangled in transit, and an
//! import keeps every good line and names each bad one (file, line, what
//! is wrong). Shared by the wire log and the journal importers.

use serde::de::DeserializeOwned;
use serde_json::Value;

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

/// Reads `bytes` (named `file` in messages) as lines of `kind`, each a `T`.
/// `Err` when nothing can be used: no good line, or a header of another
/// kind of file.
pub(super) fn read<T: DeserializeOwned>(
    file: &str,
    bytes: &[u8],
    kind: &Kind,
) -> Result<Lines<T>, String> {
    let text = String::from_utf8_lossy(bytes);
    let ends_whole = text.ends_with('\n');
    let lines: Vec<&str> = text.lines().collect();
    let mut read = Lines {
        items: Vec::new(),
        damaged: Vec::new(),
        header_seen: false,
    };
    for (i, line) in lines.iter().enumerate() {
        let number = i + 1;
        if line.trim().is_empty() {
            continue;
        }
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
                Some(_) => read.header_seen = true,
                None => read.damaged.push(format!(
                    "{file}:{number}: a header line without a kind, skipped"
                )),
            }
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
            Ok(item) => read.items.push(item),
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
