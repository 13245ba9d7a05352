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
//!
//! The tree is read by a parser of its own, not serde_json's: an oracle
//! that checks what the session decoded should not decode with the same
//! code, and a byte-by-byte reader is about twice as fast as serde's
//! visitors. It accepts exactly the texts serde_json accepts, which the
//! tests hold it to, broken texts included.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::Value;

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
    /// Parses `bytes`; `None` when they are not JSON (or nest deeper than
    /// serde_json reads).
    pub(crate) fn parse(bytes: &'a [u8]) -> Option<Json<'a>> {
        let mut reader = Reader {
            bytes,
            at: 0,
            depth: 0,
        };
        reader.skip_space();
        let value = reader.value()?;
        reader.skip_space();
        (reader.at == bytes.len()).then_some(value)
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

    /// Adds a member as a parse meets it: a name named again keeps its
    /// first place and takes the new value. `index` is built once the
    /// object holds [`SMALL`] members.
    fn insert(
        &mut self,
        index: &mut Option<BTreeMap<Cow<'a, str>, usize>>,
        key: Cow<'a, str>,
        value: Json<'a>,
    ) {
        if index.is_none() && self.0.len() >= SMALL {
            *index = Some(
                self.0
                    .iter()
                    .enumerate()
                    .map(|(i, (k, _))| (k.clone(), i))
                    .collect(),
            );
        }
        let at = match index {
            Some(index) => match index.get(&key) {
                Some(&at) => Some(at),
                None => {
                    index.insert(key.clone(), self.0.len());
                    None
                }
            },
            None => self.0.iter().position(|(k, _)| *k == key),
        };
        match at {
            Some(at) => self.0[at].1 = value,
            None => self.0.push((key, value)),
        }
    }
}

/// Deepest nesting of arrays and objects read, as serde_json's own limit:
/// a frame nested deeper is not JSON to the session either.
const DEPTH: usize = 127;

/// Reads one JSON text byte by byte: the grammar of RFC 8259, strings
/// checked as serde_json checks them (UTF-8, no raw control character,
/// surrogates paired), numbers kept as written.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    depth: usize,
}

