//! Strict reading of the files people edit by hand (scripts, specs) and
//! the ones livesim writes (tapes, journals, wire logs): a typo is an
//! error that says where it is and what was meant, never a silently
//! ignored key.
//!
//! * [`explain`] turns serde's account of a bad document into one that
//!   names the key, its line and column and the nearest valid key
//!   ("unknown key `setle_ms` at line 3, column 5; did you mean
//!   `settle_ms`?");
//! * [`bom`] names a UTF-8 byte-order mark, which JSON does not allow;
//! * [`duplicate_key`] finds a key given twice in one object, which
//!   `serde_json::Value` would otherwise settle silently (the last wins).

use std::collections::BTreeSet;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};

/// The bytes of a UTF-8 byte-order mark.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The error for text that starts with a UTF-8 byte-order mark, if it
/// does.
pub fn bom(bytes: &[u8]) -> Option<String> {
    bytes.starts_with(BOM).then(|| {
        "the file starts with a UTF-8 byte-order mark (bytes EF BB BF), which JSON does not \
         allow; save it as UTF-8 without a BOM"
            .to_string()
    })
}

/// The valid word nearest to `word`, if one is near enough to be the
/// intended one (an edit or two, a swapped pair of letters).
///
/// ```
/// use livesim::jsonl::nearest;
///
/// assert_eq!(nearest("setle_ms", &["v", "name", "settle_ms", "actions"]), Some("settle_ms"));
/// assert_eq!(nearest("outptu", &["kind", "input", "output", "error"]), Some("output"));
/// assert_eq!(nearest("zebra", &["kind", "input"]), None);
/// ```
pub fn nearest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let limit = (word.chars().count() / 3).max(1);
    candidates
        .iter()
        .map(|c| (distance(word, c), *c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// "; did you mean `x`?" for the [`nearest`] candidate, or nothing: the
/// hint every reader ends a mistaken name with.
pub(crate) fn did_you_mean(word: &str, candidates: &[&str]) -> String {
    nearest(word, candidates)
        .map(|meant| format!("; did you mean `{meant}`?"))
        .unwrap_or_default()
}

/// Edit distance with adjacent swaps (optimal string alignment), ignoring
/// ASCII case.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().map(|c| c.to_ascii_lowercase()).collect();
    let b: Vec<char> = b.chars().map(|c| c.to_ascii_lowercase()).collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            d[i][j] = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
            }
        }
    }
    d[a.len()][b.len()]
}

/// serde's message for `error` on `text`, rewritten for a person: an
/// unknown key or name is named with its line and column (where the key
/// starts, not where serde stopped) and the nearest valid one; other
/// errors keep serde's words, with their position as `line L, column C`.
///
/// ```
/// use livesim::jsonl::explain;
///
/// #[derive(Debug, serde::Deserialize)]
/// #[serde(deny_unknown_fields)]
/// #[allow(dead_code)]
/// struct Script { v: u32, settle_ms: u64 }
///
/// let text = "{\"v\": 1,\n  \"setle_ms\": 5}";
/// let error = serde_json::from_str::<Script>(text).unwrap_err();
/// assert_eq!(
///     explain(text, &error),
///     "unknown key `setle_ms` at line 2, column 3; did you mean `settle_ms`? \
///      (expected `v` or `settle_ms`)"
/// );
/// ```
pub fn explain(text: &str, error: &serde_json::Error) -> String {
    let full = error.to_string();
    let message = match full.rfind(" at line ") {
        Some(at) if error.line() > 0 => &full[..at],
        _ => full.as_str(),
    };
    let position = (error.line() > 0).then(|| (error.line(), error.column()));
    explain_message(text, message, position, false)
}

/// [`explain`] for one line of a JSONL file, whose line number the caller
/// gives: positions are columns only.
pub(crate) fn explain_in_line(text: &str, error: &serde_json::Error) -> String {
    let full = error.to_string();
    let message = match full.rfind(" at line ") {
        Some(at) if error.line() > 0 => &full[..at],
        _ => full.as_str(),
    };
    let position = (error.line() > 0).then(|| (error.line(), error.column()));
    explain_message(text, message, position, true)
}

