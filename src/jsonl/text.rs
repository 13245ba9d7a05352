//! Whole text files (agent files, specs, scenarios, scripts, corpus
//! entries, regression lists): read as UTF-8, or refused saying where they stop being UTF-8,
//! and refused unread when they are larger than such a file can sensibly be;
//! and written whole, never through a link ([`write_replacing`]).
//!
//! `std::fs::read_to_string` says only "stream did not contain valid
//! UTF-8": a user with a file saved in Latin-1, or damaged, is left to
//! search it. [`read_text`] names the line, the column and the byte.
//!
//! Each of these files is parsed whole into a JSON tree, which takes ten
//! to fifteen times the file's size in memory: a damaged or mistaken file
//! of gigabytes (or `/dev/zero`) would take the machine's memory before
//! any error could be said. [`MAX_TEXT_FILE`] bounds what is read (the
//! bounded read itself, shared with the JSONL readers, is in `bounded.rs`).

use std::path::Path;
use std::str::Utf8Error;

use super::bounded::{Bound, Refused, read_path};

/// The most bytes [`read_text`] reads from one file: 64 MiB, hundreds of
/// times any agent file, spec or corpus entry, and a script of about
/// twenty-five minutes of 16 kHz audio in base64.
pub const MAX_TEXT_FILE: u64 = 64 << 20;

/// Why a whole text file could not be read.
pub(crate) enum TextFileError {
    /// The system's reason.
    Io(std::io::Error),
    /// Too large, or not UTF-8: the problem, for after the file's name.
    Content(String),
}

/// Reads `path` as UTF-8 text of at most [`MAX_TEXT_FILE`] bytes. The
/// error is the problem alone, for the caller to put after the file's
/// name: the system's reason it could not be read, that it is too large,
/// or where its bytes stop being UTF-8.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("livesim-read-text-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let file = dir.join("latin1.json");
/// std::fs::write(&file, b"{\"caf\xe9\": 1}").unwrap();
/// assert_eq!(
///     livesim::jsonl::read_text(&file).unwrap_err(),
///     "line 1, column 6 (byte 5): 0xe9 is not UTF-8; save the file as UTF-8"
/// );
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub fn read_text(path: &Path) -> Result<String, String> {
    read_text_file(path).map_err(|e| match e {
        TextFileError::Io(e) => format!("cannot read it: {e}"),
        TextFileError::Content(problem) => problem,
    })
}

/// [`read_text`], keeping the system's error as it is.
pub(crate) fn read_text_file(path: &Path) -> Result<String, TextFileError> {
    let bytes = read_path(path, Bound::TEXT).map_err(|e| match e {
        Refused::Io(e) => TextFileError::Io(e),
        Refused::TooLarge(problem) | Refused::LongLine(_, problem) => {
            TextFileError::Content(problem)
        }
    })?;
    String::from_utf8(bytes)
        .map_err(|e| TextFileError::Content(not_utf8(e.as_bytes(), e.utf8_error())))
}

/// Writes `bytes` to a new file beside `path`, then renames it over
/// `path`: the rename replaces whatever is at `path` (a file, a symbolic
/// link) and follows no link, and the new file is made fresh
/// (`create_new`), so no link is written through either.
#[cfg(any(feature = "simulation", feature = "serve"))]
pub(crate) fn write_replacing(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // Hidden, and not `.json`: a listing of the corpus passes over one
    // left by a crash.
    for attempt in 0..100 {
        let temp = path.with_file_name(format!(".{name}.{}-{attempt}.tmp", std::process::id()));
        let mut file = match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)
        {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        };
        let written = file
            .write_all(bytes)
            .and_then(|()| file.sync_all())
            .and_then(|()| std::fs::rename(&temp, path));
        if written.is_err() {
            let _ = std::fs::remove_file(&temp);
        }
        return written;
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::AlreadyExists,
        "no free name for the file written before the rename (100 taken)",
    ))
}

/// `1234567` as `1,234,567`, as livesim's messages and summaries write
/// counts.
pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Where one line of a JSONL file (`line`, its bytes) stops being UTF-8,
/// when it does: `column 4: 0xff 0xfe is not UTF-8`, for after the file's
/// name and line. A reader that keeps the good lines of a damaged file
/// names such a line rather than reading U+FFFD where the bytes were.
#[cfg(feature = "simulation")]
pub(crate) fn line_not_utf8(line: &[u8]) -> Option<String> {
    let error = std::str::from_utf8(line).err()?;
    let (good, rest) = line.split_at(error.valid_up_to());
    let column = std::str::from_utf8(good).map_or(0, |s| s.chars().count()) + 1;
    Some(format!("column {column}: {}", bad_bytes(rest, error)))
}

