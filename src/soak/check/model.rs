//! The reference model: what a session must make of the frames it got.
//!
//! An oracle must not compute its expectation with the code it checks. The
//! session decodes frames with the wire types and aggregates them in
//! `session/aggregate`; this model shares none of that. It reads each
//! frame's raw JSON and applies the aggregation rules as the documentation
//! states them (`docs/aggregation.md`, rules 1 to 9), so a change to the
//! session's decoder or aggregator that breaks a rule is caught by the
//! `aggregation` and `wire-order` invariants instead of being copied into
//! their expectations.
//!
//! The model predicts events by what matters: text and transcriptions to
//! the character with their flags, tool calls by id, name and arguments,
//! turn ends and interruptions with their flags, media by type and data;
//! token counts, a `goAway`'s time left, a resumption update's flag and
//! the ids a cancellation names, when the frame says them in the
//! documented form (a count as an integer, a time as `"<seconds>s"`);
//! anything else (those in another form, messages the protocol does not
//! name) by kind.

use serde_json::Value;

use super::json::{Json, Object};
use super::signals::{cancelled_of, go_away_of, resumable_of, usage_of};

use crate::session::LiveEvent;
use crate::transport::Frame;

/// Which buffer a text belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stream {
    /// The model's text; a thought when `thought`.
    Text { thought: bool },
    /// What the user said.
    Input,
    /// What the model said aloud.
    Output,
}

