//! Reading a file (or a stream) whole, but never without bound: every
//! reader of a file livesim loads whole goes through here.
//!
//! A damaged or mistaken input of gigabytes, or one that never ends
//! (`/dev/zero`, a pipe left open), would otherwise take the machine's
//! memory before any error could be said. The size a file reports can be
//! wrong (a device, a pipe, a file still growing), so the read itself
//! stops one byte past the bound; a file whose size is already past it is
//! refused unread.
//!
//! A JSONL file (journal, tape, wire log) has two bounds: the whole file,
//! and each line, which is one JSON document parsed on its own and held to
//! the bound of a whole document file ([`MAX_TEXT_FILE`]). The line bound
//! is checked as the bytes arrive, so a file with no newline (`/dev/zero`)
//! is refused after 64 MiB, not after the whole-file bound.
//!
//! A non-regular file is read like any other, up to the bound, as the
//! whole-document readers read it: a pipe (`<(zcat log.gz)`) is a fine
//! way to hand livesim a file. A file livesim finds by itself (a corpus's
//! specs and scenarios, an agent's `agent.json`) is never such a pipe,
//! and a named pipe nothing writes to would hold the read forever: those
//! are read only when they are regular files (see [`special_file`]).

use std::fs::File;
use std::io::{ErrorKind, Read};
use std::path::Path;

use super::file::JsonlError;
use super::text::{MAX_TEXT_FILE, thousands};

/// The most bytes livesim reads from one JSONL file: 1 GiB. A wire log
/// holds every audio chunk in base64, about 64 KiB a second of a session
/// with audio both ways, so this is more than four hours of one; journals
/// and tapes are far smaller.
pub const MAX_JSONL_FILE: u64 = 1 << 30;

/// The longest line livesim reads in a JSONL file: one record is one JSON
/// document, parsed into a tree ten to fifteen times its size, like a
/// whole document file ([`MAX_TEXT_FILE`]). A journal entry, tape entry or
/// wire-log frame is far smaller (a frame the Live API sends is a few MiB
/// at most).
pub const MAX_JSONL_LINE: u64 = MAX_TEXT_FILE;

/// What a bounded read stops at, and how its message names such a file.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Bound {
    /// The most bytes read.
    pub(crate) file: u64,
    /// The longest line; `None` for a whole document.
    pub(crate) line: Option<u64>,
    /// What the message says livesim reads at most `file` bytes from.
    pub(crate) what: &'static str,
    /// What one line is, for the message about a line.
    pub(crate) record: &'static str,
}

impl Bound {
    /// A whole document: an agent file, spec, scenario, script or entry.
    pub(crate) const TEXT: Bound = Bound {
        file: MAX_TEXT_FILE,
        line: None,
        what: "one such file (an agent file, spec, scenario, script or corpus entry is far \
               smaller)",
        record: "",
    };

    /// A JSONL file: a journal, tape or wire log.
    pub(crate) const JSONL: Bound = Bound {
        file: MAX_JSONL_FILE,
        line: Some(MAX_JSONL_LINE),
        what: "one JSONL file (a journal, tape or wire log)",
        record: "one record (a journal entry, tape entry or wire-log frame is far smaller)",
    };
}

/// Why a bounded read gave nothing.
#[derive(Debug)]
pub(crate) enum Refused {
    /// The system's reason.
    Io(std::io::Error),
    /// The input is larger than the bound: the problem, for after the
    /// file's name.
    TooLarge(String),
    /// A line is longer than the bound: its number (1-based) and the
    /// problem, for after the file's name and the line.
    LongLine(u64, String),
}

impl Refused {
    /// The refusal as the JSONL readers report it, naming `file`.
    pub(crate) fn into_jsonl(self, file: &str) -> JsonlError {
        match self {
            Refused::Io(e) => JsonlError::Io {
                file: file.to_owned(),
                problem: e.to_string(),
            },
            Refused::TooLarge(problem) => JsonlError::Io {
                file: file.to_owned(),
                problem,
            },
            Refused::LongLine(line, problem) => JsonlError::BadLine {
                file: file.to_owned(),
                line,
                problem,
            },
        }
    }
}

