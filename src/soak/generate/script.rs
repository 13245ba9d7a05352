//! The script generator: from an agent's repertoire, a seed and its
//! faults, one multi-turn conversation as an ordinary [`ScriptedServer`].
//!
//! Because the output is a script, every generated case can be saved as
//! a file (`ScriptedServer::save`), replayed, served to another client
//! with `livesim serve`, or cut down by hand.
//!
//! A conversation is 1 to 20 turns (the repertoire says how many). Each
//! turn: the user speaks (an input transcription, whole or in chunks) or
//! types (an `expect` of `clientContent`: the soak sends the text when the
//! script gets there); the model may think, may speak a line, may call
//! tools, then speaks a line from its repertoire, whole or split, and ends
//! its turn. The seed's [`Faults`] fire along the way: split text, thoughts,
//! transcriptions, non-ASCII text, bad arguments, unknown tools, repeated
//! call ids, parallel calls, cancellations racing results, interruptions
//! mid-text and mid-call, usage frames, unknown messages, a go-away. The
//! fault phase ends with the seed's close, if it has one; otherwise the
//! user may hang up while the last turn's calls run (`hang-up`); otherwise
//! a last calm turn follows, with no fault, which the session must handle
//! (the liveness phase).
//!
//! A turn that is not interrupted ends with one of the repertoire's lines,
//! verbatim, as its last segment of text, so an extractor reading the last
//! line of the transcript sees a line it can have a recorded answer for.
//!
//! Every choice is drawn from a named stream of the seed:
//! `soak/script/turns` (the shape of the conversation), `…/text` (lines
//! and splits), `…/args`, `…/gaps` (pauses), `…/fault/<kind>` (when
//! each fault fires) and `…/session-id` (whether the server's
//! `setupComplete` carries a `sessionId`, as Vertex AI's does).

use std::time::Duration;

use serde_json::{Value, json};

use crate::executor::{Seed, Stream};
use crate::soak::agent::repertoire::Repertoire;
use crate::soak::generate::connections::Connections;
use crate::soak::generate::faults::{CloseKind, FaultKind, Faults};
use crate::testing::{Action, CloseAction, ScriptedServer};

/// Text added to the model's words when `non-ascii` fires.
const FLOURISHES: [&str; 8] = [
    " — ça coûte 12 €",
    " ✓",
    " 🙂",
    " (naïve café)",
    " 東京にて",
    " Grüße, Łukasz",
    " ½ × ¾",
    " 👩‍💻",
];

/// Thoughts, when `thoughts` fires.
const THOUGHTS: [&str; 3] = [
    "**Planning** The user wants an answer; check the tools first.",
    "Considering which tool fits.",
    "The last result looks complete.",
];

/// The conversation seed `seed` draws for `repertoire` under `faults`,
/// as a script named `<name>-<seed>`.
///
/// ```
/// use livesim::Seed;
/// use livesim::soak::{Faults, Repertoire, generate};
///
/// let script = generate("demo", &Repertoire::default(), Seed::new(3), &Faults::draw(Seed::new(3)));
/// assert_eq!(script.name(), "demo-0x3");
/// assert_eq!(script, generate("demo", &Repertoire::default(), Seed::new(3), &Faults::draw(Seed::new(3))));
/// ```
pub fn generate(
    name: &str,
    repertoire: &Repertoire,
    seed: Seed,
    faults: &Faults,
) -> ScriptedServer {
    let mut generator = Generator::new(repertoire, seed, faults);
    let turns = generator
        .shape
        .range(u64::from(*repertoire.turns.start())..=u64::from(*repertoire.turns.end()));
    for _ in 0..turns {
        generator.turn();
        if generator.over_at.is_some() {
            break;
        }
    }
    match generator.over_at {
        // A conversation that ended with its connection (a `goAway` before
        // any handle) says nothing after that end.
        Some(end) => generator.actions.truncate(end),
        None => generator.last_turn(),
    }
    let mut script = ScriptedServer::new().named(format!("{name}-{seed}"));
    // Half the servers say a session id in `setupComplete`, as Vertex AI's
    // endpoint does (its own stream: no other draw moves).
    let mut server = Stream::new(seed, "soak/script/session-id");
    if server.chance(0.5) {
        script = script.session_id(format!("session-{:012x}", server.next_u64() >> 16));
    }
    for action in generator.actions {
        script = script.action(action);
    }
    script
}

