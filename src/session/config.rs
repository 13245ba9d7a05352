//! Everything a session is configured with, as the lanes read it.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::bus::EventCallback;
use super::extractors::Extractor;
use super::phases::Phases;
use super::resumption::Resumption;
use super::temporal::TemporalPattern;
use crate::compose::tools::ToolComposite;
use crate::flow::{CompiledConversation, Enforcement, FlowSpec};
use crate::state::State;
use crate::wire::Redactor;

/// A callback run on the control lane when a watched state key changes:
/// (key, old value, new value, state).
pub type WatchCallback = Arc<dyn Fn(&str, Option<&Value>, &Value, &State) + Send + Sync>;

/// Response modality: the Live API allows exactly one per session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Modality {
    /// Spoken answers (with an output transcription).
    Audio,
    /// Text answers.
    Text,
}

/// The session's configuration, shared by its lanes.
#[derive(Clone)]
pub(crate) struct SessionConfig {
    pub model: String,
    pub instruction: Option<String>,
    pub modality: Modality,
    pub tools: ToolComposite,
    pub setup_timeout: Duration,
    pub budget: Duration,
    pub signal_interval: Duration,
    pub phases: Option<Phases>,
    pub patterns: Vec<TemporalPattern>,
    pub watchers: Vec<(String, WatchCallback)>,
    pub callbacks: Vec<EventCallback>,
    pub extra_setup: serde_json::Map<String, Value>,
    pub governance: Option<Governance>,
    pub extractors: Vec<Arc<dyn Extractor>>,
    pub resumption: Resumption,
    /// Knows the session's own secrets (its API key), to scrub from
    /// whatever the server sends.
    pub redactor: Redactor,
    /// The planted bug this session carries (see `session/planted.rs`);
    /// test builds only.
    #[cfg(feature = "planted-bug")]
    pub planted: Option<super::PlantedBug>,
}

/// The flow a session is governed by.
#[derive(Clone)]
pub(crate) struct Governance {
    pub spec: Arc<FlowSpec>,
    pub enforcement: Enforcement,
    /// Set when the flow comes from a conversation: its slot resolvers.
    pub conversation: Option<Arc<CompiledConversation>>,
}

impl SessionConfig {
    pub fn new() -> Self {
        SessionConfig {
            model: DEFAULT_MODEL.to_string(),
            instruction: None,
            modality: Modality::Audio,
            tools: ToolComposite::new(),
            setup_timeout: Duration::from_secs(15),
            budget: Duration::from_secs(15 * 60),
            signal_interval: Duration::from_millis(500),
            phases: None,
            patterns: Vec::new(),
            watchers: Vec::new(),
            callbacks: Vec::new(),
            extra_setup: serde_json::Map::new(),
            governance: None,
            extractors: Vec::new(),
            resumption: Resumption::off(),
            redactor: Redactor::new(),
            #[cfg(feature = "planted-bug")]
            planted: None,
        }
    }
}

/// The model a session asks for unless told otherwise.
pub const DEFAULT_MODEL: &str = "gemini-live-2.5-flash-preview";

#[cfg(feature = "planted-bug")]
impl SessionConfig {
    /// Whether this session carries planted bug `bug`.
    pub(crate) fn planted(&self, bug: super::PlantedBug) -> bool {
        self.planted == Some(bug)
    }
}
