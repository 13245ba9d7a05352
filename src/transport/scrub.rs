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

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::wire::Redactor;

/// Replaces handles with placeholders and redacts secrets in frames.
pub(crate) struct FrameScrubber {
    redactor: Redactor,
    /// Handle → placeholder.
    handles: BTreeMap<String, String>,
}

const NEW_HANDLE_KEYS: [&str; 2] = ["newHandle", "new_handle"];
const RESUMPTION_KEYS: [&str; 2] = ["sessionResumption", "session_resumption"];

impl FrameScrubber {
    pub(crate) fn new(redactor: Redactor) -> Self {
        FrameScrubber {
            redactor,
            handles: BTreeMap::new(),
        }
    }

    /// Redacts `value` in place.
    pub(crate) fn scrub_json(&mut self, value: &mut Value) {
        self.learn_handles(value);
        self.scrub_strings(value);
    }

    /// Redacts free text (a payload that is not JSON, an error message).
    pub(crate) fn scrub_text(&self, text: &str) -> String {
        let mut out = text.to_owned();
        // Longest first, so a handle that contains another goes whole.
        let mut known: Vec<(&String, &String)> = self.handles.iter().collect();
        known.sort_by_key(|(handle, _)| std::cmp::Reverse(handle.len()));
        for (handle, placeholder) in known {
            if out.contains(handle.as_str()) {
                out = out.replace(handle.as_str(), placeholder);
            }
        }
        self.redactor.scrub(&out).into_owned()
    }

    /// Redacts raw bytes that are not UTF-8: configured secrets and known
    /// handles, byte for byte.
    pub(crate) fn scrub_bytes(&self, bytes: &[u8]) -> Vec<u8> {
        let mut with_handles = self.redactor.clone();
        for handle in self.handles.keys() {
            with_handles.add_secret(&crate::wire::Secret::new(handle.clone()));
        }
        with_handles.scrub_bytes(bytes)
    }

    fn placeholder(&mut self, handle: &str) {
        if handle.is_empty() || self.handles.contains_key(handle) {
            return;
        }
        let placeholder = format!("<handle-{}>", self.handles.len() + 1);
        self.handles.insert(handle.to_owned(), placeholder);
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
