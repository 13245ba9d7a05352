//! One-line summaries of Live messages for the serve log.
//!
//! Summaries are built from an allow-list of fields (model name, tool
//! names and call ids, text, sizes), never by printing the message: a
//! message may carry a resumption handle or a token, and what is not
//! picked cannot leak. Field names are looked up in both spellings the
//! service accepts (`functionResponses` and `function_responses`).

use serde_json::{Map, Value};

/// How much of a text a summary quotes.
const QUOTE: usize = 80;

/// What a client sent, in one line: `toolResponse: call-1 get_weather`.
pub(crate) fn client_message(bytes: &[u8]) -> String {
    let Ok(message) = serde_json::from_slice::<Value>(bytes) else {
        return format!("a frame that is not JSON ({} bytes)", bytes.len());
    };
    let Some(object) = message.as_object() else {
        return format!("JSON that is not an object ({} bytes)", bytes.len());
    };
    if object.len() != 1 {
        let keys: Vec<&str> = object.keys().map(String::as_str).collect();
        return format!("a message with {} top-level keys {keys:?}", keys.len());
    }
    let (key, body) = object.iter().next().expect("one key");
    let what = match crate::wire::camel_case(key).as_str() {
        "setup" => setup(body),
        "clientContent" => client_content(body),
        "realtimeInput" => realtime_input(body),
        "toolResponse" => tool_response(body),
        "contextUpdate" => context_update(body),
        _ => "(not a Live client message)".to_string(),
    };
    format!("{key}: {what}")
}

/// What the server sent, in one line: `toolCall: get_weather as call-1`.
pub(crate) fn server_message(bytes: &[u8]) -> String {
    let Some(object) = serde_json::from_slice::<Value>(bytes)
        .ok()
        .and_then(|m| m.as_object().cloned())
    else {
        return format!("raw bytes ({} bytes)", bytes.len());
    };
    let parts: Vec<String> = object
        .iter()
        .map(|(key, body)| {
            let what = match key.as_str() {
                "serverContent" => server_content(body),
                "toolCall" => tool_call(body),
                "toolCallCancellation" => format!("ids {}", list(body, "ids")),
                "goAway" => format!(
                    "time left {}",
                    field(body, "timeLeft")
                        .and_then(Value::as_str)
                        .unwrap_or("unknown")
                ),
                // The handle itself is a secret: only whether there is one.
                "sessionResumptionUpdate" => format!(
                    "resumable {}",
                    field(body, "resumable")
                        .and_then(Value::as_bool)
                        .unwrap_or(false)
                ),
                "usageMetadata" => format!(
                    "{} tokens",
                    field(body, "totalTokenCount").map_or("?".into(), Value::to_string)
                ),
                _ => String::new(),
            };
            if what.is_empty() {
                key.clone()
            } else {
                format!("{key}: {what}")
            }
        })
        .collect();
    parts.join("; ")
}

fn setup(body: &Value) -> String {
    let mut out = vec![format!(
        "model {}",
        field(body, "model")
            .and_then(Value::as_str)
            .unwrap_or("(none)")
    )];
    let tools: Vec<String> = field(body, "tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .flat_map(|tool| {
            field(tool, "functionDeclarations")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|d| field(d, "name").and_then(Value::as_str))
                .map(String::from)
                .collect::<Vec<_>>()
        })
        .collect();
    if !tools.is_empty() {
        out.push(format!("tools [{}]", tools.join(", ")));
    }
    if let Some(modalities) = field(body, "generationConfig")
        .and_then(|g| field(g, "responseModalities"))
        .and_then(Value::as_array)
    {
        let names: Vec<&str> = modalities.iter().filter_map(Value::as_str).collect();
        out.push(format!("modalities [{}]", names.join(", ")));
    }
    if field(body, "sessionResumption")
        .and_then(|r| field(r, "handle"))
        .is_some()
    {
        out.push("resuming with a handle (not logged)".to_string());
    }
    out.join(", ")
}

fn client_content(body: &Value) -> String {
    let turns: Vec<String> = field(body, "turns")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|turn| {
            let role = field(turn, "role").and_then(Value::as_str).unwrap_or("?");
            format!("{role} {}", quote(&parts_text(turn)))
        })
        .collect();
    let complete = field(body, "turnComplete")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut out = if turns.is_empty() {
        "no turns".to_string()
    } else {
        turns.join(", ")
    };
    if complete {
        out.push_str(" (turn complete)");
    }
    out
}

