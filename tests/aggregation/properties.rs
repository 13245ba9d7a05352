//! The aggregation invariants (INV1–INV11) checked through the session:
//! generated turns become raw server frames from a scripted server, which
//! the session decodes, aggregates and hands to its lanes, over seeds
//! (drawn, never shrunk) and frame spacings. The delivered events and the
//! stored log are what is checked.
//!
//! A turn is a list of text segments (each with a thought flag; neighbours
//! with the same flag are separated by a code part or a tool call, which
//! the script waits for, as a model waits for a tool's answer) and a
//! terminator: turn complete, interruption, both, a tool call then turn
//! complete, or the server closing the connection. Each segment is cut at
//! random character boundaries into chunks, one message each, some with
//! `turnComplete: false`; audio-only messages and transcription chunks
//! (finished or not, either direction, empty ones too) go anywhere before
//! the terminator; the last chunk may share the terminator's message.
//!
//! Runs are seeded (a fixed proptest seed unless `PROPTEST_RNG_SEED` is
//! set) and sized by `PROPTEST_CASES` (256 by default; nightly runs 2,000).

use std::time::Duration;

use livesim::Seed;
use livesim::executor::Simulation;
use livesim::prelude::*;
use livesim::testing::{Action, Call, ScriptedServer};
use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use serde_json::{Value, json};

use super::notation::{audio, code, tools};

fn config() -> ProptestConfig {
    let mut config = ProptestConfig::default();
    if config.rng_seed == RngSeed::Random {
        config.rng_seed = RngSeed::Fixed(0x0a99_2e6a);
    }
    config
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Terminator {
    TurnComplete,
    Interrupt,
    InterruptAndComplete,
    ToolThenComplete,
    Close,
}

/// What separates two segments.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Separator {
    Code,
    Tool,
}

#[derive(Clone, Debug)]
struct Turn {
    segments: Vec<(String, bool)>,
    /// What comes before each segment (`None` for the first).
    separators: Vec<Option<Separator>>,
    terminator: Terminator,
}

/// A transcription chunk to insert.
#[derive(Clone, Debug)]
struct Transcribed {
    at: usize,
    input: bool,
    text: String,
    finished: bool,
}

#[derive(Clone, Debug)]
struct Plan {
    turn: Turn,
    /// Chunks of each segment, in order.
    chunks: Vec<Vec<String>>,
    /// Whether the n-th chunk message says `turnComplete: false` (cycled).
    open: Vec<bool>,
    /// Positions (in the message list) where audio goes.
    audio_at: Vec<usize>,
    transcripts: Vec<Transcribed>,
    /// Whether the last chunk shares the terminator's message.
    merge_last: bool,
}

/// One thing the script does.
#[derive(Clone, Debug)]
enum Step {
    Frame(Value),
    /// A tool call (to `f`) the script waits for.
    Call(String),
    Close,
}

fn segment_text() -> impl Strategy<Value = String> {
    proptest::collection::vec(prop_oneof!["a", "b", " ", "é", "🙂", "z"], 1..12)
        .prop_map(|chars| chars.concat())
}

