//! `stored-once`: the stored log holds every delivered event but deltas,
//! notices and live media, each once and in its order, across
//! connections.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::session::LiveEvent;
use crate::soak::check::reconnects::{allowed, issues};
use crate::soak::run::record::RunRecord;

/// `stored-once`.
pub(crate) fn stored_once(run: &RunRecord) -> Result<(), String> {
    let issues = issues(run);
    let log = &run.session_log;
    // Lanes interleave differently as delivered and as stored, so each
    // kind of event (one lane's) is compared in its own order.
    let stored = by_kind(log.iter());
    let kept = by_kind(run.delivered().filter(|e| stays(e)));
    for kind in stored.keys().chain(kept.keys()) {
        let (s, k) = (stored.get(kind), kept.get(kind));
        // An answer is stored where its call stands, an extractor's
        // writes where its turn ended, and each is delivered when it is
        // done: those compare whatever their order.
        let answers = matches!(*kind, "tool_response" | "tool_denied" | "extracted");
        if s != k && !(answers && same_events(s, k)) {
            let (s, k) = (s.map_or(0, Vec::len), k.map_or(0, Vec::len));
            return Err(format!(
                "the stored log's `{kind}` events differ from those delivered ({s} stored, {k} \
                 delivered that it keeps): it keeps every event but streaming deltas, notices \
                 and live media, each kind in the order delivered"
            ));
        }
    }
    for kind in ["connected", "disconnected"] {
        let n = log.iter().filter(|e| e.kind() == kind).count();
        if n > 1 {
            return Err(format!("the stored log holds `{kind}` {n} times"));
        }
    }
    let mut connection = 1;
    let mut answers: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for (index, event) in log.iter().enumerate() {
        let (kind, id) = match event {
            LiveEvent::Resumed { connection: n, .. } => {
                if *n != connection + 1 {
                    return Err(format!(
                        "stored event #{index} says the session resumed on connection #{n}, \
                         after connection #{connection}: each connection is stored once, in order"
                    ));
                }
                connection = *n;
                continue;
            }
            LiveEvent::ToolResponse { id, .. } => ("answered", id.as_str()),
            LiveEvent::ToolDenied { id, .. } => ("refused", id.as_str()),
            _ => continue,
        };
        let n = answers.entry((kind, id)).or_default();
        *n += 1;
        let may = allowed(issues, id).max(1);
        if *n > may {
            return Err(format!(
                "the stored log holds {id} {kind} {n} times (stored event #{index}), but it was \
                 issued on {may} connection(s)"
            ));
        }
    }
    Ok(())
}

/// Whether `a` and `b` hold the same events, whatever their order.
fn same_events(a: Option<&Vec<&LiveEvent>>, b: Option<&Vec<&LiveEvent>>) -> bool {
    let (a, b) = (a.map_or(&[][..], |v| &v[..]), b.map_or(&[][..], |v| &v[..]));
    let mut unmatched: Vec<&LiveEvent> = b.to_vec();
    a.len() == b.len()
        && a.iter().all(|event| {
            let found = unmatched.iter().position(|other| other == event);
            found.map(|at| unmatched.swap_remove(at)).is_some()
        })
}

/// `events` grouped by kind, each kind in its order.
fn by_kind<'a>(
    events: impl Iterator<Item = &'a LiveEvent>,
) -> BTreeMap<&'static str, Vec<&'a LiveEvent>> {
    let mut kinds: BTreeMap<&'static str, Vec<&LiveEvent>> = BTreeMap::new();
    for event in events {
        kinds.entry(event.kind()).or_default().push(event);
    }
    kinds
}

/// Whether the stored log keeps `event`, from its documented rule, apart
/// from the session's own: every event but the streaming deltas, the
/// notices (warnings, phase moves, pattern matches) and inline audio,
/// video or images.
fn stays(event: &LiveEvent) -> bool {
    let live = super::model::live_media;
    match event {
        LiveEvent::TextDelta { .. }
        | LiveEvent::InputTranscriptDelta { .. }
        | LiveEvent::OutputTranscriptDelta { .. }
        | LiveEvent::Warning { .. }
        | LiveEvent::PhaseChanged { .. }
        | LiveEvent::PatternMatched { .. } => false,
        LiveEvent::Media { mime_type, .. } => !live(mime_type),
        LiveEvent::Content { parts, .. } => !parts.iter().any(|part| {
            part.pointer("/inlineData/mimeType")
                .and_then(Value::as_str)
                .is_some_and(live)
        }),
        _ => true,
    }
}
