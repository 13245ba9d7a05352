//! Whole inputs: a byte slice, any reader, or a file by path.

use std::fs::File;
use std::io::{ErrorKind, Read};
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
    /// One per complete line, in order.
    pub records: Vec<T>,
    /// The torn last line, if the input ended mid-record.
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
/// assert_eq!(bad.to_string(), "n.jsonl:2: expected value at line 1 column 1");
/// ```
pub fn parse_bytes<T: DeserializeOwned>(file: &str, bytes: &[u8]) -> Result<Parsed<T>, JsonlError> {
    let mut decoder = JsonlDecoder::new(file);
    decoder.feed(bytes);
    decoder.end();
    drain(decoder)
}

/// Decodes everything `reader` yields; `file` names it in errors.
pub fn read_from<T: DeserializeOwned>(
    file: &str,
    mut reader: impl Read,
) -> Result<Parsed<T>, JsonlError> {
    let mut decoder = JsonlDecoder::new(file);
    let mut records = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = match reader.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(JsonlError::Io {
                    file: file.to_owned(),
                    problem: e.to_string(),
                });
            }
        };
        decoder.feed(&chunk[..n]);
        while let Some(record) = decoder.next_record() {
            records.push(record?);
        }
    }
    decoder.end();
    let mut rest = drain(decoder)?;
    records.append(&mut rest.records);
    Ok(Parsed {
        records,
        torn: rest.torn,
    })
}

/// Reads a JSONL file by path; errors name the path.
pub fn read_file<T: DeserializeOwned>(path: impl AsRef<Path>) -> Result<Parsed<T>, JsonlError> {
    let path = path.as_ref();
    let name = path.display().to_string();
    let file = File::open(path).map_err(|e| JsonlError::Io {
        file: name.clone(),
        problem: e.to_string(),
    })?;
    read_from(&name, file)
}

fn drain<T: DeserializeOwned>(mut decoder: JsonlDecoder<T>) -> Result<Parsed<T>, JsonlError> {
    let mut records = Vec::new();
    while let Some(record) = decoder.next_record() {
        records.push(record?);
    }
    Ok(Parsed {
        records,
        torn: decoder.torn().cloned(),
    })
}
