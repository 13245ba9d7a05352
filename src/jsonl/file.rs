//! Whole inputs: a byte slice, any reader, or a file by path.

use std::io::Read;
use std::path::Path;

use serde::de::DeserializeOwned;

use super::decoder::{JsonlDecoder, TornLine};

/// A JSONL input could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum JsonlError {
    /// A complete line is not JSON, or not the record's shape.
    #[error("{file}:{line}: {problem}")]
    BadLine {
        /// The file or stream.
        file: String,
        /// The line number (1-based).
        line: u64,
        /// serde's message.
        problem: String,
    },
    /// Reading failed.
    #[error("{file}: {problem}")]
    Io {
        /// The file or stream.
        file: String,
        /// What the OS said.
        problem: String,
    },
}

/// Everything an input held.
#[derive(Clone, Debug, PartialEq)]
pub struct Parsed<T> {
    /// One per good line, in order.
    pub records: Vec<T>,
    /// The damaged end, if the input ended mid-record (a torn last line,
    /// possibly followed by a crash's garbage).
    pub torn: Option<TornLine>,
}

/// Decodes a whole input held in memory; `file` names it in errors.
///
/// ```
/// use livesim::jsonl::parse_bytes;
///
/// let ok = parse_bytes::<u32>("n.jsonl", b"1\n2\n3").unwrap();
/// assert_eq!((ok.records, ok.torn), (vec![1, 2, 3], None));
///
/// let torn = parse_bytes::<Vec<u32>>("n.jsonl", b"[1]\n[2, 3").unwrap();
/// assert_eq!(torn.records, vec![vec![1]]);
/// assert_eq!(torn.torn.unwrap().line, 2);
///
/// let bad = parse_bytes::<u32>("n.jsonl", b"1\nx\n3\n").unwrap_err();
/// assert_eq!(bad.to_string(), "n.jsonl:2: expected value at column 1");
/// ```
pub fn parse_bytes<T: DeserializeOwned>(file: &str, bytes: &[u8]) -> Result<Parsed<T>, JsonlError> {
    let mut decoder = JsonlDecoder::new(file);
    decoder.feed(bytes);
    decoder.end();
    drain(decoder)
}

/// Decodes everything `reader` yields; `file` names it in errors. The
/// stream is read within the bounds of a JSONL file (see
/// [`read_bytes_from`](super::read_bytes_from)).
pub fn read_from<T: DeserializeOwned>(
    file: &str,
    reader: impl Read,
) -> Result<Parsed<T>, JsonlError> {
    let bytes = super::read_bytes_from(file, reader)?;
    parse_bytes(file, &bytes)
}

/// Reads a JSONL file by path, within bounds (see
/// [`read_bytes`](super::read_bytes)); errors name the path.
pub fn read_file<T: DeserializeOwned>(path: impl AsRef<Path>) -> Result<Parsed<T>, JsonlError> {
    let path = path.as_ref();
    let bytes = super::read_bytes(path)?;
    parse_bytes(&path.display().to_string(), &bytes)
}

/// Reads every record left in `decoder` (whose input has ended).
///
/// A bad line is an error, except at the end: when the first bad line is
/// not JSON at all (a torn write, NUL bytes, garbage) and no good record
/// follows it, the lines from it to the end are the damage a crash
/// leaves, reported as [`Parsed::torn`] with the records before it kept.
/// JSON of the wrong shape (a typo'd key) is an error wherever it is.
pub(crate) fn drain<T: DeserializeOwned>(
    decoder: JsonlDecoder<T>,
) -> Result<Parsed<T>, JsonlError> {
    let mut records = Vec::new();
    let torn = drain_with(decoder, |_, record| {
        records.push(record);
        Ok::<(), JsonlError>(())
    })?;
    Ok(Parsed { records, torn })
}

/// [`drain`], handing each good record to `keep` with its line number.
pub(crate) fn drain_with<T, E>(
    mut decoder: JsonlDecoder<T>,
    mut keep: impl FnMut(u64, T) -> Result<(), E>,
) -> Result<Option<TornLine>, E>
where
    T: DeserializeOwned,
    E: From<JsonlError>,
{
    // The first bad line: its error, line, offset, and whether it is garbage.
    let mut damage: Option<(JsonlError, u64, u64, bool)> = None;
    while let Some(record) = decoder.next_record() {
        match (record, damage.take()) {
            (Ok(record), None) => keep(decoder.line(), record)?,
            // A good record after a bad line: the bad line is in the middle.
            (Ok(_), Some((error, ..))) => return Err(error.into()),
            (Err(error), None) => {
                damage = Some((
                    error,
                    decoder.line(),
                    decoder.line_offset(),
                    decoder.last_bad_line_garbled(),
                ));
            }
            (Err(_), first) => damage = first,
        }
    }
    match damage {
        None => Ok(decoder.torn().cloned()),
        Some((
            JsonlError::BadLine {
                file,
                line,
                problem,
            },
            _,
            offset,
            true,
        )) => Ok(Some(TornLine {
            file,
            line,
            offset,
            lines: decoder.line() - line + 1,
            bytes: (decoder.bytes_fed() - offset) as usize,
            problem,
        })),
        Some((error, ..)) => Err(error.into()),
    }
}