/// The rewriting behind [`explain`]: `position` is where serde stopped,
/// when known (a value decoded from a `Value` has none).
/// `in_line`: the text is one line of a JSONL file, so positions are
/// given as columns only.
fn explain_message(
    text: &str,
    message: &str,
    position: Option<(usize, usize)>,
    in_line: bool,
) -> String {
    let at = |(line, column): (usize, usize)| {
        // serde says column 0 for a value refused before its first
        // character was read: it starts at column 1.
        let column = column.max(1);
        if in_line {
            format!(" at column {column}")
        } else {
            format!(" at line {line}, column {column}")
        }
    };
    for (prefix, what) in [("unknown field `", "key"), ("unknown variant `", "name")] {
        let Some(rest) = message.strip_prefix(prefix) else {
            continue;
        };
        let Some((word, expected)) = rest.split_once('`') else {
            continue;
        };
        let valid: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
        let expected = expected.trim_start_matches(", ").trim();
        // A name holding a control character is shown escaped (it would
        // act on the terminal, or split the line); its raw text holds it
        // escaped too, so it is found back from where serde stopped.
        let mut out = format!("unknown {what} `{}`", shown(word));
        let found = where_is(text, word, position)
            .or_else(|| position.and_then(|stopped| string_before(text, stopped)))
            .or(position);
        if let Some(place) = found {
            out.push_str(&at(place));
        }
        out.push_str(&did_you_mean(word, &valid));
        if !expected.is_empty() {
            out.push_str(&format!(" ({expected})"));
        }
        return out;
    }
    let message = in_json_terms(message);
    match position {
        Some(place) => format!("{message}{}", at(place)),
        None => message.into_owned(),
    }
}

/// serde's "invalid type" and "invalid value" messages in the file's
/// terms: `expected u64` names a Rust type a file's author never wrote,
/// so it reads `expected a whole number, 0 or more`; `map` and `sequence`
/// read `an object` and `a list`.
fn in_json_terms(message: &str) -> std::borrow::Cow<'_, str> {
    let Some((prefix, body)) = ["invalid type: ", "invalid value: "]
        .into_iter()
        .find_map(|prefix| Some((prefix, message.strip_prefix(prefix)?)))
    else {
        return message.into();
    };
    let Some((found, expected)) = body.rsplit_once(", expected ") else {
        return message.into();
    };
    let found = match found {
        "map" => "an object",
        "sequence" => "a list",
        "unit value" => "null",
        other => other,
    };
    let expected = match expected {
        "u8" => "a whole number from 0 to 255",
        "u16" => "a whole number from 0 to 65535",
        "u32" => "a whole number from 0 to 4294967295",
        "u64" | "usize" | "u128" => "a whole number, 0 or more",
        "i8" | "i16" | "i32" | "i64" | "isize" | "i128" => "a whole number",
        "f32" | "f64" => "a number",
        "a sequence" | "sequence" => "a list",
        "a map" | "map" => "an object",
        "a borrowed string" => "a string",
        "unit" => "null",
        "a boolean" => "true or false",
        other if other.starts_with("struct ") || other.starts_with("tuple struct ") => "an object",
        other => other,
    };
    format!("{prefix}{found}, expected {expected}").into()
}

/// A name from a file as an error shows it: control characters (ESC, NUL,
/// a newline) written as `\u{1b}`, so they neither act on the terminal
/// nor split the message.
pub(crate) fn shown(name: &str) -> std::borrow::Cow<'_, str> {
    if !name.chars().any(char::is_control) {
        return name.into();
    }
    name.chars()
        .map(|c| {
            if c.is_control() {
                format!("\\u{{{:x}}}", c as u32)
            } else {
                c.to_string()
            }
        })
        .collect::<String>()
        .into()
}