fn turn() -> impl Strategy<Value = Turn> {
    (
        proptest::collection::vec(
            (segment_text(), any::<bool>(), any::<bool>(), any::<bool>()),
            1..5,
        ),
        prop_oneof![
            Just(Terminator::TurnComplete),
            Just(Terminator::Interrupt),
            Just(Terminator::InterruptAndComplete),
            Just(Terminator::ToolThenComplete),
            Just(Terminator::Close),
        ],
    )
        .prop_map(|(drawn, terminator)| {
            let mut segments: Vec<(String, bool)> = Vec::new();
            let mut separators = Vec::new();
            for (text, thought, separated, by_tool) in drawn {
                let needed = segments.last().is_some_and(|(_, t)| *t == thought);
                let separator =
                    (needed || (separated && !segments.is_empty())).then_some(if by_tool {
                        Separator::Tool
                    } else {
                        Separator::Code
                    });
                separators.push(separator);
                segments.push((text, thought));
            }
            Turn {
                segments,
                separators,
                terminator,
            }
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
            proptest::collection::vec(any::<bool>(), 1..8),
            proptest::collection::vec(any::<usize>(), 0..3),
            proptest::collection::vec(
                (
                    any::<usize>(),
                    any::<bool>(),
                    // An empty chunk too: `finished` with nothing pending
                    // still ends a transcription (an empty one).
                    prop_oneof![1 => Just(String::new()), 3 => segment_text()],
                    any::<bool>(),
                ),
                0..4,
            ),
            any::<bool>(),
        )
            .prop_map(|(turn, cuts, open, audio_at, transcripts, merge_last)| {
                let chunks = turn
                    .segments
                    .iter()
                    .zip(&cuts)
                    .map(|((text, _), cuts)| cut(text, cuts))
                    .collect();
                let transcripts = transcripts
                    .into_iter()
                    .map(|(at, input, text, finished)| Transcribed {
                        at,
                        input,
                        text,
                        finished,
                    })
                    .collect();
                Plan {
                    turn,
                    chunks,
                    open,
                    audio_at,
                    transcripts,
                    merge_last,
                }
            })
    })
}

fn server_content(content: Value) -> Value {
    json!({ "serverContent": content })
}

fn chunk_message(text: &str, thought: bool, open: bool) -> Value {
    let part = if thought {
        json!({ "text": text, "thought": true })
    } else {
        json!({ "text": text })
    };
    let mut message = server_content(json!({ "modelTurn": { "parts": [part] } }));
    if open {
        message["serverContent"]["turnComplete"] = json!(false);
    }
    message
}

impl Plan {
    /// The same turn with one chunk per segment, nothing inserted, no
    /// `turnComplete: false` and no merged last chunk.
    fn canonical(&self) -> Plan {
        Plan {
            turn: self.turn.clone(),
            chunks: self
                .turn
                .segments
                .iter()
                .map(|(t, _)| vec![t.clone()])
                .collect(),
            open: vec![false],
            audio_at: Vec::new(),
            transcripts: Vec::new(),
            merge_last: false,
        }
    }

    /// The same plan without audio and without `turnComplete: false`.
    fn plain(&self) -> Plan {
        Plan {
            audio_at: Vec::new(),
            open: vec![false],
            ..self.clone()
        }
    }

