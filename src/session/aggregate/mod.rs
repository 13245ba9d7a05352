//! Text aggregation: how a stream of server messages becomes events.
//!
//! The Live API streams model text in chunks and does not say when a
//! segment of text is over. The aggregator turns each server message into
//! events in a fixed order. The rules (livesim's answer where ADK's Python
//! and Java ports disagree; each is fixed by a test in `rows.rs`):
//!
//! * every non-empty text chunk is emitted as a partial [`TextDelta`] and
//!   added to one pending buffer per connection;
//! * the buffer is flushed as one full [`TextComplete`] when the text ends:
//!   on a thought/non-thought switch, before a part that is neither text nor
//!   inline data, before a tool call, at an interruption (the full text
//!   carries `interrupted`) and at the end of the turn;
//! * transcriptions aggregate the same way, one buffer per direction,
//!   finished by `finished: true` or by interruption, turn completion or
//!   generation completion;
//! * partial events never carry `interrupted` or `turnComplete`;
//! * when the connection closes mid-turn, pending text and transcripts are
//!   dropped, not emitted.
//!
//! Within one message the order is: usage; the model's parts; transcript
//! chunks (input, then output); finished transcripts; at turn completion the
//! full text then the turn-complete event, or at an interruption the full
//! text with `interrupted` (a bare [`Interrupted`] when nothing was
//! pending); generation complete; tool cancellations; the flush and the
//! tool call; go-away, resumption and unknown keys.
//!
//! [`TextDelta`]: LiveEvent::TextDelta
//! [`TextComplete`]: LiveEvent::TextComplete
//! [`Interrupted`]: LiveEvent::Interrupted

use serde_json::Value;

use super::events::{LiveEvent, ToolCall};
use crate::clock::Timestamp;

/// One part of the model's turn, as aggregation sees it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum PartView {
    /// A text part (a thought when `thought`).
    Text { text: String, thought: bool },
    /// Inline data: audio, an image, video.
    Inline { mime_type: String, data: String },
    /// Anything else (code, code results, unknown part kinds), as JSON.
    Other(Value),
}

/// A transcription chunk.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct TranscriptView {
    pub text: String,
    pub finished: bool,
}

/// A server message, as aggregation sees it.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct MessageView {
    pub usage: Option<Value>,
    pub parts: Vec<PartView>,
    pub input_transcript: Option<TranscriptView>,
    pub output_transcript: Option<TranscriptView>,
    pub interrupted: bool,
    pub turn_complete: bool,
    pub turn_complete_reason: Option<String>,
    pub generation_complete: bool,
    pub tool_calls: Option<Vec<ToolCall>>,
    pub cancelled_calls: Option<Vec<String>>,
    pub go_away: Option<Option<std::time::Duration>>,
    pub resumable: Option<bool>,
    pub unknown: Option<Value>,
}

impl MessageView {
    /// Whether the message carries model output or a transcript (content
    /// moving, as opposed to signals).
    pub fn has_content(&self) -> bool {
        !self.parts.is_empty()
            || self.input_transcript.is_some()
            || self.output_transcript.is_some()
    }
}

/// The aggregation state of one connection.
#[derive(Debug, Default)]
pub(crate) struct Aggregator {
    text: String,
    thought: bool,
    input: Option<String>,
    output: Option<String>,
    /// The planted bug the session carries, if any (test builds only).
    #[cfg(feature = "planted-bug")]
    pub planted: Option<crate::session::PlantedBug>,
}

impl Aggregator {
    /// Whether the session carries planted bug `bug` (test builds only).
    #[cfg(feature = "planted-bug")]
    fn planted(&self, bug: crate::session::PlantedBug) -> bool {
        self.planted == Some(bug)
    }

    /// Turns one message into its events, in order. `now` stamps media.
    pub fn push(&mut self, msg: &MessageView, now: Timestamp) -> Vec<LiveEvent> {
        let mut out = Vec::new();
        #[cfg(feature = "planted-bug")]
        let usage = msg.usage.as_ref().filter(|_| {
            msg.tool_calls.is_none()
                || !self.planted(crate::session::PlantedBug::UsageLostOnToolCall)
        });
        #[cfg(not(feature = "planted-bug"))]
        let usage = msg.usage.as_ref();
        if let Some(usage) = usage {
            out.push(LiveEvent::Usage {
                usage: usage.clone(),
            });
        }
        self.parts(msg, now, &mut out);
        if let Some(chunk) = &msg.input_transcript {
            Self::transcript_chunk(&mut self.input, chunk, true, &mut out);
        }
        if let Some(chunk) = &msg.output_transcript {
            Self::transcript_chunk(&mut self.output, chunk, false, &mut out);
        }
        if msg.interrupted || msg.turn_complete || msg.generation_complete {
            if let Some(text) = self.input.take() {
                out.push(LiveEvent::InputTranscript { text });
            }
            if let Some(text) = self.output.take() {
                out.push(LiveEvent::OutputTranscript { text });
            }
        }
        if msg.turn_complete {
            #[cfg(feature = "planted-bug")]
            let interrupted = msg.interrupted
                && !self.planted(crate::session::PlantedBug::TurnEndingInterruptionUnmarked);
            #[cfg(not(feature = "planted-bug"))]
            let interrupted = msg.interrupted;
            self.flush(interrupted, &mut out);
            out.push(LiveEvent::TurnComplete {
                interrupted: msg.interrupted,
                reason: msg.turn_complete_reason.clone(),
            });
        } else if msg.interrupted && !self.flush(true, &mut out) {
            out.push(LiveEvent::Interrupted);
        }
        if msg.generation_complete {
            out.push(LiveEvent::GenerationComplete);
        }
        if let Some(ids) = &msg.cancelled_calls {
            out.push(LiveEvent::ToolCancelled { ids: ids.clone() });
        }
        if let Some(calls) = &msg.tool_calls {
            #[cfg(feature = "planted-bug")]
            if self.planted(crate::session::PlantedBug::ThoughtFlushedAsAnswer) {
                self.thought = false;
            }
            self.flush(false, &mut out);
            out.push(LiveEvent::ToolCall {
                calls: calls.clone(),
            });
        }
        if let Some(time_left) = msg.go_away {
            out.push(LiveEvent::GoAway { time_left });
        }
        if let Some(resumable) = msg.resumable {
            out.push(LiveEvent::ResumptionUpdate { resumable });
        }
        if let Some(unknown) = &msg.unknown {
            out.push(LiveEvent::Unknown {
                message: unknown.clone(),
            });
        }
        out
    }

