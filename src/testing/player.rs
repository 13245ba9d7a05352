//! The script player: the scripted server's side of a connection.
//!
//! It runs as its own task on the server end of any [`Transport`] (an
//! in-memory pair for tests, a real WebSocket for `livesim serve`): it
//! expects `setup`, answers `setupComplete`, waits to be released, then
//! performs the script's actions in order while checking everything the
//! client sends. It is strict, like the real service: a client message the
//! script does not expect, an answer to a call it never made, a second
//! answer to one call, a response that is not an object: each is an error
//! naming the script, the action and the offending message, and the
//! connection is closed as the real server would close it (1007 or 1008).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::Notify;

use super::script::{Action, Call, ScriptedServer};
use crate::transport::{CloseFrame, Frame, Transport};

/// A broken script expectation: what the client did, and where in which
/// script.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("script {script:?}, {at}: {problem}")]
pub struct ReplayError {
    /// The script's name.
    pub script: String,
    /// Where the script was: `action #3 (call get_weather as call-1)`,
    /// `the handshake`, or `after the last action`.
    pub at: String,
    /// What the client did that the script did not allow.
    pub problem: String,
}

/// What the player and the test share: progress, what the client sent,
/// and errors.
#[derive(Default)]
pub(crate) struct Progress {
    state: Mutex<Recorded>,
    pub released: Notify,
    pub changed: Notify,
}

impl Progress {
    /// The progress of a play for a real server (`livesim serve`):
    /// released from the start, keeping no copy of what the client sends
    /// (a client may send a lot; the report needs none of it), and leaving
    /// what it says about the client to the server's own redacted log.
    pub fn for_server() -> Self {
        let progress = Progress::default();
        progress.update(|s| {
            s.released = true;
            s.serving = true;
        });
        progress
    }
}

#[derive(Default)]
pub(crate) struct Recorded {
    pub released: bool,
    pub actions_done: bool,
    /// Where the script is: `the handshake`, `action #3 (…)`, `after the
    /// last action` (what a report says when the client leaves early).
    pub at: String,
    /// The script ended the connection itself (a `close`, `abort` or
    /// `reject_setup` action): it played as written even though actions
    /// may follow.
    pub ended_by_script: bool,
    pub finished: bool,
    pub frames_sent: u64,
    pub frames_delivered: u64,
    /// Every frame the client sent (unless `serving`).
    pub inbound: Vec<Vec<u8>>,
    /// Set for a real server: `inbound` stays empty, and errors are not
    /// logged here (they may quote a client's credential; the server's log
    /// redacts them).
    pub serving: bool,
    pub issued: Vec<String>,
    pub answered: BTreeSet<String>,
    pub cancelled: BTreeSet<String>,
    /// Answers to calls the script had already cancelled, tolerated
    /// because the script allows answers to cross cancellations.
    pub late_answers: Vec<String>,
    /// How many `expect` actions the script has reached.
    pub expects_reached: usize,
    /// Every frame the script sent, in order (`setupComplete` first).
    pub sent: Vec<Frame>,
    pub errors: Vec<ReplayError>,
}

impl Progress {
    pub fn lock(&self) -> MutexGuard<'_, Recorded> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn update(&self, f: impl FnOnce(&mut Recorded)) {
        f(&mut self.lock());
        self.changed.notify_waiters();
    }

    /// Every call the script issued that was neither answered nor
    /// cancelled.
    pub fn unanswered(&self) -> Vec<String> {
        let state = self.lock();
        state
            .issued
            .iter()
            .filter(|id| !state.answered.contains(*id) && !state.cancelled.contains(*id))
            .cloned()
            .collect()
    }
}

/// Where the player is, for error messages.
fn describe(index: usize, action: &Action) -> String {
    let what = match action {
        Action::Send(m) | Action::SendText(m) => {
            let key = m
                .as_object()
                .and_then(|o| o.keys().next().cloned())
                .unwrap_or_default();
            format!("send {key}")
        }
        Action::SendRaw(_) => "send raw bytes".to_string(),
        Action::Call(c) => format!("call {} as {}", c.name, c.id),
        Action::CallMany(calls) => {
            let names: Vec<String> = calls
                .iter()
                .map(|c| format!("{} as {}", c.name, c.id))
                .collect();
            format!("call {}", names.join(", "))
        }
        Action::PauseMs(ms) => format!("pause {ms}ms"),
        Action::Expect(key) => format!("expect {key}"),
        Action::Close(c) => format!("close {}", c.code),
        Action::RejectSetup(c) => format!("reject setup with {}", c.code),
        Action::Abort => "abort".to_string(),
    };
    format!("action #{} ({what})", index + 1)
}

