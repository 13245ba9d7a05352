//! Scripts: what a scripted server says, as data.
//!
//! A [`ScriptedServer`] is a list of [`Action`]s: server messages to send,
//! tool calls to make (each waits for its answer before the script goes
//! on, as a real model waits for a tool's result), pauses, and endings
//! (a close with a code, an abrupt drop). It serializes to and from JSON,
//! so soak findings and fixtures are files:
//!
//! ```json
//! {"v": 1, "name": "weather", "settle_ms": 200, "actions": [
//!   {"send": {"serverContent": {"inputTranscription": {"text": "What's the weather in Paris?", "finished": true}}}},
//!   {"call": {"id": "call-1", "name": "get_weather", "args": {"city": "Paris"}}},
//!   {"send": {"serverContent": {"modelTurn": {"parts": [{"text": "It is sunny in Paris."}]}}}},
//!   {"send": {"serverContent": {"turnComplete": true}}}
//! ]}
//! ```
//!
//! Every action and key, and what a damaged script gives: `docs/formats/script.md`.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::flow::json_position::{JsonPath, position};
use crate::wire::{MAX_CLOSE_REASON, codes};

/// The version of the script file format.
pub const SCRIPT_VERSION: u32 = 1;

/// One step of a script.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Send this server message (a JSON object) in a binary frame, as the
    /// Live service does, or a text frame when `text` is set.
    Send(Value),
    /// Send this JSON in a text frame (any JSON: a non-object makes a
    /// malformed frame).
    SendText(Value),
    /// Send these raw bytes (base64) as a binary frame: malformed frames.
    SendRaw(String),
    /// Call a tool, then wait for the session's answer (or the script's own
    /// cancellation of the call) before going on.
    Call(Call),
    /// Call several tools in one `toolCall` message, then wait for every
    /// answer.
    CallMany(Vec<Call>),
    /// Wait this long (virtual time under simulation) before going on.
    PauseMs(u64),
    /// Wait until the session sends a message with this top-level key
    /// (`clientContent`, `realtimeInput` or `contextUpdate`), or, written
    /// `key.member`, a message with that key whose body holds `member`
    /// (`realtimeInput.audio`, `realtimeInput.activityStart`).
    Expect(String),
    /// Close the connection with a close frame.
    Close(CloseAction),
    /// Answer the session's setup with this close instead of
    /// `setupComplete` (only as the first action, or the first after a
    /// `reconnect`). After a `reconnect` the client began while its
    /// connection was still open (a `goAway` move), the refusal ends
    /// only the new connection: the script goes on on the old one, which
    /// ends as its `goAway` said, and the next `reconnect` is the
    /// connection after it.
    RejectSetup(CloseAction),
    /// Drop the connection without a close frame (seen as 1006).
    Abort,
    /// Send `sessionResumptionUpdate`: a handle the session may resume
    /// from, or news that it cannot resume now.
    ResumptionUpdate(ResumptionUpdate),
    /// Send `goAway` with this much time left (ms): the connection will
    /// end then, and the session should move to a new one before.
    GoAwayMs(u64),
    /// The next connection starts here. The current one ends first: the
    /// script's own `close` or `abort`, or the client leaving it (after a
    /// `go_away`, say); the client may open the new one before it leaves
    /// the old (make-before-break). The new connection's setup must
    /// resume `handle`, or carry no handle when there is none (a fresh
    /// session). Calls issued on earlier connections are over: the
    /// script no longer waits for their answers, and an answer on the new
    /// connection is an error (call ids belong to their connection).
    Reconnect(Reconnect),
    /// The next JSON message the script sends (by `send`, `send_text`,
    /// `call`, `call_many`, `go_away_ms` or `resumption_update`) carries
    /// these members too, next to its own: usage on a tool call, say, which
    /// the protocol allows on any server message. A member the message has
    /// already is replaced. If the connection ends first, they ride on the
    /// first message the script sends on the next (never on its
    /// `setupComplete`).
    Attach(serde_json::Map<String, Value>),
}

