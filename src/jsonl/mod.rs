//! Reading our JSONL files: wire logs now, tapes and journals later.
//!
//! One record per line, each line a JSON value of the caller's record
//! type. The reader is incremental ([`JsonlDecoder`]: feed bytes in chunks
//! of any size) and a stream split at any byte decodes to the same
//! records. Three outcomes, kept distinct:
//!
//! * a record for every complete line (blank lines are skipped);
//! * a **bad line** (complete, but not JSON or not the record's shape) is
//!   an error naming the file, the line number and serde's message;
//! * a **torn last line** (no newline at the end of input, and the JSON is
//!   cut short, as a crash mid-write leaves it) is reported as a
//!   [`TornLine`]: everything before it is kept, nothing after it existed.
//!
//! A last line without a newline that *is* a complete record is simply a
//! record: editors and `echo -n` leave files like that.

mod append;
mod decoder;
mod file;

pub use append::LineAppender;
pub use decoder::{JsonlDecoder, TornLine};
pub use file::{JsonlError, Parsed, parse_bytes, read_file, read_from};