/// What the player is waiting for, besides the next client frame.
enum Wait {
    Nothing,
    Release,
    Answers(Vec<String>),
    /// The `n`-th `expect` action's client message (0-based).
    Expected(usize),
    Until(tokio::time::Instant),
}

/// What a call action waits for: the answers of the calls that wait.
fn answers(calls: &[Call]) -> Wait {
    Wait::Answers(
        calls
            .iter()
            .filter(|c| c.wait)
            .map(|c| c.id.clone())
            .collect(),
    )
}

/// Plays `script` on the server end `io`, recording into `progress`.
pub(crate) async fn play<T: Transport>(script: ScriptedServer, mut io: T, progress: Arc<Progress>) {
    play_on(script, &mut io, progress).await;
}

/// [`play`] on a borrowed transport, which the caller keeps: `livesim
/// serve` finishes the closing handshake after the script ends.
pub(crate) async fn play_on<T: Transport>(
    script: ScriptedServer,
    io: &mut T,
    progress: Arc<Progress>,
) {
    let mut player = Player {
        name: script.name.clone(),
        io,
        progress: progress.clone(),
        at: String::new(),
        lenient: script.lenient,
        crossing: script.crossing,
        expects: script
            .actions
            .iter()
            .filter_map(|a| match a {
                Action::Expect(key) => Some(canonical_key(key)),
                _ => None,
            })
            .collect(),
        expected_seen: 0,
        expects_reached: 0,
    };
    let rejection = match script.actions.first() {
        Some(Action::RejectSetup(close)) => Some(close.clone()),
        _ => None,
    };
    player.move_to("the handshake".to_string());
    if player.handshake(rejection).await.is_err() {
        progress.update(|s| s.finished = true);
        return;
    }
    player.move_to("before the first action".to_string());
    let mut wait = Wait::Release;
    let mut actions = script.actions.iter().enumerate();
    loop {
        // Wait for what the last action needs, handling client frames meanwhile.
        loop {
            // Registered before the check, so a release that lands in
            // between still wakes us.
            let released = progress.released.notified();
            tokio::pin!(released);
            released.as_mut().enable();
            if player.satisfied(&wait) {
                break;
            }
            let deadline = match &wait {
                Wait::Until(at) => Some(*at),
                _ => None,
            };
            let frame = tokio::select! {
                biased;
                frame = player.io.recv() => frame,
                _ = &mut released, if matches!(wait, Wait::Release) => continue,
                _ = sleep_until(deadline) => { wait = Wait::Nothing; continue; }
            };
            match frame {
                Some(Ok(Frame::Close(_))) | None | Some(Err(_)) => {
                    progress.update(|s| s.finished = true);
                    return;
                }
                Some(Ok(frame)) => {
                    if player.client_frame(frame).await.is_err() {
                        progress.update(|s| s.finished = true);
                        return;
                    }
                }
            }
        }
        let Some((index, action)) = actions.next() else {
            break;
        };
        player.move_to(describe(index, action));
        wait = match player.perform(action).await {
            Ok(wait) => wait,
            Err(()) => {
                progress.update(|s| s.finished = true);
                return;
            }
        };
    }
    player.move_to("after the last action".to_string());
    progress.update(|s| s.actions_done = true);
    // Keep checking what the client sends until it hangs up.
    loop {
        match player.io.recv().await {
            Some(Ok(Frame::Close(_))) | None | Some(Err(_)) => break,
            Some(Ok(frame)) => {
                if player.client_frame(frame).await.is_err() {
                    break;
                }
            }
        }
    }
    progress.update(|s| s.finished = true);
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

impl Recorded {
    /// Every action performed and every frame handed to the session.
    pub fn drained(&self) -> bool {
        self.actions_done && self.frames_delivered >= self.frames_sent
    }
}

struct Player<'a, T: Transport> {
    name: String,
    io: &'a mut T,
    progress: Arc<Progress>,
    at: String,
    lenient: bool,
    crossing: bool,
    /// The keys the script's `expect` actions wait for, in order.
    expects: Vec<String>,
    /// How many of them the client has sent.
    expected_seen: usize,
    /// How many `expect` actions the script has reached.
    expects_reached: usize,
}