/// A `sessionResumptionUpdate` a script sends.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct ResumptionUpdate {
    /// The new handle (any string the script picks; a later `reconnect`
    /// names it). Absent: an update without a handle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handle: Option<String>,
    /// Whether the session can be resumed from here (default true).
    #[serde(default = "waits", skip_serializing_if = "is_true")]
    pub resumable: bool,
    /// Also send `lastConsumedClientMessageIndex` (transparent
    /// resumption): how many client messages (setups not counted) the
    /// server has consumed so far in the session.
    #[serde(default, skip_serializing_if = "is_false")]
    pub transparent: bool,
    /// How many of the latest client messages the server received are not
    /// yet in the handle's state (transparent resumption only): the index
    /// it reports leaves them out, so a session resuming this handle must
    /// replay them too. The service processes messages as it can; a handle
    /// issued while some are still queued lags behind.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub behind: usize,
}

// Read from an object only, never from an array of its fields.
crate::jsonl::object_record!(ResumptionUpdate, "a resumption update");

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// What the next connection of a script must open with.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct Reconnect {
    /// The handle its setup must resume; absent: a setup without a handle
    /// (a fresh session).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handle: Option<String>,
}

// Read from an object only, never from an array of its fields.
crate::jsonl::object_record!(Reconnect, "a reconnect");

fn is_false(b: &bool) -> bool {
    !*b
}

/// A tool call a script makes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct Call {
    /// The call's id (`call-1`, `call-2`, … from the builder methods).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments.
    #[serde(default)]
    pub args: Value,
    /// Whether the script waits for the answer before its next action
    /// (what a real model does; default true).
    #[serde(default = "waits", skip_serializing_if = "is_true")]
    pub wait: bool,
}

// Read from an object only, never from an array of its fields.
crate::jsonl::object_record!(Call, "a tool call");

fn waits() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

/// How a script closes the connection.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct CloseAction {
    /// The close code: one a close frame may carry (1000–1003, 1007–1013,
    /// 3000–4999; see [`codes::sendable`]).
    pub code: u16,
    /// The reason, at most 123 bytes of UTF-8 (a close frame's payload is
    /// at most 125 bytes, two of them the code).
    #[serde(default)]
    pub reason: String,
}

// Read from an object only, never from an array of its fields.
crate::jsonl::object_record!(CloseAction, "a close");

impl CloseAction {
    /// Why this close cannot be sent as written, if it cannot.
    fn check(&self) -> Result<(), String> {
        if !codes::sendable(self.code) {
            return Err(format!(
                "close code {} cannot be sent in a close frame (use 1000-1003, 1007-1013 or 3000-4999; `abort` drops the connection without one)",
                self.code
            ));
        }
        if self.reason.len() > MAX_CLOSE_REASON {
            return Err(format!(
                "the close reason is {} bytes; a close frame carries at most {MAX_CLOSE_REASON}",
                self.reason.len()
            ));
        }
        Ok(())
    }
}

/// A script file: versioned, named, with its settle window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptFile {
    v: u32,
    #[serde(default = "default_name")]
    name: String,
    #[serde(default = "default_settle_ms")]
    settle_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    session_id: Option<String>,
    /// Kinds of client message taken whenever they come (`stream.rs`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    stream: Vec<String>,
    /// A seeds-corpus entry is a script with this member too (which agent,
    /// seed and invariant it failed); the soak reads and checks it, a
    /// script player ignores it.
    #[serde(default, skip_serializing)]
    regression: Option<Value>,
    actions: Vec<Action>,
}

fn default_name() -> String {
    "script".to_string()
}

fn default_settle_ms() -> u64 {
    200
}

/// Why a script could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The file could not be read or written.
    #[error("script {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// What the system said.
        source: std::io::Error,
    },
    /// The JSON is not a script.
    #[error("script {origin}: {message}")]
    Invalid {
        /// The file or source it came from.
        origin: String,
        /// What was wrong, with line and column.
        message: String,
    },
}

/// A scripted stand-in for the Live server.
///
/// Each builder method appends one server message (or a call, which waits
/// for its answer). See the module docs for the JSON form.
#[derive(Clone, Debug, PartialEq)]
pub struct ScriptedServer {
    pub(crate) name: String,
    // Shared: a soak clones a script for every run and keeps one in its
    // record; building it copies on write.
    pub(crate) actions: Arc<Vec<Action>>,
    pub(crate) settle: Duration,
    pub(crate) cap: Duration,
    pub(crate) lenient: bool,
    pub(crate) crossing: bool,
    /// The id every `setupComplete` carries (`sessionId`), if any.
    pub(crate) session_id: Option<String>,
    /// Kinds of client message taken whenever they come (`stream.rs`).
    pub(crate) stream: Vec<String>,
    next_call: u32,
}