/// What a file is when it is not a regular file, a folder or a link, as
/// messages name it: `a named pipe`, `a socket`, `a device`. A file
/// livesim found by listing a folder is read only when this is `None`:
/// opening a named pipe waits for something to write to it, forever when
/// nothing does. A path the user gives is read whatever it is, as `cat`
/// reads it: a named pipe and the pipe `<(cmd)` gives are both pipes to
/// `stat`, and only the first may have no writer.
pub(crate) fn special_file(file_type: std::fs::FileType) -> Option<&'static str> {
    if file_type.is_file() || file_type.is_dir() || file_type.is_symlink() {
        return None;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return Some("a named pipe");
        }
        if file_type.is_socket() {
            return Some("a socket");
        }
        if file_type.is_char_device() || file_type.is_block_device() {
            return Some("a device");
        }
    }
    Some("a special file")
}

/// The bytes of the file at `path`, within `bound`.
pub(crate) fn read_path(path: &Path, bound: Bound) -> Result<Vec<u8>, Refused> {
    let file = File::open(path).map_err(Refused::Io)?;
    let meta = file.metadata().map_err(Refused::Io)?;
    let size = if meta.is_file() { meta.len() } else { 0 };
    if size > bound.file {
        return Err(Refused::TooLarge(too_large(&thousands(size), bound)));
    }
    read_within(file, size, bound)
}

/// Every byte `reader` yields, within `bound`; `size` is how many it is
/// expected to yield (0 when unknown), to allocate once.
pub(crate) fn read_within(reader: impl Read, size: u64, bound: Bound) -> Result<Vec<u8>, Refused> {
    /// Read at a time, so a long line is seen before the next read.
    const CHUNK: u64 = 1 << 20;
    let mut reader = reader.take(bound.file + 1);
    let mut bytes = Vec::with_capacity(usize::try_from(size.min(bound.file)).unwrap_or(0));
    // Where the line being read starts, and how many lines came before it.
    let (mut line_start, mut lines) = (0usize, 0u64);
    loop {
        let before = bytes.len();
        match reader.by_ref().take(CHUNK).read_to_end(&mut bytes) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(Refused::Io(e)),
        }
        let Some(longest) = bound.line else {
            continue;
        };
        for at in memchr::memchr_iter(b'\n', &bytes[before..]) {
            if (before + at - line_start) as u64 > longest {
                return Err(long_line(lines + 1, bound));
            }
            line_start = before + at + 1;
            lines += 1;
        }
        if (bytes.len() - line_start) as u64 > longest {
            return Err(long_line(lines + 1, bound));
        }
    }
    if bytes.len() as u64 > bound.file {
        let more = format!("more than {}", thousands(bound.file));
        return Err(Refused::TooLarge(too_large(&more, bound)));
    }
    Ok(bytes)
}

/// The bytes of the JSONL file at `path`, at most [`MAX_JSONL_FILE`] of
/// them and [`MAX_JSONL_LINE`] on a line; errors name the file (and the
/// line that is too long). Every JSONL reader of livesim reads its file
/// this way; use it to read one before [`parse_bytes`](super::parse_bytes)
/// or another reader of bytes.
///
/// ```
/// use livesim::jsonl::{MAX_JSONL_FILE, read_bytes};
///
/// let dir = std::env::temp_dir().join(format!("livesim-read-bytes-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let huge = dir.join("huge.jsonl");
/// // Sparse: it takes no room, and is refused before a byte is read.
/// std::fs::File::create(&huge).unwrap().set_len(MAX_JSONL_FILE + 1).unwrap();
/// let error = read_bytes(&huge).unwrap_err().to_string();
/// assert!(error.contains("huge.jsonl: it holds 1,073,741,825 bytes, past the 1 GiB"), "{error}");
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub fn read_bytes(path: impl AsRef<Path>) -> Result<Vec<u8>, JsonlError> {
    let path = path.as_ref();
    read_path(path, Bound::JSONL).map_err(|e| e.into_jsonl(&path.display().to_string()))
}

