//! Resumption handles in a payload that does not parse as JSON.
//!
//! A handle is found in structure where it can be (`newHandle`, and
//! `handle` inside `sessionResumption`). A payload cut short, or one that
//! breaks JSON elsewhere (a lone surrogate escape, a stray byte), still
//! carries its handle in plain text, and a log line or a recording that
//! quotes the payload would print it. So such a payload is read as words:
//! every string value after a `"handle"`, `"newHandle"` or `"new_handle"`
//! key counts as a handle, wherever it is. Taking a string that was not a
//! handle out of a broken payload costs nothing; leaving a handle in costs
//! a session.

/// The keys whose string values are handles when read as words.
const KEYS: [&[u8]; 3] = [b"\"handle\"", b"\"newHandle\"", b"\"new_handle\""];

/// Every handle `payload` seems to carry, as it is written there (escapes
/// included; a string cut off by the payload's end runs to the end).
pub(crate) fn handles_in_text(payload: &[u8]) -> Vec<&[u8]> {
    let mut found: Vec<&[u8]> = Vec::new();
    for key in KEYS {
        let mut from = 0;
        while let Some(at) = find(&payload[from..], key) {
            let after_key = from + at + key.len();
            from = after_key;
            if let Some(value) = string_after_colon(&payload[after_key..])
                && !value.is_empty()
                && !found.contains(&value)
            {
                found.push(value);
            }
        }
    }
    found
}

/// The raw text of the string that follows `: ` at the start of `rest`.
fn string_after_colon(rest: &[u8]) -> Option<&[u8]> {
    let rest = skip_space(rest).strip_prefix(b":")?;
    let rest = skip_space(rest).strip_prefix(b"\"")?;
    let mut escaped = false;
    for (i, &byte) in rest.iter().enumerate() {
        match byte {
            _ if escaped => escaped = false,
            b'\\' => escaped = true,
            b'"' => return Some(&rest[..i]),
            _ => {}
        }
    }
    Some(rest)
}

fn skip_space(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .position(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
        .unwrap_or(bytes.len());
    &bytes[start..]
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(payload: &str) -> Vec<String> {
        handles_in_text(payload.as_bytes())
            .into_iter()
            .map(|h| String::from_utf8_lossy(h).into_owned())
            .collect()
    }

    #[test]
    fn a_setup_cut_short_gives_its_handle() {
        assert_eq!(
            found(r#"{"setup": {"sessionResumption": {"handle" : "RESUME-1"}"#),
            ["RESUME-1"]
        );
    }

    #[test]
    fn every_spelling_and_every_occurrence_counts_once() {
        assert_eq!(
            found(
                r#"{"session_resumption":{"handle":"A"},"sessionResumption":{"handle":"B"},
                "sessionResumptionUpdate":{"newHandle":"C","new_handle":"D"},"again":{"handle":"A"}"#
            ),
            ["A", "B", "C", "D"]
        );
    }

    #[test]
    fn escapes_stay_inside_the_string_and_a_cut_string_runs_to_the_end() {
        assert_eq!(found(r#"{"handle":"a\"b\\","x":1"#), [r#"a\"b\\"#]);
        assert_eq!(found(r#"{"handle":"cut-off-han"#), ["cut-off-han"]);
    }

    #[test]
    fn a_key_without_a_string_value_gives_nothing() {
        assert!(found(r#"{"handle": 12, "handle": null, "handle""#).is_empty());
        assert!(found(r#"{"handle":""}"#).is_empty());
        assert!(found("no json here").is_empty());
    }
}
