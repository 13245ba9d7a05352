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
//! fault phase ends with the seed's close, if it has one; otherwise a last
//! calm turn follows, with no fault, which the session must handle (the
//! liveness phase).
//!
//! A turn that is not interrupted ends with one of the repertoire's lines,
//! verbatim, as its last segment of text, so an extractor reading the last
//! line of the transcript sees a line it can have a recorded answer for.
//!
//! Every choice is drawn from a named stream of the seed:
//! `soak/script/turns` (the shape of the conversation), `…/text` (lines
//! and splits), `…/args`, `…/gaps` (pauses) and `…/fault/<kind>` (when
//! each fault fires).

use std::ops::RangeInclusive;
use std::time::Duration;

use serde_json::{Value, json};

use crate::executor::{Seed, Stream};
use crate::soak::agent::repertoire::Repertoire;
use crate::soak::generate::args;
use crate::soak::generate::connections::Connections;
use crate::soak::generate::faults::{CloseKind, FaultKind, Faults};
use crate::testing::{Action, Call, CloseAction, ScriptedServer};

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
    }
    match faults.close() {
        Some(close) => {
            // Half the time the close cuts the last turn short.
            if generator.shape.chance(0.5) {
                let line = generator.model_line();
                generator.model_text(&line);
            }
            generator.push(ending(close));
        }
        None => generator.calm_turn(),
    }
    let mut script = ScriptedServer::new().named(format!("{name}-{seed}"));
    for action in generator.actions {
        script = script.action(action);
    }
    script
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
    repertoire: &'a Repertoire,
    faults: &'a Faults,
    actions: Vec<Action>,
    /// Ids issued so far (call-1, call-2, …), for repeats.
    pub(super) issued: Vec<String>,
    shape: Stream,
    text: Stream,
    args: Stream,
    gaps: Stream,
    fires: Vec<Stream>,
    pub(super) went_away: bool,
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
            fires: FaultKind::ALL
                .iter()
                .map(|kind| stream(&format!("fault/{}", kind.name())))
                .collect(),
            went_away: false,
            connections: repertoire
                .resumption
                .is_on()
                .then(|| Connections::new(seed, repertoire.resumption.is_transparent())),
        }
    }

    pub(super) fn push(&mut self, action: Action) {
        self.actions.push(action);
    }

    fn send(&mut self, message: Value) {
        self.push(Action::Send(message));
    }

    /// Whether `kind` fires at this chance.
    pub(super) fn fires(&mut self, kind: FaultKind) -> bool {
        let rate = self.faults.rate(kind);
        let index = FaultKind::ALL.iter().position(|k| *k == kind).unwrap_or(0);
        self.fires[index].chance(rate)
    }

    /// Sometimes a short pause between two frames of a turn.
    fn small_gap(&mut self) {
        if self.gaps.chance(0.3) {
            let ms = self.gaps.range(1..=30);
            self.push(Action::PauseMs(ms));
        }
    }

    fn user_line(&mut self) -> String {
        self.text
            .pick(&self.repertoire.user_lines)
            .cloned()
            .unwrap_or_else(|| "Hello.".to_string())
    }

    fn model_line(&mut self) -> String {
        self.text
            .pick(&self.repertoire.model_lines)
            .cloned()
            .unwrap_or_else(|| "Okay.".to_string())
    }

    fn next_id(&mut self) -> String {
        let id = format!("call-{}", self.issued.len() + 1);
        self.issued.push(id.clone());
        id
    }

    fn turn(&mut self) {
        self.user_turn();
        self.small_gap();
        if self.fires(FaultKind::Thoughts) {
            let mut thought = self.text.pick(&THOUGHTS).copied().unwrap_or("").to_string();
            if self.fires(FaultKind::NonAscii) {
                thought.push_str(self.text.pick(&FLOURISHES).copied().unwrap_or(""));
            }
            for chunk in self.split(&thought) {
                self.send(json!({ "serverContent": { "modelTurn": { "parts": [{ "text": chunk, "thought": true }] } } }));
            }
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
        let line = self.model_line();
        if self.fires(FaultKind::InterruptText) {
            self.interrupted_text(&line);
            return self.turn_end_gap();
        }
        self.model_text(&line);
        if self.fires(FaultKind::UnknownMessage) {
            self.unknown_message();
        }
        if self.fires(FaultKind::GoAway) {
            self.go_away();
        }
        self.end_turn();
        self.turn_end_gap();
    }

    /// The last turn when the connection is not closed: no fault at all.
    fn calm_turn(&mut self) {
        let user = self.user_line();
        self.send(json!({ "serverContent": { "inputTranscription": { "text": user, "finished": true } } }));
        let line = self.model_line();
        self.send(json!({ "serverContent": { "modelTurn": { "parts": [{ "text": line }] } } }));
        self.send(json!({ "serverContent": { "turnComplete": true } }));
    }

    fn user_turn(&mut self) {
        if self.shape.chance(0.2) {
            // The user types: the soak sends this text when the script
            // waits for it.
            self.push(Action::Expect("clientContent".to_string()));
            return;
        }
        let line = self.user_line();
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
        for chunk in &chunks {
            self.send(
                json!({ "serverContent": { "modelTurn": { "parts": [{ "text": chunk }] } } }),
            );
            self.small_gap();
        }
        if self.fires(FaultKind::Transcriptions) {
            for chunk in words(line) {
                self.send(json!({ "serverContent": { "outputTranscription": { "text": chunk } } }));
            }
        }
    }

    /// Text, then an interruption while it streams, then the turn's end.
    fn interrupted_text(&mut self, line: &str) {
        let chunks = self.split(line);
        let keep = 1 + self.text.index(chunks.len().max(1));
        for chunk in chunks.iter().take(keep.min(chunks.len())) {
            self.send(
                json!({ "serverContent": { "modelTurn": { "parts": [{ "text": chunk }] } } }),
            );
        }
        self.send(json!({ "serverContent": { "interrupted": true } }));
        self.small_gap();
        self.send(json!({ "serverContent": { "turnComplete": true } }));
    }

    /// Text split as the seed says: whole, between words, mid-word, or one
    /// character per frame (the first two dozen characters).
    fn split(&mut self, text: &str) -> Vec<String> {
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

    fn usage(&mut self) {
        let prompt = self.gaps.range(10..=900);
        let response = self.gaps.range(1..=300);
        self.send(json!({ "usageMetadata": {
            "promptTokenCount": prompt, "responseTokenCount": response, "totalTokenCount": prompt + response
        } }));
    }

    fn unknown_message(&mut self) {
        let level = self.gaps.range(1..=9);
        let message = match self.shape.below(3) {
            0 => json!({ "newFeature": { "level": level } }),
            1 => json!({ "voiceActivity": { "voiceActivityType": "ACTIVITY_START" } }),
            _ => json!({ "serverContent": { "someNewField": { "x": 1 } } }),
        };
        self.send(message);
    }

    fn go_away(&mut self) {
        if !self.went_away {
            self.went_away = true;
            self.send(json!({ "goAway": { "timeLeft": "50s" } }));
            if let Some(connections) = &mut self.connections {
                // A session that resumes moves after the turn.
                connections.moving = true;
            }
        }
    }

    /// The end of a turn: sometimes `generationComplete` first, sometimes
    /// in the same frame as the last text, sometimes with usage.
    fn end_turn(&mut self) {
        if self.shape.chance(0.2)
            && let Some(Action::Send(last)) = self.actions.last_mut()
            && let Some(content) = last.get_mut("serverContent")
            && content.get("modelTurn").is_some()
        {
            content["turnComplete"] = json!(true);
            return;
        }
        if self.shape.chance(0.3) {
            self.send(json!({ "serverContent": { "generationComplete": true } }));
        }
        if self.fires(FaultKind::Usage) {
            let tokens = self.gaps.range(50..=2000);
            self.send(json!({
                "serverContent": { "turnComplete": true },
                "usageMetadata": { "totalTokenCount": tokens }
            }));
        } else {
            self.send(json!({ "serverContent": { "turnComplete": true } }));
        }
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

    /// A tool to call and its arguments (ones that do not fit when `bad`).
    fn pick_call(&mut self, bad: bool) -> (String, Value) {
        let Some(tool) = self.args.pick(&self.repertoire.tools).cloned() else {
            return ("no_tools_declared".to_string(), json!({}));
        };
        let args = if bad {
            args::bad(tool.parameters.as_ref(), &tool.examples, &mut self.args)
        } else {
            args::valid(tool.parameters.as_ref(), &tool.examples, &mut self.args)
        };
        (tool.name, args)
    }

    /// A new call, with the next id, that the script waits for.
    fn call_for(&mut self, bad: bool) -> Call {
        let (name, args) = self.pick_call(bad);
        Call {
            id: self.next_id(),
            name,
            args,
            wait: true,
        }
    }

    pub(super) fn latency_of(&self, name: &str) -> RangeInclusive<Duration> {
        self.repertoire
            .tools
            .iter()
            .find(|t| t.name == name)
            .map(|t| t.latency.clone())
            .unwrap_or(Duration::ZERO..=Duration::from_millis(100))
    }

    /// The turn's tool calls. Returns true when the turn ended here (an
    /// interruption mid-call).
    fn tool_phase(&mut self) -> bool {
        if self.fires(FaultKind::ParallelCalls) {
            let n = self.shape.range(2..=3);
            let mut calls: Vec<Call> = (0..n).map(|_| self.call_for(false)).collect();
            if self.fires(FaultKind::DuplicateId) {
                // The session answers only the first call with an id.
                let mut repeat = calls[0].clone();
                repeat.wait = false;
                calls.push(repeat);
            }
            self.push(Action::CallMany(calls));
            return false;
        }
        if self.fires(FaultKind::CancelRace) {
            let mut call = self.call_for(false);
            call.wait = false;
            let latency = self.latency_of(&call.name);
            let id = call.id.clone();
            self.push(Action::Call(call));
            let lo = latency.start().as_millis() as u64;
            let hi = latency.end().as_millis() as u64;
            let ms = self.gaps.range(lo..=hi.max(lo) + 3);
            self.push(Action::PauseMs(ms));
            self.send(json!({ "toolCallCancellation": { "ids": [id] } }));
            return false;
        }
        if self.fires(FaultKind::InterruptCall) {
            let mut call = self.call_for(false);
            call.wait = false;
            let id = call.id.clone();
            self.push(Action::Call(call));
            if self.fires(FaultKind::GoAway) {
                self.go_away();
            }
            self.small_gap();
            self.send(json!({ "serverContent": { "interrupted": true } }));
            if self.shape.chance(0.5) {
                self.send(json!({ "toolCallCancellation": { "ids": [id] } }));
            }
            self.send(json!({ "serverContent": { "turnComplete": true } }));
            return true;
        }
        let bad = self.fires(FaultKind::BadArgs);
        let mut call = self.call_for(bad);
        if self.fires(FaultKind::UnknownTool) {
            call.name = format!("no_such_tool_{}", self.shape.range(1..=9));
            call.args = json!({});
        }
        // The connection may end while this call runs: nobody waits for
        // its answer then.
        let cut = self.cuts_mid_call();
        call.wait = !cut;
        let name = call.name.clone();
        self.push(Action::Call(call));
        if self.fires(FaultKind::DuplicateId) {
            // An id seen before on this connection (ids belong to their
            // connection): the session answers only its first call.
            let first = self.connections.as_ref().map_or(0, |c| c.first_call);
            let id = self
                .args
                .pick(&self.issued[first..])
                .cloned()
                .unwrap_or_default();
            let (name, args) = self.pick_call(false);
            self.push(Action::Call(Call {
                id,
                name,
                args,
                wait: false,
            }));
        }
        if cut {
            self.cut_mid_call(&name);
        }
        false
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
