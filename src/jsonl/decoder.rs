//! The incremental line decoder.

use std::fmt;
use std::marker::PhantomData;

use serde::de::DeserializeOwned;

use super::file::JsonlError;

/// Decodes JSONL fed in arbitrary chunks.
///
/// ```
/// use livesim::jsonl::JsonlDecoder;
///
/// let mut decoder = JsonlDecoder::<serde_json::Value>::new("example.jsonl");
/// let mut records = Vec::new();
/// for chunk in [&b"{\"a\":"[..], b"1}\n{\"b\"", b":2}\n{\"c\":"] {
///     decoder.feed(chunk);
///     while let Some(record) = decoder.next_record() {
///         records.push(record.unwrap());
///     }
/// }
/// decoder.end(); // no more input: the unterminated last line is judged now
/// assert!(decoder.next_record().is_none());
/// assert_eq!(records.len(), 2);
/// let torn = decoder.torn().unwrap();
/// assert_eq!((torn.line, torn.bytes), (3, 5));
/// ```
pub struct JsonlDecoder<T> {
    file: String,
    buf: Vec<u8>,
    /// Start of the first unread line in `buf`.
    start: usize,
    /// How far past `start` we already looked for a newline.
    scanned: usize,
    /// Lines consumed so far (the next line is `line + 1`).
    line: u64,
    ended: bool,
    torn: Option<TornLine>,
    _record: PhantomData<fn() -> T>,
}

/// A last line cut short: no newline, and its JSON ends early.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TornLine {
    /// The file or stream it was in.
    pub file: String,
    /// Its line number (1-based).
    pub line: u64,
    /// How many bytes of it there were.
    pub bytes: usize,
    /// serde's account of where it stops.
    pub problem: String,
}

impl fmt::Display for TornLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: torn last line ({} bytes, no newline): {}",
            self.file, self.line, self.bytes, self.problem
        )
    }
}

impl<T: DeserializeOwned> JsonlDecoder<T> {
    /// A decoder for the stream named `file` (used in errors).
    pub fn new(file: impl Into<String>) -> Self {
        JsonlDecoder {
            file: file.into(),
            buf: Vec::new(),
            start: 0,
            scanned: 0,
            line: 0,
            ended: false,
            torn: None,
            _record: PhantomData,
        }
    }

    /// Adds input. Bytes fed after [`end`](Self::end) are ignored.
    pub fn feed(&mut self, bytes: &[u8]) {
        if self.ended {
            return;
        }
        if self.start > 0 && self.start * 2 >= self.buf.len() {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// Marks the end of input: the next calls to
    /// [`next_record`](Self::next_record) also judge a last line that has
    /// no newline (a record, a bad line, or [torn](Self::torn)).
    pub fn end(&mut self) {
        self.ended = true;
    }

    /// The next record, a bad line's error, or `None` when no complete
    /// line is buffered (or, after [`end`](Self::end), when input is done).
    pub fn next_record(&mut self) -> Option<Result<T, JsonlError>> {
        loop {
            let pending = &self.buf[self.start..];
            let (line_bytes, consumed, terminated) =
                match pending[self.scanned..].iter().position(|&b| b == b'\n') {
                    Some(at) => {
                        let end = self.scanned + at;
                        (&pending[..end], end + 1, true)
                    }
                    None if self.ended && !pending.is_empty() => (pending, pending.len(), false),
                    None => {
                        self.scanned = pending.len();
                        return None;
                    }
                };
            self.line += 1;
            let line_no = self.line;
            let line_bytes = line_bytes.strip_suffix(b"\r").unwrap_or(line_bytes);
            let blank = line_bytes.iter().all(u8::is_ascii_whitespace);
            let parsed = (!blank).then(|| serde_json::from_slice::<T>(line_bytes));
            let len = line_bytes.len();
            self.start += consumed;
            self.scanned = 0;
            match parsed {
                None => continue,
                Some(Ok(record)) => return Some(Ok(record)),
                Some(Err(e)) if !terminated && e.classify() == serde_json::error::Category::Eof => {
                    self.torn = Some(TornLine {
                        file: self.file.clone(),
                        line: line_no,
                        bytes: len,
                        problem: e.to_string(),
                    });
                    return None;
                }
                Some(Err(e)) => {
                    return Some(Err(JsonlError::BadLine {
                        file: self.file.clone(),
                        line: line_no,
                        problem: e.to_string(),
                    }));
                }
            }
        }
    }

    /// The torn last line, once [`end`](Self::end) was called and the
    /// records before it were read.
    pub fn torn(&self) -> Option<&TornLine> {
        self.torn.as_ref()
    }

    /// The number of the line last read (1-based; 0 before any).
    pub fn line(&self) -> u64 {
        self.line
    }

    /// The stream's name, as used in errors.
    pub fn file(&self) -> &str {
        &self.file
    }
}