impl Generator<'_> {
    /// The conversation's end: the server's error alone, a close, or a
    /// calm last turn.
    fn last_turn(&mut self) {
        let (faults, repertoire) = (self.faults, self.repertoire);
        let gives_up = faults.is_on(FaultKind::ServerError)
            && self.fault_stream(FaultKind::ServerError).chance(0.3);
        let last = if gives_up {
            Some(Action::Send(json!({ "error": self.server_error() })))
        } else {
            faults.close().map(ending)
        };
        match last {
            Some(action) => {
                // Half the time the end cuts the last turn short.
                if self.shape.chance(0.5) {
                    let line = self.model_line();
                    self.model_text(&line);
                }
                self.push(action);
            }
            // Or the user hangs up while the last turn's calls run.
            None if !repertoire.tools.is_empty() && self.fires(FaultKind::HangUp) => {
                self.hang_up_turn()
            }
            None => self.calm_turn(),
        }
    }
}

/// The action that ends a connection with `close`.
pub(super) fn ending(close: CloseKind) -> Action {
    match close.frame() {
        Some((code, reason)) => Action::Close(CloseAction {
            code,
            reason: reason.to_string(),
        }),
        None => Action::Abort,
    }
}

pub(super) struct Generator<'a> {
    pub(super) repertoire: &'a Repertoire,
    pub(super) faults: &'a Faults,
    pub(super) actions: Vec<Action>,
    /// Ids issued so far (call-1, call-2, …), for repeats.
    pub(super) issued: Vec<String>,
    pub(super) shape: Stream,
    pub(super) text: Stream,
    pub(super) args: Stream,
    pub(super) gaps: Stream,
    /// Whether a thought ends with a thought signature, and its bytes.
    signatures: Stream,
    /// Whether a turn's end says why it ended (`turnCompleteReason`): a
    /// stream of its own, so the other draws stay what they were before.
    reasons: Stream,
    /// Whether a call with no arguments comes without an `args` member,
    /// as the service may send a function that takes none: its own stream.
    pub(super) bare_args: Stream,
    /// Whether a `goAway` says no `timeLeft` (no time to lose: the
    /// session moves at once): a stream of its own.
    bare_notices: Stream,
    /// Whether an unknown message is, instead, one that says nothing (an
    /// empty `serverContent`, a `modelTurn` with no parts): its own stream.
    empty: Stream,
    fires: Vec<Stream>,
    pub(super) went_away: bool,
    /// Where the conversation ended with its connection, when it did
    /// before its turns were over: the script's length then.
    pub(super) over_at: Option<usize>,
    /// For a session that resumes: its handles and connections.
    pub(super) connections: Option<Connections>,
}

impl<'a> Generator<'a> {
    fn new(repertoire: &'a Repertoire, seed: Seed, faults: &'a Faults) -> Self {
        let stream = |name: &str| Stream::new(seed, &format!("soak/script/{name}"));
        Generator {
            repertoire,
            faults,
            actions: Vec::new(),
            issued: Vec::new(),
            shape: stream("turns"),
            text: stream("text"),
            args: stream("args"),
            gaps: stream("gaps"),
            signatures: stream("thought-signature"),
            reasons: stream("turn-reason"),
            bare_args: stream("bare-args"),
            bare_notices: stream("go-away-bare"),
            empty: stream("empty"),
            fires: FaultKind::ALL
                .iter()
                .map(|kind| stream(&format!("fault/{}", kind.name())))
                .collect(),
            went_away: false,
            over_at: None,
            connections: repertoire.resumption.is_on().then(|| {
                let networked = faults.is_on(FaultKind::Network);
                Connections::new(seed, &repertoire.resumption, networked)
            }),
        }
    }

