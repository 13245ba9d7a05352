//! What generated conversations are made of: the lines the simulated user
//! and model say, the tools the model calls, how long and how busy a
//! conversation is. An agent file gives one; so does a session builder
//! (its declared tools, with default lines).

use crate::wire::JsonPath;
use std::ops::RangeInclusive;
use std::time::Duration;

use serde_json::Value;

use crate::session::Resumption;

/// What the simulated model and user can say and call: the input to the
/// generator, from an agent file or from a session builder.
#[derive(Clone, Debug, PartialEq)]
pub struct Repertoire {
    /// The tools the model may call.
    pub tools: Vec<ToolModel>,
    /// What the user says (input transcriptions) or types.
    pub user_lines: Vec<String>,
    /// What the model says; every turn that is not interrupted ends with
    /// one of these, verbatim.
    pub model_lines: Vec<String>,
    /// How many turns a conversation has (before the calm last one).
    pub turns: RangeInclusive<u32>,
    /// The pause between turns (the user's thinking time).
    pub pauses: RangeInclusive<Duration>,
    /// The chance that a turn calls tools.
    pub call_chance: f64,
    /// Whether the session resumes on a new connection, and whether
    /// transparently: a resuming session is given resumption handles, and
    /// its connections end and move (`Resumption::off()`: one connection).
    pub resumption: Resumption,
    /// Whether the session turned automatic activity detection off: a
    /// user who speaks then marks the start and end of speech
    /// (`activityStart`, `activityEnd`); otherwise the audio stream ends
    /// with `audioStreamEnd`.
    pub manual_activity: bool,
}

/// A tool, as the generator needs to know it.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolModel {
    /// Its name.
    pub name: String,
    /// Its parameter schema, when it declares one.
    pub parameters: Option<Value>,
    /// Arguments to call it with; drawn from the schema when empty.
    pub examples: Vec<Value>,
    /// How long it usually takes (a cancellation races a result by being
    /// sent within this range).
    pub latency: RangeInclusive<Duration>,
}

impl Default for Repertoire {
    fn default() -> Self {
        Repertoire {
            tools: Vec::new(),
            user_lines: [
                "Hello, can you help me?",
                "Yes, please go ahead.",
                "What did you find?",
                "Merci, c'est parfait.",
                "And one more thing.",
            ]
            .map(String::from)
            .to_vec(),
            model_lines: [
                "Sure, let me look into that.",
                "Here is what I found.",
                "Done. Anything else?",
                "Ça marche, c'est noté.",
            ]
            .map(String::from)
            .to_vec(),
            turns: 1..=20,
            pauses: Duration::from_millis(200)..=Duration::from_millis(3000),
            call_chance: 0.6,
            resumption: Resumption::off(),
            manual_activity: false,
        }
    }
}

impl Repertoire {
    /// The repertoire for a session's `setup` message: its declared tools
    /// (with their parameter schemas), whether it asks for resumption (and
    /// transparent resumption), and the default lines.
    pub fn from_setup(setup: &Value) -> Repertoire {
        let resumption = match setup.at("/setup/sessionResumption") {
            Some(field) if field.is_object() => Resumption::on()
                .transparent(field.get("transparent").and_then(Value::as_bool) == Some(true)),
            _ => Resumption::off(),
        };
        let tools = setup
            .at("/setup/tools")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|t| t.get("functionDeclarations").and_then(Value::as_array))
            .flatten()
            .filter_map(|declaration| {
                Some(ToolModel {
                    name: declaration.get("name")?.as_str()?.to_string(),
                    parameters: declaration.get("parameters").cloned(),
                    examples: Vec::new(),
                    latency: Duration::ZERO..=Duration::from_millis(100),
                })
            })
            .collect();
        let manual_activity = setup
            .at("/setup/realtimeInputConfig/automaticActivityDetection/disabled")
            .and_then(Value::as_bool)
            == Some(true);
        Repertoire {
            tools,
            resumption,
            manual_activity,
            ..Repertoire::default()
        }
    }
}