impl<T: Transport> Player<'_, T> {
    fn move_to(&mut self, at: String) {
        self.progress.update(|s| s.at = at.clone());
        self.at = at;
    }

    fn satisfied(&self, wait: &Wait) -> bool {
        let state = self.progress.lock();
        match wait {
            Wait::Nothing => true,
            Wait::Release => state.released,
            Wait::Answers(ids) => ids
                .iter()
                .all(|id| state.answered.contains(id) || state.cancelled.contains(id)),
            Wait::Expected(n) => self.expected_seen > *n,
            Wait::Until(_) => false,
        }
    }

    async fn fail(&mut self, problem: String, code: u16, reason: &str) -> Result<(), ()> {
        let error = ReplayError {
            script: self.name.clone(),
            at: self.at.clone(),
            problem,
        };
        self.progress.update(|s| {
            if !s.serving {
                tracing::warn!(target: "livesim::testing", "{error}");
            }
            s.errors.push(error);
        });
        let _ = self.io.close(Some(CloseFrame::new(code, reason))).await;
        Err(())
    }

    async fn send(&mut self, frame: Frame) -> Result<(), ()> {
        self.progress.update(|s| {
            s.frames_sent += 1;
            s.sent.push(frame.clone());
        });
        self.io.send(frame).await.map_err(|_| ())
    }

    async fn handshake(&mut self, rejection: Option<super::script::CloseAction>) -> Result<(), ()> {
        let frame = match self.io.recv().await {
            Some(Ok(Frame::Close(_))) | None | Some(Err(_)) => return Err(()),
            Some(Ok(frame)) => frame,
        };
        let bytes = frame.payload().unwrap_or_default();
        self.keep_inbound(bytes);
        let message: Option<Value> = serde_json::from_slice(bytes).ok();
        let is_setup = message
            .as_ref()
            .and_then(Value::as_object)
            .is_some_and(|o| o.len() == 1 && o.contains_key("setup"));
        if !is_setup {
            let problem = format!(
                "the first client message must be setup, got {}",
                summary(message.as_ref(), bytes)
            );
            return self
                .fail(
                    problem,
                    1007,
                    "Invalid JSON payload received. The first message must be setup.",
                )
                .await;
        }
        if let Some(close) = rejection {
            self.progress.update(|s| s.ended_by_script = true);
            let _ = self
                .io
                .close(Some(CloseFrame::new(close.code, close.reason)))
                .await;
            return Err(());
        }
        self.send(Frame::Text(json!({ "setupComplete": {} }).to_string()))
            .await
    }

    async fn perform(&mut self, action: &Action) -> Result<Wait, ()> {
        match action {
            Action::Send(message) => {
                self.send_message(message, true).await?;
                Ok(Wait::Nothing)
            }
            Action::SendText(message) => {
                self.send_message(message, false).await?;
                Ok(Wait::Nothing)
            }
            Action::SendRaw(bytes) => {
                use base64::Engine as _;
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(bytes)
                    .unwrap_or_default();
                self.send(Frame::Binary(bytes)).await?;
                Ok(Wait::Nothing)
            }
            Action::Call(call) => {
                self.call(std::slice::from_ref(call)).await?;
                Ok(answers(std::slice::from_ref(call)))
            }
            Action::CallMany(calls) => {
                self.call(calls).await?;
                Ok(answers(calls))
            }
            Action::PauseMs(ms) => Ok(Wait::Until(
                tokio::time::Instant::now() + Duration::from_millis(*ms),
            )),
            Action::Expect(_) => {
                let n = self.expects_reached;
                self.expects_reached += 1;
                self.progress.update(|s| s.expects_reached = n + 1);
                Ok(Wait::Expected(n))
            }
            // Handled by the handshake.
            Action::RejectSetup(_) => Ok(Wait::Nothing),
            Action::Close(close) => {
                self.progress.update(|s| s.ended_by_script = true);
                let _ = self
                    .io
                    .close(Some(CloseFrame::new(close.code, close.reason.clone())))
                    .await;
                Err(())
            }
            Action::Abort => {
                self.progress.update(|s| s.ended_by_script = true);
                Err(())
            }
        }
    }

    async fn send_message(&mut self, message: &Value, binary: bool) -> Result<(), ()> {
        if let Some(ids) = message
            .pointer("/toolCallCancellation/ids")
            .and_then(Value::as_array)
        {
            let ids: Vec<String> = ids
                .iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect();
            self.progress.update(|s| s.cancelled.extend(ids));
        }
        if let Some(calls) = message
            .pointer("/toolCall/functionCalls")
            .and_then(Value::as_array)
        {
            let ids: Vec<String> = calls
                .iter()
                .filter_map(|c| c.get("id").and_then(Value::as_str))
                .map(String::from)
                .collect();
            self.progress.update(|s| s.issued.extend(ids));
        }
        let text = message.to_string();
        let frame = if binary {
            Frame::Binary(text.into_bytes())
        } else {
            Frame::Text(text)
        };
        self.send(frame).await
    }

    async fn call(&mut self, calls: &[Call]) -> Result<(), ()> {
        let function_calls: Vec<Value> = calls
            .iter()
            .map(|c| json!({ "id": c.id, "name": c.name, "args": c.args }))
            .collect();
        self.send_message(
            &json!({ "toolCall": { "functionCalls": function_calls } }),
            true,
        )
        .await
    }

    /// Keeps a copy of a client frame for the test, unless told not to.
    fn keep_inbound(&self, bytes: &[u8]) {
        self.progress.update(|s| {
            if !s.serving {
                s.inbound.push(bytes.to_vec());
            }
        });
    }

    /// Checks one client frame against the script.
    async fn client_frame(&mut self, frame: Frame) -> Result<(), ()> {
        let bytes = frame.payload().unwrap_or_default();
        self.keep_inbound(bytes);
        let Some(message) = serde_json::from_slice::<Value>(bytes)
            .ok()
            .filter(Value::is_object)
        else {
            let problem = format!(
                "the client sent a frame that is not a JSON object: {}",
                summary(None, bytes)
            );
            return self
                .fail(problem, 1007, "Invalid JSON payload received.")
                .await;
        };
        let keys: Vec<String> = message
            .as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default();
        if keys.len() != 1 {
            let problem =
                format!("a client message must have exactly one top-level key, got {keys:?}");
            return self
                .fail(problem, 1007, "Invalid JSON payload received.")
                .await;
        }
        let key = canonical_key(&keys[0]);
        let body = &message[&keys[0]];
        match key.as_str() {
            "toolResponse" => self.tool_response(body).await,
            "setup" => {
                self.fail(
                    "the client sent setup a second time".to_string(),
                    1007,
                    "Invalid JSON payload received.",
                )
                .await
            }
            "clientContent" | "realtimeInput" => {
                // Expected messages are matched in script order, whenever
                // they arrive: a client may send before the script gets
                // to its `expect`.
                if self.expects.get(self.expected_seen) == Some(&key) {
                    self.expected_seen += 1;
                    Ok(())
                } else if self.lenient {
                    Ok(())
                } else {
                    let problem = format!(
                        "the client sent {key}, which the script does not expect here: {}",
                        summary(Some(&message), bytes)
                    );
                    self.fail(problem, 1007, "Request contains an invalid argument.")
                        .await
                }
            }
            other => {
                let problem = format!("the client sent an unknown message {other:?}");
                let reason = format!("Invalid JSON payload received. Unknown name \"{other}\"");
                self.fail(problem, 1007, &reason).await
            }
        }
    }

    async fn tool_response(&mut self, body: &Value) -> Result<(), ()> {
        let responses = body
            .get("functionResponses")
            .or_else(|| body.get("function_responses"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for response in responses {
            let Some(id) = response.get("id").and_then(Value::as_str).map(String::from) else {
                return self
                    .fail(
                        format!(
                            "a function response has no id: {}",
                            summary(Some(&response), &[])
                        ),
                        1007,
                        "Request contains an invalid argument.",
                    )
                    .await;
            };
            if !response.get("response").is_some_and(Value::is_object) {
                let problem = format!(
                    "the response to {id} is not a JSON object: {}",
                    summary(Some(&response), &[])
                );
                return self
                    .fail(problem, 1007, "Request contains an invalid argument.")
                    .await;
            }
            let (issued, answered, cancelled) = {
                let s = self.progress.lock();
                (
                    s.issued.contains(&id),
                    s.answered.contains(&id),
                    s.cancelled.contains(&id),
                )
            };
            let problem = if !issued {
                let known = self.progress.lock().issued.join(", ");
                Some(format!(
                    "the client answered {id}, which the script never issued (issued: [{known}])"
                ))
            } else if answered {
                Some(format!("the client answered {id} a second time"))
            } else if cancelled && self.crossing {
                // The answer may have left before the cancellation arrived.
                self.progress.update(|s| s.late_answers.push(id.clone()));
                None
            } else if cancelled {
                Some(format!(
                    "the client answered {id} after the script cancelled it"
                ))
            } else {
                None
            };
            if let Some(problem) = problem {
                return self
                    .fail(problem, 1008, "Requested entity was not found.")
                    .await;
            }
            self.progress.update(|s| {
                s.answered.insert(id);
            });
        }
        Ok(())
    }
}

/// The camelCase name of a top-level client key (clients may send
/// `tool_response` as Google's Python SDK does).
fn canonical_key(key: &str) -> String {
    let mut out = String::new();
    let mut upper = false;
    for c in key.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

fn summary(message: Option<&Value>, bytes: &[u8]) -> String {
    const MAX: usize = 200;
    let text = match message {
        Some(m) => m.to_string(),
        None => String::from_utf8_lossy(bytes).into_owned(),
    };
    crate::wire::clip(&text, MAX).into_owned()
}