    pub(super) fn push(&mut self, action: Action) {
        self.actions.push(action);
    }

    /// How many actions the script has so far.
    pub(super) fn actions_len(&self) -> usize {
        self.actions.len()
    }

    pub(super) fn send(&mut self, message: Value) {
        self.push(Action::Send(message));
    }

    /// Whether `kind` fires at this chance.
    pub(super) fn fires(&mut self, kind: FaultKind) -> bool {
        let rate = self.faults.rate(kind);
        self.fault_stream(kind).chance(rate)
    }

    /// The stream `kind` fires from, for what a kind draws when it fires
    /// (drawing there leaves every other kind's draws as they were).
    pub(super) fn fault_stream(&mut self, kind: FaultKind) -> &mut Stream {
        let index = FaultKind::ALL.iter().position(|k| *k == kind).unwrap_or(0);
        &mut self.fires[index]
    }

    /// Sometimes a short pause between two frames of a turn.
    pub(super) fn small_gap(&mut self) {
        if self.gaps.chance(0.3) {
            let ms = self.gaps.range(1..=30);
            self.push(Action::PauseMs(ms));
        }
    }

    pub(super) fn user_line(&mut self) -> String {
        self.text
            .pick(&self.repertoire.user_lines)
            .cloned()
            .unwrap_or_else(|| "Hello.".to_string())
    }

    pub(super) fn model_line(&mut self) -> String {
        self.text
            .pick(&self.repertoire.model_lines)
            .cloned()
            .unwrap_or_else(|| "Okay.".to_string())
    }

    /// A new call id: `call-<n>`, counting every call the conversation
    /// made, or only the connection's own when it started over
    /// (`id-restart`).
    pub(super) fn next_id(&mut self) -> String {
        let from = self
            .connections
            .as_ref()
            .filter(|c| c.restarted_ids)
            .map_or(0, |c| c.first_call);
        let id = format!("call-{}", self.issued.len() - from + 1);
        self.issued.push(id.clone());
        id
    }

    fn turn(&mut self) {
        self.user_turn();
        self.small_gap();
        // Now and then the model gives up on the turn: nothing but its
        // end, saying why (a call it could not form).
        if self.reasons.chance(0.03) {
            self.send(json!({ "serverContent": {
                "turnComplete": true,
                "turnCompleteReason": "MALFORMED_FUNCTION_CALL"
            } }));
            return self.turn_end_gap();
        }
        if self.fires(FaultKind::Thoughts) {
            let thought = self.text.pick(&THOUGHTS).copied().unwrap_or("").to_string();
            self.thought(&thought);
        }
        if self.fires(FaultKind::Usage) {
            self.usage();
        }
        let calling =
            !self.repertoire.tools.is_empty() && self.shape.chance(self.repertoire.call_chance);
        if self.shape.chance(if calling { 0.6 } else { 0.3 }) {
            let mut line = self.model_line();
            if self.fires(FaultKind::NonAscii) {
                line.push_str(self.text.pick(&FLOURISHES).copied().unwrap_or(""));
            }
            if self.fires(FaultKind::InterruptText) {
                self.interrupted_text(&line);
                return self.turn_end_gap();
            }
            self.model_text(&line);
        }
        if calling && self.tool_phase() {
            return self.turn_end_gap();
        }
        // A thought between the calls' answers and the last words.
        if calling && self.fires(FaultKind::Thoughts) {
            let thought = self.text.pick(&THOUGHTS).copied().unwrap_or("").to_string();
            self.thought(&thought);
        }
        let line = self.model_line();
        if self.fires(FaultKind::Audio) {
            if self.model_audio(&line) {
                return self.turn_end_gap();
            }
        } else {
            if self.fires(FaultKind::InterruptText) {
                self.interrupted_text(&line);
                return self.turn_end_gap();
            }
            self.model_text(&line);
        }
        if self.fires(FaultKind::Document) {
            self.document();
        }
        if self.fires(FaultKind::UnknownMessage) {
            self.unknown_message();
        }
        if self.fires(FaultKind::ServerError) {
            // Beside content, an error ends nothing: the usage counts.
            let tokens = self.fault_stream(FaultKind::ServerError).range(1..=900);
            let error = self.server_error();
            self.send(json!({ "usageMetadata": { "totalTokenCount": tokens }, "error": error }));
        }
        if self.fires(FaultKind::GoAway) {
            self.go_away(false);
        }
        self.end_turn();
        self.turn_end_gap();
    }

