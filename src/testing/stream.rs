//! Streamed input: client messages a script takes whenever they come.
//!
//! A voice client streams its microphone as `realtimeInput` chunks (20 ms
//! each) before, during and after the model's reply, while tool calls run,
//! and the service takes them at any time. How many arrive depends on
//! timing, so a script cannot `expect` each one. A script's `stream` names
//! the kinds it takes that way (`realtimeInput.audio`,
//! `realtimeInput.video`, or any name an `expect` takes): such a message
//! never breaks the script, wherever it stands; it is counted, and it is
//! content the session consumes (it counts toward
//! `lastConsumedClientMessageIndex` and is replayed after a transparent
//! resumption like any other). An `expect` of a streamed kind waits for
//! one that arrives after the script reached it: `expect
//! realtimeInput.audio` still means "the user spoke", not "the microphone
//! was on earlier". Kinds the stream does not name (`activityStart`,
//! `activityEnd`, `audioStreamEnd`, `clientContent`) stay strict.

use serde_json::Value;

use super::ScriptedServer;
use crate::wire::camel_case;

/// Why a script's `stream` entry can never match a client message.
pub(crate) fn check(kind: &str) -> Result<(), String> {
    super::expects::check_as("stream", kind)
}

/// Whether the client message with top-level `key` (camelCase) and `body`
/// is one `stream` (camelCase entries) takes: `stream` names `key` itself,
/// or `key.member` for every member the body holds (a chunk that also
/// carries `activityStart` is streamed only if that is listed too, so a
/// strict kind cannot ride in on an audio chunk).
pub(crate) fn takes(stream: &[String], key: &str, body: Option<&Value>) -> bool {
    if stream.is_empty() {
        return false;
    }
    if stream.iter().any(|kind| kind == key) {
        return true;
    }
    let Some(members) = body.and_then(Value::as_object).filter(|b| !b.is_empty()) else {
        return false;
    };
    members.keys().all(|member| {
        let member = camel_case(member);
        stream.iter().any(|kind| {
            kind.split_once('.')
                .is_some_and(|(top, listed)| top == key && listed == member)
        })
    })
}

impl ScriptedServer {
    /// Takes client messages of `kind` whenever they come, as the service
    /// does (`realtimeInput.audio`: a microphone streaming chunks): they
    /// never break the script, and an `expect` of that kind waits for one
    /// that arrives after the script reached it. `kind` is written as an
    /// `expect` is; see `docs/formats/script.md` (`stream`).
    ///
    /// ```
    /// use livesim::testing::ScriptedServer;
    ///
    /// let script = ScriptedServer::new()
    ///     .streams("realtimeInput.audio")
    ///     .expects("realtimeInput.audio")
    ///     .says("Hi.");
    /// assert_eq!(script.stream(), ["realtimeInput.audio"]);
    /// assert_eq!(script.to_json()["stream"][0], "realtimeInput.audio");
    /// ```
    pub fn streams(mut self, kind: impl Into<String>) -> Self {
        self.stream.push(kind.into());
        self
    }

    /// The kinds of client message the script takes as a stream.
    pub fn stream(&self) -> &[String] {
        &self.stream
    }
}

#[cfg(test)]
mod tests {
    use super::takes;
    use serde_json::json;

    fn stream(kinds: &[&str]) -> Vec<String> {
        kinds.iter().map(|k| k.to_string()).collect()
    }

    /// Only the members the stream names are taken; a strict member in the
    /// same body keeps the message strict.
    #[test]
    fn a_message_is_streamed_when_the_stream_names_all_it_holds() {
        let audio = stream(&["realtimeInput.audio"]);
        let chunk = json!({ "audio": { "data": "AAAA", "mimeType": "audio/pcm" } });
        assert!(takes(&audio, "realtimeInput", Some(&chunk)));
        assert!(!takes(
            &audio,
            "realtimeInput",
            Some(&json!({ "activityStart": {} }))
        ));
        assert!(!takes(
            &audio,
            "realtimeInput",
            Some(&json!({ "audio": {}, "activityStart": {} }))
        ));
        assert!(!takes(&audio, "realtimeInput", Some(&json!({}))));
        assert!(!takes(
            &audio,
            "clientContent",
            Some(&json!({ "audio": {} }))
        ));
        assert!(!takes(&[], "realtimeInput", Some(&chunk)));
        // A whole kind takes every body; snake_case members are the same.
        let all = stream(&["realtimeInput"]);
        assert!(takes(
            &all,
            "realtimeInput",
            Some(&json!({ "activityEnd": {} }))
        ));
        let end = stream(&["realtimeInput.audioStreamEnd"]);
        assert!(takes(
            &end,
            "realtimeInput",
            Some(&json!({ "audio_stream_end": true }))
        ));
    }
}
