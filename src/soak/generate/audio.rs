//! Audio turns (`audio`): the user speaks as a stream of `realtimeInput`
//! audio chunks, and the model answers in audio.
//!
//! The user's side: the script waits for each chunk the soak's user
//! streams (`expect` of `realtimeInput.audio`), bracketed by
//! `activityStart` and `activityEnd` when the session turned automatic
//! activity detection off, or ended by `audioStreamEnd` otherwise; the
//! server's input transcription races the audio, its chunks arriving
//! between the audio's, finished once the user stops.
//!
//! The model's side: audio `inlineData` chunks (now and then two in one
//! frame) with the output transcription of what it says; sometimes the
//! user barges in while the audio plays (an input transcription, then
//! `interrupted`, half the time in one frame with a last chunk of audio),
//! and the turn ends there.

use serde_json::json;

use crate::soak::generate::faults::FaultKind;
use crate::soak::generate::script::Generator;
use crate::testing::Action;

/// The model's audio, as the Live API sends it.
const MODEL_AUDIO: &str = "audio/pcm;rate=24000";

impl Generator<'_> {
    /// The user says `line` as an audio stream.
    pub(super) fn user_audio(&mut self, line: &str) {
        let manual = self.repertoire.manual_activity;
        if manual {
            self.push(Action::Expect("realtimeInput.activityStart".to_string()));
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let chunks = self.shape.range(3..=8) as usize;
        let mut said = 0;
        for i in 0..chunks {
            self.push(Action::Expect("realtimeInput.audio".to_string()));
            // The transcription races the audio: a word now and then.
            if said < words.len() && self.shape.chance(0.5) && i + 1 < chunks {
                let word = format!("{} ", words[said]);
                said += 1;
                self.send(json!({ "serverContent": { "inputTranscription": { "text": word } } }));
            }
        }
        let end = if manual {
            "realtimeInput.activityEnd"
        } else {
            "realtimeInput.audioStreamEnd"
        };
        self.push(Action::Expect(end.to_string()));
        let rest = words[said..].join(" ");
        self.send(json!({ "serverContent": { "inputTranscription": { "text": rest, "finished": true } } }));
    }

    /// The model says `line` in audio, its output transcription beside
    /// it. Returns true when the user barged in and the turn ended.
    pub(super) fn model_audio(&mut self, line: &str) -> bool {
        let chunks = self.shape.range(2..=6) as usize;
        let barge_in = self
            .fires(FaultKind::InterruptText)
            .then(|| self.shape.range(1..=chunks as u64 - 1) as usize);
        let words: Vec<&str> = line.split_whitespace().collect();
        for i in 0..chunks {
            if barge_in == Some(i) {
                // The user speaks over the model: what it heard, then the
                // interruption; the audio still in flight is dropped.
                let heard = self.user_line();
                self.send(json!({ "serverContent": { "inputTranscription": { "text": heard } } }));
                // Half the time a last chunk was already on its way: it
                // rides on the interruption's frame, which marks it.
                let mut interruption = json!({ "serverContent": { "interrupted": true } });
                if self.fault_stream(FaultKind::InterruptText).chance(0.5) {
                    let data = self.inline_bytes(24);
                    interruption["serverContent"]["modelTurn"] = json!({ "parts": [
                        { "inlineData": { "mimeType": MODEL_AUDIO, "data": data } }
                    ] });
                }
                self.send(interruption);
                self.small_gap();
                self.send(json!({ "serverContent": { "turnComplete": true } }));
                return true;
            }
            // Now and then two chunks share a frame, as parts of one turn:
            // each is its own media event.
            let together = if self.shape.chance(0.25) { 2 } else { 1 };
            let parts: Vec<_> = (0..together)
                .map(|_| json!({ "inlineData": { "mimeType": MODEL_AUDIO, "data": self.inline_bytes(24) } }))
                .collect();
            self.send(json!({ "serverContent": { "modelTurn": { "parts": parts } } }));
            if let Some(word) = words.get(i) {
                self.send(json!({ "serverContent": { "outputTranscription": { "text": format!("{word} ") } } }));
            }
            self.small_gap();
        }
        let rest = words.get(chunks..).map(|w| w.join(" ")).unwrap_or_default();
        if !rest.is_empty() {
            self.send(json!({ "serverContent": { "outputTranscription": { "text": rest } } }));
        }
        false
    }

    /// `n` bytes of inline data (a chunk of audio, a small file),
    /// distinct for every chunk (base64).
    pub(super) fn inline_bytes(&mut self, n: usize) -> String {
        use base64::Engine as _;
        let bytes: Vec<u8> = (0..n)
            .map(|_| (self.gaps.next_u64() & 0xff) as u8)
            .collect();
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }
}
