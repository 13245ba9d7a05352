//! What the script player reads of a connection's setup: whether the
//! first message is one, and which session it resumes.
//!
//! A setup carries the whole agent (instructions, every tool's schema),
//! and the player needs three facts of it. Building a `Value` of it costs
//! a map per object and a copy per string, on every connection of every
//! scripted test; [`look`] reads the same text once and keeps only those
//! facts. It is a shortcut, never a second opinion: it answers only when
//! the text is a lone `setup` object that the whole parse would read the
//! same way, and leaves everything else (a name given twice, serde_json's
//! private number form, any text that is not JSON) to [`read`], which
//! parses the `Value` and words the problem.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::client::summary;
use crate::wire::numbers::NUMBER_TOKEN;

/// The facts of a setup the player checks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Setup {
    /// `sessionResumption` (or `session_resumption`) is an object.
    pub resumption: bool,
    /// That object's `handle`, when it is a non-empty string.
    pub handle: Option<String>,
}

/// A client's first message that is not a setup: what the player reports,
/// and the reason the connection closes with.
pub(super) struct NotSetup {
    pub problem: String,
    pub reason: &'static str,
}

/// The setup in `bytes`, read without building the message; `None` when
/// only [`read`] can tell.
pub(super) fn look(bytes: &[u8]) -> Option<Setup> {
    serde_json::from_slice::<Opening>(bytes).ok()?.0
}

/// The setup in `bytes`, from the whole parse: what [`look`] must agree
/// with whenever it answers.
pub(super) fn read(bytes: &[u8]) -> Result<Setup, NotSetup> {
    let mut message: Option<Value> = serde_json::from_slice(bytes).ok();
    // Taken out of the message, not copied: the message is only shown
    // again when it holds no setup.
    let setup = match message.as_mut().and_then(Value::as_object_mut) {
        Some(object) if object.len() == 1 => object.remove("setup"),
        _ => None,
    };
    let Some(setup) = setup else {
        return Err(NotSetup {
            problem: format!(
                "the first client message must be setup, got {}",
                summary(message.as_ref(), bytes)
            ),
            reason: "Invalid JSON payload received. The first message must be setup.",
        });
    };
    // The service reads `setup` as its message type: anything but an
    // object (a string, null) is not one.
    if !setup.is_object() {
        return Err(NotSetup {
            problem: format!(
                "the setup must be an object, got {}",
                summary(Some(&setup), &[])
            ),
            reason: "Invalid JSON payload received. Setup must be an object.",
        });
    }
    let resumption = setup
        .get("sessionResumption")
        .or_else(|| setup.get("session_resumption"));
    Ok(Setup {
        resumption: resumption.is_some_and(Value::is_object),
        handle: resumption
            .and_then(|r| r.get("handle"))
            .and_then(Value::as_str)
            .filter(|h| !h.is_empty())
            .map(String::from),
    })
}

/// Why a look gives up: the whole parse decides.
const UNSURE: &str = "left to the whole parse";

/// The whole message: `Some` only for an object whose one member is a
/// `setup` object, named once.
struct Opening(Option<Setup>);

/// Any JSON value, read through to its end so that serde_json checks
/// every string and number in it as a `Value` parse does.
struct Checked;

/// A member's name, borrowed when the text has no escape.
struct Name<'de>(Cow<'de, str>);

/// The value of a member named as serde_json's number form: accepted
/// only as a `Value` accepts it, a string holding a number.
struct NumberText;

/// The value of `setup`: its resumption members when it is an object.
enum SetupBody {
    Object {
        camel: Option<Resumption>,
        snake: Option<Resumption>,
    },
    Other,
}

/// The value of `sessionResumption`.
struct Resumption {
    object: bool,
    handle: Option<String>,
}

/// The value of `handle`: the text when it is a string.
struct HandleText(Option<String>);

/// Reads an object's members, calling `member` with each name (which must
/// read that member's value). `Ok(false)`: the "object" was serde_json's
/// form of a number, not an object.
fn members<'de, A: MapAccess<'de>>(
    mut map: A,
    mut member: impl FnMut(&str, &mut A) -> Result<(), A::Error>,
) -> Result<bool, A::Error> {
    let Some(first) = map.next_key::<Name<'de>>()? else {
        return Ok(true);
    };
    // serde_json's `arbitrary_precision` hands a number over as an object
    // with this one member, and a `Value` reads any object whose first
    // member has that name as a number.
    if first.0 == NUMBER_TOKEN {
        // What a `Value` does with it: a number written in a string, and
        // nothing after it.
        map.next_value::<NumberText>()?;
        return match map.next_key::<Name<'de>>()? {
            None => Ok(false),
            Some(_) => Err(de::Error::custom(UNSURE)),
        };
    }
    member(&first.0, &mut map)?;
    while let Some(name) = map.next_key::<Name<'de>>()? {
        member(&name.0, &mut map)?;
    }
    Ok(true)
}