    /// The last turn when the connection is not closed: no fault at all.
    fn calm_turn(&mut self) {
        self.user_says();
        let line = self.model_line();
        self.send(json!({ "serverContent": { "modelTurn": { "parts": [{ "text": line }] } } }));
        self.send(json!({ "serverContent": { "turnComplete": true } }));
    }

    /// The user says a line, whole (a finished input transcription).
    pub(super) fn user_says(&mut self) {
        let line = self.user_line();
        self.send(json!({ "serverContent": { "inputTranscription": { "text": line, "finished": true } } }));
    }

    fn user_turn(&mut self) {
        if self.shape.chance(0.2) {
            // The user types: the soak sends this text when the script
            // waits for it.
            self.user_types();
            return;
        }
        let line = self.user_line();
        if self.fires(FaultKind::Audio) {
            return self.user_audio(&line);
        }
        if !self.fires(FaultKind::Transcriptions) {
            self.send(json!({ "serverContent": { "inputTranscription": { "text": line, "finished": true } } }));
            return;
        }
        let chunks = words(&line);
        // Sometimes `finished` never comes: the turn's end flushes it.
        let finished = self.shape.chance(0.7);
        let last = chunks.len().saturating_sub(1);
        for (i, chunk) in chunks.into_iter().enumerate() {
            let mut transcription = json!({ "text": chunk });
            if i == last && finished {
                transcription["finished"] = json!(true);
            }
            self.send(json!({ "serverContent": { "inputTranscription": transcription } }));
        }
    }

    /// The model's text, as frames split as the seed says, with its
    /// output transcription when transcriptions are on.
    fn model_text(&mut self, line: &str) {
        let chunks = self.split(line);
        // The user may type while the model speaks (after this chunk).
        let typed_at = self
            .fires(FaultKind::Typing)
            .then(|| self.shape.index(chunks.len().max(1)));
        for (i, chunk) in chunks.iter().enumerate() {
            self.send(
                json!({ "serverContent": { "modelTurn": { "parts": [{ "text": chunk }] } } }),
            );
            if typed_at == Some(i) {
                self.user_types();
            }
            self.small_gap();
        }
        if self.fires(FaultKind::Transcriptions) {
            for chunk in words(line) {
                self.send(json!({ "serverContent": { "outputTranscription": { "text": chunk } } }));
            }
        }
    }

    /// A thought, split as text is, sometimes followed by its thought
    /// signature.
    pub(super) fn thought(&mut self, thought: &str) {
        let mut thought = thought.to_string();
        if self.fires(FaultKind::NonAscii) {
            thought.push_str(self.text.pick(&FLOURISHES).copied().unwrap_or(""));
        }
        for chunk in self.split(&thought) {
            self.send(json!({ "serverContent": { "modelTurn": { "parts": [{ "text": chunk, "thought": true }] } } }));
        }
        // Half the time a thought signature follows, in a part of its own
        // (alone, or with empty text): a part with nothing to show, which
        // the session must ignore.
        if self.signatures.chance(0.5) {
            let signature = self.signature();
            let part = if self.signatures.chance(0.5) {
                json!({ "thoughtSignature": signature })
            } else {
                json!({ "text": "", "thoughtSignature": signature })
            };
            self.send(json!({ "serverContent": { "modelTurn": { "parts": [part] } } }));
        }
    }

