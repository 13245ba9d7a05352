//! A frame's JSON as the checks read it: borrowed from the frame's bytes,
//! members in order, nothing hashed.
//!
//! The reference model reads every frame a run delivered. Parsing each one
//! into a `serde_json::Value` builds an index map per object and copies
//! every string; the model only looks a few members up and compares a few
//! strings, so it reads this tree instead. It means what a `Value` means:
//! a member named twice keeps its first place and its last value, and
//! [`Json::to_value`] gives back exactly the `Value` serde_json would have
//! parsed (numbers keep their literal).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// The key serde_json's `arbitrary_precision` feature hands a number's
/// literal under (a number arrives as a one-member map).
const NUMBER_TOKEN: &str = "$serde_json::private::Number";

/// How many members an object holds before a name named again is
/// looked up in an index rather than member by member.
const SMALL: usize = 16;

/// One JSON value, borrowing its strings where the text has no escapes.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Json<'a> {
    Null,
    Bool(bool),
    /// A number, as written.
    Number(Cow<'a, str>),
    String(Cow<'a, str>),
    Array(Vec<Json<'a>>),
    Object(Object<'a>),
}

/// An object's members, in the order first named.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Object<'a>(Vec<(Cow<'a, str>, Json<'a>)>);

impl<'a> Json<'a> {
    /// Parses `bytes`; `None` when they are not JSON.
    pub(crate) fn parse(bytes: &'a [u8]) -> Option<Json<'a>> {
        serde_json::from_slice(bytes).ok()
    }

    pub(crate) fn as_object(&self) -> Option<&Object<'a>> {
        match self {
            Json::Object(object) => Some(object),
            _ => None,
        }
    }

    pub(crate) fn as_array(&self) -> Option<&[Json<'a>]> {
        match self {
            Json::Array(items) => Some(items),
            _ => None,
        }
    }

    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(text) => Some(text),
            _ => None,
        }
    }

    pub(crate) fn as_bool(&self) -> Option<bool> {
        match self {
            Json::Bool(flag) => Some(*flag),
            _ => None,
        }
    }

    /// The `Value` serde_json parses from the same text.
    pub(crate) fn to_value(&self) -> Value {
        match self {
            Json::Null => Value::Null,
            Json::Bool(flag) => Value::Bool(*flag),
            // The literal through serde_json's own number parser, so the
            // number is the one a `Value` parse holds.
            Json::Number(literal) => serde_json::from_str(literal).unwrap_or(Value::Null),
            Json::String(text) => Value::String(text.to_string()),
            Json::Array(items) => Value::Array(items.iter().map(Json::to_value).collect()),
            Json::Object(object) => Value::Object(
                object
                    .iter()
                    .map(|(key, value)| (key.to_string(), value.to_value()))
                    .collect(),
            ),
        }
    }
}

impl<'a> Object<'a> {
    /// The member named exactly `key`.
    pub(crate) fn get(&self, key: &str) -> Option<&Json<'a>> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    pub(crate) fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Each member, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &Json<'a>)> {
        self.0.iter().map(|(k, v)| (k.as_ref(), v))
    }

    pub(crate) fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(k, _)| k.as_ref())
    }
}

impl<'de> Deserialize<'de> for Json<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E>(self) -> Result<Json<'de>, E> {
        Ok(Json::Null)
    }

    fn visit_bool<E>(self, flag: bool) -> Result<Json<'de>, E> {
        Ok(Json::Bool(flag))
    }

    // Without `arbitrary_precision` (a build that turns it off), numbers
    // come as numbers.
    fn visit_u64<E>(self, n: u64) -> Result<Json<'de>, E> {
        Ok(Json::Number(Cow::Owned(n.to_string())))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Json<'de>, E> {
        Ok(Json::Number(Cow::Owned(n.to_string())))
    }

    fn visit_f64<E>(self, n: f64) -> Result<Json<'de>, E> {
        Ok(match serde_json::Number::from_f64(n) {
            Some(number) => Json::Number(Cow::Owned(number.to_string())),
            None => Json::Null,
        })
    }

    fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Borrowed(text)))
    }

    fn visit_str<E>(self, text: &str) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Owned(text.to_string())))
    }

    fn visit_string<E>(self, text: String) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Owned(text)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json<'de>, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json<'de>, A::Error> {
        let mut object = Object::default();
        let Some(Key(first)) = map.next_key()? else {
            return Ok(Json::Object(object));
        };
        if first == NUMBER_TOKEN {
            let Key(literal) = map.next_value()?;
            return Ok(Json::Number(literal));
        }
        object.0.push((first, map.next_value()?));
        // Frames' objects are small: a name named again is looked for
        // member by member, until an object is large enough (a hostile
        // frame's, say) for that to cost more than an index of names.
        let mut index: Option<BTreeMap<Cow<'de, str>, usize>> = None;
        while let Some(Key(key)) = map.next_key()? {
            let value = map.next_value()?;
            if index.is_none() && object.0.len() >= SMALL {
                index = Some(
                    object
                        .0
                        .iter()
                        .enumerate()
                        .map(|(i, (k, _))| (k.clone(), i))
                        .collect(),
                );
            }
            let at = match &mut index {
                Some(index) => match index.get(&key) {
                    Some(&at) => Some(at),
                    None => {
                        index.insert(key.clone(), object.0.len());
                        None
                    }
                },
                None => object.0.iter().position(|(k, _)| *k == key),
            };
            match at {
                // Named again: the new value, in the first place.
                Some(at) => object.0[at].1 = value,
                None => object.0.push((key, value)),
            }
        }
        Ok(Json::Object(object))
    }
}

