//! Reading our JSONL files: wire logs, tapes and journals.
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
//!   [`TornLine`]: everything before it is kept, nothing after it existed;
//!   the whole-input readers also recover a torn line followed by garbage
//!   (NUL bytes, half a block) when no good record follows it, reporting
//!   where the damage starts (line and byte offset) and how far it goes.
//!
//! Keys are strict: an unknown key is an error naming it, its line and
//! column and the nearest valid key ([`explain`]); a UTF-8 byte-order
//! mark is named as such. Tapes and journals start with a versioned
//! header line ([`FileHeader`], [`parse_versioned`]); files from before
//! headers still load.
//!
//! A last line without a newline that *is* a complete record is simply a
//! record: editors and `echo -n` leave files like that.
//!
//! Files are read within bounds ([`read_bytes`]): at most
//! [`MAX_JSONL_FILE`] bytes, and [`MAX_JSONL_LINE`] on one line, so a
//! mistaken path (`/dev/zero`, a file of gigabytes) is an error naming the
//! file and the bound, not the machine's memory.

mod append;
mod bounded;
mod decoder;
mod file;
mod header;
mod object;
mod strict;
mod text;

pub use append::LineAppender;
pub(crate) use bounded::{Bound, Refused, read_path, special_file};
pub use bounded::{MAX_JSONL_FILE, MAX_JSONL_LINE, read_bytes, read_bytes_from};
pub use decoder::{JsonlDecoder, TornLine};
pub(crate) use file::drain_with;
pub use file::{JsonlError, Parsed, parse_bytes, read_file, read_from};
#[cfg(feature = "simulation")]
pub(crate) use header::check_header;
pub use header::{FileHeader, parse_versioned, parse_versioned_with};
pub(crate) use object::{Fields, from_object, object_record};
pub(crate) use strict::duplicate_key_at;
pub use strict::{bom, duplicate_key, explain, nearest};
pub(crate) use strict::{did_you_mean, shown};
#[cfg(feature = "simulation")]
pub(crate) use strict::{duplicate_key_in_line, explain_in_line};
#[cfg(feature = "simulation")]
pub(crate) use text::line_not_utf8;
#[cfg(feature = "simulation")]
pub(crate) use text::thousands;
#[cfg(any(feature = "simulation", feature = "serve"))]
pub(crate) use text::write_replacing;
pub use text::{MAX_TEXT_FILE, read_text};
pub(crate) use text::{TextFileError, read_text_file};
