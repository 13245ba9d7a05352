//! Taking secrets out of frames before they are written down.
//!
//! String-level redaction ([`Redactor`]) does not know what a resumption
//! handle is; this does. Values of `newHandle` (anywhere) and of `handle`
//! inside `sessionResumption` (either spelling) become placeholders
//! `<handle-1>`, `<handle-2>`, … numbered by first appearance, so a log
//! still shows that the handle a setup resumed with is the one an earlier
//! update delivered. Any later occurrence of a known handle, in any
//! string, gets the same placeholder. Then every string, key or value,
//! goes through the redactor.

use std::borrow::Cow;
use std::collections::BTreeMap;

use aho_corasick::{AhoCorasick, MatchKind};
use serde_json::{Map, Value};

use crate::wire::redact::replace_all;
use crate::wire::{Redactor, handles_in_text};

/// Replaces handles with placeholders and redacts secrets in frames.
pub(crate) struct FrameScrubber {
    redactor: Redactor,
    /// Handle → placeholder.
    handles: BTreeMap<String, String>,
    /// Every known handle, in one automaton (rebuilt when a handle is
    /// learned), and each pattern's placeholder.
    matcher: Option<(AhoCorasick, Vec<String>)>,
}

const NEW_HANDLE_KEYS: [&str; 2] = ["newHandle", "new_handle"];
const RESUMPTION_KEYS: [&str; 2] = ["sessionResumption", "session_resumption"];

impl FrameScrubber {
    pub(crate) fn new(redactor: Redactor) -> Self {
        FrameScrubber {
            redactor,
            handles: BTreeMap::new(),
            matcher: None,
        }
    }

    /// Redacts `value` in place.
    pub(crate) fn scrub_json(&mut self, value: &mut Value) {
        self.learn_handles(value);
        self.scrub_strings(value);
    }

    /// Redacts a payload that does not parse as JSON: the handles it
    /// seems to carry (read as words) are learned first.
    pub(crate) fn scrub_unparsed(&mut self, text: &str) -> String {
        self.learn_handles_in_text(text.as_bytes());
        self.scrub_text(text)
    }

    /// Like [`scrub_unparsed`](Self::scrub_unparsed), for a payload that
    /// is not UTF-8 either.
    pub(crate) fn scrub_unparsed_bytes(&mut self, bytes: &[u8]) -> Vec<u8> {
        self.learn_handles_in_text(bytes);
        self.scrub_bytes(bytes)
    }

    /// Redacts free text (an error message, a close reason).
    pub(crate) fn scrub_text(&self, text: &str) -> String {
        let placed = match self.replace_handles(text.as_bytes()) {
            Cow::Borrowed(_) => Cow::Borrowed(text),
            // Handles are whole strings: replacing them keeps UTF-8 valid.
            Cow::Owned(bytes) => Cow::Owned(String::from_utf8_lossy(&bytes).into_owned()),
        };
        self.redactor.scrub(&placed).into_owned()
    }

    /// Redacts raw bytes that are not UTF-8: configured secrets and known
    /// handles, byte for byte.
    pub(crate) fn scrub_bytes(&self, bytes: &[u8]) -> Vec<u8> {
        self.redactor.scrub_bytes(&self.replace_handles(bytes))
    }

    /// Every known handle replaced by its placeholder, in one pass; a
    /// handle that contains another goes whole.
    fn replace_handles<'a>(&self, bytes: &'a [u8]) -> Cow<'a, [u8]> {
        match &self.matcher {
            Some((matcher, placeholders)) => {
                replace_all(matcher, bytes, |i| placeholders[i].as_bytes())
            }
            None => Cow::Borrowed(bytes),
        }
    }

    fn placeholder(&mut self, handle: &str) {
        if handle.is_empty() || self.handles.contains_key(handle) {
            return;
        }
        let placeholder = format!("<handle-{}>", self.handles.len() + 1);
        self.handles.insert(handle.to_owned(), placeholder);
        let (handles, placeholders): (Vec<&String>, Vec<String>) = self
            .handles
            .iter()
            .map(|(handle, placeholder)| (handle, placeholder.clone()))
            .unzip();
        self.matcher = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(handles)
            .ok()
            .map(|matcher| (matcher, placeholders));
    }

    fn learn_handles_in_text(&mut self, payload: &[u8]) {
        for handle in handles_in_text(payload) {
            if let Ok(handle) = std::str::from_utf8(handle) {
                self.placeholder(handle);
            }
        }
    }

    fn learn_handles(&mut self, value: &Value) {
        match value {
            Value::Object(map) => {
                for (key, child) in map {
                    if NEW_HANDLE_KEYS.contains(&key.as_str()) {
                        if let Some(handle) = child.as_str() {
                            self.placeholder(handle);
                        }
                    } else if RESUMPTION_KEYS.contains(&key.as_str())
                        && let Some(handle) = child.get("handle").and_then(Value::as_str)
                    {
                        self.placeholder(handle);
                    }
                    self.learn_handles(child);
                }
            }
            Value::Array(items) => items.iter().for_each(|item| self.learn_handles(item)),
            _ => {}
        }
    }

    fn scrub_strings(&self, value: &mut Value) {
        match value {
            Value::String(text) => {
                let scrubbed = self.scrub_text(text);
                if scrubbed != *text {
                    *text = scrubbed;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|item| self.scrub_strings(item)),
            Value::Object(map) => {
                let needs_new_keys = map.keys().any(|k| self.scrub_text(k) != *k);
                if needs_new_keys {
                    let old = std::mem::take(map);
                    let mut rebuilt = Map::new();
                    for (key, child) in old {
                        rebuilt.insert(self.scrub_text(&key), child);
                    }
                    *map = rebuilt;
                }
                map.values_mut().for_each(|child| self.scrub_strings(child));
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::wire::Secret;

    #[test]
    fn handles_become_stable_placeholders() {
        let mut s = FrameScrubber::new(Redactor::new());
        let mut update =
            json!({"sessionResumptionUpdate": {"newHandle": "CiQ3Y", "resumable": true}});
        s.scrub_json(&mut update);
        assert_eq!(update["sessionResumptionUpdate"]["newHandle"], "<handle-1>");
        let mut setup = json!({"setup": {"sessionResumption": {"handle": "CiQ3Y"}}});
        s.scrub_json(&mut setup);
        assert_eq!(setup["setup"]["sessionResumption"]["handle"], "<handle-1>");
        let mut other =
            json!({"session_resumption_update": {"new_handle": "Zz9"}, "note": "was CiQ3Y"});
        s.scrub_json(&mut other);
        assert_eq!(
            other["session_resumption_update"]["new_handle"],
            "<handle-2>"
        );
        assert_eq!(other["note"], "was <handle-1>");
        let mut empty = json!({"sessionResumptionUpdate": {"newHandle": ""}});
        s.scrub_json(&mut empty);
        assert_eq!(empty["sessionResumptionUpdate"]["newHandle"], "");
    }

    #[test]
    fn secrets_leave_keys_and_values() {
        let mut s = FrameScrubber::new(Redactor::new().with_secret(&Secret::new("K3Y-SECRET")));
        let mut v = json!({"K3Y-SECRET": ["x K3Y-SECRET y", "auth_tokens/abc"]});
        s.scrub_json(&mut v);
        assert_eq!(
            v,
            json!({"<redacted>": ["x <redacted> y", "<redacted:auth_token>"]})
        );
    }
}
