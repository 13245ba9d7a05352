//! What the client sends after setup, checked against the script: the
//! messages its `expect`s wait for, transparent replays, and tool
//! responses (each call answered once, or streamed as responses with
//! `willContinue: true` and a last one without, on the connection that
//! issued it).

use serde_json::Value;

use super::{Consumed, Player};
use crate::transport::scrub::FrameScrubber;
use crate::transport::{Frame, Transport};
use crate::wire::Redactor;

impl<T: Transport> Player<'_, T> {
    /// Checks one client frame that arrived on connection `on`.
    pub(super) async fn client_frame(&mut self, frame: Frame, on: u32) -> Result<(), ()> {
        let bytes = frame.payload().unwrap_or_default();
        let index = self.keep_inbound(bytes, on);
        let parsed = serde_json::from_slice::<Value>(bytes).ok();
        let played = self.play_client_message(parsed.as_ref(), bytes, on).await;
        if let Some(parsed) = parsed {
            self.keep_parsed(index, parsed);
        }
        played
    }

    /// Plays one client message, `parsed` from `bytes` (`None`: not JSON).
    async fn play_client_message(
        &mut self,
        parsed: Option<&Value>,
        bytes: &[u8],
        on: u32,
    ) -> Result<(), ()> {
        let Some((message, object)) = parsed.and_then(|m| Some((m, m.as_object()?))) else {
            let problem = format!(
                "the client sent a frame that is not a JSON object: {}",
                summary(None, bytes)
            );
            return self
                .fail(problem, 1007, "Invalid JSON payload received.")
                .await;
        };
        let Some((first, body)) = object.iter().next().filter(|_| object.len() == 1) else {
            let keys: Vec<&String> = object.keys().collect();
            let problem =
                format!("a client message must have exactly one top-level key, got {keys:?}");
            return self
                .fail(problem, 1007, "Invalid JSON payload received.")
                .await;
        };
        let key = crate::wire::camel_case(first);
        match key.as_str() {
            "toolResponse" => self.tool_response(body, on).await,
            "setup" => {
                self.fail(
                    "the client sent setup a second time".to_string(),
                    1007,
                    "Invalid JSON payload received.",
                )
                .await
            }
            // Content that reaches a connection the session has moved
            // from is not in the session it resumed (a transparent client
            // sends it again): behind a network that delays it, that is
            // timing; from a client that sent it after moving, an error.
            // A context update is input the session consumes in order with
            // content (the protocol says so): it is counted, expected and
            // checked as content is.
            "clientContent" | "realtimeInput" | "contextUpdate"
                if on != self.connection && self.resilient =>
            {
                self.progress.update(|s| s.content_dropped += 1);
                Ok(())
            }
            // Streamed input on the connection being left: the service
            // takes it there too (the resumed session never gets it).
            "clientContent" | "realtimeInput" | "contextUpdate"
                if on != self.connection && self.streamed(&key, message) =>
            {
                self.progress.update(|s| s.streamed += 1);
                Ok(())
            }
            "clientContent" | "realtimeInput" | "contextUpdate" if on != self.connection => {
                let problem = format!(
                    "the client sent {key} on connection #{on} after moving to connection #{}: the resumed session never gets it",
                    self.connection
                );
                self.fail(problem, 1007, "Request contains an invalid argument.")
                    .await
            }
            "clientContent" | "realtimeInput" | "contextUpdate" => {
                self.content(&key, message, bytes).await
            }
            other => {
                let problem = format!("the client sent an unknown message {other:?}");
                let reason = format!("Invalid JSON payload received. Unknown name \"{other}\"");
                self.fail(problem, 1007, &reason).await
            }
        }
    }

    /// A content message: consumed by the session, replayed after a
    /// transparent resumption, matched against the script's `expect`s.
    async fn content(&mut self, key: &str, message: &Value, bytes: &[u8]) -> Result<(), ()> {
        let index = self.consumed.len() + 1;
        let kept = if self.transparent {
            message.clone()
        } else {
            Value::Null
        };
        let replayed = self.replay.pop_front();
        if replayed.as_ref().is_some_and(|owed| owed != message) {
            let problem = format!(
                "client message #{index} should replay what the server received as #{index} before the connection changed (it had not consumed it), but differs (lost or sent twice?): {}",
                summary(Some(message), bytes)
            );
            return self
                .fail(problem, 1007, "Request contains an invalid argument.")
                .await;
        }
        // Streamed input is content like any other: it counts toward
        // `lastConsumedClientMessageIndex` and is replayed after a move.
        self.consumed.push(Consumed {
            message: kept,
            expected_before: self.expected_seen,
        });
        let streamed = self.streamed(key, message);
        if streamed {
            self.progress.update(|s| s.streamed += 1);
        }
        if replayed.is_some() && !self.replay_rematches {
            return Ok(());
        }
        // Expected messages are matched in script order, whenever they
        // arrive: a client may send before the script gets to its
        // `expect`. A streamed one matches only once the script has
        // reached its `expect` (the microphone was on before; the user
        // speaks after).
        let body = message.as_object().and_then(|o| o.values().next());
        if self
            .expects
            .get(self.expected_seen)
            .is_some_and(|wanted| crate::testing::expects::matches(wanted, key, body))
            && (!streamed || self.expects_reached > self.expected_seen)
        {
            self.expected_seen += 1;
            Ok(())
        } else if streamed || self.lenient {
            Ok(())
        } else if self.resilient && self.progress.lock().rollbacks > 1 {
            // The server went back in the script (or restarted) after the
            // client said this: like the service, it takes what comes and
            // forgets it; the user says again what the script waits for.
            self.progress.update(|s| s.content_dropped += 1);
            Ok(())
        } else {
            let problem = format!(
                "the client sent {key}, which the script does not expect here: {}",
                summary(Some(message), bytes)
            );
            self.fail(problem, 1007, "Request contains an invalid argument.")
                .await
        }
    }

    /// Whether `message` (with top-level `key`, camelCase) is of a kind
    /// the script's `stream` takes whenever it comes.
    fn streamed(&self, key: &str, message: &Value) -> bool {
        let body = message.as_object().and_then(|o| o.values().next());
        crate::testing::stream::takes(&self.stream, key, body)
    }

    async fn tool_response(&mut self, body: &Value, on: u32) -> Result<(), ()> {
        let responses = body
            .get("functionResponses")
            .or_else(|| body.get("function_responses"))
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        for response in responses {
            let Some(id) = response.get("id").and_then(Value::as_str).map(String::from) else {
                return self
                    .fail(
                        format!(
                            "a function response has no id: {}",
                            summary(Some(response), &[])
                        ),
                        1007,
                        "Request contains an invalid argument.",
                    )
                    .await;
            };
            if !response.get("response").is_some_and(Value::is_object) {
                let problem = format!(
                    "the response to {id} is not a JSON object: {}",
                    summary(Some(response), &[])
                );
                return self
                    .fail(problem, 1007, "Request contains an invalid argument.")
                    .await;
            }
            let continues = response
                .get("willContinue")
                .or_else(|| response.get("will_continue"))
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let mut crossed = false;
            let problem = {
                let s = self.progress.lock();
                let issued_on = s.issued_on.get(&id).copied();
                if !s.issued.contains(&id) {
                    Some(format!(
                        "the client answered {id}, which the script never issued (issued: [{}])",
                        s.issued.join(", ")
                    ))
                } else if s.answered.contains(&id) && !s.continuing.contains(&id) {
                    // A response without `willContinue: true` was the last.
                    Some(format!("the client answered {id} a second time"))
                } else if s.cancelled.contains(&id) && self.crossing {
                    // The answer may have left before the cancellation came.
                    crossed = true;
                    None
                } else if s.cancelled.contains(&id) {
                    Some(format!(
                        "the client answered {id} after the script cancelled it"
                    ))
                } else {
                    issued_on.filter(|n| *n != on).map(|issued_on| format!(
                        "the client answered {id} on connection #{on}, but it was issued on connection #{issued_on}: call ids belong to the connection that issued them"
                    ))
                }
            };
            if let Some(problem) = problem {
                return self
                    .fail(problem, 1008, "Requested entity was not found.")
                    .await;
            }
            if crossed {
                self.progress.update(|s| s.late_answers.push(id));
                continue;
            }
            self.progress.update(|s| {
                s.abandoned.remove(&id);
                if continues {
                    s.continuing.insert(id.clone());
                } else {
                    s.continuing.remove(&id);
                }
                s.answered.insert(id);
            });
        }
        Ok(())
    }
}

