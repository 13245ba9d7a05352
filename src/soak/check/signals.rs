//! What the server said in its own words, read from a frame's JSON for
//! the reference model: token counts, a `goAway`'s time left, a
//! resumption update's flag, the ids a cancellation names.
//!
//! Each is read only when the frame says it in the documented form (a
//! count as an integer, a time as `"<seconds>s"`, a flag as a boolean, ids
//! as strings), and by this file's own reading, not the session's wire
//! types: anything else gives `None` and the model expects the event by
//! its kind alone.

use std::time::Duration;

use super::json::{Json, Object};
use super::model::{Expected, is_snake_of};

/// The token counts `usageMetadata` may carry (`usage` events keep them
/// under these names).
const COUNTS: [&str; 6] = [
    "promptTokenCount",
    "cachedContentTokenCount",
    "responseTokenCount",
    "toolUsePromptTokenCount",
    "thoughtsTokenCount",
    "totalTokenCount",
];

/// The member named `camel` (or its snake_case spelling) when the object
/// names it one way only; `Err` when it names it both ways (which the
/// documentation leaves open).
fn sole_member<'o, 'a>(object: &'o Object<'a>, camel: &str) -> Result<Option<&'o Json<'a>>, ()> {
    let mut found = object
        .iter()
        .filter(|(key, _)| *key == camel || is_snake_of(key, camel))
        .map(|(_, value)| value);
    let first = found.next();
    match found.next() {
        Some(_) => Err(()),
        None => Ok(first),
    }
}

/// A token count in the documented form: an integer (or one in quotes)
/// that fits 32 bits.
fn count(value: &Json<'_>) -> Option<i64> {
    let digits = match value {
        Json::Number(literal) => literal.as_ref(),
        Json::String(text) => text.as_ref(),
        _ => return None,
    };
    let unsigned = digits.strip_prefix('-').unwrap_or(digits);
    if unsigned.is_empty() || !unsigned.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: i64 = digits.parse().ok()?;
    i32::try_from(n).is_ok().then_some(n)
}

/// The counts `usageMetadata` gives, when each is in the documented form.
pub(super) fn usage_of(usage: &Json<'_>) -> Option<Expected> {
    let usage = usage.as_object()?;
    let mut counts = Vec::new();
    for name in COUNTS {
        let given = match sole_member(usage, name).ok()? {
            Some(value) => Some(count(value)?),
            None => None,
        };
        counts.push((name, given));
    }
    Some(Expected::Usage(counts))
}

/// A protobuf duration as JSON writes it: whole seconds, up to nine
/// fractional digits, then `s` (`"12.5s"`).
pub(super) fn duration(text: &str) -> Option<Duration> {
    let number = text.strip_suffix('s')?;
    // A point, when there is one, has digits after it.
    let (whole, fraction) = match number.split_once('.') {
        Some((_, "")) => return None,
        Some(parts) => parts,
        None => (number, ""),
    };
    let digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !digits(whole) || !digits(fraction) || fraction.len() > 9 {
        return None;
    }
    let seconds: u64 = whole.parse().ok()?;
    let nanos: u32 = format!("{fraction:0<9}").parse().ok()?;
    Some(Duration::new(seconds, nanos))
}

/// A `goAway`'s time left: none given, or given in the documented form.
pub(super) fn go_away_of(go_away: &Json<'_>) -> Option<Expected> {
    match sole_member(go_away.as_object()?, "timeLeft").ok()? {
        None => Some(Expected::GoAway(None)),
        Some(left) => Some(Expected::GoAway(Some(duration(left.as_str()?)?))),
    }
}

/// A resumption update's flag: absent (not resumable) or a boolean.
pub(super) fn resumable_of(update: &Json<'_>) -> Option<Expected> {
    match sole_member(update.as_object()?, "resumable").ok()? {
        None => Some(Expected::Resumable(false)),
        Some(flag) => Some(Expected::Resumable(flag.as_bool()?)),
    }
}