/// Whether `bytes` is a chunk of audio and nothing else
/// (`{"realtimeInput": {"audio": …}}`, either spelling): what a
/// microphone streams, fifty a second.
pub(crate) fn is_audio_chunk(bytes: &[u8]) -> bool {
    let Ok(Value::Object(message)) = serde_json::from_slice::<Value>(bytes) else {
        return false;
    };
    let mut members = message.iter();
    match (members.next(), members.next()) {
        (Some((key, Value::Object(body))), None) => {
            crate::wire::camel_case(key) == "realtimeInput"
                && body.len() == 1
                && body.contains_key("audio")
        }
        _ => false,
    }
}

fn realtime_input(body: &Value) -> String {
    let Some(object) = body.as_object() else {
        return "(not an object)".to_string();
    };
    let parts: Vec<String> = object
        .iter()
        .map(|(key, value)| match crate::wire::camel_case(key).as_str() {
            "text" => format!("text {}", quote(value.as_str().unwrap_or_default())),
            "audio" | "video" => format!("{key} {}", blob(value)),
            "mediaChunks" => format!("mediaChunks ×{}", value.as_array().map_or(0, Vec::len)),
            _ => key.clone(),
        })
        .collect();
    parts.join(", ")
}

/// Which parts of the context change; a system instruction's text is not
/// quoted (it is the user's prompt, not a turn).
fn context_update(body: &Value) -> String {
    let Some(object) = body.as_object() else {
        return "(not an object)".to_string();
    };
    let parts: Vec<&str> = object
        .keys()
        .map(|key| match crate::wire::camel_case(key).as_str() {
            "systemInstruction" => "system instruction",
            "tools" => "tools",
            _ => "an unknown member",
        })
        .collect();
    if parts.is_empty() {
        "nothing".to_string()
    } else {
        parts.join(", ")
    }
}

fn tool_response(body: &Value) -> String {
    let answers: Vec<String> = field(body, "functionResponses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|r| {
            let id = field(r, "id").and_then(Value::as_str).unwrap_or("(no id)");
            let name = field(r, "name").and_then(Value::as_str).unwrap_or("?");
            let error = field(r, "response")
                .and_then(|v| v.get("error"))
                .map_or("", |_| " (error)");
            format!("{id} {name}{error}")
        })
        .collect();
    if answers.is_empty() {
        "no function responses".to_string()
    } else {
        answers.join(", ")
    }
}

fn server_content(body: &Value) -> String {
    let mut out = Vec::new();
    if let Some(turn) = field(body, "modelTurn") {
        // Spoken turns carry audio, not text: each blob is named, and the
        // text only when there is some (or nothing else to show).
        let blobs: Vec<String> = field(turn, "parts")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|p| field(p, "inlineData"))
            .map(blob)
            .collect();
        let text = parts_text(turn);
        if !text.is_empty() || blobs.is_empty() {
            out.push(format!("text {}", quote(&text)));
        }
        out.extend(blobs.into_iter().map(|b| format!("audio {b}")));
    }
    for (key, label) in [
        ("inputTranscription", "heard"),
        ("outputTranscription", "spoke"),
    ] {
        if let Some(text) = field(body, key).and_then(|t| field(t, "text")) {
            out.push(format!(
                "{label} {}",
                quote(text.as_str().unwrap_or_default())
            ));
        }
    }
    for flag in ["interrupted", "generationComplete", "turnComplete"] {
        if field(body, flag).and_then(Value::as_bool) == Some(true) {
            out.push(flag.to_string());
        }
    }
    out.join(", ")
}

fn tool_call(body: &Value) -> String {
    let calls: Vec<String> = field(body, "functionCalls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| {
            format!(
                "{} as {}",
                field(c, "name").and_then(Value::as_str).unwrap_or("?"),
                field(c, "id").and_then(Value::as_str).unwrap_or("(no id)")
            )
        })
        .collect();
    calls.join(", ")
}

/// A field by its camelCase name, or by its snake_case one.
fn field<'a>(value: &'a Value, camel_name: &str) -> Option<&'a Value> {
    let object: &Map<String, Value> = value.as_object()?;
    object
        .get(camel_name)
        .or_else(|| object.get(&snake(camel_name)))
}

