//! The aggregation table's notation for events: one short token each
//! (`partial "Hel"`, `full "Hello" +int`, `tool(f)`, `turnComplete`).
//!
//! Shared by the aggregator's unit tests and the `tests/aggregation`
//! suite (which includes this file by path), so a row reads the same in
//! both. The includer puts `LiveEvent` in scope.

use super::LiveEvent;

fn flags(thought: bool, interrupted: bool) -> String {
    let mut s = String::new();
    if thought {
        s.push_str(" +th");
    }
    if interrupted {
        s.push_str(" +int");
    }
    s
}

/// The event's token.
pub fn token(event: &LiveEvent) -> String {
    match event {
        LiveEvent::TextDelta { text, thought } => {
            format!("partial {text:?}{}", flags(*thought, false))
        }
        LiveEvent::TextComplete {
            text,
            thought,
            interrupted,
        } => format!("full {text:?}{}", flags(*thought, *interrupted)),
        LiveEvent::InputTranscriptDelta { text } => format!("p-inTx {text:?}"),
        LiveEvent::InputTranscript { text } => format!("inTx {text:?}"),
        LiveEvent::OutputTranscriptDelta { text } => format!("p-outTx {text:?}"),
        LiveEvent::OutputTranscript { text } => format!("outTx {text:?}"),
        LiveEvent::Media { interrupted, .. } => format!("audio{}", flags(false, *interrupted)),
        LiveEvent::Content { parts, interrupted } => {
            let kinds: Vec<&str> = parts
                .iter()
                .map(|p| {
                    if p.get("inlineData").is_some() {
                        "audio"
                    } else {
                        "code"
                    }
                })
                .collect();
            format!("{}{}", kinds.join("+"), flags(false, *interrupted))
        }
        LiveEvent::ToolCall { calls } => {
            let names: Vec<&str> = calls.iter().map(|c| c.name.as_str()).collect();
            format!("tool({})", names.join(","))
        }
        LiveEvent::ToolResponse { name, id, .. } => format!("response({name} {id})"),
        LiveEvent::ToolDenied { name, id, .. } => format!("denied({name} {id})"),
        LiveEvent::Extracted { extractor, values } => format!(
            "extracted({extractor}) {}",
            serde_json::Value::Object(values.clone())
        ),
        LiveEvent::TurnComplete { interrupted, .. } => {
            format!("turnComplete{}", flags(false, *interrupted))
        }
        LiveEvent::GenerationComplete => "generationComplete".into(),
        other => other.kind().replace('_', " "),
    }
}

/// The tokens of `events`.
pub fn tokens(events: &[LiveEvent]) -> Vec<String> {
    events.iter().map(token).collect()
}
