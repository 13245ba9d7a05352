//! From a decoded server message to what aggregation and routing need.
//!
//! This is the session's only contact with the wire types of server
//! messages: it decodes a frame, answers setup questions, and builds the
//! [`MessageView`] aggregation works on. Payloads the session has no
//! dedicated event for (grounding, URL context, voice activity, unknown
//! keys) are kept and emitted whole, never dropped.

use serde_json::{Map, Value};

use super::aggregate::{MessageView, PartView, TranscriptView};
use super::error::SessionError;
use super::events::ToolCall;
use crate::wire::{CloseFrame, Closed, Decoded, Frame, PartKind, ServerMessage, Transcription};

/// Decodes a text or binary frame into a server message, and names each
/// payload of it that could not be read. A frame whose one payload is
/// malformed (a usage count that is not a number) keeps the others (the
/// turn's end beside it): the unreadable payloads are left out, each
/// named; only a frame with nothing readable in it is an error.
pub(crate) fn decode(frame: &Frame) -> Result<(ServerMessage, Vec<String>), String> {
    match ServerMessage::from_frame(frame) {
        Ok(Decoded::Message(message)) => Ok((message, Vec::new())),
        Ok(Decoded::Closed(closed)) => Err(format!("a close frame is not a message ({closed})")),
        Err(e) => salvage(frame).ok_or_else(|| e.to_string()),
    }
}

/// The readable payloads of a frame that did not decode whole, and what
/// was wrong with each of the others; `None` when the frame is no JSON
/// object or none of its payloads can be read.
fn salvage(frame: &Frame) -> Option<(ServerMessage, Vec<String>)> {
    let bytes = match frame {
        Frame::Text(text) => text.as_bytes(),
        Frame::Binary(bytes) => bytes,
        Frame::Close(_) => return None,
    };
    let payloads: Map<String, Value> = serde_json::from_slice(bytes).ok()?;
    let mut message = ServerMessage::default();
    let mut problems = Vec::new();
    let mut read = 0;
    for (key, value) in payloads {
        let one = Value::Object(Map::from_iter([(key.clone(), value)]));
        match serde_json::from_value::<ServerMessage>(one) {
            Ok(part) => {
                read += 1;
                merge(&mut message, part);
            }
            Err(e) => {
                // Redacted first: a cut first could keep half a key.
                let problem = e.to_string();
                let problem = crate::wire::scrub_builtin(&problem);
                let problem = crate::wire::truncate_at_char(&problem, 300);
                problems.push(format!("`{key}` left out: {problem}"));
            }
        }
    }
    (read > 0).then_some((message, problems))
}

/// Moves the payloads of `part` (a message of one key) into `message`.
fn merge(message: &mut ServerMessage, part: ServerMessage) {
    let ServerMessage {
        setup_complete,
        server_content,
        tool_call,
        tool_call_cancellation,
        go_away,
        session_resumption_update,
        usage_metadata,
        voice_activity,
        voice_activity_detection_signal,
        extra,
    } = part;
    message.setup_complete = message.setup_complete.take().or(setup_complete);
    message.server_content = message.server_content.take().or(server_content);
    message.tool_call = message.tool_call.take().or(tool_call);
    message.tool_call_cancellation = message
        .tool_call_cancellation
        .take()
        .or(tool_call_cancellation);
    message.go_away = message.go_away.take().or(go_away);
    message.session_resumption_update = message
        .session_resumption_update
        .take()
        .or(session_resumption_update);
    message.usage_metadata = message.usage_metadata.take().or(usage_metadata);
    message.voice_activity = message.voice_activity.take().or(voice_activity);
    message.voice_activity_detection_signal = message
        .voice_activity_detection_signal
        .take()
        .or(voice_activity_detection_signal);
    message.extra.extend(extra);
}

/// `Some(session id)` if the message completes setup.
pub(crate) fn setup_complete(message: &ServerMessage) -> Option<Option<String>> {
    message
        .setup_complete
        .as_ref()
        .map(|complete| complete.session_id.clone())
}

/// The error for a close that came instead of `setupComplete`.
pub(crate) fn setup_rejected(close: Option<CloseFrame>) -> SessionError {
    let closed = Closed::from_close(close.as_ref());
    SessionError::SetupRejected {
        code: closed.code,
        class: closed.class.to_string(),
        reason: closed.reason,
    }
}

