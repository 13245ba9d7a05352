//! Records read only from JSON objects.
//!
//! serde's derived `Deserialize` for a struct also takes its fields as an
//! array, in declaration order: `[4, "flow:active", ["book"], 1767225600011,
//! false]` reads as a journal entry. No livesim file is written that way,
//! and a damaged or hand-made line that happens to take that form would be
//! read with its values matched to fields by position. A record type opts
//! out with `#[serde(remote = "Self")]` on its derive, which turns the
//! derived code into inherent functions, and [`object_record!`], which
//! implements `Deserialize` with [`from_object`] and `Serialize` with the
//! derived code.

use std::fmt;
use std::marker::PhantomData;

use serde::de::value::MapAccessDeserializer;
use serde::de::{Deserializer, MapAccess, Visitor};

/// A record whose fields serde can read from a map (its derive, made
/// inherent with `#[serde(remote = "Self")]`).
pub(crate) trait Fields<'de>: Sized {
    /// What to call the record in an error: `a journal entry`.
    const WHAT: &'static str;

    /// Reads the record's fields (the derived code).
    fn fields<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error>;
}

/// Reads a `T` from a JSON object only: an array (or any other value) is
/// an error saying an object was expected.
pub(crate) fn from_object<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Fields<'de>,
{
    struct Object<T>(PhantomData<T>);

    impl<'de, T: Fields<'de>> Visitor<'de> for Object<T> {
        type Value = T;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "{}, a JSON object", T::WHAT)
        }

        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
            T::fields(MapAccessDeserializer::new(map))
        }
    }

    deserializer.deserialize_map(Object(PhantomData))
}

/// Implements `Deserialize` (from an object only, through [`from_object`])
/// and `Serialize` for a record whose derives carry
/// `#[serde(remote = "Self")]`; `$what` names it in errors (`"a journal
/// entry"`).
macro_rules! object_record {
    ($record:ty, $what:literal) => {
        impl<'de> serde::Deserialize<'de> for $record {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                $crate::jsonl::from_object(deserializer)
            }
        }

        impl<'de> $crate::jsonl::Fields<'de> for $record {
            const WHAT: &'static str = $what;

            fn fields<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                // The derived code: inherent functions come before the
                // trait's.
                <$record>::deserialize(deserializer)
            }
        }

        impl serde::Serialize for $record {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                <$record>::serialize(self, serializer)
            }
        }
    };
}
pub(crate) use object_record;
