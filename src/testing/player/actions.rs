//! What the script's actions do: server messages sent, calls made (and
//! recorded with the connection that issued them), pauses, expectations,
//! closes and the connection changes the script plans.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::time::Instant;

use super::{Flow, Player, Wait, answers};
use crate::testing::script::{Action, Call};
use crate::transport::{Frame, Transport};

impl<T: Transport> Player<'_, T> {
    pub(super) async fn perform(&mut self, index: usize, action: &Action) -> Result<Wait, Flow> {
        let sent = |r: Result<(), ()>| r.map_err(|()| Flow::Stop);
        match action {
            Action::Send(message) => sent(self.send_message(message, true).await)?,
            Action::SendText(message) => sent(self.send_message(message, false).await)?,
            Action::SendRaw(bytes) => {
                use base64::Engine as _;
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(bytes)
                    .unwrap_or_default();
                sent(self.send(Frame::Binary(bytes)).await)?;
            }
            Action::Call(call) => {
                sent(self.call(std::slice::from_ref(call)).await)?;
                return Ok(answers(std::slice::from_ref(call)));
            }
            Action::CallMany(calls) => {
                sent(self.call(calls).await)?;
                return Ok(answers(calls));
            }
            Action::PauseMs(ms) => {
                return Ok(Wait::Until(Instant::now() + Duration::from_millis(*ms)));
            }
            Action::Expect(_) => {
                let n = self.expects_reached;
                self.expects_reached += 1;
                self.progress.update(|s| s.expects_reached = n + 1);
                return Ok(Wait::Expected(n));
            }
            // Handled by the handshake of its connection.
            Action::RejectSetup(_) => {}
            Action::Close(close) => {
                self.close_current(close.code, &close.reason).await;
                self.progress.update(|s| s.last_close = Some(index));
                if !self.reconnect_at(index + 1) {
                    self.progress.update(|s| s.ended_by_script = true);
                    return Err(Flow::Stop);
                }
            }
            Action::Abort => {
                self.current = None;
                self.progress.update(|s| s.last_close = Some(index));
                if !self.reconnect_at(index + 1) {
                    self.progress.update(|s| s.ended_by_script = true);
                    return Err(Flow::Stop);
                }
            }
            Action::ResumptionUpdate(update) => {
                sent(self.resumption_update(index, update).await)?;
            }
            Action::GoAwayMs(ms) => {
                let left = Duration::from_millis(*ms);
                let message =
                    json!({ "goAway": { "timeLeft": crate::wire::format_duration(left) } });
                sent(self.send_message(&message, true).await)?;
                self.go_away_deadline = Some(Instant::now() + left);
            }
            Action::Reconnect(reconnect) => {
                return self.reconnect(index, reconnect.handle.clone()).await;
            }
        }
        Ok(Wait::Nothing)
    }

    pub(super) async fn send_message(&mut self, message: &Value, binary: bool) -> Result<(), ()> {
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
            let on = self.connection;
            self.progress.update(|s| {
                for id in ids {
                    // Issued again on a later connection (a session rolled
                    // back): a new call. On the same connection it is a
                    // duplicate id, which the first issue's answer covers.
                    if s.issued_on.get(&id).is_some_and(|was| *was != on) {
                        s.answered.remove(&id);
                        s.cancelled.remove(&id);
                        s.abandoned.remove(&id);
                    }
                    s.issued_on.insert(id.clone(), on);
                    s.issued.push(id);
                }
            });
        }
        let text = message.to_string();
        let frame = if binary {
            Frame::Binary(text.into_bytes())
        } else {
            Frame::Text(text)
        };
        self.send(frame).await
    }

    pub(super) async fn call(&mut self, calls: &[Call]) -> Result<(), ()> {
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
}