/// An event as the model predicts it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Expected {
    /// A streamed chunk (partial).
    Chunk { stream: Stream, text: String },
    /// A whole segment; `interrupted` is the text's flag.
    Whole {
        stream: Stream,
        text: String,
        interrupted: bool,
    },
    /// Inline audio, video or image, not stored.
    Media {
        mime_type: String,
        data: String,
        interrupted: bool,
    },
    /// Parts that are not text (code, code results, files), together:
    /// how many; `live` when audio, video or an image is among them (not
    /// stored).
    Content {
        parts: usize,
        interrupted: bool,
        live: bool,
    },
    /// The model's calls: (id, name, arguments).
    Calls(Vec<(String, String, Value)>),
    /// The end of the turn, and why it ended when the server said
    /// (`turnCompleteReason`, passed on as it came).
    TurnEnd {
        interrupted: bool,
        reason: Option<String>,
    },
    /// An interruption with no text pending.
    Interrupted,
    /// Token counts: each count the protocol names, by its camelCase
    /// name, with the number the frame gave (`None`: not given).
    Usage(Vec<(&'static str, Option<i64>)>),
    /// The server's notice, with the time it said it has left.
    GoAway(Option<std::time::Duration>),
    /// Whether the server said a handle is valid now.
    Resumable(bool),
    /// The ids a cancellation named, in order.
    Cancelled(Vec<String>),
    /// Any other event, by kind (`usage`, `go_away`, …).
    Kind(&'static str),
}

impl Expected {
    /// Whether the session's `event` is this one.
    pub(crate) fn is(&self, event: &LiveEvent) -> bool {
        match (self, event) {
            (Expected::Chunk { stream, text }, LiveEvent::TextDelta { text: t, thought }) => {
                *stream == Stream::Text { thought: *thought } && text == t
            }
            (Expected::Chunk { stream, text }, LiveEvent::InputTranscriptDelta { text: t }) => {
                *stream == Stream::Input && text == t
            }
            (Expected::Chunk { stream, text }, LiveEvent::OutputTranscriptDelta { text: t }) => {
                *stream == Stream::Output && text == t
            }
            (
                Expected::Whole {
                    stream,
                    text,
                    interrupted,
                },
                LiveEvent::TextComplete {
                    text: t,
                    thought,
                    interrupted: i,
                },
            ) => *stream == Stream::Text { thought: *thought } && text == t && interrupted == i,
            (Expected::Whole { stream, text, .. }, LiveEvent::InputTranscript { text: t }) => {
                *stream == Stream::Input && text == t
            }
            (Expected::Whole { stream, text, .. }, LiveEvent::OutputTranscript { text: t }) => {
                *stream == Stream::Output && text == t
            }
            (
                Expected::Media {
                    mime_type,
                    data,
                    interrupted,
                },
                LiveEvent::Media {
                    mime_type: m,
                    data: d,
                    interrupted: i,
                    ..
                },
            ) => mime_type == m && data == d && interrupted == i,
            (
                Expected::Content {
                    parts, interrupted, ..
                },
                LiveEvent::Content {
                    parts: got,
                    interrupted: i,
                },
            ) => *parts == got.len() && interrupted == i,
            (Expected::Calls(calls), LiveEvent::ToolCall { calls: got }) => {
                calls.len() == got.len()
                    && calls.iter().zip(got).all(|((id, name, args), call)| {
                        *id == call.id && *name == call.name && *args == call.args
                    })
            }
            (
                Expected::TurnEnd {
                    interrupted,
                    reason,
                },
                LiveEvent::TurnComplete {
                    interrupted: i,
                    reason: r,
                },
            ) => interrupted == i && reason == r,
            (Expected::Interrupted, LiveEvent::Interrupted) => true,
            (Expected::Usage(counts), LiveEvent::Usage { usage }) => counts
                .iter()
                .all(|(name, count)| usage.get(*name).and_then(Value::as_i64) == *count),
            (Expected::GoAway(left), LiveEvent::GoAway { time_left }) => left == time_left,
            (Expected::Resumable(flag), LiveEvent::ResumptionUpdate { resumable }) => {
                flag == resumable
            }
            (Expected::Cancelled(ids), LiveEvent::ToolCancelled { ids: got }) => ids == got,
            (Expected::Kind(kind), event) => *kind == event.kind(),
            _ => false,
        }
    }

    /// Whether the stored log keeps it (rule: not partial, no live media).
    pub(crate) fn stored(&self) -> bool {
        match self {
            Expected::Chunk { .. } => false,
            Expected::Media { mime_type, .. } => !live_media(mime_type),
            Expected::Content { live, .. } => !live,
            _ => true,
        }
    }

    /// Whether the fast lane delivers it: text, transcriptions, media.
    pub(crate) fn fast(&self) -> bool {
        matches!(
            self,
            Expected::Chunk { .. } | Expected::Whole { .. } | Expected::Media { .. }
        )
    }
}

impl std::fmt::Display for Expected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let stream = |s: &Stream| match s {
            Stream::Text { thought: true } => "thought",
            Stream::Text { thought: false } => "text",
            Stream::Input => "input transcript",
            Stream::Output => "output transcript",
        };
        match self {
            Expected::Chunk { stream: s, text } => write!(f, "a {} chunk {text:?}", stream(s)),
            Expected::Whole {
                stream: s,
                text,
                interrupted,
            } => write!(
                f,
                "the whole {} {text:?}{}",
                stream(s),
                if *interrupted { " (interrupted)" } else { "" }
            ),
            Expected::Media { mime_type, .. } => write!(f, "media {mime_type}"),
            Expected::Content { parts, .. } => write!(f, "{parts} content part(s)"),
            Expected::Calls(calls) => {
                let calls: Vec<String> = calls
                    .iter()
                    .map(|(id, n, _)| format!("{n}({id})"))
                    .collect();
                write!(f, "the calls {}", calls.join(", "))
            }
            Expected::TurnEnd {
                interrupted,
                reason,
            } => write!(
                f,
                "the turn's end{}{}",
                if *interrupted { " (interrupted)" } else { "" },
                reason
                    .as_ref()
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default()
            ),
            Expected::Interrupted => write!(f, "an interruption"),
            Expected::Usage(counts) => {
                let given: Vec<String> = counts
                    .iter()
                    .filter_map(|(name, count)| Some(format!("{name} {}", (*count)?)))
                    .collect();
                write!(f, "usage ({})", given.join(", "))
            }
            Expected::GoAway(Some(left)) => write!(f, "a goAway with {left:?} left"),
            Expected::GoAway(None) => write!(f, "a goAway with no time left given"),
            Expected::Resumable(flag) => write!(f, "a resumption update (resumable: {flag})"),
            Expected::Cancelled(ids) => write!(f, "the cancellation of {}", ids.join(", ")),
            Expected::Kind(kind) => write!(f, "a `{kind}` event"),
        }
    }
}

/// Audio, video or an image: media played as it comes, which the stored
/// log leaves out.
pub(crate) fn live_media(mime_type: &str) -> bool {
    ["audio/", "video/", "image/"]
        .iter()
        .any(|p| mime_type.starts_with(p))
}

