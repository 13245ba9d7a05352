//! A compact notation for aggregation tests: server frames as the rows of
//! the aggregation table write them, and stored events as short tokens.

use std::time::Duration;

use livesim::prelude::*;
use livesim::testing::ScriptedServer;
use serde_json::{Value, json};

/// A model-turn message holding these parts.
pub fn parts(parts: Vec<Value>) -> Value {
    json!({ "serverContent": { "modelTurn": { "parts": parts } } })
}

pub fn text(t: &str) -> Value {
    json!({ "text": t })
}

pub fn thought(t: &str) -> Value {
    json!({ "text": t, "thought": true })
}

pub fn audio() -> Value {
    json!({ "inlineData": { "mimeType": "audio/pcm;rate=24000", "data": "AAAA" } })
}

pub fn code() -> Value {
    json!({ "executableCode": { "language": "PYTHON", "code": "print(1)" } })
}

/// A message with one text part.
pub fn msg_text(t: &str) -> Value {
    parts(vec![text(t)])
}

/// Sets `serverContent.<key>` on a message.
pub fn with(mut message: Value, key: &str, value: Value) -> Value {
    message["serverContent"][key] = value;
    message
}

pub fn tc() -> Value {
    json!({ "serverContent": { "turnComplete": true } })
}

pub fn int() -> Value {
    json!({ "serverContent": { "interrupted": true } })
}

/// A tool call to `name` with id `call-<name>`.
pub fn tool(name: &str) -> Value {
    tools_called(&[(name, &format!("call-{name}"))])
}

/// One `toolCall` message calling these (name, id) pairs, in order.
pub fn tools_called(calls: &[(&str, &str)]) -> Value {
    let calls: Vec<Value> = calls
        .iter()
        .map(|(name, id)| json!({ "id": id, "name": name, "args": {} }))
        .collect();
    json!({ "toolCall": { "functionCalls": calls } })
}

pub fn in_tx(t: &str, finished: bool) -> Value {
    json!({ "text": t, "finished": finished })
}

pub fn out_tx(t: &str) -> Value {
    json!({ "serverContent": { "outputTranscription": { "text": t } } })
}

/// Tools `f` and `g`, each answering `{}` after a latency drawn from the
/// seed, so their answers come back in seed-chosen orders.
pub fn tools() -> ToolComposite {
    let tool = |name: &'static str| {
        T::simple(name, "answers after a seeded delay", move |_| async move {
            let ms = livesim::executor::draw("tool-latency", |s| s.range(0..=30)).unwrap_or(0);
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Ok(json!({ "tool": name }))
        })
    };
    tool("f") | tool("g")
}

/// The frames as a script, `spacing` apart (none: back to back).
pub fn script(frames: &[Value], spacing: Duration) -> ScriptedServer {
    let mut script = ScriptedServer::new().named("aggregation");
    for (i, frame) in frames.iter().enumerate() {
        if i > 0 && !spacing.is_zero() {
            script = script.pause(spacing);
        }
        script = script.frame(frame.clone());
    }
    script
}

#[path = "../../src/session/aggregate/token.rs"]
mod token;
pub use token::tokens;
