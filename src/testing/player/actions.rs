//! What the script's actions do: server messages sent, calls made (and
//! recorded with the connection that issued them), pauses, expectations,
//! closes and the connection changes the script plans.

use crate::wire::{JsonPath, object};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::time::Instant;

use super::{Flow, Issue, Player, Wait, answers};
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
                let calls = self.named_for_the_wire(std::slice::from_ref(call));
                sent(self.call(&calls).await)?;
                return Ok(answers(&calls));
            }
            Action::CallMany(calls) => {
                let calls = self.named_for_the_wire(calls);
                sent(self.call(&calls).await)?;
                return Ok(answers(&calls));
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
                self.go_away_action = index;
            }
            Action::Reconnect(reconnect) => {
                return self.reconnect(index, reconnect.handle.clone()).await;
            }
            Action::Attach(members) => {
                self.attach
                    .get_or_insert_with(Default::default)
                    .extend(members.clone());
            }
        }
        Ok(Wait::Nothing)
    }

    /// `calls` as the wire knows them. A resilient player (whose
    /// connections end where the script does not say) issues a script id
    /// that an earlier connection issued under a new id (`call-3~2`: its
    /// second connection), as the service would: a call id names one call
    /// in a session, and a session that went back in the script, or whose
    /// server restarted, makes new calls. The script's later cancellations
    /// of those calls name the new ids; a duplicate id on one connection
    /// stays a duplicate.
    fn named_for_the_wire(&mut self, calls: &[Call]) -> Vec<Call> {
        if !self.resilient {
            return calls.to_vec();
        }
        let mut named: Vec<Call> = Vec::with_capacity(calls.len());
        self.progress.update(|s| {
            // Setups answered so far, by every start of the player: one
            // number per connection of the session.
            let on = s.connections;
            for call in calls {
                let issue = s.issues.entry(call.id.clone()).or_insert_with(|| Issue {
                    connection: on,
                    wire: call.id.clone(),
                    times: 1,
                });
                if issue.connection != on {
                    issue.times += 1;
                    issue.connection = on;
                    issue.wire = format!("{}~{}", call.id, issue.times);
                }
                named.push(Call {
                    id: issue.wire.clone(),
                    ..call.clone()
                });
            }
        });
        for (call, wire) in calls.iter().zip(&named) {
            self.wire_ids.insert(call.id.clone(), wire.id.clone());
        }
        named
    }

    /// `message` with the call ids it cancels named as the wire knows them
    /// (see [`named_for_the_wire`](Self::named_for_the_wire)).
    fn cancellation_for_the_wire(&self, message: &Value) -> Option<Value> {
        let ids = message.at("/toolCallCancellation/ids")?.as_array()?;
        let renamed: Vec<Value> = ids
            .iter()
            .map(
                |id| match id.as_str().and_then(|id| self.wire_ids.get(id)) {
                    Some(wire) => Value::String(wire.clone()),
                    None => id.clone(),
                },
            )
            .collect();
        (renamed != *ids).then(|| {
            let mut message = message.clone();
            message["toolCallCancellation"]["ids"] = Value::Array(renamed);
            message
        })
    }

    pub(super) async fn send_message(&mut self, message: &Value, binary: bool) -> Result<(), ()> {
        let renamed = self.cancellation_for_the_wire(message);
        let mut message = renamed.as_ref().unwrap_or(message);
        let attached;
        if let Some(own) = message.as_object()
            && let Some(members) = self.attach.take()
        {
            let mut whole = own.clone();
            whole.extend(members);
            attached = Value::Object(whole);
            message = &attached;
        }
        // A resilient player's `goAway`, however the script sends it: like
        // the service, it ends the connection when the time is up if the
        // client has not moved (a move can fail on a network). Other
        // players end a connection where the script says.
        // A notice with no `timeLeft` leaves no time, as the session reads it.
        if self.resilient && message.at("/goAway").is_some() {
            let left = match message.at("/goAway/timeLeft") {
                None => Some(std::time::Duration::ZERO),
                Some(left) => left
                    .as_str()
                    .and_then(|t| crate::wire::parse_duration(t).ok()),
            };
            if let Some(left) = left {
                self.go_away_deadline = Some(Instant::now() + left);
            }
        }
        if let Some(ids) = message
            .at("/toolCallCancellation/ids")
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
            .at("/toolCall/functionCalls")
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
                        s.continuing.remove(&id);
                        s.cancelled.remove(&id);
                        s.abandoned.remove(&id);
                    }
                    s.issued_on.insert(id.clone(), on);
                    s.issued.push(id);
                }
            });
        }
        let text = crate::wire::to_json(message);
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
            .map(|c| {
                let mut call = serde_json::Map::new();
                call.insert("id".into(), Value::String(c.id.clone()));
                call.insert("name".into(), Value::String(c.name.clone()));
                // No arguments (`null`): no `args` member, as the service
                // may send a function that takes none.
                if !c.args.is_null() {
                    call.insert("args".into(), c.args.clone());
                }
                Value::Object(call)
            })
            .collect();
        let message = object([(
            "toolCall",
            object([("functionCalls", Value::Array(function_calls))]),
        )]);
        self.send_message(&message, true).await
    }
}