/// The message's in-band error, when it carries nothing else: the server
/// is giving up on the session.
pub(crate) fn fatal_error(message: &ServerMessage) -> Option<String> {
    if !message.has_no_known_payload() {
        return None;
    }
    let error = message.in_band_error()?;
    Some(match (error.code, error.message) {
        (Some(code), Some(text)) => format!("the server sent error {code}: {text}"),
        (None, Some(text)) => format!("the server sent an error: {text}"),
        _ => format!("the server sent an error: {}", error.value),
    })
}

/// The aggregation view of a message.
pub(crate) fn view(message: &ServerMessage) -> MessageView {
    let mut view = MessageView {
        usage: message
            .usage_metadata
            .as_ref()
            .and_then(|usage| serde_json::to_value(usage).ok()),
        ..MessageView::default()
    };
    let mut other = Map::new();
    if let Some(content) = &message.server_content {
        if let Some(turn) = &content.model_turn {
            view.parts = turn.parts.iter().filter_map(part).collect();
        }
        view.input_transcript = content.input_transcription.as_ref().map(transcript);
        view.output_transcript = content.output_transcription.as_ref().map(transcript);
        view.interrupted = content.interrupted;
        view.turn_complete = content.turn_complete;
        view.generation_complete = content.generation_complete;
        view.turn_complete_reason = content
            .turn_complete_reason
            .as_ref()
            .map(|r| r.as_str().to_string());
        keep(&mut other, "groundingMetadata", &content.grounding_metadata);
        keep(
            &mut other,
            "urlContextMetadata",
            &content.url_context_metadata,
        );
        keep(
            &mut other,
            "interimInputTranscription",
            &content.interim_input_transcription,
        );
        if content.waiting_for_input {
            other.insert("waitingForInput".into(), Value::Bool(true));
        }
        for (key, value) in &content.extra {
            other.insert(format!("serverContent.{key}"), value.clone());
        }
    }
    if let Some(call) = &message.tool_call {
        view.tool_calls = Some(
            call.function_calls
                .iter()
                .map(|f| ToolCall {
                    id: f.id.clone().unwrap_or_default(),
                    name: f.name.clone(),
                    args: f.args.clone().unwrap_or_else(|| Value::Object(Map::new())),
                })
                .collect(),
        );
    }
    if let Some(cancellation) = &message.tool_call_cancellation {
        view.cancelled_calls = Some(cancellation.ids.clone());
    }
    if let Some(go_away) = &message.go_away {
        view.go_away = Some(go_away.time_left);
    }
    if let Some(update) = &message.session_resumption_update {
        view.resumable = Some(update.resumable);
    }
    keep(&mut other, "setupComplete", &message.setup_complete);
    keep(&mut other, "voiceActivity", &message.voice_activity);
    keep(
        &mut other,
        "voiceActivityDetectionSignal",
        &message.voice_activity_detection_signal,
    );
    for (key, value) in &message.extra {
        other.insert(key.clone(), value.clone());
    }
    if !other.is_empty() {
        view.unknown = Some(Value::Object(other));
    }
    view
}

fn keep<T: serde::Serialize>(other: &mut Map<String, Value>, key: &str, value: &Option<T>) {
    if let Some(value) = value.as_ref().and_then(|v| serde_json::to_value(v).ok()) {
        other.insert(key.to_string(), value);
    }
}

fn transcript(t: &Transcription) -> TranscriptView {
    TranscriptView {
        text: t.text.clone().unwrap_or_default(),
        finished: t.finished,
    }
}

fn part(part: &crate::wire::Part) -> Option<PartView> {
    Some(match part.kind() {
        PartKind::Text(text) => PartView::Text {
            text: text.to_string(),
            thought: false,
        },
        PartKind::Thought(text) => PartView::Text {
            text: text.to_string(),
            thought: true,
        },
        PartKind::InlineData(blob) => PartView::Inline {
            mime_type: blob.mime_type.clone().unwrap_or_default(),
            data: blob.data.clone(),
        },
        // A part with no payload (a lone thought signature) is ignored.
        PartKind::Empty => return None,
        _ => PartView::Other(serde_json::to_value(part).ok()?),
    })
}