impl Default for ScriptedServer {
    fn default() -> Self {
        Self::new()
    }
}

impl ScriptedServer {
    /// An empty script (the setup handshake is implied).
    pub fn new() -> Self {
        ScriptedServer {
            name: default_name(),
            actions: Arc::new(Vec::new()),
            settle: Duration::from_millis(default_settle_ms()),
            cap: Duration::from_secs(30),
            lenient: false,
            crossing: false,
            session_id: None,
            stream: Vec::new(),
            next_call: 0,
        }
    }

    /// Names the script (errors and reports use the name).
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The script's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Every `setupComplete` says `{"sessionId": id}`, as Vertex AI's Live
    /// endpoint does (Google AI sends `{}`, the default).
    ///
    /// ```
    /// use livesim::testing::ScriptedServer;
    ///
    /// let script = ScriptedServer::new().session_id("sess-42");
    /// assert_eq!(script.to_json()["session_id"], "sess-42");
    /// ```
    pub fn session_id(mut self, id: impl Into<String>) -> Self {
        self.session_id = Some(id.into());
        self
    }

    /// The script's actions, in order.
    pub fn actions(&self) -> &[Action] {
        &self.actions
    }

    /// Appends an action.
    pub fn action(mut self, action: Action) -> Self {
        if let Action::Call(call) = &action {
            self.bump_call_ids(call);
        }
        if let Action::CallMany(calls) = &action {
            for call in calls {
                self.bump_call_ids(call);
            }
        }
        Arc::make_mut(&mut self.actions).push(action);
        self
    }

    fn bump_call_ids(&mut self, call: &Call) {
        if let Some(n) = call
            .id
            .strip_prefix("call-")
            .and_then(|n| n.parse::<u32>().ok())
        {
            self.next_call = self.next_call.max(n);
        }
    }

    fn send(self, message: Value) -> Self {
        self.action(Action::Send(message))
    }

    /// Model text; the turn stays open.
    pub fn text(self, text: impl Into<String>) -> Self {
        self.send(
            json!({ "serverContent": { "modelTurn": { "parts": [{ "text": text.into() }] } } }),
        )
    }

    /// The model ends its turn.
    pub fn turn_complete(self) -> Self {
        self.send(json!({ "serverContent": { "turnComplete": true } }))
    }

    /// `text(t)` followed by `turn_complete()`.
    pub fn says(self, text: impl Into<String>) -> Self {
        self.text(text).turn_complete()
    }

    /// Input transcription: the user said `text`.
    pub fn hears(self, text: impl Into<String>) -> Self {
        self.send(json!({
            "serverContent": { "inputTranscription": { "text": text.into(), "finished": true } }
        }))
    }

    /// Output transcription of the model's speech.
    pub fn speaks(self, text: impl Into<String>) -> Self {
        self.send(json!({ "serverContent": { "outputTranscription": { "text": text.into() } } }))
    }

    /// Puts `member` on the next message the script sends, beside what
    /// that message carries: usage on a tool call's own frame, say, which
    /// the service may send and a session must not lose.
    ///
    /// ```
    /// use livesim::testing::{Action, ScriptedServer};
    /// use serde_json::json;
    ///
    /// let script = ScriptedServer::new()
    ///     .attaches("usageMetadata", json!({ "totalTokenCount": 120 }))
    ///     .calls("get_weather", json!({ "city": "Paris" }));
    /// assert!(matches!(&script.actions()[0], Action::Attach(m) if m.contains_key("usageMetadata")));
    /// ```
    pub fn attaches(self, member: impl Into<String>, value: Value) -> Self {
        let mut members = serde_json::Map::new();
        members.insert(member.into(), value);
        self.action(Action::Attach(members))
    }

    /// A tool call; ids are `call-1`, `call-2`, … in script order. The
    /// script waits for the answer before its next action.
    pub fn calls(self, name: impl Into<String>, args: Value) -> Self {
        self.call(name.into(), args, true)
    }

    /// A tool call the script does not wait for: the next actions follow
    /// at once (to cancel it, or to interrupt while it runs).
    pub fn calls_without_waiting(self, name: impl Into<String>, args: Value) -> Self {
        self.call(name.into(), args, false)
    }

