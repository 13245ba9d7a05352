//! How an event reads in one line: the trace's text for it, and what
//! `to_string` gives a user.
//!
//! Every line is written straight into the formatter. Events with a
//! shape of their own (text, media, calls, turns, disconnections) have
//! their own wording; the rest read as their kind followed by their fields
//! as one JSON object. A session writes thousands of these lines a run
//! (each event goes into the trace), so none builds a `serde_json::Value`
//! on the way.

use std::fmt;
use std::io;
use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value};

use super::LiveEvent;

impl fmt::Display for LiveEvent {
    /// One line, as the trace shows events; media shows its size, not its
    /// bytes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let flag = |f: &mut fmt::Formatter<'_>, on: bool, name: &str| {
            if on {
                f.write_str(" +")?;
                f.write_str(name)?;
            }
            Ok(())
        };
        // The fields of the events shown as JSON come in the order traces
        // have always shown them: the last field first, then the others in
        // their declared order. Traces and their hashes written by earlier
        // versions stay comparable.
        match self {
            LiveEvent::TextDelta { text, thought } => {
                f.write_str("text_delta ")?;
                quoted(f, text)?;
                flag(f, *thought, "thought")
            }
            LiveEvent::TextComplete {
                text,
                thought,
                interrupted,
            } => {
                f.write_str("text_complete ")?;
                quoted(f, text)?;
                flag(f, *thought, "thought")?;
                flag(f, *interrupted, "interrupted")
            }
            LiveEvent::InputTranscriptDelta { text }
            | LiveEvent::InputTranscript { text }
            | LiveEvent::OutputTranscriptDelta { text }
            | LiveEvent::OutputTranscript { text } => {
                f.write_str(self.kind())?;
                f.write_str(" ")?;
                quoted(f, text)
            }
            LiveEvent::Media {
                mime_type,
                data,
                interrupted,
                ..
            } => {
                write!(f, "media {mime_type} ({} base64 chars)", data.len())?;
                flag(f, *interrupted, "interrupted")
            }
            LiveEvent::ToolCall { calls } => {
                f.write_str("tool_call ")?;
                for (i, call) in calls.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{}({}) {}", call.name, call.id, call.args)?;
                }
                Ok(())
            }
            LiveEvent::ToolResponse { id, name, response } => {
                write!(f, "tool_response {name}({id}) {response}")
            }
            LiveEvent::TurnComplete {
                interrupted,
                reason,
            } => {
                f.write_str("turn_complete")?;
                flag(f, *interrupted, "interrupted")?;
                match reason {
                    Some(reason) => write!(f, " reason={reason}"),
                    None => Ok(()),
                }
            }
            LiveEvent::ToolDenied { id, name, reason } => {
                write!(f, "tool_denied {name}({id}): {reason}")
            }
            LiveEvent::Disconnected {
                code,
                reason,
                class,
            } => {
                f.write_str("disconnected")?;
                if let Some(code) = code {
                    write!(f, " {code}")?;
                }
                if let Some(class) = class {
                    write!(f, " ({class})")?;
                }
                write!(f, " {reason:?}")
            }
            LiveEvent::Interrupted | LiveEvent::GenerationComplete => f.write_str(self.kind()),
            LiveEvent::Connected { session_id } => object(
                f,
                self.kind(),
                &[("session_id", Field::MaybeText(session_id.as_deref()))],
            ),
            LiveEvent::Content { parts, interrupted } => object(
                f,
                self.kind(),
                &[
                    ("interrupted", Field::Flag(*interrupted)),
                    ("parts", Field::Jsons(parts)),
                ],
            ),
            LiveEvent::ToolCancelled { ids } => {
                object(f, self.kind(), &[("ids", Field::Texts(ids))])
            }
            LiveEvent::Usage { usage } => object(f, self.kind(), &[("usage", Field::Json(usage))]),
            LiveEvent::GoAway { time_left } => object(
                f,
                self.kind(),
                &[("time_left", Field::Wait(time_left.as_ref()))],
            ),
            LiveEvent::ResumptionUpdate { resumable } => {
                object(f, self.kind(), &[("resumable", Field::Flag(*resumable))])
            }
            LiveEvent::PhaseChanged { from, to } => object(
                f,
                self.kind(),
                &[("to", Field::Text(to)), ("from", Field::Text(from))],
            ),
            LiveEvent::PatternMatched { name } => {
                object(f, self.kind(), &[("name", Field::Text(name))])
            }
            LiveEvent::Extracted { extractor, values } => object(
                f,
                self.kind(),
                &[
                    ("values", Field::Object(values)),
                    ("extractor", Field::Text(extractor)),
                ],
            ),
            LiveEvent::Unknown { message } => {
                object(f, self.kind(), &[("message", Field::Json(message))])
            }
            LiveEvent::Warning { message } => {
                object(f, self.kind(), &[("message", Field::Text(message))])
            }
            LiveEvent::Reconnecting { attempt, cause } => object(
                f,
                self.kind(),
                &[
                    ("cause", Field::Text(cause)),
                    ("attempt", Field::Count(u64::from(*attempt))),
                ],
            ),
            LiveEvent::Resumed { connection, fresh } => object(
                f,
                self.kind(),
                &[
                    ("fresh", Field::Flag(*fresh)),
                    ("connection", Field::Count(u64::from(*connection))),
                ],
            ),
            LiveEvent::ResumptionFailed { reason } => {
                object(f, self.kind(), &[("reason", Field::Text(reason))])
            }
        }
    }
}