/// Reads a sequence's items through to its end.
fn items<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<Checked>()?.is_some() {}
    Ok(())
}

/// Visitor methods for `null`, booleans and numbers: the deserializer
/// checked them already, and none is looked into. (Numbers come as
/// objects: see [`NUMBER_TOKEN`].)
macro_rules! scalars {
    ($value:expr) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($value)
        }
    };
}

impl<'de> Deserialize<'de> for Checked {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Any;
        impl<'de> Visitor<'de> for Any {
            type Value = Checked;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            scalars!(Checked);
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Checked, E> {
                Ok(Checked)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Checked, A::Error> {
                items(seq).map(|()| Checked)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Checked, A::Error> {
                members(map, |_, map| map.next_value::<Checked>().map(drop)).map(|_| Checked)
            }
        }
        deserializer.deserialize_any(Any)
    }
}

impl<'de> Deserialize<'de> for Name<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Text;
        impl<'de> Visitor<'de> for Text {
            type Value = Name<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a member's name")
            }
            fn visit_borrowed_str<E: de::Error>(self, name: &'de str) -> Result<Name<'de>, E> {
                Ok(Name(Cow::Borrowed(name)))
            }
            fn visit_str<E: de::Error>(self, name: &str) -> Result<Name<'de>, E> {
                Ok(Name(Cow::Owned(name.to_string())))
            }
        }
        deserializer.deserialize_str(Text)
    }
}

impl<'de> Deserialize<'de> for NumberText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Text;
        impl Visitor<'_> for Text {
            type Value = NumberText;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string containing a number")
            }
            fn visit_str<E: de::Error>(self, text: &str) -> Result<NumberText, E> {
                text.parse::<serde_json::Number>()
                    .map(|_| NumberText)
                    .map_err(de::Error::custom)
            }
        }
        deserializer.deserialize_str(Text)
    }
}

