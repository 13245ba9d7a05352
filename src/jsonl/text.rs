//! Whole text files (agent files, specs, scenarios, corpus entries): read
//! as UTF-8, or refused saying where they stop being UTF-8.
//!
//! `std::fs::read_to_string` says only "stream did not contain valid
//! UTF-8": a user with a file saved in Latin-1, or damaged, is left to
//! search it. [`read_text`] names the line, the column and the byte.

use std::path::Path;
use std::str::Utf8Error;

/// Reads `path` as UTF-8 text. The error is the problem alone, for the
/// caller to put after the file's name: the system's reason it could not
/// be read, or where its bytes stop being UTF-8.
pub(crate) fn read_text(path: &Path) -> Result<String, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read it: {e}"))?;
    String::from_utf8(bytes).map_err(|e| not_utf8(e.as_bytes(), e.utf8_error()))
}

/// Where `bytes` stop being UTF-8, as [`read_text`] says it: `line 3,
/// column 7 (byte 41): 0xe9 is not UTF-8 …`.
pub(crate) fn not_utf8(bytes: &[u8], error: Utf8Error) -> String {
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

    #[test]
    fn a_file_that_cannot_be_read_says_why() {
        let missing = read_text(Path::new("/no/such/livesim/file.json")).unwrap_err();
        assert!(missing.starts_with("cannot read it: "), "{missing}");
    }
}
