//! Reading a member deep inside a frame's JSON by its path
//! (`"/toolCall/functionCalls"`), without allocating.
//!
//! `serde_json::Value::pointer` unescapes every segment (`~1`, `~0`) into
//! a new `String` before looking it up: two allocations and two substring
//! searches per segment. The session, the script player and the soak's
//! checks ask such paths of nearly every frame, so that cost was a
//! twelfth of a soak run. The paths livesim asks are its own constants
//! and never hold `~`; a path that does goes the escaping way.

use serde_json::Value;

/// Reads the member of a JSON value at a path (`"/a/b/0"`, as in RFC
/// 6901), without allocating.
pub(crate) trait JsonPath {
    /// The value at `path`, or `None` when a segment is missing or names
    /// a member of something that has none. An array is indexed by a
    /// segment that is a number.
    fn at(&self, path: &str) -> Option<&Value>;
}

impl JsonPath for Value {
    fn at(&self, path: &str) -> Option<&Value> {
        // Paths are a few dozen bytes: a plain loop over them costs less
        // than `str::split`'s searcher, which was most of a look-up.
        let bytes = path.as_bytes();
        if bytes.contains(&b'~') || bytes.first().is_some_and(|&b| b != b'/') {
            return self.pointer(path);
        }
        let mut here = self;
        let mut start = 1;
        while start <= bytes.len() {
            let end = bytes[start..]
                .iter()
                .position(|&b| b == b'/')
                .map_or(bytes.len(), |at| start + at);
            // `/` is ASCII, so both ends are character boundaries.
            let segment = &path[start..end];
            here = match here {
                Value::Object(map) => member(map, segment)?,
                Value::Array(items) => items.get(index(segment)?)?,
                _ => return None,
            };
            start = end + 1;
        }
        Some(here)
    }
}

/// The member `key` of `map`. A frame's objects hold a few members each,
/// kept in order in a vector: comparing those keys costs less than
/// hashing `key` for the map's index, which only a large object repays.
fn member<'a>(map: &'a serde_json::Map<String, Value>, key: &str) -> Option<&'a Value> {
    const SCANNED: usize = 8;
    if map.len() <= SCANNED {
        map.iter().find(|(k, _)| k.as_str() == key).map(|(_, v)| v)
    } else {
        map.get(key)
    }
}

/// An array index as RFC 6901 spells it: digits, no leading zero.
fn index(segment: &str) -> Option<usize> {
    if (segment.len() > 1 && segment.starts_with('0')) || segment.starts_with('+') {
        return None;
    }
    segment.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn document() -> Value {
        json!({
            "toolCall": {"functionCalls": [{"id": "a", "args": {"x/y": 1, "m~n": 2}}]},
            "": {"": 3},
            "list": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
            // More members than are scanned: found through the index.
            "wide": {"k0": 0, "k1": 1, "k2": 2, "k3": 3, "k4": 4, "k5": 5, "k6": 6,
                     "k7": 7, "k8": 8, "k9": 9, "id": {"args": 10}},
        })
    }

    /// `at` finds what `serde_json`'s own pointer finds, for every path
    /// (escaped or not, indexes with leading zeros or signs, empty
    /// segments).
    #[test]
    fn agrees_with_serde_json_pointer() {
        let doc = document();
        let paths = [
            "",
            "/",
            "//",
            "/toolCall",
            "/toolCall/functionCalls/0/id",
            "/toolCall/functionCalls/00/id",
            "/toolCall/functionCalls/+0/id",
            "/toolCall/functionCalls/1",
            "/toolCall/functionCalls/0/args/x~1y",
            "/toolCall/functionCalls/0/args/m~0n",
            "/list/10",
            "/list/-1",
            "/list/x",
            "/missing/deeper",
            "/wide/k9",
            "/wide/id/args",
            "/wide/k10",
            "toolCall",
        ];
        for path in paths {
            assert_eq!(doc.at(path), doc.pointer(path), "path {path:?}");
        }
    }

    proptest! {
        /// For any path of segments drawn from the document's own keys,
        /// indexes and junk, `at` agrees with `Value::pointer`.
        #[test]
        fn any_path_agrees(segments in proptest::collection::vec(
            prop_oneof![
                Just("toolCall"), Just("functionCalls"), Just("0"), Just("01"),
                Just("args"), Just("x~1y"), Just("list"), Just("9"), Just(""),
                Just("id"), Just("~"), Just("wide"), Just("k8"), Just("k11"),
            ],
            0..5,
        )) {
            let doc = document();
            let path: String = segments.iter().map(|s| format!("/{s}")).collect();
            prop_assert_eq!(doc.at(&path), doc.pointer(&path));
        }
    }
}
