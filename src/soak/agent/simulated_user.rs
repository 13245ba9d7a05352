//! A user played by a model, on tape: a persona and a goal, asked for the
//! user's next words at each point the conversation waits for them.
//!
//! The soak's scripts are fixed before a run, so what the agent says up to
//! each user turn is known in advance: the request for the user's next
//! words is a function of the persona, the goal, the seed and the
//! conversation so far. [`SimulatedUser::record`] asks a real model (any
//! [`BaseLlm`]) once per user turn of each seed and records every answer
//! on a tape under its seed; a soak then replays the tape, offline and
//! exactly: the same seed, the same words. A turn the tape does not hold
//! falls back to a line of the agent's repertoire.

use crate::wire::JsonPath;
use std::collections::BTreeMap;
use std::ops::Range;

use serde_json::{Value, json};

use crate::executor::Seed;
use crate::llm::{BaseLlm, LlmError, LlmRequest};
use crate::soak::Soak;
use crate::tape::{Tape, TapeEntry, canonical_json};
use crate::testing::Action;

/// The tape entries' kind.
pub const USER_CALL: &str = crate::tape::USER_CALL;

/// The model a simulated user asks, unless told.
pub const USER_MODEL: &str = "gemini-2.5-flash";

/// One line of the conversation as the simulated user sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Said {
    /// The agent said this.
    Agent(String),
    /// The user said this.
    User(String),
}

/// A user played by a model: its persona, its goal, and the answers
/// recorded for it.
///
/// ```
/// use std::sync::Arc;
/// use livesim::Seed;
/// use livesim::llm::{LlmResponse, MockLlm};
/// use livesim::soak::{Agent, SimulatedUser, Soak};
/// use livesim::tape::MemoryTape;
///
/// let agent = Agent::load("sim/weather").unwrap();
/// let user = SimulatedUser::new("Ana, in a hurry", "learn tomorrow's weather in Lisbon");
/// // Recording (outside any simulation: a real model does real I/O): a
/// // model answers each user turn of seeds 0..3, here a mock.
/// let model = MockLlm::script((0..200).map(|i| LlmResponse::from_text(format!("Line {i}."))));
/// let tape = Arc::new(MemoryTape::new());
/// let soak = Soak::agent(&agent);
/// let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// let asked = runtime.block_on(user.record(&model, &*tape, &soak, 0..3)).unwrap();
/// assert!(asked > 0);
/// // Replaying: the soak's user says what the tape holds, offline.
/// let soak = Soak::agent(&agent).simulated_user(user.answers_from(tape.entries()));
/// let run = soak.run_seed(Seed::new(1));
/// assert!(run.record.unwrap().typed.iter().any(|t| t.starts_with("Line ")));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct SimulatedUser {
    persona: String,
    goal: String,
    model: String,
    /// Recorded answers, by the canonical form of their input.
    answers: BTreeMap<String, String>,
}

impl SimulatedUser {
    /// A user with this persona and goal, and nothing recorded yet.
    pub fn new(persona: impl Into<String>, goal: impl Into<String>) -> SimulatedUser {
        SimulatedUser {
            persona: persona.into(),
            goal: goal.into(),
            model: USER_MODEL.to_string(),
            answers: BTreeMap::new(),
        }
    }

    /// The model id its requests name (and the tape records).
    pub fn model(mut self, id: impl Into<String>) -> SimulatedUser {
        self.model = id.into();
        self
    }

    /// Its recorded answers: a tape's entries (other kinds are ignored).
    pub fn answers_from(mut self, entries: impl IntoIterator<Item = TapeEntry>) -> SimulatedUser {
        for entry in entries.into_iter().filter(|e| e.kind == USER_CALL) {
            if let Some(text) = entry.output.as_ref().and_then(|o| o.get("text")) {
                let text = text.as_str().unwrap_or_default().to_string();
                self.answers.insert(canonical_json(&entry.input), text);
            }
        }
        self
    }

    /// Answers recorded.
    pub fn answers(&self) -> usize {
        self.answers.len()
    }

    /// What the model is asked for the user's next words, the
    /// conversation being `said` so far. The agent's lines are the
    /// model's user turns (it plays the other side), its own earlier
    /// words its model turns.
    pub fn request(&self, said: &[Said]) -> LlmRequest {
        let mut request = LlmRequest::default().with_system_instruction(format!(
            "You are the caller in a voice conversation with an agent. Who you are: {}. \
             What you want: {}. Answer with only your next words, one or two short sentences.",
            self.persona, self.goal
        ));
        if !matches!(said.first(), Some(Said::Agent(_))) {
            request = request.with_user_turn("(the call connects)");
        }
        for line in said {
            request = match line {
                Said::Agent(text) => request.with_user_turn(text.clone()),
                Said::User(text) => request.with_model_turn(text.clone()),
            };
        }
        request
    }

    /// The tape input for a request under `seed`.
    fn input(&self, seed: Seed, request: &LlmRequest) -> Value {
        json!({ "seed": seed.to_string(), "model": self.model, "request": request })
    }

    /// The recorded answer to `said` under `seed`, if the tape has it.
    pub(crate) fn answer(&self, seed: Seed, said: &[Said]) -> Option<String> {
        let input = self.input(seed, &self.request(said));
        self.answers.get(&canonical_json(&input)).cloned()
    }

    /// Asks `llm` for the user's words at every user turn of `soak`'s
    /// conversations for `seeds`, and records each answer on `tape`;
    /// returns how many it asked. Run it once with a real model (outside
    /// any simulation: it does real I/O), then soak with
    /// [`answers_from`](Self::answers_from) the tape.
    pub async fn record(
        &self,
        llm: &dyn BaseLlm,
        tape: &dyn Tape,
        soak: &Soak,
        seeds: Range<u64>,
    ) -> Result<u64, LlmError> {
        let mut asked = 0;
        for seed in seeds.map(Seed::new) {
            let (script, _) = soak.script_for(seed);
            let mut said = Vec::new();
            for action in script.actions() {
                said.extend(agent_said(action).into_iter().map(Said::Agent));
                if !waits_for_words(action) {
                    continue;
                }
                let request = self.request(&said);
                let input = self.input(seed, &request);
                let text = llm.generate(request).await?.text();
                tape.record(TapeEntry::ok(USER_CALL, input, json!({ "text": text })))
                    .map_err(|e| LlmError::Config(format!("could not record the answer: {e}")))?;
                said.push(Said::User(text));
                asked += 1;
            }
        }
        Ok(asked)
    }
}

/// Whether `action` waits for the user's words (text, not audio or a
/// marker).
pub(crate) fn waits_for_words(action: &Action) -> bool {
    match action {
        Action::Expect(key) => !key.starts_with("realtimeInput.") || key == "realtimeInput.text",
        _ => false,
    }
}

/// What the agent says in `action`: the text (not thoughts) and the
/// transcription of the model's turn it sends.
pub(crate) fn agent_said(action: &Action) -> Vec<String> {
    let Action::Send(message) = action else {
        return Vec::new();
    };
    let Some(content) = message.get("serverContent") else {
        return Vec::new();
    };
    let mut lines: Vec<String> = content
        .at("/modelTurn/parts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|p| p.get("thought") != Some(&Value::Bool(true)))
        .filter_map(|p| p.get("text").and_then(Value::as_str))
        .map(str::to_string)
        .collect();
    if lines.is_empty()
        && let Some(text) = content
            .at("/outputTranscription/text")
            .and_then(Value::as_str)
    {
        lines.push(text.to_string());
    }
    lines
}
