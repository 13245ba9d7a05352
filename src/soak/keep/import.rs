//! Production sessions as seeds: a recorded wire log (what the recording
//! transport writes) turned into a script the scripted server plays, so a
//! session seen in production replays, soaks and shrinks like a generated
//! one.
//!
//! What the server sent becomes the script's actions, in order, with the
//! recorded pauses between them: model content and everything else as
//! sent, tool calls as calls (waited for when the recording shows the
//! session answered before the server spoke again), `goAway` as a goAway,
//! resumption updates as updates, closes as closes, a transport error as an
//! abort, a later setup as the next connection. What the session sent
//! becomes what the script waits for (`clientContent`,
//! `realtimeInput.audio`, …); its tool answers are what a call waits for.
//!
//! Nothing secret survives: resumption handles become `handle-1`,
//! `handle-2`, … (one per distinct handle, the same for the update that
//! gave it and the setup that resumed it). A damaged line is skipped and
//! named (file, line, what is wrong); every good frame is kept.

use crate::wire::JsonPath;
use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::import_lines::{self, Kind, Lines};
use crate::testing::{Action, Call, CloseAction, Reconnect, ResumptionUpdate, ScriptedServer};
use crate::transport::wire_log::{Direction, FrameLine, LineType, WIRE_LOG_KIND};
use crate::wire::{MAX_CLOSE_REASON, camel_case, codes, truncate_at_char};

/// A script made from a wire log, and what could not be read of it.
#[derive(Clone, Debug)]
pub struct Imported {
    /// The script.
    pub script: ScriptedServer,
    /// Frames read from the log (a journal's entries).
    pub frames: usize,
    /// Each damaged line: `file:line: what is wrong`. The frames around it
    /// were kept.
    pub damaged: Vec<String>,
    /// Distinct resumption handles replaced by `handle-N` (for a journal:
    /// the handles the script gives for the resumptions it recorded).
    pub handles: usize,
    /// What the script could not reproduce as recorded, one line each.
    pub notes: Vec<String>,
}

/// Reads wire log `bytes` (named `file` in messages) into a script named
/// `name`. `Err` only when nothing usable is there: no frame at all.
///
/// ```
/// use livesim::soak::import_wire_log;
///
/// let log = br#"{"v":1,"kind":"wire_log","started_at_ms":0}
/// {"dir":"out","t_ms":0,"type":"text","json":{"setup":{"model":"models/m"}}}
/// {"dir":"in","t_ms":40,"type":"binary","json":{"setupComplete":{}}}
/// {"dir":"out","t_ms":50,"type":"text","json":{"clientContent":{"turnComplete":true}}}
/// this line is damaged
/// {"dir":"in","t_ms":300,"type":"binary","json":{"sessionResumptionUpdate":{"newHandle":"SECRET","resumable":true}}}
/// "#;
/// let imported = import_wire_log("prod.jsonl", log, "prod").unwrap();
/// assert_eq!(imported.damaged, ["prod.jsonl:5: not a wire log line: expected ident at line 1 column 2"]);
/// let text = imported.script.to_json().to_string();
/// assert!(text.contains("handle-1") && !text.contains("SECRET"));
/// ```
pub fn import_wire_log(file: &str, bytes: &[u8], name: &str) -> Result<Imported, String> {
    let kind = Kind {
        header: WIRE_LOG_KIND,
        file: "wire log",
        line: "wire log line",
        item: "frame",
        writer: "recorder",
    };
    let Lines {
        items: frames,
        mut damaged,
        header_seen,
    } = import_lines::read::<FrameLine>(file, bytes, &kind)?;
    if !header_seen {
        damaged.insert(
            0,
            format!("{file}: no header line; the frames were read anyway"),
        );
    }
    let mut handles = Handles::default();
    let script = script_of(&frames, name, &mut handles);
    // A handle quoted anywhere (a close reason, a model's text) becomes
    // its placeholder too; then the script is read back as a file would
    // be, so what is saved is always a script livesim can play.
    let mut json = script.to_json();
    hide_handles(&mut json, &handles.placeholders);
    let script = ScriptedServer::from_json_str(&json.to_string(), file)
        .map_err(|e| format!("{file}: the script made from this wire log cannot be played: {e}"))?;
    Ok(Imported {
        script,
        frames: frames.len(),
        damaged,
        handles: handles.placeholders.len(),
        notes: handles.notes,
    })
}

/// Every known handle, in every string of `value`, replaced by its
/// placeholder.
fn hide_handles(value: &mut Value, placeholders: &BTreeMap<String, String>) {
    match value {
        Value::String(text) => {
            for (handle, placeholder) in placeholders {
                if text.contains(handle.as_str()) {
                    *text = text.replace(handle.as_str(), placeholder);
                }
            }
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|item| hide_handles(item, placeholders)),
        Value::Object(map) => map
            .values_mut()
            .for_each(|item| hide_handles(item, placeholders)),
        _ => {}
    }
}