    fn call(mut self, name: String, args: Value, wait: bool) -> Self {
        self.next_call += 1;
        let id = format!("call-{}", self.next_call);
        self.action(Action::Call(Call {
            id,
            name,
            args,
            wait,
        }))
    }

    /// Cancels earlier calls (`toolCallCancellation`): the session must
    /// not answer them afterwards.
    pub fn cancels<I, S>(self, ids: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let ids: Vec<String> = ids.into_iter().map(Into::into).collect();
        self.send(json!({ "toolCallCancellation": { "ids": ids } }))
    }

    /// The model's turn was interrupted.
    pub fn interrupts(self) -> Self {
        self.send(json!({ "serverContent": { "interrupted": true } }))
    }

    /// Any raw server message the helpers do not cover, in the Live API
    /// wire format.
    pub fn frame(self, message: Value) -> Self {
        self.send(message)
    }

    /// Waits `d` before the next action.
    pub fn pause(self, d: Duration) -> Self {
        self.action(Action::PauseMs(d.as_millis() as u64))
    }

    /// Waits until the session sends a message with this top-level key
    /// (`clientContent`), or with that key and a body holding a member
    /// (`realtimeInput.audio`).
    pub fn expects(self, key: impl Into<String>) -> Self {
        self.action(Action::Expect(key.into()))
    }

    /// Closes the connection with `code` and `reason`.
    pub fn close(self, code: u16, reason: impl Into<String>) -> Self {
        self.action(Action::Close(CloseAction {
            code,
            reason: reason.into(),
        }))
    }

    /// Answers setup with a close instead of `setupComplete`, as the
    /// service does for a bad key or an unknown model.
    pub fn rejects_setup(self, code: u16, reason: impl Into<String>) -> Self {
        self.action(Action::RejectSetup(CloseAction {
            code,
            reason: reason.into(),
        }))
    }

    /// Drops the connection without a close frame.
    pub fn abort(self) -> Self {
        self.action(Action::Abort)
    }

    /// A `sessionResumptionUpdate` with `handle`: resumable (`true`) or
    /// not. The session keeps only a resumable, non-empty handle.
    pub fn resumption_update(self, handle: impl Into<String>, resumable: bool) -> Self {
        self.action(Action::ResumptionUpdate(ResumptionUpdate {
            handle: Some(handle.into()),
            resumable,
            transparent: false,
            behind: 0,
        }))
    }

    /// A resumable `sessionResumptionUpdate` with `handle` and
    /// `lastConsumedClientMessageIndex` (transparent resumption): the
    /// session replays every message the server had not consumed.
    pub fn resumption_update_transparent(self, handle: impl Into<String>) -> Self {
        self.resumption_update_behind(handle, 0)
    }

    /// A transparent `sessionResumptionUpdate` whose
    /// `lastConsumedClientMessageIndex` leaves out the latest `behind`
    /// client messages the server received (it had not processed them):
    /// a session resuming `handle` replays them as well as what came after.
    ///
    /// ```
    /// use livesim::testing::ScriptedServer;
    ///
    /// let script = ScriptedServer::new()
    ///     .expects("clientContent")
    ///     .resumption_update_behind("h-1", 1)
    ///     .close(1011, "restarting")
    ///     .reconnect_resuming("h-1")
    ///     .expects("clientContent");
    /// assert_eq!(script.actions().len(), 5);
    /// ```
    pub fn resumption_update_behind(self, handle: impl Into<String>, behind: usize) -> Self {
        self.action(Action::ResumptionUpdate(ResumptionUpdate {
            handle: Some(handle.into()),
            resumable: true,
            transparent: true,
            behind,
        }))
    }

    /// `goAway`: the server will end the connection in `time_left`.
    pub fn go_away(self, time_left: Duration) -> Self {
        self.action(Action::GoAwayMs(time_left.as_millis() as u64))
    }

    /// The next connection, which must resume `handle` (one a resumable
    /// `resumption_update` issued). See [`Action::Reconnect`].
    pub fn reconnect_resuming(self, handle: impl Into<String>) -> Self {
        self.action(Action::Reconnect(Reconnect {
            handle: Some(handle.into()),
        }))
    }

    /// The next connection, which must open a fresh session (a setup
    /// without a handle), as after `1008 session not found`.
    pub fn reconnect_fresh(self) -> Self {
        self.action(Action::Reconnect(Reconnect { handle: None }))
    }

