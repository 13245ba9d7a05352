//! `google.protobuf.Duration` in its JSON form: seconds with an `s` suffix,
//! optionally fractional (`"30s"`, `"0.250s"`, `"59.999999s"`).
//!
//! Decoding accepts up to nine fractional digits (nanoseconds) and, to be
//! forgiving, a bare JSON number of seconds. Encoding writes protobuf's
//! canonical form: no fraction for whole seconds, otherwise 3, 6 or 9
//! digits. Negative durations are rejected: no Live field can be negative.

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
        Ok(Some(Duration::from_secs(v)))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        u64::try_from(v)
            .map(|v| Some(Duration::from_secs(v)))
            .map_err(|_| E::custom(format_args!("duration {v} is negative")))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Duration::try_from_secs_f64(v)
            .map(Some)
            .map_err(|_| E::custom(format_args!("{v} is not a duration in seconds")))
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
        ] {
            assert!(parse_duration(text).is_err(), "{text}");
        }
    }
}
