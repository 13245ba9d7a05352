//! The incremental line decoder.

use std::fmt;
use std::marker::PhantomData;

use serde::de::DeserializeOwned;

use super::file::JsonlError;
use super::strict;

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
    /// Bytes consumed before `start`, over the whole input.
    consumed: u64,
    /// Where the line last read starts, in bytes from the input's start.
    line_offset: u64,
    /// Whether the last bad line looks like a crash's damage.
    garbled: bool,
    ended: bool,
    torn: Option<TornLine>,
    /// Whether a line that gives a key twice in one object is bad.
    unique_keys: bool,
    _record: PhantomData<fn() -> T>,
}

/// The damaged end of an input, as a crash leaves it: a last line cut
/// short (no newline, and its JSON ends early), or, when the whole-input
/// readers find it, a torn line followed by garbage (NUL bytes, half a
/// block) with no good record after it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TornLine {
    /// The file or stream it was in.
    pub file: String,
    /// The line the damage starts on (1-based).
    pub line: u64,
    /// Where that line starts, in bytes from the start of the input.
    pub offset: u64,
    /// How many lines the damage spans (1 for a torn last line).
    pub lines: u64,
    /// How many bytes are damaged, from `offset` to the end.
    pub bytes: usize,
    /// serde's account of what is wrong with the first damaged line.
    pub problem: String,
}

impl fmt::Display for TornLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.lines <= 1 {
            write!(
                f,
                "{}:{}: torn last line ({} bytes at byte {}, no newline): {}",
                self.file, self.line, self.bytes, self.offset, self.problem
            )
        } else {
            write!(
                f,
                "{}:{}: damaged end ({} bytes over {} lines from byte {}, as a crash mid-write \
                 leaves it; no good record after it): {}",
                self.file, self.line, self.bytes, self.lines, self.offset, self.problem
            )
        }
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
            consumed: 0,
            line_offset: 0,
            garbled: false,
            ended: false,
            torn: None,
            unique_keys: false,
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
            self.consumed += self.start as u64;
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
            self.line_offset = self.consumed + self.start as u64;
            let line_no = self.line;
            let line_bytes = line_bytes.strip_suffix(b"\r").unwrap_or(line_bytes);
            let blank = line_bytes.iter().all(u8::is_ascii_whitespace);
            let bom = (line_no == 1).then(|| strict::bom(line_bytes)).flatten();
            let parsed = (!blank && bom.is_none()).then(|| serde_json::from_slice::<T>(line_bytes));
            // A key given twice: serde keeps the last of a record's own
            // keys and `Value` the last of a payload's, and the other
            // value is lost without a word. (A line that parsed is UTF-8.)
            let duplicate = match (&parsed, self.unique_keys) {
                (Some(Ok(_)), true) => std::str::from_utf8(line_bytes)
                    .ok()
                    .and_then(strict::duplicate_key_in_line),
                _ => None,
            };
            let len = line_bytes.len();
            let explained = |e: &serde_json::Error| {
                strict::explain_in_line(&String::from_utf8_lossy(line_bytes), e)
            };
            let problem = match (&bom, &parsed) {
                (Some(bom), _) => Some(bom.clone()),
                (None, Some(Ok(_))) => duplicate.clone(),
                (None, Some(Err(e))) => Some(explained(e)),
                _ => None,
            };
            // What a crash leaves: a record cut short, NUL bytes (a block
            // the file system extended but never wrote), bytes that are not
            // text. A complete line that is merely malformed is none of
            // these: it is an error wherever it is.
            // Whether the JSON itself ends early, judged apart from the
            // record type (which may object to a key before the end).
            let cut_short = matches!(&parsed, Some(Err(_)))
                && serde_json::from_slice::<serde::de::IgnoredAny>(line_bytes)
                    .is_err_and(|e| e.classify() == serde_json::error::Category::Eof);
            let garbled = matches!(&parsed, Some(Err(_)))
                && (cut_short
                    || line_bytes.contains(&0)
                    || std::str::from_utf8(line_bytes).is_err());
            self.start += consumed;
            self.scanned = 0;
            match parsed {
                None if bom.is_none() => continue,
                Some(Ok(record)) if duplicate.is_none() => return Some(Ok(record)),
                Some(Err(_)) if !terminated && cut_short => {
                    self.torn = Some(TornLine {
                        file: self.file.clone(),
                        line: line_no,
                        offset: self.line_offset,
                        lines: 1,
                        bytes: len,
                        problem: problem.unwrap_or_default(),
                    });
                    return None;
                }
                _ => {
                    self.garbled = garbled;
                    return Some(Err(JsonlError::BadLine {
                        file: self.file.clone(),
                        line: line_no,
                        problem: problem.unwrap_or_default(),
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

    /// Where the line last read starts, in bytes from the input's start.
    pub fn line_offset(&self) -> u64 {
        self.line_offset
    }

    /// Every byte fed so far.
    pub fn bytes_fed(&self) -> u64 {
        self.consumed + self.buf.len() as u64
    }

    /// Whether the bad line last returned looks like a crash's damage (a
    /// record cut short, NUL bytes, bytes that are not UTF-8), as opposed
    /// to a complete line that is malformed or of the wrong shape (an
    /// unknown key), which is never crash damage.
    pub fn last_bad_line_garbled(&self) -> bool {
        self.garbled
    }

    /// Makes a line that gives a key twice in one object (at any depth) a
    /// bad line: the readers of files livesim writes use this, since no
    /// writer of theirs says a key twice and which value was meant cannot
    /// be told.
    pub(crate) fn unique_keys(mut self) -> Self {
        self.unique_keys = true;
        self
    }

    /// Starts counting lines and bytes as if `lines` lines of `bytes` bytes
    /// came before the input (a header read separately).
    pub(crate) fn after_lines(mut self, lines: u64, bytes: u64) -> Self {
        self.line = lines;
        self.consumed = bytes;
        self
    }

    /// The stream's name, as used in errors.
    pub fn file(&self) -> &str {
        &self.file
    }
}
