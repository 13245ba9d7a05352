//! Ready-made failure fixtures: scripts for failures a test cannot provoke
//! from the real service on demand.
//!
//! Each returns a [`ScriptedServer`] (so it can be extended, played,
//! served with `livesim serve`, or saved as a JSON file). The close codes
//! and reasons are the ones the Live service is seen to send: 1007 for a
//! bad request or key, 1008 for a policy rejection (and "session not
//! found" for a stale resumption handle), 1011 for a server-side failure,
//! and no close frame at all (seen as 1006) for a dropped connection.

use std::time::Duration;

use serde_json::json;

use super::script::{Action, ScriptedServer};

/// Setup refused with 1007 (a bad key): the session never starts.
pub fn setup_rejected() -> ScriptedServer {
    ScriptedServer::new()
        .named("setup-rejected-1007")
        .rejects_setup(1007, "API key not valid. Please pass a valid API key.")
}

/// Mid-turn close with 1007, a request the service rejects (fatal).
pub fn closes_invalid_argument() -> ScriptedServer {
    ScriptedServer::new()
        .named("close-1007")
        .text("Let me check")
        .close(1007, "Request contains an invalid argument.")
}

/// Close with 1008, a policy rejection (fatal).
pub fn closes_policy_violation() -> ScriptedServer {
    ScriptedServer::new()
        .named("close-1008")
        .says("One moment.")
        .close(1008, "Requested entity was not found.")
}

/// Close with 1008 "session not found": a stale resumption handle.
pub fn closes_session_not_found() -> ScriptedServer {
    ScriptedServer::new()
        .named("close-1008-session-not-found")
        .close(1008, "BidiGenerateContent session not found")
}

/// Close with 1011, a transient server error (retryable).
pub fn closes_internal_error() -> ScriptedServer {
    ScriptedServer::new()
        .named("close-1011")
        .text("Hel")
        .close(1011, "Internal error encountered.")
}

/// The connection drops mid-turn with no close frame (seen as 1006).
pub fn drops_abruptly() -> ScriptedServer {
    ScriptedServer::new()
        .named("abrupt-1006")
        .text("Hel")
        .abort()
}

/// A go-away with `time_left`, then the server closes (1000) when the time
/// is up.
pub fn goes_away(time_left: Duration) -> ScriptedServer {
    let seconds = time_left.as_secs_f64();
    ScriptedServer::new()
        .named("go-away")
        .frame(json!({ "goAway": { "timeLeft": format!("{seconds}s") } }))
        .pause(time_left)
        .close(1000, "")
}

/// Two calls sharing one id in one `toolCall`, and the id reused in a
/// later one.
pub fn duplicate_call_ids(tool: &str) -> ScriptedServer {
    ScriptedServer::new()
        .named("duplicate-call-ids")
        .frame(json!({ "toolCall": { "functionCalls": [
            { "id": "dup-1", "name": tool, "args": {} },
            { "id": "dup-1", "name": tool, "args": {} }
        ] } }))
        .pause(Duration::from_millis(100))
        .frame(json!({ "toolCall": { "functionCalls": [{ "id": "dup-1", "name": tool, "args": {} }] } }))
}

/// Messages the session does not know: an unknown top-level key alone, and
/// a known payload beside an unknown one.
pub fn unknown_messages() -> ScriptedServer {
    ScriptedServer::new()
        .named("unknown-messages")
        .frame(json!({ "newFeature": { "x": 1 } }))
        .frame(json!({
            "serverContent": { "modelTurn": { "parts": [{ "text": "Still fine." }] }, "turnComplete": true },
            "voiceActivity": { "voiceActivityType": "ACTIVITY_START" }
        }))
}

/// Frames that are not server messages: invalid UTF-8, text that is not
/// JSON, a JSON array; then a good turn.
pub fn malformed_frames() -> ScriptedServer {
    ScriptedServer::new()
        .named("malformed-frames")
        .action(Action::SendRaw("/w==".to_string()))
        .action(Action::SendRaw("bm90IGpzb24=".to_string()))
        .action(Action::SendText(json!([1, 2, 3])))
        .says("Recovered.")
}

/// The last text of a turn arriving in the same message as
/// `turnComplete`: it must not be lost.
pub fn text_with_turn_complete() -> ScriptedServer {
    ScriptedServer::new()
        .named("text-with-turn-complete")
        .text("Hello, ")
        .frame(json!({ "serverContent": {
            "modelTurn": { "parts": [{ "text": "world." }] },
            "turnComplete": true
        } }))
}

/// Every fixture, by name.
pub fn all() -> Vec<ScriptedServer> {
    vec![
        setup_rejected(),
        closes_invalid_argument(),
        closes_policy_violation(),
        closes_session_not_found(),
        closes_internal_error(),
        drops_abruptly(),
        goes_away(Duration::from_secs(2)),
        duplicate_call_ids("lookup"),
        unknown_messages(),
        malformed_frames(),
        text_with_turn_complete(),
    ]
}
