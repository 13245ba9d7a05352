//! Property tests of aggregation over arbitrary splits of the same turns:
//! the aggregation invariants INV1–INV11, on the aggregator alone (the
//! integration suite `tests/aggregation` checks them through the session).
//!
//! A turn is a list of text segments (each with a thought flag; neighbours
//! with the same flag are separated by a code part) and a terminator. Each
//! segment is cut at random character boundaries into chunks, one message
//! each; audio-only messages and transcription chunks may be inserted
//! anywhere before the terminator; the last chunk may share the
//! terminator's message.

use proptest::prelude::*;
use serde_json::Value;

use super::script::{audio, code, parts};
use super::{Aggregator, MessageView, PartView, TranscriptView};
use crate::clock::Timestamp;
use crate::session::events::{LiveEvent, ToolCall};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Terminator {
    TurnComplete,
    Interrupt,
    InterruptAndComplete,
    ToolThenComplete,
    Close,
}

#[derive(Clone, Debug)]
struct Turn {
    segments: Vec<(String, bool)>,
    terminator: Terminator,
}

#[derive(Clone, Debug)]
struct Plan {
    turn: Turn,
    /// Chunks of each segment, in order.
    chunks: Vec<Vec<String>>,
    /// Positions (in the chunk-message list) where audio goes.
    audio_at: Vec<usize>,
    /// Transcription chunks: (position, input?, text).
    transcripts: Vec<(usize, bool, String)>,
    /// Whether the last chunk shares the terminator's message.
    merge_last: bool,
}

fn segment_text() -> impl Strategy<Value = String> {
    proptest::collection::vec(prop_oneof!["a", "b", " ", "é", "🙂", "z"], 1..12)
        .prop_map(|chars| chars.concat())
}

fn turn() -> impl Strategy<Value = Turn> {
    (
        proptest::collection::vec((segment_text(), any::<bool>()), 1..5),
        prop_oneof![
            Just(Terminator::TurnComplete),
            Just(Terminator::Interrupt),
            Just(Terminator::InterruptAndComplete),
            Just(Terminator::ToolThenComplete),
            Just(Terminator::Close),
        ],
    )
        .prop_map(|(segments, terminator)| Turn {
            segments,
            terminator,
        })
}

/// Cuts `text` at random character boundaries into non-empty chunks.
fn cut(text: &str, cuts: &[usize]) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut points: Vec<usize> = cuts
        .iter()
        .map(|c| c % chars.len())
        .filter(|&c| c > 0)
        .collect();
    points.sort_unstable();
    points.dedup();
    let mut chunks = Vec::new();
    let mut start = 0;
    for p in points.into_iter().chain([chars.len()]) {
        chunks.push(chars[start..p].iter().collect());
        start = p;
    }
    chunks
}

fn plan() -> impl Strategy<Value = Plan> {
    turn().prop_flat_map(|turn| {
        let n = turn.segments.len();
        (
            Just(turn),
            proptest::collection::vec(proptest::collection::vec(any::<usize>(), 0..4), n),
            proptest::collection::vec(any::<usize>(), 0..3),
            proptest::collection::vec((any::<usize>(), any::<bool>(), segment_text()), 0..3),
            any::<bool>(),
        )
            .prop_map(|(turn, cuts, audio_at, transcripts, merge_last)| {
                let chunks = turn
                    .segments
                    .iter()
                    .zip(&cuts)
                    .map(|((text, _), cuts)| cut(text, cuts))
                    .collect();
                Plan {
                    turn,
                    chunks,
                    audio_at,
                    transcripts,
                    merge_last,
                }
            })
    })
}

impl Plan {
    /// The same turn with nothing inserted and one chunk per segment.
    fn canonical(&self) -> Plan {
        Plan {
            turn: self.turn.clone(),
            chunks: self
                .turn
                .segments
                .iter()
                .map(|(t, _)| vec![t.clone()])
                .collect(),
            audio_at: Vec::new(),
            transcripts: Vec::new(),
            merge_last: false,
        }
    }

    fn without_audio(&self) -> Plan {
        Plan {
            audio_at: Vec::new(),
            ..self.clone()
        }
    }