    /// Whether the script spans more than one connection.
    pub fn spans_connections(&self) -> bool {
        self.actions
            .iter()
            .any(|a| matches!(a, Action::Reconnect(_)))
    }

    /// Whether the script sends resumption updates (so the session's
    /// setup must ask for them).
    pub fn uses_resumption(&self) -> bool {
        self.actions
            .iter()
            .any(|a| matches!(a, Action::ResumptionUpdate(_) | Action::Reconnect(_)))
    }

    /// How long a run must be quiet to count as settled (200 ms default;
    /// at least a millisecond, so virtual time can move on).
    pub fn settle_after(mut self, window: Duration) -> Self {
        self.settle = window;
        self
    }

    /// Accepts client content (`clientContent`, `realtimeInput`) the script
    /// does not expect, instead of failing the run: for sessions that
    /// stream audio the script does not model.
    pub fn lenient(mut self) -> Self {
        self.lenient = true;
        self
    }

    /// Tolerates an answer to a call the script has cancelled: over a real
    /// connection the session's answer and the cancellation can cross in
    /// flight, so the answer proves nothing. Such answers are recorded
    /// ([`ReplayControl::late_answers`](super::ReplayControl::late_answers))
    /// instead of failing the run; the soak checks the session's own order
    /// (no answer after it handled the cancellation) instead. A second
    /// answer, or one to a call never issued, is still an error.
    pub fn answers_may_cross_cancellations(mut self) -> Self {
        self.crossing = true;
        self
    }

    /// The longest a run waits to settle (30 s default; `Duration::MAX`:
    /// as long as it takes).
    pub fn settle_cap(mut self, cap: Duration) -> Self {
        self.cap = cap;
        self
    }

    /// The script as JSON.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(ScriptFile {
            v: SCRIPT_VERSION,
            name: self.name.clone(),
            settle_ms: self.settle.as_millis() as u64,
            session_id: self.session_id.clone(),
            stream: self.stream.clone(),
            regression: None,
            actions: self.actions.to_vec(),
        })
        .unwrap_or(Value::Null)
    }

    /// Reads a script from JSON text; `origin` names it in errors.
    pub fn from_json_str(text: &str, origin: &str) -> Result<Self, ScriptError> {
        let invalid = |message: String| ScriptError::Invalid {
            origin: origin.to_string(),
            message,
        };
        if let Some(problem) = crate::jsonl::bom(text.as_bytes()) {
            return Err(invalid(problem));
        }
        // serde reads a struct from a list too, by position: a script is
        // an object, and anything else is named as what it is.
        match text.trim_start().as_bytes().first() {
            Some(b'{') | None => {}
            Some(_) => {
                return Err(invalid(
                    "a script is a JSON object ({\"v\": 1, \"actions\": [...]}), not a list, a string or a number"
                        .to_string(),
                ));
            }
        }
        let file: ScriptFile =
            serde_json::from_str(text).map_err(|e| invalid(crate::jsonl::explain(text, &e)))?;
        // A server message may say a key twice, and `Value` would keep
        // only the last: refused, as a typo is.
        if let Some(problem) = crate::jsonl::duplicate_key(text) {
            return Err(invalid(problem));
        }
        if file.v != SCRIPT_VERSION {
            return Err(invalid(format!(
                "version {} is not supported (this livesim reads version {SCRIPT_VERSION})",
                file.v
            )));
        }
        let mut script = ScriptedServer::new()
            .named(file.name)
            .settle_after(Duration::from_millis(file.settle_ms));
        script.session_id = file.session_id;
        for (i, kind) in file.stream.iter().enumerate() {
            super::stream::check(kind).map_err(|e| {
                let place = place(text, &JsonPath::default().key("stream").index(i));
                invalid(format!("stream entry #{}{place}: {e}", i + 1))
            })?;
        }
        script.stream = file.stream;
        check_actions(&file.actions).map_err(|(i, e)| {
            // The action's own line, which a long script needs more than
            // its number.
            let place = place(text, &JsonPath::default().key("actions").index(i));
            invalid(format!("action #{}{place}: {e}", i + 1))
        })?;
        for action in file.actions {
            script = script.action(action);
        }
        Ok(script)
    }

    /// Reads a script file.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, ScriptError> {
        let path = path.as_ref();
        let origin = path.display().to_string();
        let text = crate::jsonl::read_text_file(path).map_err(|e| match e {
            crate::jsonl::TextFileError::Io(source) => ScriptError::Io {
                path: origin.clone(),
                source,
            },
            crate::jsonl::TextFileError::Content(message) => ScriptError::Invalid {
                origin: origin.clone(),
                message,
            },
        })?;
        Self::from_json_str(&text, &origin)
    }

    /// Writes the script to a file, pretty-printed.
    ///
    /// # Errors
    /// A script the file reader would refuse (the builder takes any
    /// action: an empty `call_many`, a handle that is empty) is not
    /// written, so every saved script loads back.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), ScriptError> {
        let path = path.as_ref();
        check_actions(&self.actions).map_err(|(i, e)| ScriptError::Invalid {
            origin: path.display().to_string(),
            message: format!(
                "action #{}: {e}; not written, since a script file must load back",
                i + 1
            ),
        })?;
        let mut text = serde_json::to_string_pretty(&self.to_json()).unwrap_or_default();
        text.push('\n');
        std::fs::write(path, text).map_err(|source| ScriptError::Io {
            path: path.display().to_string(),
            source,
        })
    }
}