/// A member's name (or a number's literal), borrowed where it can be.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }

            fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(text)))
            }

            fn visit_str<E>(self, text: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(text.to_string())))
            }

            fn visit_string<E>(self, text: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(text)))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// JSON texts with what frames carry: escapes, big and odd numbers,
    /// names repeated, nesting.
    fn texts() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just("null".to_string()),
            any::<bool>().prop_map(|b| b.to_string()),
            any::<i64>().prop_map(|n| n.to_string()),
            prop_oneof![
                Just("-0"),
                Just("1.50"),
                Just("1e400"),
                Just("123456789012345678901234567890"),
                Just("2.5E-3"),
            ]
            .prop_map(String::from),
            "[a-c\\\"é\n]{0,4}".prop_map(|t| serde_json::to_string(&t).unwrap()),
            Just(r#""\u00e9\ud83d\ude00""#.to_string()),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4)
                    .prop_map(|items| format!("[{}]", items.join(","))),
                proptest::collection::vec(("[abk]{0,2}", inner), 0..4).prop_map(|members| {
                    let members: Vec<String> = members
                        .into_iter()
                        .map(|(k, v)| format!("{k:?}:{v}"))
                        .collect();
                    format!("{{{}}}", members.join(","))
                }),
            ]
        })
    }

    proptest! {
        /// For every JSON text, the tree gives back the `Value` serde_json
        /// parses from it, to the same text, and looks each member up as
        /// the `Value` does.
        #[test]
        fn every_text_reads_as_its_value(text in texts()) {
            let value: Value = serde_json::from_str(&text).unwrap();
            let json = Json::parse(text.as_bytes()).unwrap();
            let back = json.to_value();
            prop_assert_eq!(&back, &value);
            prop_assert_eq!(back.to_string(), value.to_string());
            if let (Some(object), Some(map)) = (json.as_object(), value.as_object()) {
                for (key, member) in map {
                    let read = object.get(key).map(Json::to_value);
                    prop_assert_eq!(read.as_ref(), Some(member));
                }
            }
        }
    }

    /// The tree means what a `Value` parse of the same text means: the
    /// same value back, members looked up the same (the last of a name
    /// named twice), the same order.
    #[test]
    fn it_reads_as_a_value_does() {
        let texts = [
            r#"{"a":1,"b":[true,null,"x\"y"],"c":{"d":-0,"e":1.50,"f":1e400}}"#,
            r#"{"k":1,"j":2,"k":3}"#,
            r#"{"big":123456789012345678901234567890,"s":"\u00e9t\u00e9"}"#,
            r#"[{"":{}},[],"",0]"#,
            r#""just a string""#,
        ];
        for text in texts {
            let value: Value = serde_json::from_str(text).unwrap();
            let json = Json::parse(text.as_bytes()).unwrap();
            let back = json.to_value();
            assert_eq!(back, value, "{text}");
            // Same text again, so numbers and member order held too.
            assert_eq!(back.to_string(), value.to_string(), "{text}");
            if let (Some(object), Some(map)) = (json.as_object(), value.as_object()) {
                let keys: Vec<&str> = object.keys().collect();
                let map_keys: Vec<&str> = map.keys().map(String::as_str).collect();
                assert_eq!(keys, map_keys, "{text}");
                for (key, member) in map {
                    assert_eq!(object.get(key).map(Json::to_value).as_ref(), Some(member));
                }
            }
        }
        assert_eq!(Json::parse(b"{\"a\":"), None);
        assert_eq!(Json::parse(b"\xff"), None);
    }

    /// A large object (past the size where names get an index) means the
    /// same, and a hostile one with many members reads in linear time.
    #[test]
    fn a_large_object_reads_as_a_value_does() {
        let members: Vec<String> = (0..40).map(|i| format!("\"k{}\":{i}", i % 25)).collect();
        let text = format!("{{{}}}", members.join(","));
        let value: Value = serde_json::from_str(&text).unwrap();
        let json = Json::parse(text.as_bytes()).unwrap();
        assert_eq!(json.to_value().to_string(), value.to_string());
        let many: Vec<String> = (0..200_000).map(|i| format!("\"m{i}\":0")).collect();
        let text = format!("{{{}}}", many.join(","));
        let json = Json::parse(text.as_bytes()).unwrap();
        assert_eq!(json.as_object().unwrap().keys().count(), 200_000);
    }

    /// Strings without escapes are borrowed from the frame, not copied.
    #[test]
    fn plain_strings_are_borrowed() {
        let text = br#"{"text":"hello","other":"a\nb"}"#;
        let json = Json::parse(text).unwrap();
        let object = json.as_object().unwrap();
        assert!(matches!(
            object.get("text"),
            Some(Json::String(Cow::Borrowed("hello")))
        ));
        assert!(matches!(
            object.get("other"),
            Some(Json::String(Cow::Owned(_)))
        ));
    }
}