/// Whether a message's `serverContent` moves content (documented: model
/// parts or a transcript), which resets the session's silence. Read
/// generously: a parts list of any length, a transcript of any shape.
fn moves_content(content: &Object<'_>) -> bool {
    let parts = member(content, "modelTurn")
        .and_then(Json::as_object)
        .and_then(|turn| turn.get("parts"))
        .and_then(Json::as_array);
    parts.is_some_and(|parts| !parts.is_empty())
        || ["inputTranscription", "outputTranscription"]
            .iter()
            .any(|key| member(content, key).is_some())
}

/// What one frame makes, and the flags it carried.
#[derive(Debug, Default)]
pub(crate) struct FrameModel {
    pub events: Vec<Expected>,
    pub interrupted: bool,
    pub turn_complete: bool,
    /// The frame is an in-band error and nothing else: the server gives
    /// up, and the session must end on it, reading nothing more.
    pub ends_session: bool,
    /// The frame moves content (model parts or a transcript), which
    /// resets the session's silence.
    pub moves_content: bool,
}

/// The model's state over one connection: the pending buffers.
#[derive(Debug, Default)]
pub(crate) struct Model {
    text: String,
    thought: bool,
    input: Option<String>,
    output: Option<String>,
}

/// A member by its protocol name, or by the snake_case spelling the
/// Python SDK sends; a member that is `null` is absent (protobuf's JSON
/// mapping).
pub(super) fn member<'o, 'a>(object: &'o Object<'a>, camel: &str) -> Option<&'o Json<'a>> {
    object
        .get(camel)
        .or_else(|| {
            // Most members looked up are absent: compare with the snake_case
            // spelling key by key rather than building it.
            object
                .iter()
                .find(|(key, _)| is_snake_of(key, camel))
                .map(|(_, value)| value)
        })
        .filter(|value| **value != Json::Null)
}

/// Whether `key` is `camel` in snake_case (`turnComplete` → `turn_complete`).
pub(super) fn is_snake_of(key: &str, camel: &str) -> bool {
    let mut key = key.bytes();
    for c in camel.bytes() {
        if c.is_ascii_uppercase() {
            if key.next() != Some(b'_') || key.next() != Some(c.to_ascii_lowercase()) {
                return false;
            }
        } else if key.next() != Some(c) {
            return false;
        }
    }
    key.next().is_none()
}

fn flag(object: Option<&Object<'_>>, camel: &str) -> bool {
    object
        .and_then(|o| member(o, camel))
        .and_then(Json::as_bool)
        == Some(true)
}

/// The message keys the protocol names; anything else is kept whole as
/// an `unknown` event.
const KNOWN: [&str; 7] = [
    "serverContent",
    "toolCall",
    "toolCallCancellation",
    "goAway",
    "sessionResumptionUpdate",
    "usageMetadata",
    "setupComplete",
];
/// The `serverContent` keys with an event of their own.
const KNOWN_CONTENT: [&str; 7] = [
    "modelTurn",
    "turnComplete",
    "interrupted",
    "generationComplete",
    "inputTranscription",
    "outputTranscription",
    "turnCompleteReason",
];

/// The message keys the protocol names that have no event of their own
/// (kept whole as an `unknown` event when they hold something).
const NAMED: [&str; 2] = ["voiceActivity", "voiceActivityDetectionSignal"];
/// The `serverContent` keys the protocol names that have no event of
/// their own.
const NAMED_CONTENT: [&str; 4] = [
    "groundingMetadata",
    "urlContextMetadata",
    "interimInputTranscription",
    "waitingForInput",
];

fn known(key: &str, names: &[&str]) -> bool {
    names.iter().any(|n| *n == key || is_snake_of(key, n))
}

/// Whether the member `key: value` is there: a member the protocol names
/// is absent when `null` (protobuf's JSON mapping); a key it does not
/// name is kept whatever its value.
fn present(key: &str, value: &Json<'_>, named: &[&[&str]]) -> bool {
    *value != Json::Null || !named.iter().any(|names| known(key, names))
}

/// A part that carries nothing to show: no text and no payload (a lone
/// thought signature, an empty text, members that are all `null`).
fn empty(part: &Object<'_>) -> bool {
    match member(part, "text").and_then(Json::as_str) {
        Some(text) => text.is_empty(),
        None => part.iter().all(|(k, v)| {
            matches!(k, "thought" | "thoughtSignature" | "thought_signature") || *v == Json::Null
        }),
    }
}