/// [`read_bytes`] for a stream (stdin): everything `reader` yields, within
/// the same bounds; `file` names it in errors.
pub fn read_bytes_from(file: &str, reader: impl Read) -> Result<Vec<u8>, JsonlError> {
    read_within(reader, 0, Bound::JSONL).map_err(|e| e.into_jsonl(file))
}

/// `size`: how many bytes the input holds, as the message says it.
fn too_large(size: &str, bound: Bound) -> String {
    format!(
        "it holds {size} bytes, past the {} livesim reads from {}; is it the file you meant?",
        in_units(bound.file),
        bound.what
    )
}

fn long_line(line: u64, bound: Bound) -> Refused {
    let longest = bound.line.unwrap_or(bound.file);
    Refused::LongLine(
        line,
        format!(
            "the line holds more than {} bytes, past the {} livesim reads as {}; is it the file \
             you meant?",
            thousands(longest),
            in_units(longest),
            bound.record
        ),
    )
}

/// A bound as the messages say it: `64 MiB`, `1 GiB`.
fn in_units(bytes: u64) -> String {
    if bytes >= 1 << 30 && bytes.is_multiple_of(1 << 30) {
        format!("{} GiB", bytes >> 30)
    } else if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{} bytes", thousands(bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small bound, so the edges can be tried with a few bytes.
    const SMALL: Bound = Bound {
        file: 20,
        line: Some(5),
        what: "one small file",
        record: "one small record",
    };

    fn read(bytes: &[u8]) -> Result<Vec<u8>, String> {
        read_within(bytes, 0, SMALL).map_err(|e| match e {
            Refused::Io(e) => format!("io: {e}"),
            Refused::TooLarge(p) => p,
            Refused::LongLine(line, p) => format!("line {line}: {p}"),
        })
    }

    #[test]
    fn lines_and_files_at_the_bound_are_read() {
        assert_eq!(read(b"12345\n12345\n").unwrap(), b"12345\n12345\n");
        // Twenty bytes, the last line without its newline.
        assert_eq!(read(b"12345\n12345\n1234\n123").unwrap().len(), 20);
    }

    #[test]
    fn a_line_past_the_bound_is_named_whether_it_ends_or_not() {
        let said = "the line holds more than 5 bytes, past the 5 bytes livesim reads as one \
                    small record; is it the file you meant?";
        assert_eq!(read(b"123456\n").unwrap_err(), format!("line 1: {said}"));
        assert_eq!(read(b"1\n\n123456").unwrap_err(), format!("line 3: {said}"));
    }

    #[test]
    fn a_file_past_the_bound_is_refused() {
        assert_eq!(
            read(b"1234\n1234\n1234\n1234\n1").unwrap_err(),
            "it holds more than 20 bytes, past the 20 bytes livesim reads from one small file; \
             is it the file you meant?"
        );
    }

    /// A line that crosses a read's chunk, and one whose newline comes in
    /// the read after the one that made it too long.
    #[test]
    fn a_long_line_is_found_across_reads() {
        let bound = Bound {
            file: 8 << 20,
            line: Some((1 << 20) + 1),
            ..SMALL
        };
        let mut bytes = vec![b'x'; (1 << 20) - 3];
        bytes.extend_from_slice(b"\n");
        bytes.extend(std::iter::repeat_n(b'y', (1 << 20) + 2));
        bytes.extend_from_slice(b"\n");
        match read_within(&bytes[..], 0, bound) {
            Err(Refused::LongLine(2, _)) => {}
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bounds_are_said_in_their_units() {
        assert_eq!(in_units(MAX_JSONL_FILE), "1 GiB");
        assert_eq!(in_units(MAX_JSONL_LINE), "64 MiB");
        assert_eq!(in_units(1000), "1,000 bytes");
    }
}
