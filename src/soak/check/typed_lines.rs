//! Where what the user typed stands in the transcript an extractor reads,
//! for `extractor-input` ([`super::extractions`]), worked out from the
//! run's record alone: the messages the user sent and when, the client
//! frames the server got and when, and when the session read each server
//! frame. Nothing here asks the session's transcript.
//!
//! A message the user typed is a line of the transcript (`user: …`) from
//! the moment the session takes it, on a connection or between two (then
//! it queues the message and sends it once it is back): the session adds
//! it when it is typed, and sends it then or later. No frame carries it,
//! so its place is bounded by times the run recorded:
//!
//! * it stands after every line of a frame the session read before the
//!   user typed it, since the session had added those lines already;
//! * it stands before every line of a frame read after the server got it,
//!   since the session added it before it sent it;
//! * a turn that ended after the server got it holds it; one that ended
//!   before the user typed it does not; one that ended in between may.
//!
//! Only a message the session sent is held to its place: a new content
//! message the server got (a transparent resumption's replay of an earlier
//! one is the same message again, not a new line). A message typed and
//! never sent (queued for a session that then started fresh, which drops
//! it) may stand or not. Over the simulated network the same holds: the
//! session's transport is tapped, so the record has when it read each
//! frame, and a message lost in flight, which the soak's user types again,
//! was typed more often than the server got it (the copy the server never
//! got may stand or not).

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::Value;

use crate::soak::check::client_messages;
use crate::soak::check::wire_order;
use crate::soak::run::record::RunRecord;
use crate::soak::run::user::content_key;
use crate::wire::JsonPath;

/// A message the user typed that the session sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SentLine {
    /// What the user typed.
    pub text: String,
    /// When the user typed it: the session added it then or later.
    pub typed: Duration,
    /// When the server got it: the session had added it by then.
    pub got: Duration,
}

/// What the user typed, as the transcript must hold it.
#[derive(Debug, Default)]
pub(crate) struct Typed {
    /// The messages the session sent, in order: each stands at its place.
    pub sent: Vec<SentLine>,
    /// The texts typed more often than the server got them: each may
    /// stand among the user's lines, or not at all.
    pub optional: BTreeSet<String>,
    /// When the session read each frame the reference model read, in
    /// order (frames after each connection's handshake); empty when the
    /// record has no such times.
    pub frames_read: Vec<Duration>,
}

/// The text of a message the user typed (`clientContent` or
/// `realtimeInput` text); `None` for audio, a marker or anything else.
fn typed_text(message: &Value) -> Option<String> {
    let text =
        message.at("/realtimeInput/text").is_some() || message.get("clientContent").is_some();
    text.then(|| content_key(message)).flatten()
}

/// What the user typed in `run`, and where it must stand.
pub(crate) fn typed(run: &RunRecord) -> Typed {
    let all: BTreeSet<String> = run.typed.iter().cloned().collect();
    let lenient = Typed {
        sent: Vec::new(),
        optional: all.clone(),
        frames_read: Vec::new(),
    };
    let timed = run.server_frames_at.len() == run.server_frames.len()
        && run.sent_at.len() == run.sent.len()
        && run.typed_at.len() == run.typed.len();
    // Messages lost or sent twice are `client-messages-once`'s to report;
    // here they would only blur what was sent.
    let Some(contents) = client_messages::contents(run).ok().filter(|_| timed) else {
        return lenient;
    };
    let replays: BTreeSet<usize> = contents.replays.into_iter().collect();
    let mut sent = Vec::new();
    // Each message sent is the first typed message with its text not yet
    // matched: typed earlier than it was, if anything, so its place is
    // bounded less tightly, never wrongly.
    let mut next_typed = 0;
    for (at, message) in run.sent.iter().enumerate() {
        if replays.contains(&at) {
            continue;
        }
        let Some(text) = typed_text(message) else {
            continue;
        };
        let Some(k) = (next_typed..run.typed.len()).find(|&k| run.typed[k] == text) else {
            // Not typed as far as the record says: left to
            // `client-messages-once`.
            return lenient;
        };
        next_typed = k + 1;
        if !text.trim().is_empty() {
            sent.push(SentLine {
                text,
                typed: run.typed_at[k],
                got: run.sent_at[at],
            });
        }
    }
    let sent_texts: Vec<&String> = sent.iter().map(|s| &s.text).collect();
    // Typed and never sent: a text typed more often than it was sent.
    let optional = all
        .into_iter()
        .filter(|text| {
            let typed = run.typed.iter().filter(|t| *t == text).count();
            typed > sent_texts.iter().filter(|t| **t == text).count()
        })
        .collect();
    let frames_read = run
        .frames_read()
        .iter()
        .zip(&run.server_frames_at)
        .filter(|(frame, _)| !wire_order::is_setup_complete(frame.payload().unwrap_or_default()))
        .map(|(_, at)| *at)
        .collect();
    Typed {
        sent,
        optional,
        frames_read,
    }
}
