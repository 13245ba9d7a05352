//! Extractors: work that reads the conversation after each turn and writes
//! what it finds to state, such as an LLM extractor pulling a booking's
//! details out of the transcript, or a record whose fields are resolved
//! from other state.
//!
//! Every extractor runs once per turn boundary, on the transcript as it
//! stood at the frame that ended the turn (a snapshot the wire lane takes
//! then, so lines of a later turn never leak in). Each runs as its own
//! task (a slow model call blocks nothing), one run at a time per
//! extractor, turns in order: a turn that ends while an extractor is still
//! running queues its run behind it. What an extractor returns is written
//! to state by the control lane, in order, and emitted as an
//! [`Extracted`](super::LiveEvent::Extracted) event that stands right
//! after the turn's `turn_complete` in the stored log.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

use futures::future::BoxFuture;
use serde::Serialize;
use serde_json::Value;

use crate::clock::SharedClock;
use crate::state::State;

/// Who said a line of the transcript.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Speaker {
    /// The user (input transcriptions, text the session sent).
    User,
    /// The model (full texts, output transcriptions).
    Model,
}

impl fmt::Display for Speaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Speaker::User => "user",
            Speaker::Model => "model",
        })
    }
}

/// One line of the conversation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TranscriptLine {
    /// Who said it.
    pub speaker: Speaker,
    /// What was said.
    pub text: String,
}

/// The conversation so far, shared by the wire lane (which appends) and
/// the extractors (which read).
///
/// Lines are only ever appended, so a [`snapshot`](Self::snapshot) is a
/// view of the first lines, taken in constant time however long the
/// conversation.
#[derive(Clone, Default, Debug)]
pub struct Transcript {
    lines: Arc<Mutex<Vec<TranscriptLine>>>,
    /// For a snapshot: how many lines it shows.
    end: Option<usize>,
}

impl Transcript {
    fn lock(&self) -> MutexGuard<'_, Vec<TranscriptLine>> {
        self.lines.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Appends a line (empty text is skipped). A snapshot is frozen: it
    /// takes no new lines, and this does nothing on one.
    pub fn push(&self, speaker: Speaker, text: impl Into<String>) {
        let text = text.into();
        if self.end.is_none() && !text.trim().is_empty() {
            self.lock().push(TranscriptLine { speaker, text });
        }
    }

    /// The lines so far, frozen: later lines never reach it.
    pub fn snapshot(&self) -> Transcript {
        let end = self.lock().len().min(self.end.unwrap_or(usize::MAX));
        Transcript {
            lines: self.lines.clone(),
            end: Some(end),
        }
    }

    /// The last `window` lines (all of them when `window` is 0).
    pub fn last(&self, window: usize) -> Vec<TranscriptLine> {
        let lines = self.lock();
        let end = self.end.unwrap_or(lines.len()).min(lines.len());
        let start = if window == 0 {
            0
        } else {
            end.saturating_sub(window)
        };
        lines[start..end].to_vec()
    }
}

/// What an extractor gets at a turn boundary.
#[derive(Clone)]
pub struct TurnContext {
    /// The conversation up to the end of the turn.
    pub transcript: Transcript,
    /// The session's state, to read.
    pub state: State,
    /// The session's clock (caches and ttls read it).
    pub clock: SharedClock,
}

/// Writes to make: `(key, value)` pairs, in order.
pub type Extracted = Vec<(String, Value)>;

/// Something that reads the conversation after a turn and says what to
/// write to state.
pub trait Extractor: Send + Sync {
    /// The extractor's name, for logs and warnings.
    fn name(&self) -> &str;

    /// Runs once for a turn. An error is reported as a warning event and
    /// writes nothing.
    fn extract(&self, turn: TurnContext) -> BoxFuture<'static, Result<Extracted, String>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_keeps_the_lines_it_was_taken_with() {
        let transcript = Transcript::default();
        transcript.push(Speaker::User, "one");
        transcript.push(Speaker::Model, "two");
        let snapshot = transcript.snapshot();
        transcript.push(Speaker::User, "three");
        snapshot.push(Speaker::User, "ignored");
        let texts = |t: &Transcript, window| -> Vec<String> {
            t.last(window).into_iter().map(|l| l.text).collect()
        };
        assert_eq!(texts(&snapshot, 0), ["one", "two"]);
        assert_eq!(texts(&snapshot, 1), ["two"]);
        assert_eq!(texts(&snapshot.snapshot(), 0), ["one", "two"]);
        assert_eq!(texts(&transcript, 0), ["one", "two", "three"]);
    }
}
