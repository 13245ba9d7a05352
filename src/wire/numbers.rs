//! Numbers and flags as the Live API writes them.
//!
//! Protobuf's JSON mapping writes 64-bit integers as strings (`"17"`) and
//! accepts either form on input; smaller integers come as numbers but may
//! also arrive quoted. False booleans are usually left out, and a `null`
//! means the same as absent. These serde helpers accept every one of those
//! forms and write the canonical one, so decode → encode → decode is stable.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::ser::Serializer;

/// The key under which serde_json's `arbitrary_precision` passes a
/// number's text.
pub(crate) const NUMBER_TOKEN: &str = "$serde_json::private::Number";

/// `v` as an int64, when it is integral and in range.
fn integral(v: f64) -> Option<i64> {
    // `-2^63` is exact as an f64 and `2^63` is the first value past the range.
    (v.fract() == 0.0 && (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&v))
        .then_some(v as i64)
}

/// Accepts an integer as a number, an integral float, a decimal string or
/// null; null becomes `None`.
struct LenientInt;

impl<'de> Visitor<'de> for LenientInt {
    type Value = Option<i64>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an integer, as a number or a decimal string")
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Some(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        i64::try_from(v)
            .map(Some)
            .map_err(|_| E::custom(format_args!("integer {v} is out of range for int64")))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        integral(v)
            .map(Some)
            .ok_or_else(|| E::custom(format_args!("{v} is not an int64")))
    }

    /// A number read from frame text: serde_json (with
    /// `arbitrary_precision`) hands one it does not read as an integer
    /// over as a one-entry map holding its text, as written.
    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        if map.next_key::<String>()?.as_deref() != Some(NUMBER_TOKEN) {
            return Err(de::Error::invalid_type(de::Unexpected::Map, &self));
        }
        let text: String = map.next_value()?;
        text.parse::<i64>()
            .ok()
            .or_else(|| text.parse::<f64>().ok().and_then(integral))
            .map(Some)
            .ok_or_else(|| de::Error::custom(format_args!("{text} is not an int64")))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        v.parse::<i64>()
            .map(Some)
            .map_err(|_| E::custom(format_args!("{v:?} is not an int64 string")))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(LenientInt)
    }
}

/// An `int64` field: written as a JSON string, read from a string or a
/// number. Use with `#[serde(default, with = "int64", skip_serializing_if = "Option::is_none")]`.
pub(crate) mod int64 {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(v: &Option<i64>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => s.collect_str(v),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
        d.deserialize_any(LenientInt)
    }
}

/// An `int32` field (token counts, milliseconds): written as a JSON number,
/// read from a number or a string.
pub(crate) mod int32 {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(v: &Option<i64>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => s.serialize_i64(*v),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
        d.deserialize_any(LenientInt)
    }
}

/// A proto3 boolean where absent, `null` and `false` all mean false.
/// Use with `#[serde(default, deserialize_with = "flag::deserialize", skip_serializing_if = "flag::is_false")]`.
pub(crate) mod flag {
    use super::*;

    struct Flag;

    impl<'de> Visitor<'de> for Flag {
        type Value = bool;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a boolean")
        }

        fn visit_bool<E: de::Error>(self, v: bool) -> Result<bool, E> {
            Ok(v)
        }

        fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
            Ok(false)
        }

        fn visit_none<E: de::Error>(self) -> Result<bool, E> {
            Ok(false)
        }

        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
            d.deserialize_any(Flag)
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
        d.deserialize_any(Flag)
    }

    pub(crate) fn is_false(v: &bool) -> bool {
        !*v
    }
}