    /// The connection closed: whatever is pending is dropped.
    pub fn close(&mut self) {
        *self = Aggregator {
            #[cfg(feature = "planted-bug")]
            planted: self.planted,
            ..Aggregator::default()
        };
    }

    /// Whether model text is waiting for its segment to end.
    #[cfg(test)]
    pub fn has_pending_text(&self) -> bool {
        !self.text.is_empty()
    }

    fn parts(&mut self, msg: &MessageView, now: Timestamp, out: &mut Vec<LiveEvent>) {
        let mut parts = msg.parts.iter().peekable();
        while let Some(part) = parts.next() {
            match part {
                PartView::Text { text, .. } if text.is_empty() => {}
                PartView::Text { text, thought } => {
                    if !self.text.is_empty() && self.thought != *thought {
                        self.flush(false, out);
                    }
                    self.thought = *thought;
                    self.text.push_str(text);
                    out.push(LiveEvent::TextDelta {
                        text: text.clone(),
                        thought: *thought,
                    });
                }
                first => {
                    // A run of consecutive non-text parts (empty text
                    // parts do not break it) goes out together.
                    let mut run = vec![first];
                    while let Some(next) = parts.peek() {
                        match next {
                            PartView::Text { text, .. } if !text.is_empty() => break,
                            PartView::Text { .. } => {
                                parts.next();
                            }
                            _ => run.push(parts.next().expect("peeked")),
                        }
                    }
                    self.run(&run, msg.interrupted, now, out);
                }
            }
        }
    }

    fn run(
        &mut self,
        run: &[&PartView],
        interrupted: bool,
        now: Timestamp,
        out: &mut Vec<LiveEvent>,
    ) {
        let all_inline = run.iter().all(|p| matches!(p, PartView::Inline { .. }));
        #[cfg(feature = "planted-bug")]
        let interrupted =
            interrupted && !self.planted(crate::session::PlantedBug::MediaLosesItsInterruption);
        if all_inline {
            // Media neither ends the pending text nor joins other parts.
            for part in run {
                if let PartView::Inline { mime_type, data } = part {
                    out.push(LiveEvent::Media {
                        mime_type: mime_type.clone(),
                        data: data.clone(),
                        at: now,
                        interrupted,
                    });
                }
            }
            return;
        }
        self.flush(false, out);
        let parts = run
            .iter()
            .map(|p| match p {
                PartView::Inline { mime_type, data } => {
                    serde_json::json!({ "inlineData": { "mimeType": mime_type, "data": data } })
                }
                PartView::Other(value) => value.clone(),
                PartView::Text { text, thought } => {
                    serde_json::json!({ "text": text, "thought": thought })
                }
            })
            .collect();
        out.push(LiveEvent::Content { parts, interrupted });
    }

    fn transcript_chunk(
        buffer: &mut Option<String>,
        chunk: &TranscriptView,
        input: bool,
        out: &mut Vec<LiveEvent>,
    ) {
        if !chunk.text.is_empty() {
            buffer.get_or_insert_with(String::new).push_str(&chunk.text);
            out.push(if input {
                LiveEvent::InputTranscriptDelta {
                    text: chunk.text.clone(),
                }
            } else {
                LiveEvent::OutputTranscriptDelta {
                    text: chunk.text.clone(),
                }
            });
        }
        if chunk.finished {
            let text = buffer.take().unwrap_or_default();
            out.push(if input {
                LiveEvent::InputTranscript { text }
            } else {
                LiveEvent::OutputTranscript { text }
            });
        }
    }

    /// Emits the pending text as one full event; false if nothing was
    /// pending.
    fn flush(&mut self, interrupted: bool, out: &mut Vec<LiveEvent>) -> bool {
        if self.text.is_empty() {
            return false;
        }
        out.push(LiveEvent::TextComplete {
            text: std::mem::take(&mut self.text),
            thought: self.thought,
            interrupted,
        });
        self.thought = false;
        true
    }
}

#[cfg(test)]
mod rows;
#[cfg(test)]
mod script;
#[cfg(test)]
mod token;