pub(super) fn summary(message: Option<&Value>, bytes: &[u8]) -> String {
    const MAX: usize = 200;
    // A problem is printed and reported: the handles the message carries
    // (a setup next to another key, or one that does not parse) become
    // placeholders first.
    let mut scrubber = FrameScrubber::new(Redactor::new());
    let text = match message {
        Some(m) => {
            let mut shown = m.clone();
            scrubber.scrub_json(&mut shown);
            shorten_data(&mut shown);
            shown.to_string()
        }
        None => scrubber.scrub_unparsed(&String::from_utf8_lossy(bytes)),
    };
    crate::wire::clip(&text, MAX).into_owned()
}

/// Media in `value` (an audio chunk's base64 `data`) as its length: a
/// problem quotes what the client did, and 200 characters of base64 say
/// nothing a reader can use.
fn shorten_data(value: &mut Value) {
    match value {
        Value::Object(members) => {
            for (key, member) in members.iter_mut() {
                match member {
                    Value::String(data) if key == "data" && data.len() > 32 => {
                        *member = Value::String(format!("<{} characters of base64>", data.len()));
                    }
                    other => shorten_data(other),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(shorten_data),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::summary;

    /// A problem on a chunk of audio quotes its shape, not its bytes.
    #[test]
    fn a_quoted_audio_chunk_shows_its_length_not_its_bytes() {
        let data = "QUJD".repeat(2000);
        let chunk = serde_json::json!({ "realtimeInput": { "audio": {
            "data": data, "mimeType": "audio/pcm;rate=16000"
        } } });
        let quoted = summary(Some(&chunk), &[]);
        assert!(!quoted.contains("QUJD"), "{quoted}");
        assert!(
            quoted.contains("\"data\":\"<8000 characters of base64>\""),
            "{quoted}"
        );
        assert!(quoted.contains("audio/pcm;rate=16000"), "{quoted}");
    }

    /// A problem quotes the client's message; the handles in it, found in
    /// structure or read as words, are not quoted.
    #[test]
    fn a_quoted_message_keeps_no_handle() {
        let broken = br#"{"setup": {"sessionResumption": {"handle": "HANDLE-CUT"}"#;
        let quoted = summary(None, broken);
        assert!(!quoted.contains("HANDLE-CUT"), "{quoted}");
        assert!(quoted.contains("<handle-1>"), "{quoted}");
        let both: serde_json::Value = serde_json::from_str(
            r#"{"setup":{"sessionResumption":{"handle":"HANDLE-A"},"session_resumption":{"handle":"HANDLE-B"}},"extra":1}"#,
        )
        .unwrap();
        let quoted = summary(Some(&both), &[]);
        assert!(
            !quoted.contains("HANDLE-A") && !quoted.contains("HANDLE-B"),
            "{quoted}"
        );
    }
}