    /// A thought signature's bytes, base64 (opaque to the client).
    fn signature(&mut self) -> String {
        use base64::Engine as _;
        let bytes: Vec<u8> = (0..12)
            .map(|_| (self.signatures.next_u64() & 0xff) as u8)
            .collect();
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    /// The user types a line here: as `clientContent`, or, when `typing`
    /// is on, sometimes as `realtimeInput` text (the soak's user sends it
    /// when the script gets here).
    pub(super) fn user_types(&mut self) {
        let key = if self.faults.is_on(FaultKind::Typing) && self.shape.chance(0.3) {
            "realtimeInput.text"
        } else {
            "clientContent"
        };
        self.push(Action::Expect(key.to_string()));
    }

    /// Text, then an interruption while it streams, then the turn's end;
    /// a third of the time the interruption ends the turn in its own
    /// frame (the text pending then ends interrupted, with the turn).
    fn interrupted_text(&mut self, line: &str) {
        let chunks = self.split(line);
        let keep = 1 + self.text.index(chunks.len().max(1));
        for chunk in chunks.iter().take(keep.min(chunks.len())) {
            self.send(
                json!({ "serverContent": { "modelTurn": { "parts": [{ "text": chunk }] } } }),
            );
        }
        if self
            .fault_stream(FaultKind::InterruptText)
            .chance(1.0 / 3.0)
        {
            self.send(json!({ "serverContent": { "interrupted": true, "turnComplete": true } }));
            return;
        }
        self.send(json!({ "serverContent": { "interrupted": true } }));
        self.small_gap();
        self.send(json!({ "serverContent": { "turnComplete": true } }));
    }

    /// Text split as the seed says: whole, between words, mid-word, or one
    /// character per frame (the first two dozen characters).
    pub(super) fn split(&mut self, text: &str) -> Vec<String> {
        if text.is_empty() || !self.fires(FaultKind::Split) {
            return vec![text.to_string()];
        }
        match self.text.below(3) {
            0 => words(text),
            1 => {
                let chars: Vec<char> = text.chars().collect();
                let cuts = self.text.range(1..=4) as usize;
                let mut points: Vec<usize> = (0..cuts)
                    .map(|_| 1 + self.text.index(chars.len().saturating_sub(1).max(1)))
                    .collect();
                points.sort_unstable();
                points.dedup();
                let mut out = Vec::new();
                let mut from = 0;
                for point in points.into_iter().filter(|&p| p < chars.len()) {
                    out.push(chars[from..point].iter().collect());
                    from = point;
                }
                out.push(chars[from..].iter().collect());
                out
            }
            _ => {
                let chars: Vec<char> = text.chars().collect();
                let singles = chars.len().min(24);
                let mut out: Vec<String> = chars[..singles].iter().map(|c| c.to_string()).collect();
                if singles < chars.len() {
                    out.push(chars[singles..].iter().collect());
                }
                out
            }
        }
    }

    pub(super) fn usage(&mut self) {
        let prompt = self.gaps.range(10..=900);
        let response = self.gaps.range(1..=300);
        self.send(json!({ "usageMetadata": {
            "promptTokenCount": prompt, "responseTokenCount": response, "totalTokenCount": prompt + response
        } }));
    }

    /// A file sent inline (`document`): no live media, so the session
    /// stores it; half the time a line of text leads it in the same frame
    /// (the text stays pending beside it). A quarter of the time the code
    /// that made it comes first, a quarter a chart with its code instead.
    fn document(&mut self) {
        let data = self.inline_bytes(16);
        let file = json!({ "inlineData": { "mimeType": "application/pdf", "data": data } });
        let parts = if self.shape.chance(0.5) {
            json!([{ "text": "Here is the file. " }, file.clone()])
        } else {
            json!([file.clone()])
        };
        // Sometimes the file comes with the code that made it, or a chart
        // with it: parts that are neither text nor media alone, which the
        // session keeps as content (stored unless an image is among them).
        // Or the code alone, an empty text inside its run (which does not
        // break it) and the model's words after it in the same frame
        // (which stream after the content).
        let stream = self.fault_stream(FaultKind::Document);
        let parts = match stream.below(4) {
            0 => json!([
                { "executableCode": { "language": "PYTHON", "code": "print(2 + 2)" } },
                { "codeExecutionResult": { "outcome": "OUTCOME_OK", "output": "4\n" } },
                file
            ]),
            1 => json!([
                { "executableCode": { "language": "PYTHON", "code": "plot()" } },
                { "inlineData": { "mimeType": "image/png", "data": data } }
            ]),
            2 => json!([
                { "executableCode": { "language": "PYTHON", "code": "print(6 * 7)" } },
                { "text": "" },
                { "codeExecutionResult": { "outcome": "OUTCOME_OK", "output": "42\n" } },
                { "text": "The code printed 42. " }
            ]),
            _ => parts,
        };
        self.send(json!({ "serverContent": { "modelTurn": { "parts": parts } } }));
    }

    /// An in-band error's `error` member, in the shapes a server might
    /// send it: code, message and status, some of them, or a bare string.
    fn server_error(&mut self) -> Value {
        let errors = [
            json!({ "code": 500, "message": "Internal error encountered.", "status": "INTERNAL" }),
            json!({ "code": 429, "message": "Resource has been exhausted (e.g. check quota).", "status": "RESOURCE_EXHAUSTED" }),
            json!({ "code": 503, "message": "The service is currently unavailable." }),
            json!({ "message": "Deadline expired before operation could complete." }),
            json!({ "status": "ABORTED" }),
            json!("quota exceeded"),
        ];
        let stream = self.fault_stream(FaultKind::ServerError);
        stream.pick(&errors).cloned().unwrap_or_default()
    }

    /// A message with nothing the session handles itself, which it must
    /// pass on whole as an `unknown` event: a key the protocol does not
    /// name, or one it names that has no event of its own (grounding, URL
    /// context, an interim transcription, voice activity, waiting for
    /// input).
    fn unknown_message(&mut self) {
        let level = self.gaps.range(1..=9);
        let message = match self.shape.below(8) {
            0 => json!({ "newFeature": { "level": level } }),
            1 => json!({ "voiceActivity": { "voiceActivityType": "ACTIVITY_START" } }),
            2 => json!({ "serverContent": { "groundingMetadata": {
                "webSearchQueries": ["weather in Paris"],
                "groundingChunks": [{ "web": { "uri": "https://example.com/paris", "title": "Paris" } }]
            } } }),
            3 => {
                json!({ "serverContent": { "interimInputTranscription": { "text": "what's the" } } })
            }
            4 => json!({ "serverContent": { "waitingForInput": true } }),
            5 => json!({ "serverContent": { "urlContextMetadata": { "urlMetadata": [{
                "retrievedUrl": "https://example.com/paris",
                "urlRetrievalStatus": "URL_RETRIEVAL_STATUS_SUCCESS"
            }] } } }),
            6 => {
                json!({ "voiceActivityDetectionSignal": { "vadSignalType": "VAD_SIGNAL_TYPE_SOS" } })
            }
            _ => json!({ "serverContent": { "someNewField": { "x": 1 } } }),
        };
        // Or a message that says nothing, as the protocol allows: no
        // event, no content moving (the user's silence goes on).
        let message = match self.empty.below(5) {
            0 => json!({ "serverContent": {} }),
            1 => json!({ "serverContent": { "modelTurn": { "parts": [] } } }),
            _ => message,
        };
        self.send(message);
    }

    /// A `goAway` with `timeLeft` from 0 to 60 s, or (one in ten) none,
    /// which leaves no time: the session moves at once. A session that resumes
    /// moves to a new connection: after the turn and the handle that
    /// follows it, or, when the notice comes while calls run or leaves
    /// too little time, at once with the handle it holds (it moves
    /// within half the time left).
    pub(super) fn go_away(&mut self, mid_call: bool) {
        if self.went_away {
            return;
        }
        self.went_away = true;
        let ms = self.gaps.range(0..=60_000);
        // One notice in ten says no time left at all: none to lose.
        let (ms, notice) = if self.bare_notices.chance(0.1) {
            (0, json!({ "goAway": {} }))
        } else {
            let left = crate::wire::format_duration(Duration::from_millis(ms));
            (ms, json!({ "goAway": { "timeLeft": left } }))
        };
        if self.connections.is_none() {
            self.send(notice);
            return;
        }
        if self.ends_before_any_handle() {
            self.send(notice);
            self.last_connection_ends(ms);
            return;
        }
        if mid_call || ms < 2_000 {
            let handle = self.held_handle();
            self.send(notice);
            let moved = self.moved_at_once(handle, mid_call.then_some(ms));
            // The user types as the notice comes: a session that does not
            // replay must hold it for the next connection (on the old one
            // it would follow the handle the move resumes, and be lost).
            if moved && self.resumes_opaquely() && self.fires(FaultKind::Typing) {
                self.user_types();
            }
        } else {
            self.send(notice);
            // A session that resumes moves after the turn.
            self.moving_after_go_away();
        }
    }

    /// The end of a turn: sometimes `generationComplete` first, sometimes
    /// in the same frame as the last text (and then sometimes usage rides
    /// on that frame too, as the protocol allows on any message),
    /// sometimes with usage.
    fn end_turn(&mut self) {
        let merges = self.shape.chance(0.2)
            && matches!(
                self.actions.last(),
                Some(Action::Send(last)) if last.pointer("/serverContent/modelTurn").is_some()
            );
        let reason = self.turn_reason();
        if merges {
            let usage = self
                .fires(FaultKind::Usage)
                .then(|| self.gaps.range(50..=2000));
            if let Some(Action::Send(last)) = self.actions.last_mut() {
                last["serverContent"]["turnComplete"] = json!(true);
                if let Some(reason) = reason {
                    last["serverContent"]["turnCompleteReason"] = json!(reason);
                }
                if let Some(tokens) = usage {
                    last["usageMetadata"] = json!({ "totalTokenCount": tokens });
                }
            }
            return;
        }
        if self.shape.chance(0.3) {
            self.send(json!({ "serverContent": { "generationComplete": true } }));
        }
        let mut content = json!({ "turnComplete": true });
        if let Some(reason) = reason {
            content["turnCompleteReason"] = json!(reason);
        }
        if self.fires(FaultKind::Usage) {
            let tokens = self.gaps.range(50..=2000);
            self.send(json!({
                "serverContent": content,
                "usageMetadata": { "totalTokenCount": tokens }
            }));
        } else {
            self.send(json!({ "serverContent": content }));
        }
    }

    /// Why the turn ended, when the server says (one turn in ten): a
    /// reason the protocol names, or one it may add later (the session
    /// must pass it on as it came).
    fn turn_reason(&mut self) -> Option<&'static str> {
        const REASONS: [&str; 3] = ["NEED_MORE_INPUT", "RESPONSE_REJECTED", "SOME_NEW_REASON"];
        if !self.reasons.chance(0.1) {
            return None;
        }
        self.reasons.pick(&REASONS).copied()
    }

    fn turn_end_gap(&mut self) {
        self.after_turn();
        let pauses = &self.repertoire.pauses;
        let lo = pauses.start().as_millis() as u64;
        let hi = pauses.end().as_millis() as u64;
        let ms = self.gaps.range(lo..=hi.max(lo));
        if ms > 0 {
            self.push(Action::PauseMs(ms));
        }
    }
}

/// Text split after each space, spaces kept: `["It ", "is ", "sunny."]`.
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for c in text.chars() {
        current.push(c);
        if c == ' ' {
            out.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() || out.is_empty() {
        out.push(current);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_keep_every_character() {
        assert_eq!(words("It is sunny."), ["It ", "is ", "sunny."]);
        assert_eq!(words(""), [""]);
        assert_eq!(words("a "), ["a "]);
    }
}