    fn steps(&self) -> Vec<Step> {
        let mut body = Vec::new();
        let mut calls = 0;
        let mut call_id = || {
            calls += 1;
            format!("call-{calls}")
        };
        let mut n = 0;
        for (((_, thought), chunks), separator) in self
            .turn
            .segments
            .iter()
            .zip(&self.chunks)
            .zip(&self.turn.separators)
        {
            match separator {
                Some(Separator::Code) => body.push(Step::Frame(server_content(
                    json!({ "modelTurn": { "parts": [code()] } }),
                ))),
                Some(Separator::Tool) => body.push(Step::Call(call_id())),
                None => {}
            }
            for chunk in chunks {
                let open = self.open[n % self.open.len()];
                n += 1;
                body.push(Step::Frame(chunk_message(chunk, *thought, open)));
            }
        }
        let last_chunk = body.pop().expect("at least one chunk");
        let len = body.len() + 1;
        let mut inserts: Vec<(usize, Step)> = Vec::new();
        for &at in &self.audio_at {
            inserts.push((
                at % len,
                Step::Frame(server_content(
                    json!({ "modelTurn": { "parts": [audio()] } }),
                )),
            ));
        }
        for t in &self.transcripts {
            let key = if t.input {
                "inputTranscription"
            } else {
                "outputTranscription"
            };
            let chunk = json!({ key: { "text": t.text, "finished": t.finished } });
            inserts.push((t.at % len, Step::Frame(server_content(chunk))));
        }
        // Insert from the back so earlier positions stay valid; stable for ties.
        inserts.sort_by_key(|(at, _)| std::cmp::Reverse(*at));
        for (at, step) in inserts {
            body.insert(at, step);
        }
        let mut terminator = match self.turn.terminator {
            Terminator::TurnComplete => vec![server_content(json!({ "turnComplete": true }))],
            Terminator::Interrupt => vec![server_content(json!({ "interrupted": true }))],
            Terminator::InterruptAndComplete => vec![server_content(
                json!({ "interrupted": true, "turnComplete": true }),
            )],
            Terminator::ToolThenComplete => {
                // Not waited for: the turn completes while the tool runs,
                // and the run settles once it is answered.
                let id = call_id();
                vec![
                    json!({ "toolCall": { "functionCalls": [{ "id": id, "name": "f", "args": {} }] } }),
                    server_content(json!({ "turnComplete": true })),
                ]
            }
            Terminator::Close => vec![],
        };
        match (terminator.first_mut(), &last_chunk) {
            (Some(first), Step::Frame(chunk)) if self.merge_last => {
                first["serverContent"]["modelTurn"] = chunk["serverContent"]["modelTurn"].clone();
            }
            _ => body.push(last_chunk),
        }
        body.extend(terminator.into_iter().map(Step::Frame));
        if self.turn.terminator == Terminator::Close {
            body.push(Step::Close);
        }
        body
    }

    fn closes(&self) -> bool {
        self.turn.terminator == Terminator::Close
    }

    fn interrupted(&self) -> bool {
        matches!(
            self.turn.terminator,
            Terminator::Interrupt | Terminator::InterruptAndComplete
        )
    }

    fn completes(&self) -> bool {
        matches!(
            self.turn.terminator,
            Terminator::TurnComplete
                | Terminator::InterruptAndComplete
                | Terminator::ToolThenComplete
        )
    }

    /// The segments whose text must be stored: all of them, but the last
    /// when the connection closes with it pending.
    fn stored_segments(&self) -> Vec<(String, bool)> {
        let mut segments = self.turn.segments.clone();
        if self.closes() {
            segments.pop();
        }
        segments
    }

    /// The finished transcriptions of one direction, by the reference
    /// rules: a chunk's text joins its buffer, `finished` ends it (even
    /// empty), an interruption or turn completion ends what is pending,
    /// a close drops it.
    fn finished_transcripts(&self, input: bool) -> Vec<String> {
        let key = if input {
            "/serverContent/inputTranscription"
        } else {
            "/serverContent/outputTranscription"
        };
        let mut pending: Option<String> = None;
        let mut finished = Vec::new();
        for step in self.steps() {
            let Step::Frame(message) = step else { continue };
            if let Some(chunk) = message.pointer(key) {
                let text = chunk["text"].as_str().unwrap_or_default();
                if !text.is_empty() {
                    pending.get_or_insert_with(String::new).push_str(text);
                }
                if chunk["finished"] == json!(true) {
                    finished.push(pending.take().unwrap_or_default());
                }
            }
            let ends = |flag: &str| message["serverContent"][flag] == json!(true);
            if (ends("interrupted") || ends("turnComplete"))
                && let Some(text) = pending.take()
            {
                finished.push(text);
            }
        }
        finished
    }
}

/// What one run of a plan shows: the stored log and the delivered events.
#[derive(Debug)]
struct Observed {
    log: Vec<LiveEvent>,
    events: Vec<LiveEvent>,
}

impl Observed {
    /// The delivered events of one lane that came from the server, in
    /// order. (A tool's response joins the control lane when the tool
    /// finishes, which the seed's timing decides.)
    fn lane(&self, lane: Lane) -> Vec<LiveEvent> {
        self.events
            .iter()
            .filter(|e| e.lane() == lane && !is_the_sessions_own(e))
            .cloned()
            .collect()
    }