/// The bytes at `rest` (where UTF-8 stopped), and what is wrong with them.
#[cfg(feature = "simulation")]
fn bad_bytes(rest: &[u8], error: Utf8Error) -> String {
    let bad = &rest[..error.error_len().unwrap_or(rest.len()).min(4)];
    let shown: Vec<String> = bad.iter().map(|b| format!("0x{b:02x}")).collect();
    let what = match error.error_len() {
        Some(_) => "is not UTF-8",
        None => "starts a character the line ends in the middle of",
    };
    format!("{} {what}", shown.join(" "))
}

/// Where `bytes` stop being UTF-8, as [`read_text`] says it: `line 3,
/// column 7 (byte 41): 0xe9 is not UTF-8 …`.
fn not_utf8(bytes: &[u8], error: Utf8Error) -> String {
    let at = error.valid_up_to();
    let (good, rest) = bytes.split_at(at);
    let line = good.iter().filter(|&&b| b == b'\n').count() + 1;
    let line_start = good.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    // `good` is valid UTF-8 up to `at`, so its last line counts in
    // characters.
    let column = std::str::from_utf8(&good[line_start..]).map_or(0, |s| s.chars().count()) + 1;
    let bad = &rest[..error.error_len().unwrap_or(rest.len()).min(4)];
    let shown: Vec<String> = bad.iter().map(|b| format!("0x{b:02x}")).collect();
    let what = match error.error_len() {
        Some(_) => "is not UTF-8",
        None => "starts a character the file ends in the middle of",
    };
    format!(
        "line {line}, column {column} (byte {at}): {} {what}; save the file as UTF-8",
        shown.join(" ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(bytes: &[u8]) -> String {
        not_utf8(bytes, std::str::from_utf8(bytes).unwrap_err())
    }

    #[test]
    fn a_byte_that_is_not_utf8_is_named_by_line_column_and_offset() {
        // "café" in Latin-1 on the second line, after a two-byte character.
        assert_eq!(
            problem(b"{\n  \"\xc3\xa9l\xe9\": 1\n}"),
            "line 2, column 6 (byte 8): 0xe9 is not UTF-8; save the file as UTF-8"
        );
        assert_eq!(
            problem(b"\xff"),
            "line 1, column 1 (byte 0): 0xff is not UTF-8; save the file as UTF-8"
        );
    }

    #[test]
    fn a_character_cut_at_the_end_of_the_file_is_named_as_such() {
        assert_eq!(
            problem(b"{}\n\xe2\x82"),
            "line 2, column 1 (byte 3): 0xe2 0x82 starts a character the file ends in the \
             middle of; save the file as UTF-8"
        );
    }

    /// A file past the limit is refused without being read: a sparse
    /// file of 65 MiB holds no data, so only the size check can refuse it.
    #[test]
    fn a_file_past_the_limit_is_refused_unread() {
        let dir = std::env::temp_dir().join(format!("livesim-text-limit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let big = dir.join("big.json");
        std::fs::File::create(&big)
            .unwrap()
            .set_len(MAX_TEXT_FILE + 1)
            .unwrap();
        assert_eq!(
            read_text(&big).unwrap_err(),
            "it holds 67,108,865 bytes, past the 64 MiB livesim reads from one such \
             file (an agent file, spec, scenario, script or corpus entry is far smaller); is it \
             the file you meant?"
        );
        // At the limit it is read (and then refused for what it holds:
        // zero bytes are JSON to no reader, but they are UTF-8).
        let most = dir.join("most.json");
        std::fs::File::create(&most)
            .unwrap()
            .set_len(MAX_TEXT_FILE)
            .unwrap();
        assert_eq!(read_text(&most).unwrap().len() as u64, MAX_TEXT_FILE);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A file whose size says nothing (a device) is cut off by the read.
    #[cfg(target_os = "linux")]
    #[test]
    fn an_endless_file_is_refused_at_the_limit() {
        let problem = read_text(Path::new("/dev/zero")).unwrap_err();
        assert!(
            problem.starts_with("it holds more than 67,108,864 bytes, past the 64 MiB"),
            "{problem}"
        );
    }

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(67_108_865), "67,108,865");
    }

    #[test]
    fn a_file_that_cannot_be_read_says_why() {
        let missing = read_text(Path::new("/no/such/livesim/file.json")).unwrap_err();
        assert!(missing.starts_with("cannot read it: "), "{missing}");
    }
}