    fn messages(&self) -> (Vec<MessageView>, bool) {
        let mut body = Vec::new();
        for (i, ((_, thought), chunks)) in self.turn.segments.iter().zip(&self.chunks).enumerate() {
            if i > 0 && self.turn.segments[i - 1].1 == *thought {
                body.push(parts(vec![code()]));
            }
            for chunk in chunks {
                body.push(parts(vec![PartView::Text {
                    text: chunk.clone(),
                    thought: *thought,
                }]));
            }
        }
        let last_chunk = body.pop().expect("at least one chunk");
        let len = body.len() + 1;
        let mut inserts: Vec<(usize, MessageView)> = Vec::new();
        for &at in &self.audio_at {
            inserts.push((at % len, parts(vec![audio()])));
        }
        for (at, input, text) in &self.transcripts {
            let chunk = Some(TranscriptView {
                text: text.clone(),
                finished: false,
            });
            let msg = if *input {
                MessageView {
                    input_transcript: chunk,
                    ..MessageView::default()
                }
            } else {
                MessageView {
                    output_transcript: chunk,
                    ..MessageView::default()
                }
            };
            inserts.push((at % len, msg));
        }
        // Insert from the back so earlier positions stay valid; stable for ties.
        inserts.sort_by_key(|(at, _)| std::cmp::Reverse(*at));
        for (at, msg) in inserts {
            body.insert(at, msg);
        }
        let tool = MessageView {
            tool_calls: Some(vec![ToolCall {
                id: "call-1".into(),
                name: "f".into(),
                args: Value::Null,
            }]),
            ..MessageView::default()
        };
        let mut terminator: Vec<MessageView> = match self.turn.terminator {
            Terminator::TurnComplete => vec![flags(false, true)],
            Terminator::Interrupt => vec![flags(true, false)],
            Terminator::InterruptAndComplete => vec![flags(true, true)],
            Terminator::ToolThenComplete => vec![tool, flags(false, true)],
            Terminator::Close => vec![],
        };
        match terminator.first_mut() {
            Some(first) if self.merge_last => first.parts = last_chunk.parts,
            _ => body.push(last_chunk),
        }
        body.extend(terminator);
        (body, self.turn.terminator == Terminator::Close)
    }

    fn run(&self) -> Vec<LiveEvent> {
        let (messages, close) = self.messages();
        let mut aggregator = Aggregator::default();
        let mut out = Vec::new();
        for msg in &messages {
            out.extend(aggregator.push(msg, Timestamp::EPOCH));
        }
        if close {
            aggregator.close();
        }
        out
    }

    fn interrupted(&self) -> bool {
        matches!(
            self.turn.terminator,
            Terminator::Interrupt | Terminator::InterruptAndComplete
        )
    }
}

fn flags(interrupted: bool, turn_complete: bool) -> MessageView {
    MessageView {
        interrupted,
        turn_complete,
        ..MessageView::default()
    }
}

/// Text and control events, as compared across splits (ids and media left out).
fn text_and_control(events: &[LiveEvent]) -> Vec<String> {
    events
        .iter()
        .filter(|e| {
            !matches!(
                e,
                LiveEvent::Media { .. }
                    | LiveEvent::InputTranscript { .. }
                    | LiveEvent::InputTranscriptDelta { .. }
                    | LiveEvent::OutputTranscript { .. }
                    | LiveEvent::OutputTranscriptDelta { .. }
            )
        })
        .map(|e| e.to_string())
        .collect()
}

fn stored(events: &[LiveEvent]) -> Vec<LiveEvent> {
    events.iter().filter(|e| e.is_stored()).cloned().collect()
}

