//! Versioned JSONL files: tapes and journals start with a header line,
//! `{"v":1,"kind":"tape"}`, as scripts and spec files carry `"v"`.
//!
//! A file written before headers existed (its first line is a record)
//! still loads, as version 0 of its kind. A header of another kind (a
//! wire log handed to the journal reader) or of a newer version is an
//! error naming the file and what it is.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::decoder::JsonlDecoder;
use super::decoder::TornLine;
use super::file::{JsonlError, Parsed, drain_with};
use super::strict;

/// The first line of a versioned JSONL file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileHeader {
    /// The format version.
    pub v: u32,
    /// What the file holds: `tape`, `journal`.
    pub kind: String,
}

impl FileHeader {
    /// The header line for `kind` at `version`, with its newline.
    pub fn line(kind: &str, version: u32) -> Vec<u8> {
        let header = FileHeader {
            v: version,
            kind: kind.to_string(),
        };
        let mut line = serde_json::to_vec(&header).unwrap_or_default();
        line.push(b'\n');
        line
    }
}

/// Decodes a versioned JSONL file of `kind`, reading versions up to
/// `version`: the header (if the file has one) is checked and left out,
/// then every record, with the same handling of a damaged end as the unversioned reader.
pub fn parse_versioned<T: DeserializeOwned>(
    file: &str,
    bytes: &[u8],
    kind: &str,
    version: u32,
) -> Result<Parsed<T>, JsonlError> {
    let mut records = Vec::new();
    let torn = parse_versioned_with(file, bytes, kind, version, |_, record| {
        records.push(record);
        Ok::<(), JsonlError>(())
    })?;
    Ok(Parsed { records, torn })
}

/// [`parse_versioned`], handing each good record to `keep` with its line
/// number (for readers whose own errors name the line of a record).
pub fn parse_versioned_with<T, E>(
    file: &str,
    bytes: &[u8],
    kind: &str,
    version: u32,
    keep: impl FnMut(u64, T) -> Result<(), E>,
) -> Result<Option<TornLine>, E>
where
    T: DeserializeOwned,
    E: From<JsonlError>,
{
    let bad = |line: u64, problem: String| JsonlError::BadLine {
        file: file.to_string(),
        line,
        problem,
    };
    if let Some(problem) = strict::bom(bytes) {
        return Err(bad(1, problem).into());
    }
    // The first non-blank line, and where it ends.
    let mut start = 0;
    let mut lines = 0;
    let mut header_end = None;
    while start < bytes.len() {
        let end = bytes[start..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len(), |at| start + at + 1);
        lines += 1;
        let line = &bytes[start..end];
        if !line.iter().all(u8::is_ascii_whitespace) {
            let value: Option<serde_json::Value> = serde_json::from_slice(line).ok();
            if value.as_ref().and_then(|v| v.get("v")).is_some() {
                header_end = Some((end, lines, line));
            }
            break;
        }
        start = end;
    }
    let Some((end, lines, line)) = header_end else {
        // No header: a file from before headers, version 0.
        let mut decoder = JsonlDecoder::new(file).unique_keys();
        decoder.feed(bytes);
        decoder.end();
        return drain_with(decoder, keep);
    };
    let text = String::from_utf8_lossy(line);
    check_header(&text, kind, version).map_err(|problem| bad(lines, problem))?;
    let mut decoder = JsonlDecoder::new(file)
        .after_lines(lines, end as u64)
        .unique_keys();
    decoder.feed(&bytes[end..]);
    decoder.end();
    drain_with(decoder, keep)
}

/// Checks the header line `text` of a versioned JSONL file of `kind`,
/// reading versions up to `version`: the one check of a header, shared by
/// the readers and by `sim import` (which keeps the good lines of a
/// damaged file, but not a file whose header it cannot read). The error is
/// the problem, for after the file's name and line.
pub(crate) fn check_header(text: &str, kind: &str, version: u32) -> Result<FileHeader, String> {
    // A key given twice is named where its second copy starts (serde's
    // own refusal points past the value, and says "field").
    if let Some(twice) = strict::duplicate_key_in_line(text) {
        return Err(format!("not a {kind} header: {twice}"));
    }
    // `FileHeader` denies unknown fields.
    let header: FileHeader = serde_json::from_str(text)
        .map_err(|e| format!("not a {kind} header: {}", strict::explain_in_line(text, &e)))?;
    if header.kind != kind {
        return Err(format!(
            "this is a {} file, not a {kind} (its header says \"kind\": {:?})",
            header.kind, header.kind
        ));
    }
    if header.v > version {
        return Err(format!(
            "{kind} version {} is not supported (this livesim reads versions up to {version})",
            header.v
        ));
    }
    Ok(header)
}