/// The text parts of a `Content`, concatenated.
fn parts_text(content: &Value) -> String {
    field(content, "parts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| field(p, "text").and_then(Value::as_str))
        .collect()
}

/// `{"mimeType", "data"}` as `3200 bytes audio/pcm;rate=16000`.
fn blob(value: &Value) -> String {
    let data = field(value, "data").and_then(Value::as_str).unwrap_or("");
    let mime = field(value, "mimeType")
        .and_then(Value::as_str)
        .unwrap_or("?");
    format!("{} bytes {mime}", base64_len(data))
}

/// How many bytes base64 `data` holds: 3 in every 4 characters, less the
/// padding (or, unpadded, 1 or 2 for a last group of 2 or 3 characters).
fn base64_len(data: &str) -> usize {
    let padding = data.bytes().rev().take(2).filter(|&b| b == b'=').count();
    let tail = match data.len() % 4 {
        2 => 1,
        3 => 2,
        _ => 0,
    };
    (data.len() / 4 * 3 + tail).saturating_sub(padding)
}

fn list(value: &Value, name: &str) -> String {
    let items: Vec<&str> = field(value, name)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    format!("[{}]", items.join(", "))
}

/// `text` in quotes, cut at [`QUOTE`] characters.
fn quote(text: &str) -> String {
    let mut chars = text.chars();
    let head: String = chars.by_ref().take(QUOTE).collect();
    if chars.next().is_some() {
        format!("{head:?}…")
    } else {
        format!("{head:?}")
    }
}

fn snake(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 4);
    for c in key.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_python_sdk_tool_response_names_its_calls() {
        let line = client_message(
            br#"{"tool_response":{"function_responses":[{"id":"call-1","name":"get_weather","response":{"sky":"sunny"}}]}}"#,
        );
        assert_eq!(line, "tool_response: call-1 get_weather");
    }

    #[test]
    fn client_content_quotes_its_text() {
        let line = client_message(
            br#"{"clientContent":{"turns":[{"role":"user","parts":[{"text":"Hello there"}]}],"turnComplete":true}}"#,
        );
        assert_eq!(line, r#"clientContent: user "Hello there" (turn complete)"#);
    }

    #[test]
    fn a_setup_never_shows_its_resumption_handle() {
        let line = client_message(
            br#"{"setup":{"model":"models/m","session_resumption":{"handle":"HANDLE-SECRET"},"tools":[{"functionDeclarations":[{"name":"get_weather"}]}]}}"#,
        );
        assert!(!line.contains("HANDLE-SECRET"), "{line}");
        assert_eq!(
            line,
            "setup: model models/m, tools [get_weather], resuming with a handle (not logged)"
        );
    }

    #[test]
    fn server_messages_are_summarized_without_handles() {
        assert_eq!(
            server_message(br#"{"toolCall":{"functionCalls":[{"id":"call-1","name":"get_weather","args":{}}]}}"#),
            "toolCall: get_weather as call-1"
        );
        let line = server_message(
            br#"{"sessionResumptionUpdate":{"newHandle":"HANDLE-SECRET","resumable":true}}"#,
        );
        assert_eq!(line, "sessionResumptionUpdate: resumable true");
    }

    /// The sizes the log gives are the decoded ones, padded or not.
    #[test]
    fn blobs_are_sized_as_decoded() {
        use base64::Engine as _;
        for n in [0usize, 1, 2, 3, 4, 3200, 3201, 3202] {
            let bytes = vec![7u8; n];
            let padded = base64::engine::general_purpose::STANDARD.encode(&bytes);
            let bare = base64::engine::general_purpose::STANDARD_NO_PAD.encode(&bytes);
            assert_eq!(base64_len(&padded), n, "{padded}");
            assert_eq!(base64_len(&bare), n, "{bare}");
        }
        let audio = base64::engine::general_purpose::STANDARD.encode(vec![0u8; 3200]);
        assert_eq!(
            client_message(
                format!(r#"{{"realtimeInput":{{"audio":{{"data":"{audio}","mimeType":"audio/pcm;rate=16000"}}}}}}"#)
                    .as_bytes()
            ),
            "realtimeInput: audio 3200 bytes audio/pcm;rate=16000"
        );
        // A spoken turn names its audio, not an empty text.
        assert_eq!(
            server_message(
                format!(r#"{{"serverContent":{{"modelTurn":{{"parts":[{{"inlineData":{{"mimeType":"audio/pcm;rate=24000","data":"{audio}"}}}}]}}}}}}"#)
                    .as_bytes()
            ),
            "serverContent: audio 3200 bytes audio/pcm;rate=24000"
        );
        assert_eq!(
            server_message(br#"{"serverContent":{"modelTurn":{"parts":[]}}}"#),
            "serverContent: text \"\""
        );
    }

    #[test]
    fn long_text_is_cut_and_odd_frames_are_described() {
        let long = "x".repeat(200);
        let line = client_message(format!(r#"{{"realtimeInput":{{"text":"{long}"}}}}"#).as_bytes());
        assert!(line.ends_with("…"), "{line}");
        assert!(line.len() < 120, "{line}");
        assert_eq!(
            client_message(b"\xff\x00"),
            "a frame that is not JSON (2 bytes)"
        );
        assert_eq!(
            client_message(br#"{"a":1,"b":2}"#),
            r#"a message with 2 top-level keys ["a", "b"]"#
        );
    }
}