/// What the import follows of the session's resumption: each handle seen,
/// with the placeholder it becomes, and (transparent resumption) how many
/// content messages the server had received, so an update says how far its
/// consumed index lags behind and a resumed connection's replays are not
/// taken for new messages.
#[derive(Default)]
struct Handles {
    placeholders: BTreeMap<String, String>,
    /// Content messages the server holds in this session.
    received: usize,
    /// The consumed index each placeholder came with.
    index_of: BTreeMap<String, usize>,
    /// Replays the resumed connection still owes.
    replays_due: usize,
    /// The placeholders of handles a resumable update issued.
    issued: BTreeSet<String>,
    /// What the import changed, for the user to read.
    notes: Vec<String>,
}

impl Handles {
    fn placeholder(&mut self, handle: &str) -> String {
        let next = self.placeholders.len() + 1;
        self.placeholders
            .entry(handle.to_string())
            .or_insert_with(|| format!("handle-{next}"))
            .clone()
    }

    /// A setup on a later connection, resuming `handle` or starting fresh.
    fn opened(&mut self, handle: Option<&str>) {
        match handle.map(|h| self.index_of.get(h).copied()) {
            Some(Some(index)) => {
                self.replays_due = self.received.saturating_sub(index);
                self.received = index;
            }
            // Without a consumed index nothing is replayed.
            Some(None) => self.replays_due = 0,
            None => (self.received, self.replays_due) = (0, 0),
        }
    }

    /// A content message the session sent: whether it is new (not a
    /// replay the resumed connection owed).
    fn content(&mut self) -> bool {
        self.received += 1;
        if self.replays_due > 0 {
            self.replays_due -= 1;
            return false;
        }
        true
    }
}

fn script_of(frames: &[FrameLine], name: &str, handles: &mut Handles) -> ScriptedServer {
    let mut script = ScriptedServer::new().named(name);
    // A script's pause starts when its last step did: the server's last
    // frame, or the client's message an `expect` or a call waited for.
    let mut last_at: Option<u64> = None;
    let mut setups = 0;
    for (k, frame) in frames.iter().enumerate() {
        let json = frame.json.as_ref();
        match frame.dir {
            Direction::Out => {
                let Some(message) = json.and_then(Value::as_object) else {
                    continue;
                };
                if last_at.is_some() {
                    last_at = Some(frame.t_ms);
                }
                if let Some(setup) = message.get("setup") {
                    setups += 1;
                    if setups > 1 {
                        let mut handle = setup
                            .at("/sessionResumption/handle")
                            .or_else(|| setup.at("/session_resumption/handle"))
                            .and_then(Value::as_str)
                            .map(|h| handles.placeholder(h));
                        // A script resumes only what it issued: a log that
                        // begins mid-session has the resume start afresh.
                        if let Some(unissued) = handle.take_if(|h| !handles.issued.contains(h)) {
                            handles.notes.push(format!(
                                "frame {}: the setup resumes {unissued}, which no resumable update \
                                 in this log issued; the script starts a fresh session there",
                                k + 1
                            ));
                        }
                        handles.opened(handle.as_deref());
                        script = script.action(Action::Reconnect(Reconnect { handle }));
                        last_at = None;
                    }
                    continue;
                }
                // Tool answers are what calls wait for; the rest is what
                // the script waits for the session to send. (Google's
                // Python SDK writes the top-level keys in snake_case.)
                if message.contains_key("toolResponse") || message.contains_key("tool_response") {
                    continue;
                }
                // A replay is what the script's server checks, not waits for.
                if !handles.content() {
                    continue;
                }
                if let Some((key, body)) = message.iter().next() {
                    let key = &camel_case(key);
                    let member = body
                        .as_object()
                        .and_then(|b| b.keys().find(|m| key == "realtimeInput" && !m.is_empty()));
                    let expect = match member {
                        Some(member) => format!("{key}.{}", camel_case(member)),
                        None => key.clone(),
                    };
                    script = script.action(Action::Expect(expect));
                }
            }
            Direction::In => {
                if let Some(before) = last_at
                    && frame.t_ms > before
                {
                    script = script.action(Action::PauseMs(frame.t_ms - before));
                }
                last_at = Some(frame.t_ms);
                if let Some(action) = server_action(frames, k, handles) {
                    if let Some(riders) = riders(&action, frame.json.as_ref()) {
                        script = script.action(Action::Attach(riders));
                    }
                    script = script.action(action);
                }
            }
        }
    }
    script
}

/// What rode on a frame beside the message an action rebuilds (usage on
/// a tool call, say): the action sends only its own member, so these are
/// attached to it rather than lost.
fn riders(action: &Action, message: Option<&Value>) -> Option<serde_json::Map<String, Value>> {
    let own = match action {
        Action::Call(_) | Action::CallMany(_) => "toolCall",
        Action::ResumptionUpdate(_) => "sessionResumptionUpdate",
        Action::GoAwayMs(_) => "goAway",
        _ => return None,
    };
    let riders: serde_json::Map<String, Value> = message?
        .as_object()?
        .iter()
        .filter(|(key, _)| key.as_str() != own)
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    (!riders.is_empty()).then_some(riders)
}