/// `text` as `{text:?}` writes it; a text of printable ASCII without a
/// quote or a backslash (most of what a model says) is copied between
/// quotes instead of escaped a character at a time.
fn quoted(f: &mut fmt::Formatter<'_>, text: &str) -> fmt::Result {
    let plain = text
        .bytes()
        .all(|b| (b' '..=b'~').contains(&b) && b != b'"' && b != b'\\');
    if plain {
        f.write_str("\"")?;
        f.write_str(text)?;
        f.write_str("\"")
    } else {
        write!(f, "{text:?}")
    }
}

/// One field's value, written as serde_json writes it.
#[derive(Serialize)]
#[serde(untagged)]
enum Field<'a> {
    Text(&'a str),
    MaybeText(Option<&'a str>),
    Flag(bool),
    Count(u64),
    Json(&'a Value),
    Texts(&'a [String]),
    Jsons(&'a [Value]),
    Object(&'a Map<String, Value>),
    Wait(Option<&'a Duration>),
}

/// `kind {"name":value,…}`: the fields in the order given (their names
/// are plain identifiers, written as they are).
fn object(f: &mut fmt::Formatter<'_>, kind: &str, fields: &[(&str, Field<'_>)]) -> fmt::Result {
    f.write_str(kind)?;
    for (i, (name, value)) in fields.iter().enumerate() {
        f.write_str(if i == 0 { " {\"" } else { ",\"" })?;
        f.write_str(name)?;
        f.write_str("\":")?;
        serde_json::to_writer(Text(f), value).map_err(|_| fmt::Error)?;
    }
    if !fields.is_empty() {
        f.write_str("}")?;
    }
    Ok(())
}

/// serde_json's output, handed to the formatter as it is written.
struct Text<'a, 'b>(&'a mut fmt::Formatter<'b>);

impl io::Write for Text<'_, '_> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        // serde_json writes whole characters in each piece (it cuts a
        // string only where it escapes an ASCII character).
        let text = std::str::from_utf8(bytes).map_err(io::Error::other)?;
        self.0.write_str(text).map_err(io::Error::other)?;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::clock::Timestamp;
    use crate::session::events::ToolCall;

    /// What the events shown as JSON read as, worked out the slow way the
    /// trace used to write them: the whole event as a `Value`, its `type`
    /// taken out of the map (serde_json's `remove` puts the last field in
    /// its place), the rest written compactly.
    fn through_a_value(event: &LiveEvent) -> String {
        match serde_json::to_value(event) {
            Ok(Value::Object(mut map)) => {
                map.remove("type");
                if map.is_empty() {
                    event.kind().to_string()
                } else {
                    format!("{} {}", event.kind(), Value::Object(map))
                }
            }
            _ => event.kind().to_string(),
        }
    }

    fn texts() -> Vec<&'static str> {
        vec![
            "",
            "plain",
            "say \"hi\"",
            "back\\slash",
            "tab\tand\nnewline",
            "caf\u{e9} \u{1F600} \u{7f} \u{1b}[31m \u{2028}",
        ]
    }

    fn values() -> Vec<Value> {
        let big: Value = serde_json::from_str("123456789012345678901234567890").expect("a number");
        vec![
            Value::Null,
            json!(true),
            json!(-7),
            json!(0.1),
            json!(1e300),
            big,
            json!("caf\u{e9} \"q\""),
            json!([1, "two", null, {"z": 1, "a": [2.5]}]),
            json!({"promptTokenCount": 12, "nested": {"b": 1, "a": 2}, "": ""}),
        ]
    }

    /// Every event shown as JSON reads exactly as it did when the trace
    /// built a `Value` for it, whatever its texts and values hold.
    #[test]
    fn events_shown_as_json_read_as_their_values_did() {
        let mut events = vec![LiveEvent::Interrupted, LiveEvent::GenerationComplete];
        for text in texts() {
            let t = text.to_string();
            events.extend([
                LiveEvent::Connected {
                    session_id: Some(t.clone()),
                },
                LiveEvent::ToolCancelled {
                    ids: vec![t.clone(), "call-2".into()],
                },
                LiveEvent::PhaseChanged {
                    from: t.clone(),
                    to: "next".into(),
                },
                LiveEvent::PatternMatched { name: t.clone() },
                LiveEvent::Warning { message: t.clone() },
                LiveEvent::Reconnecting {
                    attempt: 3,
                    cause: t.clone(),
                },
                LiveEvent::ResumptionFailed { reason: t.clone() },
            ]);
        }
        for value in values() {
            let mut map = Map::new();
            map.insert("city".into(), value.clone());
            map.insert("\u{e9}t\u{e9}".into(), json!([value.clone()]));
            events.extend([
                LiveEvent::Usage {
                    usage: value.clone(),
                },
                LiveEvent::Unknown {
                    message: value.clone(),
                },
                LiveEvent::Content {
                    parts: vec![value.clone(), json!({"text": "hi"})],
                    interrupted: true,
                },
                LiveEvent::Extracted {
                    extractor: "booking".into(),
                    values: map,
                },
            ]);
        }
        events.extend([
            LiveEvent::Connected { session_id: None },
            LiveEvent::ToolCancelled { ids: vec![] },
            LiveEvent::Content {
                parts: vec![],
                interrupted: false,
            },
            LiveEvent::Extracted {
                extractor: String::new(),
                values: Map::new(),
            },
            LiveEvent::GoAway { time_left: None },
            LiveEvent::GoAway {
                time_left: Some(Duration::new(20, 900_000_001)),
            },
            LiveEvent::GoAway {
                time_left: Some(Duration::ZERO),
            },
            LiveEvent::ResumptionUpdate { resumable: true },
            LiveEvent::ResumptionUpdate { resumable: false },
            LiveEvent::Resumed {
                connection: u32::MAX,
                fresh: true,
            },
            LiveEvent::Resumed {
                connection: 0,
                fresh: false,
            },
        ]);
        for event in &events {
            assert_eq!(event.to_string(), through_a_value(event), "{event:?}");
        }
    }

    /// A call event lists each call as `name(id) args`, in order.
    #[test]
    fn calls_are_listed_in_order() {
        let call = |id: &str, args: Value| ToolCall {
            id: id.into(),
            name: "get_weather".into(),
            args,
        };
        let event = LiveEvent::ToolCall {
            calls: vec![call("c1", json!({"city": "Paris"})), call("c2", json!({}))],
        };
        assert_eq!(
            event.to_string(),
            r#"tool_call get_weather(c1) {"city":"Paris"}, get_weather(c2) {}"#
        );
        assert_eq!(
            LiveEvent::ToolCall { calls: vec![] }.to_string(),
            "tool_call "
        );
    }

    /// Media shows its type and size, never its bytes.
    #[test]
    fn media_shows_its_size() {
        let audio = LiveEvent::Media {
            mime_type: "audio/pcm;rate=24000".into(),
            data: "AAAA".into(),
            at: Timestamp::EPOCH,
            interrupted: true,
        };
        assert_eq!(
            audio.to_string(),
            "media audio/pcm;rate=24000 (4 base64 chars) +interrupted"
        );
    }

    /// An event's text is shown exactly as Rust's `{:?}` quotes it,
    /// whether or not it takes the copying shortcut.
    #[test]
    fn texts_are_quoted_as_debug_quotes_them() {
        for text in [
            "",
            "Hello, it's sunny.",
            "say \"hi\"",
            "back\\slash",
            "tab\tand\nnewline",
            "caf\u{e9} \u{1F600}",
            "\u{7f}del",
            "\u{1b}[31m",
            "~ ` { } | ^",
        ] {
            let event = LiveEvent::TextDelta {
                text: text.into(),
                thought: false,
            };
            assert_eq!(event.to_string(), format!("text_delta {text:?}"), "{text}");
            let heard = LiveEvent::InputTranscript { text: text.into() };
            assert_eq!(
                heard.to_string(),
                format!("{} {text:?}", heard.kind()),
                "{text}"
            );
        }
        let complete = LiveEvent::TextComplete {
            text: "done".into(),
            thought: true,
            interrupted: true,
        };
        assert_eq!(
            complete.to_string(),
            "text_complete \"done\" +thought +interrupted"
        );
        let turn = LiveEvent::TurnComplete {
            interrupted: true,
            reason: None,
        };
        assert_eq!(turn.to_string(), "turn_complete +interrupted");
    }

    #[test]
    fn display_is_one_line_per_event() {
        assert_eq!(
            LiveEvent::TurnComplete {
                interrupted: true,
                reason: None
            }
            .to_string(),
            "turn_complete +interrupted"
        );
        assert_eq!(
            LiveEvent::PatternMatched {
                name: "quiet".into()
            }
            .to_string(),
            r#"pattern_matched {"name":"quiet"}"#
        );
        assert_eq!(LiveEvent::Interrupted.to_string(), "interrupted");
    }
}
