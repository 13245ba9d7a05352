//! `google.protobuf.Duration` in its JSON form: seconds with an `s` suffix,
//! optionally fractional (`"30s"`, `"0.250s"`, `"59.999999s"`).
//!
//! Decoding accepts up to nine fractional digits (nanoseconds) and, to be
//! forgiving, a bare JSON number of seconds. Encoding writes protobuf's
//! canonical form: no fraction for whole seconds, otherwise 3, 6 or 9
//! digits. Negative durations are rejected: no Live field can be negative;
//! and so are durations past protobuf's range (10,000 years), which no
//! server can mean and a deadline computed from would overflow.

use std::fmt;
use std::time::Duration;

use serde::de::{self, Deserializer, Visitor};
use serde::ser::Serializer;

/// Why a duration string could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not a protobuf duration: {problem}")]
pub struct DurationError {
    text: String,
    problem: &'static str,
}

/// The most seconds a protobuf `Duration` holds (10,000 years).
pub const MAX_DURATION_SECONDS: u64 = 315_576_000_000;

/// The problem with `secs` seconds, if past protobuf's range.
fn past_range(secs: u64) -> Option<&'static str> {
    (secs > MAX_DURATION_SECONDS)
        .then_some("it is past protobuf's largest duration, 315576000000s (10,000 years)")
}

/// Parses a protobuf JSON duration such as `"0.250s"`.
///
/// ```
/// use std::time::Duration;
/// use livesim::wire::{format_duration, parse_duration};
///
/// assert_eq!(parse_duration("0.250s").unwrap(), Duration::from_millis(250));
/// assert_eq!(parse_duration("59.999999s").unwrap(), Duration::from_micros(59_999_999));
/// assert_eq!(format_duration(Duration::from_millis(250)), "0.250s");
/// assert!(parse_duration("soon").is_err());
/// ```
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let fail = |problem| DurationError {
        text: text.to_owned(),
        problem,
    };
    let body = text
        .strip_suffix('s')
        .ok_or_else(|| fail("it does not end in 's'"))?;
    if body.starts_with('-') {
        return Err(fail("it is negative"));
    }
    let (whole, fraction) = match body.split_once('.') {
        Some((whole, fraction)) => (whole, Some(fraction)),
        None => (body, None),
    };
    if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit()) {
        return Err(fail("the seconds are not a whole number"));
    }
    let secs: u64 = whole.parse().map_err(|_| fail("the seconds overflow"))?;
    if let Some(problem) = past_range(secs) {
        return Err(fail(problem));
    }
    let nanos = match fraction {
        None => 0,
        Some(f) if f.is_empty() || f.len() > 9 || !f.bytes().all(|b| b.is_ascii_digit()) => {
            return Err(fail("the fraction must be 1 to 9 digits"));
        }
        Some(f) => {
            let digits: u32 = f.parse().map_err(|_| fail("bad fraction"))?;
            digits * 10u32.pow(9 - f.len() as u32)
        }
    };
    Ok(Duration::new(secs, nanos))
}

/// Writes a duration in protobuf's canonical JSON form.
pub fn format_duration(d: Duration) -> String {
    let (secs, nanos) = (d.as_secs(), d.subsec_nanos());
    if nanos == 0 {
        format!("{secs}s")
    } else if nanos % 1_000_000 == 0 {
        format!("{secs}.{:03}s", nanos / 1_000_000)
    } else if nanos % 1_000 == 0 {
        format!("{secs}.{:06}s", nanos / 1_000)
    } else {
        format!("{secs}.{nanos:09}s")
    }
}

/// A `Duration` field: `#[serde(default, with = "duration::field", skip_serializing_if = "Option::is_none")]`.
pub(crate) mod field {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(v: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(d) => s.serialize_str(&format_duration(*d)),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Duration>, D::Error> {
        d.deserialize_any(DurationVisitor)
    }
}

struct DurationVisitor;

impl<'de> Visitor<'de> for DurationVisitor {
    type Value = Option<Duration>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a duration string such as \"0.250s\"")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        parse_duration(v).map(Some).map_err(E::custom)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        match past_range(v) {
            Some(problem) => Err(E::custom(format_args!("duration {v}: {problem}"))),
            None => Ok(Some(Duration::from_secs(v))),
        }
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        match u64::try_from(v) {
            Ok(v) => self.visit_u64(v),
            Err(_) => Err(E::custom(format_args!("duration {v} is negative"))),
        }
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        match Duration::try_from_secs_f64(v) {
            Ok(d) => match past_range(d.as_secs()) {
                Some(problem) => Err(E::custom(format_args!("duration {v}: {problem}"))),
                None => Ok(Some(d)),
            },
            Err(_) => Err(E::custom(format_args!("{v} is not a duration in seconds"))),
        }
    }

    /// A number read from frame text that is no integer (`1.5`, `1e3`):
    /// serde_json (with `arbitrary_precision`) hands it over as a
    /// one-entry map holding its text.
    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        if map.next_key::<String>()?.as_deref() != Some(super::numbers::NUMBER_TOKEN) {
            return Err(de::Error::invalid_type(de::Unexpected::Map, &self));
        }
        let text: String = map.next_value()?;
        match text.parse::<f64>() {
            Ok(v) => self.visit_f64(v),
            Err(_) => Err(de::Error::custom(format_args!(
                "{text} is not a duration in seconds"
            ))),
        }
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(DurationVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_forms_round_trip() {
        for text in ["30s", "0.250s", "59.999999s", "0s", "1.000000001s"] {
            assert_eq!(format_duration(parse_duration(text).unwrap()), text);
        }
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(format_duration(Duration::from_millis(1500)), "1.500s");
    }

    #[test]
    fn malformed_durations_are_errors() {
        for text in [
            "",
            "s",
            "30",
            "-1s",
            "1.s",
            ".5s",
            "1.0000000001s",
            "1e3s",
            "abc",
            "315576000001s",
            "18446744073709551615s",
        ] {
            assert!(parse_duration(text).is_err(), "{text}");
        }
    }

    /// Protobuf's largest duration is read; one second more, as a string
    /// or a number, is refused rather than overflow a deadline.
    #[test]
    fn durations_stop_at_protobufs_range() {
        let largest = Duration::from_secs(MAX_DURATION_SECONDS);
        assert_eq!(parse_duration("315576000000s").unwrap(), largest);
        let read = |json: &str| -> Result<Option<Duration>, String> {
            let mut d = serde_json::Deserializer::from_str(json);
            field::deserialize(&mut d).map_err(|e| e.to_string())
        };
        assert_eq!(read("315576000000"), Ok(Some(largest)));
        // A fractional number of seconds is read as one, as documented.
        assert_eq!(read("1.5"), Ok(Some(Duration::from_millis(1500))));
        assert_eq!(read("2e1"), Ok(Some(Duration::from_secs(20))));
        for json in [
            "315576000001",
            "18446744073709551615",
            "1e300",
            "\"315576000001s\"",
        ] {
            let err = read(json).expect_err(json);
            assert!(
                err.contains("largest duration") || err.contains("not a duration"),
                "{json}: {err}"
            );
        }
    }
}