impl<'de> Deserialize<'de> for Opening {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Message;
        impl<'de> Visitor<'de> for Message {
            type Value = Opening;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a client message")
            }
            scalars!(Opening(None));
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Opening, E> {
                Ok(Opening(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Opening, A::Error> {
                items(seq).map(|()| Opening(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Opening, A::Error> {
                let mut setup = None;
                let mut others = false;
                let object = members(map, |name, map| {
                    if name == "setup" && setup.is_none() {
                        setup = Some(map.next_value::<SetupBody>()?);
                    } else {
                        others = true;
                        map.next_value::<Checked>()?;
                    }
                    Ok(())
                })?;
                let setup = match setup {
                    Some(SetupBody::Object { camel, snake }) if object && !others => {
                        // As the whole parse reads it: the camel-case
                        // member whenever it is there.
                        let resumption = camel.or(snake);
                        Some(Setup {
                            resumption: resumption.as_ref().is_some_and(|r| r.object),
                            handle: resumption.and_then(|r| r.handle),
                        })
                    }
                    _ => None,
                };
                Ok(Opening(setup))
            }
        }
        deserializer.deserialize_any(Message)
    }
}

impl<'de> Deserialize<'de> for SetupBody {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Body;
        impl<'de> Visitor<'de> for Body {
            type Value = SetupBody;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a setup")
            }
            scalars!(SetupBody::Other);
            fn visit_str<E: de::Error>(self, _: &str) -> Result<SetupBody, E> {
                Ok(SetupBody::Other)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<SetupBody, A::Error> {
                items(seq).map(|()| SetupBody::Other)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<SetupBody, A::Error> {
                let (mut camel, mut snake) = (None, None);
                let object = members(map, |name, map| {
                    let slot = match name {
                        "sessionResumption" => &mut camel,
                        "session_resumption" => &mut snake,
                        _ => return map.next_value::<Checked>().map(drop),
                    };
                    if slot.is_some() {
                        // Named twice: the whole parse keeps the last.
                        return Err(de::Error::custom(UNSURE));
                    }
                    *slot = Some(map.next_value::<Resumption>()?);
                    Ok(())
                })?;
                Ok(if object {
                    SetupBody::Object { camel, snake }
                } else {
                    SetupBody::Other
                })
            }
        }
        deserializer.deserialize_any(Body)
    }
}

impl<'de> Deserialize<'de> for Resumption {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Body;
        const NOT_OBJECT: Resumption = Resumption {
            object: false,
            handle: None,
        };
        impl<'de> Visitor<'de> for Body {
            type Value = Resumption;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a session resumption config")
            }
            scalars!(NOT_OBJECT);
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Resumption, E> {
                Ok(NOT_OBJECT)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Resumption, A::Error> {
                items(seq).map(|()| NOT_OBJECT)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Resumption, A::Error> {
                let mut handle: Option<HandleText> = None;
                let object = members(map, |name, map| {
                    if name != "handle" {
                        return map.next_value::<Checked>().map(drop);
                    }
                    if handle.is_some() {
                        return Err(de::Error::custom(UNSURE));
                    }
                    handle = Some(map.next_value::<HandleText>()?);
                    Ok(())
                })?;
                Ok(Resumption {
                    object,
                    handle: handle.and_then(|h| h.0).filter(|h| object && !h.is_empty()),
                })
            }
        }
        deserializer.deserialize_any(Body)
    }
}

impl<'de> Deserialize<'de> for HandleText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Text;
        impl<'de> Visitor<'de> for Text {
            type Value = HandleText;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a resumption handle")
            }
            scalars!(HandleText(None));
            fn visit_str<E: de::Error>(self, text: &str) -> Result<HandleText, E> {
                Ok(HandleText(Some(text.to_string())))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<HandleText, A::Error> {
                items(seq).map(|()| HandleText(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<HandleText, A::Error> {
                members(map, |_, map| map.next_value::<Checked>().map(drop))
                    .map(|_| HandleText(None))
            }
        }
        deserializer.deserialize_any(Text)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// A value of the kinds that decide what a parse accepts: strings
    /// with escapes (paired and lone surrogates), numbers serde_json
    /// reads specially or refuses, serde_json's private number form.
    fn values() -> impl Strategy<Value = String> {
        let plain = prop_oneof![
            Just("null"),
            Just("true"),
            Just("12"),
            Just("-0"),
            Just("1e400"),
            Just("123456789012345678901234567890"),
            Just(r#""h-1""#),
            Just(r#""""#),
            Just(r#""a\nb\u00e9""#),
            Just(r#""\ud83d\ude00""#),
            Just(r#"{"$serde_json::private::Number":"5"}"#),
        ]
        .prop_map(String::from);
        let refused = prop_oneof![
            Just("01".to_string()),
            Just(r#""\ud800""#.to_string()),
            Just(r#""\udc00x""#.to_string()),
            Just(r#"{"$serde_json::private::Number":"x"}"#.to_string()),
            Just(r#"{"$serde_json::private::Number":"5","a":1}"#.to_string()),
            Just(r#"{"$serde_json::private::Number":5}"#.to_string()),
            Just(format!("{}1{}", "[".repeat(130), "]".repeat(130))),
        ];
        let leaf = prop_oneof![
            12 => plain,
            1 => refused,
            1 => Just(format!("{}1{}", "[".repeat(126), "]".repeat(126))),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..3)
                    .prop_map(|items| format!("[{}]", items.join(","))),
                proptest::collection::vec((names(), inner), 0..4).prop_map(|members| {
                    let members: Vec<String> = members
                        .into_iter()
                        .map(|(k, v)| format!("{k}:{v}"))
                        .collect();
                    format!("{{{}}}", members.join(","))
                }),
            ]
        })
    }

    /// Member names, the ones the player reads among them, one escaped.
    fn names() -> impl Strategy<Value = String> {
        prop_oneof![
            Just(r#""setup""#),
            Just(r#""sessionResumption""#),
            Just(r#""session_resumption""#),
            Just(r#""handle""#),
            Just(r#""h\u0061ndle""#),
            Just(r#""model""#),
            Just(r#""$serde_json::private::Number""#),
        ]
        .prop_map(String::from)
    }

    /// Opening messages: mostly a setup object with a resumption member,
    /// sometimes anything at all; then, sometimes, cut short or given a
    /// byte that is not UTF-8.
    fn openings() -> impl Strategy<Value = Vec<u8>> {
        let member = || {
            let handle = prop_oneof![
                3 => prop_oneof![Just(r#""h-1""#), Just(r#""""#), Just(r#""\u0068""#)]
                    .prop_map(String::from),
                1 => values(),
            ];
            let resumption =
                (values(), proptest::option::of(handle)).prop_map(|(v, handle)| match handle {
                    Some(handle) => format!(r#"{{"handle":{handle},"extra":{v}}}"#),
                    None => v,
                });
            let name = prop_oneof![
                2 => Just(r#""sessionResumption""#.to_string()),
                2 => Just(r#""session_resumption""#.to_string()),
                1 => names(),
            ];
            (name, resumption).prop_map(|(name, value)| format!("{name}:{value}"))
        };
        let setup = (member(), member()).prop_map(|(a, b)| format!(r#"{{"model":"m",{a},{b}}}"#));
        // The setup alone, or next to another member (a second setup,
        // say), before or after it.
        let message = (
            setup,
            proptest::option::of((names(), values(), any::<bool>())),
        )
            .prop_map(|(setup, other)| match other {
                None => format!(r#"{{"setup":{setup}}}"#),
                Some((name, value, true)) => format!(r#"{{"setup":{setup},{name}:{value}}}"#),
                Some((name, value, false)) => format!(r#"{{{name}:{value},"setup":{setup}}}"#),
            });
        let text = prop_oneof![3 => message, 1 => values()];
        (text, 0..8u8, any::<prop::sample::Index>()).prop_map(|(text, damage, at)| {
            let mut bytes = text.into_bytes();
            let at = at.index(bytes.len() + 1);
            match damage {
                0 => bytes.truncate(at),
                1 => bytes.insert(at.min(bytes.len()), 0xff),
                _ => {}
            }
            bytes
        })
    }

    fn setup_of(builder: crate::prelude::LiveBuilder) -> Vec<u8> {
        builder.setup_message().to_string().into_bytes()
    }

    proptest! {
        /// Whenever the shortcut answers, the whole parse reads the same
        /// setup from the same bytes.
        #[test]
        fn the_shortcut_agrees_with_the_whole_parse(bytes in openings()) {
            if let Some(looked) = look(&bytes) {
                let read = read(&bytes).map_err(|e| e.problem);
                prop_assert_eq!(Ok(looked), read, "{}", String::from_utf8_lossy(&bytes));
            }
        }
    }

    /// The setups sessions send are read by the shortcut: it is taken,
    /// not only correct when it is.
    #[test]
    fn the_setups_sessions_send_take_the_shortcut() {
        use crate::prelude::*;
        let plain = setup_of(Live::builder().instruction("Be brief.").tools(T::simple(
            "get_weather",
            "Weather for a city",
            |_| async { Ok(serde_json::json!({})) },
        )));
        let read_plain = look(&plain).expect("the shortcut reads a plain setup");
        assert_eq!(
            read_plain,
            Setup {
                resumption: false,
                handle: None
            }
        );
        let resuming = br#"{"setup":{"model":"m","sessionResumption":{"handle":"h-\u0031"}}}"#;
        assert_eq!(
            look(resuming),
            Some(Setup {
                resumption: true,
                handle: Some("h-1".into())
            })
        );
    }

    /// What a `Value` refuses, the shortcut leaves to it; what a `Value`
    /// reads as a number is not an object to the shortcut either.
    #[test]
    fn texts_a_value_refuses_or_reads_oddly_are_not_taken_for_setups() {
        for refused in [
            &br#"{"setup":{"tools":["\ud800"]}}"#[..],
            br#"{"setup":{"x":{"$serde_json::private::Number":"x"}}}"#,
            br#"{"setup":{"x":{"$serde_json::private::Number":"5","y":1}}}"#,
            b"{\"setup\":{\"model\":\"\xff\"}}",
            br#"{"setup":{}} x"#,
        ] {
            assert!(read(refused).is_err());
            assert_eq!(look(refused), None, "{}", String::from_utf8_lossy(refused));
        }
        let deep = format!(
            r#"{{"setup":{{"x":{}1{}}}}}"#,
            "[".repeat(130),
            "]".repeat(130)
        );
        assert!(read(deep.as_bytes()).is_err());
        assert_eq!(look(deep.as_bytes()), None);
        let number = br#"{"setup":{"sessionResumption":{"$serde_json::private::Number":"5"}}}"#;
        let expected = Setup {
            resumption: false,
            handle: None,
        };
        assert_eq!(read(number).ok(), Some(expected.clone()));
        assert_eq!(look(number), Some(expected));
    }
}