impl<'a> Reader<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn skip_space(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.at += 1;
        }
    }

    /// Steps over `byte`, or fails.
    fn expect(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    fn value(&mut self) -> Option<Json<'a>> {
        match self.peek()? {
            b'{' => self.nested(Self::object),
            b'[' => self.nested(Self::array),
            b'"' => self.string().map(Json::String),
            b't' => self.word(b"true", Json::Bool(true)),
            b'f' => self.word(b"false", Json::Bool(false)),
            b'n' => self.word(b"null", Json::Null),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn word(&mut self, word: &[u8], value: Json<'a>) -> Option<Json<'a>> {
        let end = self.at + word.len();
        (self.bytes.get(self.at..end)? == word).then(|| {
            self.at = end;
            value
        })
    }

    fn nested(&mut self, read: fn(&mut Self) -> Option<Json<'a>>) -> Option<Json<'a>> {
        if self.depth == DEPTH {
            return None;
        }
        self.depth += 1;
        let value = read(self);
        self.depth -= 1;
        value
    }

    fn array(&mut self) -> Option<Json<'a>> {
        let mut items = Vec::new();
        self.separated(b'[', b']', |reader| {
            items.push(reader.value()?);
            Some(())
        })?;
        Some(Json::Array(items))
    }

    fn object(&mut self) -> Option<Json<'a>> {
        let mut object = Object::default();
        // Frames' objects are small: a name named again is looked for
        // member by member, until an object is large enough (a hostile
        // frame's, say) for that to cost more than an index of names.
        let mut index: Option<BTreeMap<Cow<'a, str>, usize>> = None;
        self.separated(b'{', b'}', |reader| {
            if reader.peek()? != b'"' {
                return None;
            }
            let key = reader.string()?;
            reader.skip_space();
            reader.expect(b':')?;
            reader.skip_space();
            let value = reader.value()?;
            object.insert(&mut index, key, value);
            Some(())
        })?;
        Some(Json::Object(object))
    }

    /// `open`, then items read by `item` separated by commas, then
    /// `close`: none at all, but no comma without an item after it.
    fn separated(
        &mut self,
        open: u8,
        close: u8,
        mut item: impl FnMut(&mut Self) -> Option<()>,
    ) -> Option<()> {
        self.expect(open)?;
        self.skip_space();
        if self.peek()? == close {
            self.at += 1;
            return Some(());
        }
        loop {
            item(self)?;
            self.skip_space();
            match self.peek()? {
                b',' => {
                    self.at += 1;
                    self.skip_space();
                }
                byte if byte == close => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// A string, the reader on its opening quote: borrowed when it has no
    /// escape.
    fn string(&mut self) -> Option<Cow<'a, str>> {
        self.expect(b'"')?;
        let mut owned: Option<String> = None;
        loop {
            let start = self.at;
            let rest = &self.bytes[start..];
            let stop = memchr::memchr2(b'"', b'\\', rest)?;
            let run = &rest[..stop];
            if run.iter().any(|&b| b < 0x20) {
                return None;
            }
            let run = std::str::from_utf8(run).ok()?;
            self.at = start + stop + 1;
            if rest[stop] == b'"' {
                return Some(match owned {
                    None => Cow::Borrowed(run),
                    Some(mut text) => {
                        text.push_str(run);
                        Cow::Owned(text)
                    }
                });
            }
            let text = owned.get_or_insert_with(String::new);
            text.push_str(run);
            let escaped = match self.peek()? {
                b'"' => '"',
                b'\\' => '\\',
                b'/' => '/',
                b'b' => '\u{8}',
                b'f' => '\u{c}',
                b'n' => '\n',
                b'r' => '\r',
                b't' => '\t',
                b'u' => {
                    self.at += 1;
                    let unit = self.hex4()?;
                    let code = match unit {
                        0xD800..=0xDBFF => {
                            // A leading surrogate must be followed by its
                            // trailing one, as `\uXXXX`.
                            self.expect(b'\\')?;
                            self.expect(b'u')?;
                            let low = self.hex4()?;
                            if !(0xDC00..=0xDFFF).contains(&low) {
                                return None;
                            }
                            0x1_0000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                        }
                        0xDC00..=0xDFFF => return None,
                        _ => unit,
                    };
                    text.push(char::from_u32(code)?);
                    continue;
                }
                _ => return None,
            };
            self.at += 1;
            text.push(escaped);
        }
    }

    fn hex4(&mut self) -> Option<u32> {
        let digits = self.bytes.get(self.at..self.at + 4)?;
        let mut code = 0;
        for &digit in digits {
            code = code * 16 + char::from(digit).to_digit(16)?;
        }
        self.at += 4;
        Some(code)
    }

    /// A number, kept as written: `-`, an integer part without leading
    /// zeros, then an optional fraction and exponent.
    fn number(&mut self) -> Option<Json<'a>> {
        let start = self.at;
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        match self.peek()? {
            b'0' => self.at += 1,
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            self.some_digits()?;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.at += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.at += 1;
            }
            self.some_digits()?;
        }
        // Only ASCII was stepped over.
        let literal = std::str::from_utf8(&self.bytes[start..self.at]).ok()?;
        Some(Json::Number(Cow::Borrowed(literal)))
    }

    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.peek() {
            self.at += 1;
        }
    }

    /// At least one digit.
    fn some_digits(&mut self) -> Option<()> {
        let start = self.at;
        self.digits();
        (self.at > start).then_some(())
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

    proptest! {
        /// For every text, whole or damaged (cut short, a byte changed, a
        /// byte inserted), the tree parses exactly when serde_json does,
        /// to the same value.
        #[test]
        fn a_damaged_text_fails_exactly_when_serde_json_fails(
            text in texts(),
            cut in any::<prop::sample::Index>(),
            byte in prop_oneof![
                Just(b'"'), Just(b'\\'), Just(b'{'), Just(b'}'), Just(b'['), Just(b']'),
                Just(b','), Just(b':'), Just(b'0'), Just(b'-'), Just(b'.'), Just(b'e'),
                Just(b' '), Just(b'\n'), Just(0x01u8), Just(0xc3u8), Just(0xffu8), Just(b'u'),
            ],
            how in 0..4u8,
        ) {
            let mut bytes = text.into_bytes();
            let at = cut.index(bytes.len() + 1);
            match how {
                0 => bytes.truncate(at),
                1 if at < bytes.len() => bytes[at] = byte,
                _ => bytes.insert(at, byte),
            }
            let theirs = serde_json::from_slice::<Value>(&bytes).ok();
            let ours = Json::parse(&bytes).map(|json| json.to_value());
            prop_assert_eq!(ours.is_some(), theirs.is_some(), "{:?}", String::from_utf8_lossy(&bytes));
            if let (Some(ours), Some(theirs)) = (ours, theirs) {
                prop_assert_eq!(ours.to_string(), theirs.to_string());
            }
        }
    }

    /// Texts at the edges of the grammar read as serde_json reads them:
    /// accepted or refused alike.
    #[test]
    fn the_grammar_s_edges_are_serde_json_s() {
        let texts: [&[u8]; 43] = [
            b"",
            b" ",
            b"0",
            b"-0",
            b"01",
            b"-",
            b"1.",
            b".5",
            b"1e",
            b"1e+",
            b"1E-2",
            b"+1",
            b"-01",
            b"1.5e3 ",
            b" \t\r\n[]",
            b"[1,]",
            b"[,1]",
            b"{\"a\":1,}",
            b"{,}",
            b"{\"a\"}",
            b"{\"a\" : 1}",
            b"{1:2}",
            b"tru",
            b"true false",
            b"nul",
            b"\"\\u00e9\"",
            b"\"\\u00E9\"",
            b"\"\\ud83d\\ude00\"",
            b"\"\\ud83d\"",
            b"\"\\ude00\"",
            b"\"\\ud83d\\u0041\"",
            b"\"\\ud83dx\"",
            b"\"\\x\"",
            b"\"\\u12\"",
            b"\"a\tb\"",
            b"\"\x7f\"",
            b"\"\xc3\xa9\"",
            b"\"\xc3\"",
            b"\xef\xbb\xbf{}",
            b"\"\\/\\b\\f\"",
            b"\"\x1f\"",
            b"\"\x00\"",
            b"\" \"",
        ];
        for text in texts {
            let theirs = serde_json::from_slice::<Value>(text).ok();
            let ours = Json::parse(text).map(|json| json.to_value());
            assert_eq!(ours, theirs, "{:?}", String::from_utf8_lossy(text));
        }
    }

    /// Nesting is read as deep as serde_json reads it, and no deeper: a
    /// frame nested past that is not JSON to either, however deep.
    #[test]
    fn nesting_stops_where_serde_json_stops() {
        for depth in [126, 127, 128, 100_000] {
            let text = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
            let theirs = serde_json::from_str::<Value>(&text).is_ok();
            assert_eq!(
                Json::parse(text.as_bytes()).is_some(),
                theirs,
                "depth {depth}"
            );
        }
        assert!(
            Json::parse(format!("{}1{}", "[".repeat(127), "]".repeat(127)).as_bytes()).is_some()
        );
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
                let keys: Vec<&str> = object.iter().map(|(k, _)| k).collect();
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
        assert_eq!(json.as_object().unwrap().iter().count(), 200_000);
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