/// The ids a cancellation names, when it names them as a list of strings.
pub(super) fn cancelled_of(cancellation: &Json<'_>) -> Option<Expected> {
    let ids = sole_member(cancellation.as_object()?, "ids").ok()??;
    let ids = ids
        .as_array()?
        .iter()
        .map(|id| id.as_str().map(str::to_string))
        .collect::<Option<Vec<String>>>()?;
    Some(Expected::Cancelled(ids))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Json<'_> {
        Json::parse(text.as_bytes()).expect("JSON")
    }

    #[test]
    fn a_time_left_is_read_as_protobuf_writes_it() {
        let ms = |n| Some(Duration::from_millis(n));
        assert_eq!(duration("0s"), ms(0));
        assert_eq!(duration("60s"), ms(60_000));
        assert_eq!(duration("12.5s"), ms(12_500));
        assert_eq!(duration("1.000000001s"), Some(Duration::new(1, 1)));
        for other in [
            "",
            "s",
            "5",
            ".5s",
            "1.s",
            "-1s",
            "1e3s",
            "1.0000000001s",
            "1,5s",
            "5S",
        ] {
            assert_eq!(duration(other), None, "{other:?}");
        }
    }

    #[test]
    fn a_count_is_an_integer_that_fits_32_bits() {
        assert_eq!(count(&parsed("183")), Some(183));
        assert_eq!(count(&parsed("\"183\"")), Some(183));
        assert_eq!(count(&parsed("-5")), Some(-5));
        assert_eq!(count(&parsed("2147483647")), Some(i64::from(i32::MAX)));
        for other in [
            "2147483648",
            "1.0",
            "1e2",
            "\"\"",
            "\"x\"",
            "null",
            "true",
            "[]",
        ] {
            assert_eq!(count(&parsed(other)), None, "{other}");
        }
    }

    #[test]
    fn usage_names_each_count_given_or_not() {
        let usage = usage_of(&parsed(
            r#"{"promptTokenCount": 7, "total_token_count": "9", "x": 1}"#,
        ));
        let Some(Expected::Usage(counts)) = usage else {
            panic!("{usage:?}");
        };
        let given: Vec<_> = counts.iter().filter(|(_, c)| c.is_some()).collect();
        assert_eq!(
            given,
            [
                &("promptTokenCount", Some(7)),
                &("totalTokenCount", Some(9))
            ]
        );
        assert_eq!(counts.len(), COUNTS.len());
        // A count named both ways, or not a count, leaves the kind alone.
        assert_eq!(
            usage_of(&parsed(r#"{"totalTokenCount": 1, "total_token_count": 1}"#)),
            None
        );
        assert_eq!(usage_of(&parsed(r#"{"totalTokenCount": 1.5}"#)), None);
        assert_eq!(usage_of(&parsed("[]")), None);
    }

    #[test]
    fn notices_are_read_when_said_in_the_documented_form() {
        assert_eq!(
            go_away_of(&parsed(r#"{"timeLeft": "2.5s"}"#)),
            Some(Expected::GoAway(Some(Duration::from_millis(2_500))))
        );
        assert_eq!(go_away_of(&parsed("{}")), Some(Expected::GoAway(None)));
        assert_eq!(go_away_of(&parsed(r#"{"timeLeft": 5}"#)), None);
        assert_eq!(
            resumable_of(&parsed(r#"{"newHandle": "h", "resumable": true}"#)),
            Some(Expected::Resumable(true))
        );
        assert_eq!(
            resumable_of(&parsed(r#"{"newHandle": "h"}"#)),
            Some(Expected::Resumable(false))
        );
        assert_eq!(resumable_of(&parsed(r#"{"resumable": "true"}"#)), None);
        assert_eq!(
            cancelled_of(&parsed(r#"{"ids": ["a", "b"]}"#)),
            Some(Expected::Cancelled(vec!["a".into(), "b".into()]))
        );
        assert_eq!(cancelled_of(&parsed(r#"{"ids": ["a", 1]}"#)), None);
        assert_eq!(cancelled_of(&parsed("{}")), None);
    }
}