/// Checks each action as a script file's reader does, in order (what
/// may open a connection, which handles were issued before): the first
/// wrong one's index and what is wrong with it.
fn check_actions(actions: &[Action]) -> Result<(), (usize, String)> {
    let mut issued = Vec::new();
    let mut opens_connection = true;
    for (i, action) in actions.iter().enumerate() {
        validate(action, opens_connection, &issued).map_err(|e| (i, e))?;
        if let Action::ResumptionUpdate(ResumptionUpdate {
            handle: Some(handle),
            resumable: true,
            ..
        }) = action
        {
            issued.push(handle.clone());
        }
        opens_connection = matches!(action, Action::Reconnect(_));
    }
    Ok(())
}

/// ` at line L, column C` of `path` in `text`, or nothing if it is not there.
fn place(text: &str, path: &JsonPath) -> String {
    position(text, path).map_or_else(String::new, |(line, column)| {
        format!(" at line {line}, column {column}")
    })
}

/// Checks one action: `opens_connection` when it is the first of a
/// connection, `issued` the resumable handles issued before it.
fn validate(action: &Action, opens_connection: bool, issued: &[String]) -> Result<(), String> {
    match action {
        Action::Send(message) if !message.is_object() => Err(format!(
            "a server message must be a JSON object, not {message}"
        )),
        Action::Call(call) if call.id.is_empty() || call.name.is_empty() => {
            Err("a call needs an id and a name".to_string())
        }
        Action::CallMany(calls) if calls.is_empty() => Err("call_many needs calls".to_string()),
        Action::CallMany(calls) => match calls
            .iter()
            .position(|call| call.id.is_empty() || call.name.is_empty())
        {
            Some(k) => Err(format!(
                "call #{} of call_many: a call needs an id and a name",
                k + 1
            )),
            None => Ok(()),
        },
        Action::Attach(members) if members.is_empty() => {
            Err("attach needs at least one member to attach".to_string())
        }
        Action::RejectSetup(_) if !opens_connection => Err(
            "reject_setup can only be the first action, or the first after a reconnect".to_string(),
        ),
        // Handles are secrets: errors name where they come from, never them.
        Action::Reconnect(Reconnect {
            handle: Some(handle),
        }) if !issued.contains(handle) => Err(
            "reconnect resumes a handle that no earlier resumable resumption_update issues"
                .to_string(),
        ),
        Action::ResumptionUpdate(ResumptionUpdate {
            handle: Some(handle),
            ..
        }) if handle.is_empty() => Err(
            "resumption_update's handle is empty (leave it out for an update without one)"
                .to_string(),
        ),
        Action::ResumptionUpdate(ResumptionUpdate {
            transparent: false,
            behind: 1..,
            ..
        }) => Err(
            "resumption_update's behind counts unprocessed messages in a transparent update's index: set transparent, or leave behind out"
                .to_string(),
        ),
        Action::Expect(wanted) => super::expects::check(wanted),
        Action::Close(close) | Action::RejectSetup(close) => close.check(),
        Action::SendRaw(bytes) => {
            use base64::Engine as _;
            base64::engine::general_purpose::STANDARD
                .decode(bytes)
                .map(|_| ())
                .map_err(|e| format!("send_raw must be base64: {e}"))
        }
        _ => Ok(()),
    }
}