impl Model {
    /// The frame as the session must handle it: its events in order.
    /// A frame that is no JSON object, or an error the server ends the
    /// session with, makes none.
    pub(crate) fn frame(&mut self, frame: &Frame) -> FrameModel {
        let Some(Json::Object(message)) = frame.payload().and_then(Json::parse) else {
            return FrameModel::default();
        };
        // The members that are there: the protocol's when not `null`.
        let members = || {
            message
                .iter()
                .filter(|(k, v)| present(k, v, &[&KNOWN, &NAMED]))
                .map(|(k, _)| k)
        };
        let fatal = message.contains_key("error")
            && !members().any(|k| known(k, &KNOWN) || known(k, &NAMED));
        if fatal {
            return FrameModel {
                ends_session: true,
                ..FrameModel::default()
            };
        }
        let content = member(&message, "serverContent").and_then(Json::as_object);
        let interrupted = flag(content, "interrupted");
        let turn_complete = flag(content, "turnComplete");
        let generation_complete = flag(content, "generationComplete");
        let mut out = Vec::new();
        // Rule 5's order, step by step.
        if let Some(usage) = member(&message, "usageMetadata") {
            out.push(usage_of(usage).unwrap_or(Expected::Kind("usage")));
        }
        let parts: Vec<&Object<'_>> = content
            .and_then(|c| member(c, "modelTurn"))
            .and_then(Json::as_object)
            .and_then(|t| t.get("parts"))
            .and_then(Json::as_array)
            .map(|parts| parts.iter().filter_map(Json::as_object).collect())
            .unwrap_or_default();
        self.parts(&parts, interrupted, &mut out);
        for (key, input) in [("inputTranscription", true), ("outputTranscription", false)] {
            if let Some(chunk) = content
                .and_then(|c| member(c, key))
                .and_then(Json::as_object)
            {
                self.transcript(chunk, input, &mut out);
            }
        }
        if interrupted || turn_complete || generation_complete {
            if let Some(text) = self.input.take() {
                out.push(whole(Stream::Input, text, false));
            }
            if let Some(text) = self.output.take() {
                out.push(whole(Stream::Output, text, false));
            }
        }
        if turn_complete {
            self.flush(interrupted, &mut out);
            let reason = content
                .and_then(|c| member(c, "turnCompleteReason"))
                .and_then(Json::as_str)
                .map(str::to_string);
            out.push(Expected::TurnEnd {
                interrupted,
                reason,
            });
        } else if interrupted && !self.flush(true, &mut out) {
            out.push(Expected::Interrupted);
        }
        if generation_complete {
            out.push(Expected::Kind("generation_complete"));
        }
        if let Some(cancellation) = member(&message, "toolCallCancellation") {
            out.push(cancelled_of(cancellation).unwrap_or(Expected::Kind("tool_cancelled")));
        }
        if let Some(call) = member(&message, "toolCall").and_then(Json::as_object) {
            self.flush(false, &mut out);
            let calls = member(call, "functionCalls")
                .and_then(Json::as_array)
                .map(|calls| {
                    calls
                        .iter()
                        .map(|c| {
                            let c = c.as_object();
                            let text = |k: &str| {
                                c.and_then(|c| c.get(k))
                                    .and_then(Json::as_str)
                                    .unwrap_or_default()
                                    .to_string()
                            };
                            let args = match c.and_then(|c| c.get("args")) {
                                None | Some(Json::Null) => Value::Object(Default::default()),
                                Some(args) => args.to_value(),
                            };
                            (text("id"), text("name"), args)
                        })
                        .collect()
                })
                .unwrap_or_default();
            out.push(Expected::Calls(calls));
        }
        if let Some(go_away) = member(&message, "goAway") {
            out.push(go_away_of(go_away).unwrap_or(Expected::Kind("go_away")));
        }
        if let Some(update) = member(&message, "sessionResumptionUpdate") {
            out.push(resumable_of(update).unwrap_or(Expected::Kind("resumption_update")));
        }
        // `waitingForInput: false` says nothing; anything else unnamed is
        // kept whole.
        let said_nothing =
            |k: &str, v: &Json<'_>| known(k, &["waitingForInput"]) && *v == Json::Bool(false);
        let unknown_content = content.is_some_and(|c| {
            c.iter().any(|(k, v)| {
                !known(k, &KNOWN_CONTENT) && !said_nothing(k, v) && present(k, v, &[&NAMED_CONTENT])
            })
        });
        let unknown = members().any(|k| !known(k, &KNOWN))
            || unknown_content
            || member(&message, "setupComplete").is_some();
        if unknown {
            out.push(Expected::Kind("unknown"));
        }
        FrameModel {
            moves_content: content.is_some_and(moves_content),
            events: out,
            interrupted,
            turn_complete,
            ends_session: false,
        }
    }