    fn fulls(&self) -> Vec<(String, bool, bool)> {
        self.log
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

    /// The stored events from the server (the session's own left out).
    fn server_events(&self) -> Vec<LiveEvent> {
        self.log
            .iter()
            .filter(|e| !is_the_sessions_own(e))
            .cloned()
            .collect()
    }
}

/// Whether the session made the event itself, rather than aggregating it
/// from the server's frames.
fn is_the_sessions_own(event: &LiveEvent) -> bool {
    event.is_notice()
        || matches!(
            event,
            LiveEvent::Connected { .. }
                | LiveEvent::ToolResponse { .. }
                | LiveEvent::ToolDenied { .. }
                | LiveEvent::Extracted { .. }
                | LiveEvent::Disconnected { .. }
        )
}

/// Plays `plan` under `seed`, frames back to back or 20 ms apart.
fn observe(plan: &Plan, seed: u64, spaced: bool) -> Observed {
    let steps = plan.steps();
    Simulation::new(Seed::new(seed))
        .run(move || async move {
            let mut script = ScriptedServer::new().named("aggregation-property");
            for (i, step) in steps.into_iter().enumerate() {
                if spaced && i > 0 {
                    script = script.pause(Duration::from_millis(20));
                }
                script = match step {
                    Step::Frame(message) => script.frame(message),
                    Step::Call(id) => script.action(Action::Call(Call {
                        id,
                        name: "f".into(),
                        args: json!({}),
                        wait: true,
                    })),
                    Step::Close => script.close(1000, "bye"),
                };
            }
            let run = script
                .play(Live::builder().tools(tools()))
                .await
                .expect("the script plays");
            let observed = Observed {
                log: run.session_log(),
                events: run.events().to_vec(),
            };
            run.disconnect().await;
            observed
        })
        .expect("the run finishes")
        .value
}

/// Stored events as compared across splits: transcriptions left out
/// (inserting them changes what is stored), the rest as displayed.
fn text_and_control(events: &[LiveEvent]) -> Vec<String> {
    events
        .iter()
        .filter(|e| {
            !matches!(
                e,
                LiveEvent::InputTranscript { .. } | LiveEvent::OutputTranscript { .. }
            )
        })
        .map(|e| e.to_string())
        .collect()
}

proptest! {
    #![proptest_config(config())]

    // The stored log is the same for every seed and every frame spacing.
    #[test]
    fn the_stored_log_depends_on_neither_seed_nor_spacing(
        plan in plan(),
        a in any::<u64>().no_shrink(),
        b in any::<u64>().no_shrink(),
    ) {
        let back_to_back = observe(&plan, a, false);
        let spaced = observe(&plan, b, true);
        prop_assert_eq!(&back_to_back.log, &spaced.log);
        let opens = matches!(back_to_back.log.first(), Some(LiveEvent::Connected { .. }));
        prop_assert!(opens, "connected stands first");
    }

    // INV1: the stored text and control events depend only on the segments,
    // their separators and the terminator, not on the chunking, on inserted
    // audio, on `turnComplete: false` or on the last chunk sharing the
    // terminator's message.
    #[test]
    fn inv1_storage_does_not_depend_on_the_split(
        plan in plan(),
        seed in any::<u64>().no_shrink(),
        spaced in any::<bool>(),
    ) {
        let split = observe(&plan, seed, spaced);
        let canonical = observe(&plan.canonical(), seed, spaced);
        prop_assert_eq!(text_and_control(&split.log), text_and_control(&canonical.log));
    }

    // INV2: the partial text events delivered are exactly the chunks, in order.
    #[test]
    fn inv2_partials_are_the_chunks(
        plan in plan(),
        seed in any::<u64>().no_shrink(),
        spaced in any::<bool>(),
    ) {
        let deltas: Vec<String> = observe(&plan, seed, spaced)
            .events
            .iter()
            .filter_map(|e| match e {
                LiveEvent::TextDelta { text, .. } => Some(text.clone()),
                _ => None,
            })
            .collect();
        let chunks: Vec<String> = plan.chunks.iter().flatten().cloned().collect();
        prop_assert_eq!(deltas, chunks);
    }

    // INV3: on the fast lane, the partials delivered since the previous
    // flush concatenate to each full text and share its thought flag.
    #[test]
    fn inv3_partials_reassemble_the_full_text(
        plan in plan(),
        seed in any::<u64>().no_shrink(),
        spaced in any::<bool>(),
    ) {
        let mut since_flush = String::new();
        let mut flag = None;
        for event in observe(&plan, seed, spaced).lane(Lane::Fast) {
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

    // INV4: the stored full texts are the segments, one each and in order;
    // when the connection closes, every segment but the pending last one.
    #[test]
    fn inv4_one_stored_text_per_segment(
        plan in plan(),
        seed in any::<u64>().no_shrink(),
        spaced in any::<bool>(),
    ) {
        let stored: Vec<(String, bool)> = observe(&plan, seed, spaced)
            .fulls()
            .into_iter()
            .map(|(text, thought, _)| (text, thought))
            .collect();
        prop_assert_eq!(stored, plan.stored_segments());
    }

    // INV5: no stored event is partial, and every partial event delivered
    // is a text or transcription chunk.
    #[test]
    fn inv5_no_partial_is_stored(
        plan in plan(),
        seed in any::<u64>().no_shrink(),
        spaced in any::<bool>(),
    ) {
        let observed = observe(&plan, seed, spaced);
        prop_assert!(observed.log.iter().all(|e| !e.is_partial()));
        for e in observed.events.iter().filter(|e| e.is_partial()) {
            let is_chunk = matches!(
                e,
                LiveEvent::TextDelta { .. }
                    | LiveEvent::InputTranscriptDelta { .. }
                    | LiveEvent::OutputTranscriptDelta { .. }
            );
            prop_assert!(is_chunk, "{} is partial", e);
        }
    }

    // INV6: an interruption with text pending puts `interrupted` on the
    // last segment's full text and stores no bare interrupted event; no
    // other full text carries the flag.
    #[test]
    fn inv6_interrupt_placement(
        plan in plan(),
        seed in any::<u64>().no_shrink(),
        spaced in any::<bool>(),
    ) {
        let observed = observe(&plan, seed, spaced);
        let fulls = observed.fulls();
        if plan.interrupted() {
            let last = fulls.last().expect("the last segment is flushed");
            prop_assert!(last.2, "the last full text carries interrupted");
            prop_assert!(fulls[..fulls.len() - 1].iter().all(|t| !t.2));
            prop_assert!(!observed.log.contains(&LiveEvent::Interrupted));
            prop_assert!(!observed.events.contains(&LiveEvent::Interrupted));
        } else {
            prop_assert!(fulls.iter().all(|t| !t.2));
        }
    }

    // INV7: no partial event carries `interrupted` or a turn-complete flag
    // (checked on the events' JSON, so a field added later is caught).
    #[test]
    fn inv7_partials_carry_no_control_flags(
        plan in plan(),
        seed in any::<u64>().no_shrink(),
        spaced in any::<bool>(),
    ) {
        for e in observe(&plan, seed, spaced).events.iter().filter(|e| e.is_partial()) {
            let json = serde_json::to_value(e).unwrap();
            prop_assert!(json.get("interrupted").is_none() && json.get("turn_complete").is_none());
        }
    }

    // INV8: in the stored log, turn complete is the turn's last event from
    // the server (every full text precedes it), the full text a tool call
    // flushed stands right before the call, and the call's response right
    // after it.
    #[test]
    fn inv8_ordering(
        plan in plan(),
        seed in any::<u64>().no_shrink(),
        spaced in any::<bool>(),
    ) {
        let observed = observe(&plan, seed, spaced);
        let server = observed.server_events();
        let completes = server.iter().filter(|e| matches!(e, LiveEvent::TurnComplete { .. })).count();
        prop_assert_eq!(completes, usize::from(plan.completes()));
        if plan.completes() {
            let last = matches!(server.last(), Some(LiveEvent::TurnComplete { .. }));
            prop_assert!(last, "turn complete stands last: {:?}", server);
        }
        let log = &observed.log;
        for (i, event) in log.iter().enumerate() {
            if let LiveEvent::ToolCall { calls } = event {
                prop_assert!(
                    i > 0 && matches!(log[i - 1], LiveEvent::TextComplete { .. }),
                    "the flushed text precedes the call"
                );
                let answered = matches!(
                    log.get(i + 1),
                    Some(LiveEvent::ToolResponse { id, .. }) if *id == calls[0].id
                );
                prop_assert!(answered, "the response follows its call: {:?}", log);
            }
        }
    }

    // INV9: for each thought class, the stored full texts concatenate to
    // that class's text up to the last flush; text pending at a close
    // appears in no full text.
    #[test]
    fn inv9_text_is_conserved(
        plan in plan(),
        seed in any::<u64>().no_shrink(),
        spaced in any::<bool>(),
    ) {
        let fulls = observe(&plan, seed, spaced).fulls();
        for class in [false, true] {
            let from_fulls: String = fulls.iter().filter(|t| t.1 == class).map(|t| t.0.as_str()).collect();
            let from_segments: String = plan
                .stored_segments()
                .into_iter()
                .filter(|s| s.1 == class)
                .map(|s| s.0)
                .collect();
            prop_assert_eq!(from_fulls, from_segments);
        }
    }

    // INV10: per direction, each finished transcription (stored and
    // delivered) is its chunks concatenated, exactly one per finish point
    // (`finished`, interruption, turn complete), none for chunks pending
    // at a close.
    #[test]
    fn inv10_transcriptions_aggregate(
        plan in plan(),
        seed in any::<u64>().no_shrink(),
        spaced in any::<bool>(),
    ) {
        let observed = observe(&plan, seed, spaced);
        for input in [true, false] {
            let finished = |events: &[LiveEvent]| -> Vec<String> {
                events
                    .iter()
                    .filter_map(|e| match (e, input) {
                        (LiveEvent::InputTranscript { text }, true)
                        | (LiveEvent::OutputTranscript { text }, false) => Some(text.clone()),
                        _ => None,
                    })
                    .collect()
            };
            let expected = plan.finished_transcripts(input);
            prop_assert_eq!(finished(&observed.log), expected.clone(), "stored");
            prop_assert_eq!(finished(&observed.events), expected, "delivered");
        }
    }

    // INV11: audio-only messages add only their audio events to what is
    // delivered, and `turnComplete: false` changes nothing: each lane's
    // events and the stored log are otherwise unchanged.
    #[test]
    fn inv11_audio_and_open_flags_change_nothing_else(
        plan in plan(),
        seed in any::<u64>().no_shrink(),
        spaced in any::<bool>(),
    ) {
        let with = observe(&plan, seed, spaced);
        let without = observe(&plan.plain(), seed, spaced);
        prop_assert_eq!(&with.log, &without.log);
        let fast = with.lane(Lane::Fast);
        let audio: Vec<&LiveEvent> = fast.iter().filter(|e| matches!(e, LiveEvent::Media { .. })).collect();
        prop_assert_eq!(audio.len(), plan.audio_at.len());
        let rest: Vec<LiveEvent> = fast.iter().filter(|e| !matches!(e, LiveEvent::Media { .. })).cloned().collect();
        prop_assert_eq!(rest, without.lane(Lane::Fast));
        for lane in [Lane::Control, Lane::Telemetry] {
            prop_assert_eq!(with.lane(lane), without.lane(lane));
        }
    }
}
