//! A compact notation for aggregation tests: build messages as in the
//! aggregation table (`rows.rs`), and render events as short tokens.

use serde_json::json;

pub use super::token::{token, tokens};
use super::{Aggregator, MessageView, PartView, TranscriptView};
use crate::clock::Timestamp;
use crate::session::events::{LiveEvent, ToolCall};

pub fn text(t: &str) -> PartView {
    PartView::Text {
        text: t.into(),
        thought: false,
    }
}

pub fn thought(t: &str) -> PartView {
    PartView::Text {
        text: t.into(),
        thought: true,
    }
}

pub fn audio() -> PartView {
    PartView::Inline {
        mime_type: "audio/pcm;rate=24000".into(),
        data: "AAAA".into(),
    }
}

pub fn code() -> PartView {
    PartView::Other(json!({ "executableCode": { "language": "PYTHON", "code": "print(1)" } }))
}

/// A message holding these parts.
pub fn parts(parts: Vec<PartView>) -> MessageView {
    MessageView {
        parts,
        ..MessageView::default()
    }
}

pub fn msg_text(t: &str) -> MessageView {
    parts(vec![text(t)])
}

/// The view of a raw server message, decoded as the wire lane decodes it.
pub fn decoded(message: serde_json::Value) -> MessageView {
    let frame = crate::wire::Frame::Text(message.to_string());
    let (message, _) = crate::session::inbound::decode(&frame).expect("a server message");
    crate::session::inbound::view(&message)
}

pub fn tc() -> MessageView {
    MessageView {
        turn_complete: true,
        ..MessageView::default()
    }
}

pub fn int() -> MessageView {
    MessageView {
        interrupted: true,
        ..MessageView::default()
    }
}

pub fn tool(name: &str) -> MessageView {
    MessageView {
        tool_calls: Some(vec![ToolCall {
            id: format!("id-{name}"),
            name: name.into(),
            args: json!({}),
        }]),
        ..MessageView::default()
    }
}

pub fn in_tx(t: &str, finished: bool) -> TranscriptView {
    TranscriptView {
        text: t.into(),
        finished,
    }
}

/// Feeds messages through a fresh aggregator; `close` drops the pending.
pub fn run(messages: &[MessageView]) -> Vec<LiveEvent> {
    let mut aggregator = Aggregator::default();
    let mut out = Vec::new();
    for msg in messages {
        out.extend(aggregator.push(msg, Timestamp::EPOCH));
    }
    out
}

/// The stored events' tokens.
pub fn stored(events: &[LiveEvent]) -> Vec<String> {
    events.iter().filter(|e| e.is_stored()).map(token).collect()
}