    /// Rules 2, 3 and 6: text streams, other parts flush it and go out
    /// together, media streams beside it.
    fn parts(&mut self, parts: &[&Object<'_>], interrupted: bool, out: &mut Vec<Expected>) {
        let mut at = 0;
        while at < parts.len() {
            let part = parts[at];
            at += 1;
            if empty(part) {
                continue;
            }
            if let Some(text) = member(part, "text").and_then(Json::as_str) {
                let thought = part.get("thought").and_then(Json::as_bool) == Some(true);
                if !self.text.is_empty() && self.thought != thought {
                    self.flush(false, out);
                }
                self.thought = thought;
                self.text.push_str(text);
                out.push(Expected::Chunk {
                    stream: Stream::Text { thought },
                    text: text.to_string(),
                });
                continue;
            }
            // A run of parts that are not text (empty ones skipped).
            let mut run = vec![part];
            while at < parts.len() {
                let next = parts[at];
                if member(next, "text")
                    .and_then(Json::as_str)
                    .is_some_and(|t| !t.is_empty())
                {
                    break;
                }
                at += 1;
                if !empty(next) {
                    run.push(next);
                }
            }
            let media: Option<Vec<(String, String)>> = run
                .iter()
                .map(|p| {
                    let blob = member(p, "inlineData")?.as_object()?;
                    let text = |k: &str| {
                        member(blob, k)
                            .and_then(Json::as_str)
                            .unwrap_or_default()
                            .to_string()
                    };
                    Some((text("mimeType"), text("data")))
                })
                .collect();
            match media {
                Some(media) => {
                    out.extend(media.into_iter().map(|(mime_type, data)| Expected::Media {
                        mime_type,
                        data,
                        interrupted,
                    }))
                }
                None => {
                    self.flush(false, out);
                    let live = run.iter().any(|p| {
                        member(p, "inlineData")
                            .and_then(Json::as_object)
                            .and_then(|blob| member(blob, "mimeType"))
                            .and_then(Json::as_str)
                            .is_some_and(live_media)
                    });
                    out.push(Expected::Content {
                        parts: run.len(),
                        interrupted,
                        live,
                    });
                }
            }
        }
    }

    /// Rule 7: one buffer per direction, a chunk streams, `finished`
    /// emits the whole utterance.
    fn transcript(&mut self, chunk: &Object<'_>, input: bool, out: &mut Vec<Expected>) {
        let (buffer, stream) = if input {
            (&mut self.input, Stream::Input)
        } else {
            (&mut self.output, Stream::Output)
        };
        let text = chunk.get("text").and_then(Json::as_str).unwrap_or_default();
        if !text.is_empty() {
            buffer.get_or_insert_with(String::new).push_str(text);
            out.push(Expected::Chunk {
                stream,
                text: text.to_string(),
            });
        }
        if chunk.get("finished").and_then(Json::as_bool) == Some(true) {
            out.push(whole(stream, buffer.take().unwrap_or_default(), false));
        }
    }

    /// Rule 3: the pending text as one whole segment; false when nothing
    /// was pending.
    fn flush(&mut self, interrupted: bool, out: &mut Vec<Expected>) -> bool {
        if self.text.is_empty() {
            return false;
        }
        let stream = Stream::Text {
            thought: self.thought,
        };
        out.push(whole(stream, std::mem::take(&mut self.text), interrupted));
        self.thought = false;
        true
    }
}

fn whole(stream: Stream, text: String, interrupted: bool) -> Expected {
    Expected::Whole {
        stream,
        text,
        interrupted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(messages: &[Value]) -> Vec<Expected> {
        let mut model = Model::default();
        messages
            .iter()
            .flat_map(|m| model.frame(&Frame::Text(m.to_string())).events)
            .collect()
    }

    fn text(t: &str) -> Value {
        serde_json::json!({"serverContent": {"modelTurn": {"parts": [{"text": t}]}}})
    }

    /// Rows 1, 5 and 10 of the documented table.
    #[test]
    fn the_documented_rows() {
        let chunk = |t: &str, thought| Expected::Chunk {
            stream: Stream::Text { thought },
            text: t.into(),
        };
        let events = frames(&[
            text("Hel"),
            text("lo"),
            serde_json::json!({"serverContent": {"turnComplete": true}}),
        ]);
        assert_eq!(
            events,
            [
                chunk("Hel", false),
                chunk("lo", false),
                whole(Stream::Text { thought: false }, "Hello".into(), false),
                Expected::TurnEnd {
                    interrupted: false,
                    reason: None
                }
            ]
        );
        let events = frames(&[
            text("Hel"),
            serde_json::json!({"serverContent": {"modelTurn": {"parts": [{"text": "lo"}]}, "interrupted": true}}),
        ]);
        assert_eq!(
            events.last(),
            Some(&whole(
                Stream::Text { thought: false },
                "Hello".into(),
                true
            ))
        );
        let events = frames(&[
            serde_json::json!({"serverContent": {"modelTurn": {"parts": [{"text": "Plan", "thought": true}]}}}),
            text("Hi"),
        ]);
        assert_eq!(
            events,
            [
                chunk("Plan", true),
                whole(Stream::Text { thought: true }, "Plan".into(), false),
                chunk("Hi", false)
            ]
        );
    }

    /// A turn's end passes its reason on as it came, a reason the
    /// protocol does not name yet included; a call with no `args`
    /// carries `{}`.
    #[test]
    fn a_turn_end_keeps_its_reason_and_a_bare_call_gets_empty_args() {
        let events = frames(&[
            serde_json::json!({"serverContent": {"turnComplete": true, "turnCompleteReason": "SOME_NEW_REASON"}}),
            serde_json::json!({"toolCall": {"functionCalls": [{"id": "c1", "name": "now"}]}}),
        ]);
        assert_eq!(
            events,
            [
                Expected::TurnEnd {
                    interrupted: false,
                    reason: Some("SOME_NEW_REASON".into())
                },
                Expected::Calls(vec![("c1".into(), "now".into(), serde_json::json!({}))])
            ]
        );
    }

    /// Media streams beside the text (row 11); code flushes it (row 12).
    #[test]
    fn media_does_not_flush_and_code_does() {
        let audio = serde_json::json!({"serverContent": {"modelTurn": {"parts": [{"inlineData": {"mimeType": "audio/pcm", "data": "AAA="}}]}}});
        let code = serde_json::json!({"serverContent": {"modelTurn": {"parts": [{"executableCode": {"code": "1"}}]}}});
        let kinds: Vec<String> = frames(&[text("Hel"), audio, text("lo"), code])
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            kinds,
            [
                "a text chunk \"Hel\"",
                "media audio/pcm",
                "a text chunk \"lo\"",
                "the whole text \"Hello\"",
                "1 content part(s)"
            ]
        );
    }

    /// A member the protocol names is absent when `null`; a key it does
    /// not name is kept whatever it holds.
    #[test]
    fn a_named_member_that_is_null_is_absent() {
        use serde_json::json;
        let read = |m: Value| Model::default().frame(&Frame::Text(m.to_string()));
        for nothing in [
            json!({"usageMetadata": null}),
            json!({"goAway": null, "voiceActivityDetectionSignal": null}),
            json!({"serverContent": {"groundingMetadata": null}}),
            json!({"serverContent": {"modelTurn": {"parts": [{"text": null}]}}}),
        ] {
            assert_eq!(read(nothing.clone()).events, [], "{nothing}");
        }
        assert_eq!(
            read(json!({"somethingNew": null})).events,
            [Expected::Kind("unknown")]
        );
        // An error beside payloads that are all absent ends the session;
        // beside a voice activity signal, it does not.
        assert!(read(json!({"usageMetadata": null, "error": {"code": 500}})).ends_session);
        let beside = read(
            json!({"voiceActivityDetectionSignal": {"vadSignalType": "VAD_SIGNAL_TYPE_SOS"}, "error": {}}),
        );
        assert!(!beside.ends_session);
    }
}