/// The action that sends what frame `k` (the server's) carried.
fn server_action(frames: &[FrameLine], k: usize, handles: &mut Handles) -> Option<Action> {
    let frame = &frames[k];
    match frame.line_type {
        LineType::Close => {
            let close = frame.close.as_ref()?;
            // A code no close frame carries (a log that wrote down 1006
            // for a lost connection) is a connection dropped; a reason
            // longer than a close frame holds is cut as the wire cuts it,
            // with a note (what was cut is not in the script).
            if !codes::sendable(close.code) {
                return Some(Action::Abort);
            }
            let reason = truncate_at_char(&close.reason, MAX_CLOSE_REASON);
            if reason.len() < close.reason.len() {
                handles.notes.push(format!(
                    "frame {}: the close reason is {} bytes, more than the {MAX_CLOSE_REASON} a \
                     close frame carries; the script closes with its first {} bytes",
                    k + 1,
                    close.reason.len(),
                    reason.len()
                ));
            }
            return Some(Action::Close(CloseAction {
                code: close.code,
                reason: reason.to_string(),
            }));
        }
        LineType::Error => return Some(Action::Abort),
        LineType::Text | LineType::Binary => {}
    }
    let Some(message) = frame.json.as_ref() else {
        // Not JSON: sent as it came, malformed frame and all.
        if let Some(bytes) = &frame.raw_base64 {
            return Some(Action::SendRaw(bytes.clone()));
        }
        return frame
            .raw
            .as_ref()
            .map(|raw| Action::SendText(Value::String(raw.clone())));
    };
    if message.get("setupComplete").is_some() {
        // The scripted server answers every setup itself.
        return None;
    }
    // A call list a script's `call` cannot say (empty, or a call without
    // an id or a name) is sent as it came.
    let playable = |c: &Value| {
        ["id", "name"].iter().all(|k| {
            c.get(*k)
                .and_then(Value::as_str)
                .is_some_and(|v| !v.is_empty())
        })
    };
    if let Some(calls) = message
        .at("/toolCall/functionCalls")
        .and_then(Value::as_array)
        .filter(|calls| !calls.is_empty() && calls.iter().all(playable))
    {
        let answered_before_next = |id: &str| {
            frames[k + 1..]
                .iter()
                .take_while(|f| f.dir == Direction::Out)
                .any(|f| {
                    f.json
                        .as_ref()
                        .and_then(|j| j.get("toolResponse").or_else(|| j.get("tool_response")))
                        .and_then(|r| {
                            r.get("functionResponses")
                                .or_else(|| r.get("function_responses"))
                        })
                        .and_then(Value::as_array)
                        .is_some_and(|rs| rs.iter().any(|r| r["id"] == id))
                })
        };
        let calls: Vec<Call> = calls
            .iter()
            .map(|c| {
                let id = c["id"].as_str().unwrap_or_default().to_string();
                Call {
                    wait: answered_before_next(&id),
                    name: c["name"].as_str().unwrap_or_default().to_string(),
                    args: c
                        .get("args")
                        .cloned()
                        .unwrap_or(Value::Object(Default::default())),
                    id,
                }
            })
            .collect();
        return Some(match <[Call; 1]>::try_from(calls) {
            Ok([call]) => Action::Call(call),
            Err(calls) => Action::CallMany(calls),
        });
    }
    if let Some(update) = message.get("sessionResumptionUpdate") {
        let handle = update
            .get("newHandle")
            .and_then(Value::as_str)
            .map(|h| handles.placeholder(h));
        let index = serde_json::from_value::<crate::wire::SessionResumptionUpdate>(update.clone())
            .ok()
            .and_then(|u| u.last_consumed_client_message_index)
            .map(|i| usize::try_from(i).unwrap_or(0));
        if let (Some(handle), Some(index)) = (&handle, index) {
            handles.index_of.insert(handle.clone(), index);
        }
        let resumable = update
            .get("resumable")
            .and_then(Value::as_bool)
            .unwrap_or(true);
        if let (Some(handle), true) = (&handle, resumable) {
            handles.issued.insert(handle.clone());
        }
        return Some(Action::ResumptionUpdate(ResumptionUpdate {
            handle,
            resumable,
            transparent: update.get("lastConsumedClientMessageIndex").is_some(),
            behind: index.map_or(0, |i| handles.received.saturating_sub(i)),
        }));
    }
    if let Some(left) = message.at("/goAway/timeLeft") {
        return Some(Action::GoAwayMs(time_left_ms(left)));
    }
    Some(Action::Send(message.clone()))
}

/// A `timeLeft` (`"50s"`, `"1.5s"`, or `{seconds, nanos}`) in ms.
fn time_left_ms(left: &Value) -> u64 {
    if let Some(text) = left.as_str() {
        let seconds: f64 = text.trim_end_matches('s').parse().unwrap_or(0.0);
        return (seconds * 1000.0).round().max(0.0) as u64;
    }
    let seconds = left.get("seconds").and_then(Value::as_u64).unwrap_or(0);
    let nanos = left.get("nanos").and_then(Value::as_u64).unwrap_or(0);
    seconds * 1000 + nanos / 1_000_000
}