fn deltas(events: &[LiveEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            LiveEvent::TextDelta { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

fn fulls(events: &[LiveEvent]) -> Vec<(String, bool, bool)> {
    events
        .iter()
        .filter_map(|e| match e {
            LiveEvent::TextComplete {
                text,
                thought,
                interrupted,
            } => Some((text.clone(), *thought, *interrupted)),
            _ => None,
        })
        .collect()
}

proptest! {
    // INV1: the stored text and control events depend only on the segments
    // and the terminator, not on how the text was chunked, on inserted
    // audio, or on the last chunk sharing the terminator's message.
    #[test]
    fn inv1_storage_does_not_depend_on_the_split(plan in plan()) {
        let events = plan.run();
        let canonical = plan.canonical().run();
        prop_assert_eq!(text_and_control(&stored(&events)), text_and_control(&stored(&canonical)));
    }

    // INV2: the partial text events are exactly the chunks, in order.
    #[test]
    fn inv2_partials_are_the_chunks(plan in plan()) {
        let chunks: Vec<String> = plan.chunks.iter().flatten().cloned().collect();
        prop_assert_eq!(deltas(&plan.run()), chunks);
    }

    // INV3: the partials emitted since the previous flush concatenate to
    // each full text, and share its thought flag.
    #[test]
    fn inv3_partials_reassemble_the_full_text(plan in plan()) {
        let mut since_flush = String::new();
        let mut flag = None;
        for event in plan.run() {
            match event {
                LiveEvent::TextDelta { text, thought } => {
                    prop_assert!(flag.is_none_or(|f| f == thought));
                    flag = Some(thought);
                    since_flush.push_str(&text);
                }
                LiveEvent::TextComplete { text, thought, .. } => {
                    prop_assert_eq!(&text, &since_flush);
                    prop_assert_eq!(Some(thought), flag);
                    since_flush.clear();
                    flag = None;
                }
                _ => {}
            }
        }
    }

    // INV4: with a terminator, the stored full texts are the segments, one
    // each and in order; on close, every segment but the last.
    #[test]
    fn inv4_one_stored_text_per_segment(plan in plan()) {
        let stored_texts: Vec<(String, bool)> = fulls(&stored(&plan.run()))
            .into_iter()
            .map(|(text, thought, _)| (text, thought))
            .collect();
        let mut expected = plan.turn.segments.clone();
        if plan.turn.terminator == Terminator::Close {
            expected.pop();
        }
        prop_assert_eq!(stored_texts, expected);
    }

    // INV5: no stored event is partial, and every partial event is a text
    // or transcription chunk.
    #[test]
    fn inv5_no_partial_is_stored(plan in plan()) {
        let events = plan.run();
        prop_assert!(stored(&events).iter().all(|e| !e.is_partial()));
        for e in events.iter().filter(|e| e.is_partial()) {
            let is_chunk = matches!(
                e,
                LiveEvent::TextDelta { .. }
                    | LiveEvent::InputTranscriptDelta { .. }
                    | LiveEvent::OutputTranscriptDelta { .. }
            );
            prop_assert!(is_chunk);
        }
    }

    // INV6: an interruption with text pending puts `interrupted` on the last
    // segment's full text and emits no bare interrupted event; every
    // interrupted turn leaves a stored event with the flag.
    #[test]
    fn inv6_interrupt_placement(plan in plan()) {
        let events = plan.run();
        if plan.interrupted() {
            let texts = fulls(&events);
            let last = texts.last().expect("the last segment is flushed");
            prop_assert!(last.2, "the last full text carries interrupted");
            prop_assert!(texts[..texts.len() - 1].iter().all(|t| !t.2));
            prop_assert!(!events.contains(&LiveEvent::Interrupted));
            let flagged = stored(&events).iter().any(|e| e.to_string().contains("+interrupted"));
            prop_assert!(flagged);
        } else {
            prop_assert!(fulls(&events).iter().all(|t| !t.2));
        }
    }

    // INV7: no partial event carries `interrupted` or a turn-complete flag
    // (checked on the events' JSON, so a field added later is caught).
    #[test]
    fn inv7_partials_carry_no_control_flags(plan in plan()) {
        for e in plan.run().iter().filter(|e| e.is_partial()) {
            let json = serde_json::to_value(e).unwrap();
            prop_assert!(json.get("interrupted").is_none() && json.get("turn_complete").is_none());
        }
    }

    // INV8: every full text precedes the turn's turnComplete, which is the
    // turn's last event; a full text flushed by a tool call precedes it.
    #[test]
    fn inv8_ordering(plan in plan()) {
        let events = plan.run();
        if let Some(tc) = events.iter().position(|e| matches!(e, LiveEvent::TurnComplete { .. })) {
            prop_assert_eq!(tc, events.len() - 1);
        }
        if let Some(tool) = events.iter().position(|e| matches!(e, LiveEvent::ToolCall { .. })) {
            let last_full = events.iter().rposition(|e| matches!(e, LiveEvent::TextComplete { .. }));
            prop_assert!(last_full.is_some_and(|f| f < tool), "the flush precedes the call");
        }
    }

    // INV9: for each thought class, the full texts concatenate to that
    // class's chunks up to the last flush; chunks pending at close appear in
    // no full text.
    #[test]
    fn inv9_text_is_conserved(plan in plan()) {
        let events = plan.run();
        for class in [false, true] {
            let from_fulls: String = fulls(&events)
                .into_iter()
                .filter(|t| t.1 == class)
                .map(|t| t.0)
                .collect();
            let mut segments = plan.turn.segments.clone();
            if plan.turn.terminator == Terminator::Close {
                segments.pop();
            }
            let from_chunks: String = segments
                .into_iter()
                .filter(|s| s.1 == class)
                .map(|s| s.0)
                .collect();
            prop_assert_eq!(from_fulls, from_chunks);
        }
    }

    // INV10: per direction, a finished transcription's text is its partial
    // chunks concatenated, and each finish point stores exactly one.
    #[test]
    fn inv10_transcriptions_aggregate(plan in plan()) {
        let events = plan.run();
        let (messages, _) = plan.messages();
        for input in [true, false] {
            // The chunks in the order the messages carry them.
            let chunks: String = messages
                .iter()
                .filter_map(|m| if input { &m.input_transcript } else { &m.output_transcript }.as_ref())
                .map(|t| t.text.clone())
                .collect();
            let finished: Vec<String> = events
                .iter()
                .filter_map(|e| match (e, input) {
                    (LiveEvent::InputTranscript { text }, true) => Some(text.clone()),
                    (LiveEvent::OutputTranscript { text }, false) => Some(text.clone()),
                    _ => None,
                })
                .collect();
            if chunks.is_empty() || plan.turn.terminator == Terminator::Close {
                prop_assert!(finished.is_empty());
            } else {
                prop_assert_eq!(finished, vec![chunks]);
            }
        }
    }

    // INV11: inserting audio-only messages adds only the audio events to
    // what is emitted and leaves what is stored unchanged.
    #[test]
    fn inv11_audio_changes_nothing_else(plan in plan()) {
        let with_audio = plan.run();
        let without = plan.without_audio().run();
        let non_audio: Vec<LiveEvent> = with_audio
            .iter()
            .filter(|e| !matches!(e, LiveEvent::Media { .. }))
            .cloned()
            .collect();
        prop_assert_eq!(&non_audio, &without);
        prop_assert_eq!(stored(&with_audio), stored(&without));
        let audio_count = with_audio.len() - non_audio.len();
        prop_assert_eq!(audio_count, plan.audio_at.len());
    }
}