/// Where `"word"` starts in `text`: the last occurrence before the
/// position serde stopped at, or the first one when there is no position.
fn where_is(text: &str, word: &str, stopped: Option<(usize, usize)>) -> Option<(usize, usize)> {
    let quoted = format!("\"{word}\"");
    let at = match stopped {
        Some((line, column)) => {
            let end = offset_of(text, line, column)?;
            text[..end.min(text.len())].rfind(&quoted)
        }
        None => text.find(&quoted),
    }?;
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    Some((line, before[line_start..].chars().count() + 1))
}

/// Where the JSON string that ends just before `stopped` (serde's
/// position after a key) starts: its opening quote, found back past any
/// escaped quote inside it.
fn string_before(text: &str, stopped: (usize, usize)) -> Option<(usize, usize)> {
    let end = offset_of(text, stopped.0, stopped.1)?;
    let bytes = text.as_bytes();
    let close = bytes[..end].iter().rposition(|&b| b == b'"')?;
    let mut at = close;
    let open = loop {
        at = bytes[..at].iter().rposition(|&b| b == b'"')?;
        let backslashes = bytes[..at]
            .iter()
            .rev()
            .take_while(|&&b| b == b'\\')
            .count();
        if backslashes % 2 == 0 {
            break at;
        }
    };
    let before = &text[..open];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    Some((line, before[line_start..].chars().count() + 1))
}

/// The byte offset just past 1-based `line`, `column` (columns counted in
/// bytes, as serde_json counts them).
fn offset_of(text: &str, line: usize, column: usize) -> Option<usize> {
    let line_start = if line <= 1 {
        0
    } else {
        text.match_indices('\n').nth(line - 2)?.0 + 1
    };
    let mut end = (line_start + column).min(text.len());
    while !text.is_char_boundary(end) {
        end += 1;
    }
    Some(end)
}

/// The first key given twice in one object of `text` (JSON that parses),
/// as an error naming the key, its line and column.
///
/// ```
/// use livesim::jsonl::duplicate_key;
///
/// assert_eq!(
///     duplicate_key("{\"a\": {\"b\": 1,\n \"b\": 2}}").unwrap(),
///     "duplicate key `b` at line 2, column 2"
/// );
/// assert!(duplicate_key("{\"a\": 1, \"b\": {\"a\": 2}}").is_none());
/// ```
pub fn duplicate_key(text: &str) -> Option<String> {
    let (word, place) = duplicate_key_at(text)?;
    let mut out = format!("duplicate key `{word}`");
    if let Some((line, column)) = place {
        out.push_str(&format!(" at line {line}, column {column}"));
    }
    Some(out)
}

/// The first key given twice in one object of `text`, and where the
/// second one is (line and column, 1-based), when that can be told.
pub(crate) fn duplicate_key_at(text: &str) -> Option<(String, Option<(usize, usize)>)> {
    let error = serde_json::from_str::<NoDuplicates>(text).err()?;
    let message = error.to_string();
    let rest = message.strip_prefix("duplicate key `")?;
    let (word, _) = rest.split_once('`')?;
    let position = (error.line() > 0).then(|| (error.line(), error.column()));
    Some((word.to_string(), where_is(text, word, position)))
}

/// [`duplicate_key`] for one line of a JSONL file, whose line number the
/// caller gives: the position is a column only.
pub(crate) fn duplicate_key_in_line(line: &str) -> Option<String> {
    let (word, place) = duplicate_key_at(line)?;
    let mut out = format!("duplicate key `{}`", shown(&word));
    if let Some((_, column)) = place {
        out.push_str(&format!(" at column {column}"));
    }
    out.push_str(" (a key given twice: which value was meant cannot be told)");
    Some(out)
}

/// Any JSON, walked only to refuse a key given twice in one object.
struct NoDuplicates;

impl<'de> serde::Deserialize<'de> for NoDuplicates {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NoDuplicates)
    }
}

