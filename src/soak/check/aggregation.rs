//! `aggregation`: what the session made of streamed text, against the
//! reference model's reading of the same frames.

use std::collections::BTreeMap;

use crate::session::{Lane, LiveEvent};
use crate::soak::check::model::{Expected, FrameModel};
use crate::soak::check::wire_order;
use crate::soak::run::record::RunRecord;

/// Which partial stream an event belongs to, and its text.
fn stream_of(event: &LiveEvent) -> Option<(&'static str, bool, &str, bool)> {
    // (stream, is the full event, text, thought)
    match event {
        LiveEvent::TextDelta { text, thought } => Some(("text", false, text, *thought)),
        LiveEvent::TextComplete { text, thought, .. } => Some(("text", true, text, *thought)),
        LiveEvent::InputTranscriptDelta { text } => Some(("input transcript", false, text, false)),
        LiveEvent::InputTranscript { text } => Some(("input transcript", true, text, false)),
        LiveEvent::OutputTranscriptDelta { text } => {
            Some(("output transcript", false, text, false))
        }
        LiveEvent::OutputTranscript { text } => Some(("output transcript", true, text, false)),
        _ => None,
    }
}

/// `aggregation`.
pub(crate) fn check(run: &RunRecord) -> Result<(), String> {
    if let Some(partial) = run.session_log.iter().find(|e| e.is_partial()) {
        return Err(format!("a partial event was stored: {partial}"));
    }
    // Partials concatenate to the full event that follows, per stream and
    // per connection (a connection's end drops the text it left pending).
    let connections = wire_order::connections(run);
    // Where, in the fast lane's events, a connection whose aggregation
    // started afresh begins.
    let mut afresh = connections
        .iter()
        .scan(0, |fast, connection| {
            let starts = *fast;
            *fast += wire_order::fast_lane(&connection.frames)
                .iter()
                .filter(|e| !matches!(e, Expected::Media { .. }))
                .count();
            Some((starts, connection.afresh))
        })
        .filter(|(starts, afresh)| *afresh && *starts > 0)
        .map(|(starts, _)| starts)
        .peekable();
    let mut pending: BTreeMap<&str, (String, Option<bool>)> = BTreeMap::new();
    let fast = run
        .delivered()
        .filter(|e| e.lane() == Lane::Fast && e.kind() != "media");
    for (index, event) in fast.enumerate() {
        while afresh.next_if(|starts| *starts <= index).is_some() {
            pending.clear();
        }
        let Some((stream, full, text, thought)) = stream_of(event) else {
            continue;
        };
        let (buffer, flag) = pending.entry(stream).or_default();
        if !full {
            if flag.is_some_and(|f| f != thought) {
                return Err(format!(
                    "a {stream} chunk switched between thought and answer without a full event \
                     in between: {event}"
                ));
            }
            buffer.push_str(text);
            *flag = Some(thought);
            continue;
        }
        if buffer != text {
            return Err(format!(
                "the {stream} chunks concatenate to {buffer:?}, but the full event that follows \
                 says {text:?}"
            ));
        }
        if flag.is_some_and(|f| f != thought) {
            return Err(format!(
                "the full {stream} event's thought flag differs from its chunks': {event}"
            ));
        }
        buffer.clear();
        *flag = None;
    }
    // `interrupted` rides on the flush: each interruption that does not end
    // the turn yields either the interrupted flush or a bare interruption.
    let frames: Vec<&FrameModel> = connections.iter().flat_map(|c| &c.frames).collect();
    let interruptions = frames.iter().filter(|f| f.interrupted).count();
    let alone = frames
        .iter()
        .filter(|f| f.interrupted && !f.turn_complete)
        .count();
    let flushed = run
        .delivered()
        .filter(|e| {
            matches!(
                e,
                LiveEvent::TextComplete {
                    interrupted: true,
                    ..
                }
            )
        })
        .count();
    let bare = run
        .delivered()
        .filter(|e| matches!(e, LiveEvent::Interrupted))
        .count();
    if bare + flushed < alone || bare + flushed > interruptions {
        return Err(format!(
            "{interruptions} frames reported an interruption ({alone} without the turn's end), \
             but the session emitted {flushed} interrupted flushes and {bare} bare interruptions"
        ));
    }
    // The fast lane delivers what the reference model makes of the
    // frames: text, transcriptions and media, in order.
    let expected = wire_order::fast_lane(frames.iter().copied());
    let delivered: Vec<&LiveEvent> = run.delivered().filter(|e| e.lane() == Lane::Fast).collect();
    let differs = |i: usize| match (expected.get(i), delivered.get(i)) {
        (Some(wanted), Some(got)) => !wanted.is(got),
        (None, None) => false,
        _ => true,
    };
    if let Some(i) = (0..expected.len().max(delivered.len())).find(|&i| differs(i)) {
        return Err(format!(
            "the fast lane's event #{i} is {}, but the aggregation rules give {}",
            delivered
                .get(i)
                .map_or("(nothing)".to_string(), |e| e.to_string()),
            expected
                .get(i)
                .map_or("(nothing)".to_string(), |e| e.to_string())
        ));
    }
    Ok(())
}