impl<'de> Visitor<'de> for NoDuplicates {
    type Value = NoDuplicates;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(NoDuplicates)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(NoDuplicates)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(NoDuplicates)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(NoDuplicates)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(NoDuplicates)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(NoDuplicates)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<NoDuplicates>()?.is_some() {}
        Ok(NoDuplicates)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut seen = BTreeSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                return Err(de::Error::custom(format_args!("duplicate key `{key}`")));
            }
            map.next_value::<NoDuplicates>()?;
        }
        Ok(NoDuplicates)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(distance("arg", "args"), 1);
        assert_eq!(distance("removd", "removed"), 1);
        assert_eq!(distance("outptu", "output"), 1);
        assert_eq!(distance("SEND", "send"), 0);
    }

    #[test]
    fn unknown_names_and_plain_errors() {
        let message = "unknown variant `sned`, expected one of `send`, `send_text`";
        assert_eq!(
            explain_message("[{\"sned\": 1}]", message, None, false),
            "unknown name `sned` at line 1, column 3; did you mean `send`? \
             (expected one of `send`, `send_text`)"
        );
        assert_eq!(
            explain_message("", "missing field `v`", Some((1, 2)), false),
            "missing field `v` at line 1, column 2"
        );
        // A name with a control character, written escaped in the file:
        // shown escaped, and placed at its opening quote.
        #[derive(Debug, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct Pause {
            pause_ms: u64,
        }
        let text = "{\n  \"\\u001bpause_ms\": 5}";
        let error = serde_json::from_str::<Pause>(text).unwrap_err();
        assert_eq!(
            explain(text, &error),
            "unknown key `\\u{1b}pause_ms` at line 2, column 3; did you mean `pause_ms`? \
             (expected `pause_ms`)"
        );
        // An escaped quote inside the name does not end it early.
        let text = "{\"pause_ms\": 1, \"x\\\"\\u0007\": 5}";
        let error = serde_json::from_str::<Pause>(text).unwrap_err();
        assert!(
            explain(text, &error).starts_with("unknown key `x\"\\u{7}` at line 1, column 17 "),
            "{}",
            explain(text, &error)
        );
        assert!(bom(b"\xEF\xBB\xBF{}").unwrap().contains("byte-order mark"));
    }

    #[test]
    fn rust_type_names_read_in_json_terms() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Inner {
            a: u8,
        }
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct File {
            settle_ms: Option<u64>,
            ratio: Option<f64>,
            inner: Option<Inner>,
            list: Option<Vec<u32>>,
            flag: Option<bool>,
        }
        let cases = [
            (
                "{\"settle_ms\": \"200\"}",
                "invalid type: string \"200\", expected a whole number, 0 or more",
            ),
            (
                "{\"settle_ms\": -5}",
                "invalid value: integer `-5`, expected a whole number, 0 or more",
            ),
            (
                "{\"ratio\": [1]}",
                "invalid type: a list, expected a number",
            ),
            (
                "{\"inner\": 3}",
                "invalid type: integer `3`, expected an object",
            ),
            (
                "{\"inner\": {\"a\": 300}}",
                "invalid value: integer `300`, expected a whole number from 0 to 255",
            ),
            ("{\"list\": {}}", "invalid type: an object, expected a list"),
            (
                "{\"flag\": 1}",
                "invalid type: integer `1`, expected true or false",
            ),
        ];
        for (text, expected) in cases {
            let error = serde_json::from_str::<File>(text).unwrap_err();
            let explained = explain(text, &error);
            // The place is serde's; the words are what this test is about.
            let (words, place) = explained.split_once(" at line 1, column ").unwrap();
            assert_eq!(words, expected, "{text}");
            assert!(place.parse::<usize>().is_ok(), "{explained}");
        }
        // Any other message is left as serde wrote it.
        assert_eq!(in_json_terms("missing field `v`"), "missing field `v`");
        assert!(bom(b"{}").is_none());
    }
}
