//! Production sessions become seeds: a session recorded as a wire log (the
//! recording transport) is imported as a script of an agent, which then
//! replays clean, keeps the recorded calls and pauses, survives damage to
//! the log (every good frame kept, each bad line named) and holds no
//! resumption handle.

use std::time::Duration;

use livesim::Seed;
use livesim::executor::Simulation;
use livesim::prelude::*;
use livesim::session::Resumption;
use livesim::soak::{Agent, Case, Faults, RunContext, Soak, import_wire_log};
use livesim::testing::{Action, Call, ScriptedServer};
use livesim::transport::recording::{MemorySink, Recording, WireLogWriter};
use serde_json::json;

use super::agent;

/// A weather session, as `sim/weather`'s agent runs it, recorded.
fn recorded() -> Vec<u8> {
    record(
        ScriptedServer::new()
            .says("Let me look.")
            .pause(Duration::from_millis(700))
            .calls("get_weather", json!({"city": "Lisbon"}))
            .pause(Duration::from_millis(300))
            .says("It is sunny in Lisbon."),
    )
}

/// `script` played against `sim/weather`'s agent, recorded as a wire log
/// (the session ends after its second turn).
fn record(script: ScriptedServer) -> Vec<u8> {
    Simulation::new(Seed::new(3))
        .run(move || async move {
            let weather = agent("weather");
            let ctx = RunContext {
                seed: Seed::new(3),
                faults: Faults::calm(),
                state: livesim::state::State::new(),
            };
            let sink = MemorySink::new();
            let writer = WireLogWriter::builder(sink.clone()).start().unwrap();
            let (transport, control) = script.into_transport();
            let handle = weather
                .builder(&ctx)
                .connect_with_transport(Recording::new(transport, writer))
                .await
                .unwrap();
            let mut events = handle.events();
            control.release();
            let mut turns = 0;
            while let Some(event) = events.next().await {
                if matches!(event, LiveEvent::TurnComplete { .. }) {
                    turns += 1;
                    if turns == 2 {
                        break;
                    }
                }
            }
            handle.disconnect().await;
            sink.contents()
        })
        .unwrap()
        .value
}

fn calls(script: &ScriptedServer) -> Vec<Call> {
    script
        .actions()
        .iter()
        .filter_map(|a| match a {
            Action::Call(call) => Some(call.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_recorded_session_imports_as_a_script_that_replays_clean() {
    let log = recorded();
    let imported = import_wire_log("weather.jsonl", &log, "weather-prod").unwrap();
    assert!(imported.damaged.is_empty(), "{:?}", imported.damaged);
    assert_eq!(
        calls(&imported.script),
        [Call {
            id: "call-1".into(),
            name: "get_weather".into(),
            args: json!({"city": "Lisbon"}),
            wait: true,
        }]
    );
    let pauses: Vec<u64> = imported
        .script
        .actions()
        .iter()
        .filter_map(|a| match a {
            Action::PauseMs(ms) => Some(*ms),
            _ => None,
        })
        .collect();
    assert!(
        pauses.contains(&700),
        "the recorded pause is kept: {pauses:?}"
    );
    let record = replays_clean(imported.script.clone());
    assert_eq!(record.executions_of("get_weather").count(), 1);
}

/// `script` played calm against `sim/weather`'s agent passes every
/// invariant; the run's record.
fn replays_clean(script: ScriptedServer) -> livesim::soak::RunRecord {
    let weather: Agent = agent("weather");
    let case = Case::calm(Seed::new(1), script);
    let run = Soak::agent(&weather).run_case(&case);
    assert_eq!(run.verdict(), Ok(()));
    run.record.expect("a record")
}

/// What rides on a tool call's frame (usage) is imported with the call,
/// as an `attach` before it, and the imported script sends it again.
#[test]
fn usage_riding_on_a_tool_call_is_imported_with_it() {
    let log = record(
        ScriptedServer::new()
            .says("Let me look.")
            .attaches("usageMetadata", json!({ "totalTokenCount": 42 }))
            .calls("get_weather", json!({"city": "Lisbon"}))
            .says("It is sunny in Lisbon."),
    );
    let imported = import_wire_log("weather.jsonl", &log, "weather-prod").unwrap();
    let actions = imported.script.actions();
    let call = actions
        .iter()
        .position(|a| matches!(a, Action::Call(_)))
        .expect("the call is imported");
    match &actions[call - 1] {
        Action::Attach(members) => {
            assert_eq!(members.len(), 1, "{members:?}");
            assert_eq!(members["usageMetadata"]["totalTokenCount"], 42);
        }
        other => panic!("expected the usage attached before the call, got {other:?}"),
    }
    replays_clean(imported.script.clone());
    let again = record(
        ScriptedServer::from_json_str(&imported.script.to_json().to_string(), "imported").unwrap(),
    );
    let reimported = import_wire_log("again.jsonl", &again, "weather-prod").unwrap();
    // The pauses are measured again, so only what is sent must agree.
    let sent = |script: &ScriptedServer| -> Vec<Action> {
        let actions = script.actions().iter();
        actions
            .filter(|a| !matches!(a, Action::PauseMs(_)))
            .cloned()
            .collect()
    };
    assert_eq!(sent(&reimported.script), sent(&imported.script));
}

/// Damage anywhere in the log loses only the damaged lines: a line of
/// garbage in the middle and a torn last line are named, by line, and
/// every frame around them is kept.
#[test]
fn a_damaged_log_keeps_every_good_frame_and_names_each_bad_line() {
    let log = recorded();
    let whole = import_wire_log("weather.jsonl", &log, "w").unwrap();
    let text = String::from_utf8(log).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.insert(3, "{\"dir\":\"in\",\"t_ms\":");
    let mut damaged = lines.join("\n");
    damaged.push_str("\n{\"dir\":\"in\",\"t_ms\":99,\"ty");
    let imported = import_wire_log("weather.jsonl", damaged.as_bytes(), "w").unwrap();
    assert_eq!(imported.frames, whole.frames);
    assert_eq!(imported.script.actions(), whole.script.actions());
    assert_eq!(imported.damaged.len(), 2, "{:?}", imported.damaged);
    assert!(
        imported.damaged[0].starts_with("weather.jsonl:4: not a wire log line: "),
        "{:?}",
        imported.damaged
    );
    assert!(
        imported.damaged[1].starts_with(&format!(
            "weather.jsonl:{}: a torn last line (the recorder stopped mid-write)",
            lines.len() + 1
        )),
        "{:?}",
        imported.damaged
    );
    let err = import_wire_log("empty.jsonl", b"not json\n", "w").unwrap_err();
    assert_eq!(
        err,
        "empty.jsonl: no frame could be read (first problem: empty.jsonl:1: not a wire log line: expected ident at line 1 column 2)"
    );
    // JSON, but not an object: named as such, not in serde's words.
    let err = import_wire_log("list.jsonl", b"[]\n7\n", "w").unwrap_err();
    assert_eq!(
        err,
        "list.jsonl: no frame could be read (first problem: list.jsonl:1: not a wire log line: expected an object, found a list of 0)"
    );
}

/// Resumption handles (scrubbed by the recorder or not) become
/// `handle-N`, the same one for the update that gave it and the setup
/// that resumed it; a later setup starts the script's next connection.
#[test]
fn handles_never_reach_the_script() {
    let log = br#"{"v":1,"kind":"wire_log","started_at_ms":0}
{"dir":"out","t_ms":0,"type":"text","json":{"setup":{"model":"m"}}}
{"dir":"in","t_ms":5,"type":"binary","json":{"setupComplete":{}}}
{"dir":"in","t_ms":9,"type":"binary","json":{"sessionResumptionUpdate":{"newHandle":"Cq1-secret","resumable":true}}}
{"dir":"in","t_ms":20,"type":"binary","json":{"goAway":{"timeLeft":"12.5s"}}}
{"dir":"out","t_ms":30,"type":"text","json":{"setup":{"model":"m","sessionResumption":{"handle":"Cq1-secret"}}}}
{"dir":"in","t_ms":35,"type":"binary","json":{"setupComplete":{}}}
{"dir":"in","t_ms":40,"type":"close","close":{"code":1000,"reason":"done"}}
"#;
    let imported = import_wire_log("resume.jsonl", log, "r").unwrap();
    let json = imported.script.to_json().to_string();
    assert!(!json.contains("Cq1-secret"), "{json}");
    assert_eq!(imported.handles, 1);
    let actions = imported.script.actions();
    assert!(actions.contains(&Action::GoAwayMs(12_500)), "{actions:?}");
    assert!(
        actions
            .iter()
            .any(|a| matches!(a, Action::Reconnect(r) if r.handle.as_deref() == Some("handle-1"))),
        "{actions:?}"
    );
    assert!(
        actions.iter().any(
            |a| matches!(a, Action::ResumptionUpdate(u) if u.handle.as_deref() == Some("handle-1"))
        ),
        "{actions:?}"
    );
}

/// Frames a script's own actions cannot say (a call without an id, an
/// empty call list, a binary frame that is not JSON), a handle quoted in a
/// close reason, and a resume of a handle the log never issued: the
/// import keeps each frame as it was sent, keeps no handle, starts the
/// unissued resume afresh (with a note), and what it makes reads back as
/// a script.
#[test]
fn frames_a_call_cannot_say_are_sent_as_they_came() {
    let log = br#"{"v":1,"kind":"wire_log","started_at_ms":0}
{"dir":"out","t_ms":0,"type":"text","json":{"setup":{"model":"m","sessionResumption":{}}}}
{"dir":"in","t_ms":5,"type":"binary","json":{"setupComplete":{}}}
{"dir":"in","t_ms":6,"type":"binary","json":{"toolCall":{"functionCalls":[{"id":"","name":"get_weather","args":{}}]}}}
{"dir":"in","t_ms":7,"type":"binary","json":{"toolCall":{"functionCalls":[]}}}
{"dir":"in","t_ms":8,"type":"binary","raw_base64":"AAEC"}
{"dir":"in","t_ms":9,"type":"binary","json":{"sessionResumptionUpdate":{"newHandle":"SECRET-H-2","resumable":true}}}
{"dir":"in","t_ms":10,"type":"close","close":{"code":1000,"reason":"bye SECRET-H-2"}}
{"dir":"out","t_ms":30,"type":"text","json":{"setup":{"model":"m","sessionResumption":{"handle":"SECRET-NEVER-ISSUED"}}}}
{"dir":"in","t_ms":35,"type":"binary","json":{"setupComplete":{}}}
"#;
    let imported = import_wire_log("odd.jsonl", log, "odd").unwrap();
    let json = imported.script.to_json();
    let text = json.to_string();
    assert!(!text.contains("SECRET"), "{text}");
    assert!(text.contains("bye handle-1"), "{text}");
    ScriptedServer::from_json_str(&text, "odd.json").expect("the script reads back");
    let actions = imported.script.actions();
    let sent: Vec<&serde_json::Value> = actions
        .iter()
        .filter_map(|a| match a {
            Action::Send(message) => Some(message),
            _ => None,
        })
        .collect();
    assert_eq!(
        sent,
        [
            &json!({"toolCall":{"functionCalls":[{"id":"","name":"get_weather","args":{}}]}}),
            &json!({"toolCall":{"functionCalls":[]}})
        ]
    );
    assert!(
        actions.contains(&Action::SendRaw("AAEC".to_string())),
        "{actions:?}"
    );
    assert!(
        actions
            .iter()
            .any(|a| matches!(a, Action::Reconnect(r) if r.handle.is_none())),
        "{actions:?}"
    );
    assert!(
        imported
            .notes
            .iter()
            .any(|n| n.contains("which no resumable update")),
        "{:?}",
        imported.notes
    );
}

/// A session Google's Python SDK (google-genai 3.6.1) played against
/// `livesim serve examples/serve/weather-first.json --record DIR`
/// (`examples/serve/client.py`), committed as recorded: imported, it is
/// the script that was served, snake_case client messages and all.
#[test]
fn the_python_sdk_recording_imports_as_the_script_it_played() {
    let log = std::fs::read("tests/fixtures/import/weather-python-sdk.jsonl").unwrap();
    let imported = import_wire_log("weather-python-sdk.jsonl", &log, "weather-first").unwrap();
    assert!(imported.damaged.is_empty(), "{:?}", imported.damaged);
    let served = ScriptedServer::load("examples/serve/weather-first.json").unwrap();
    assert_eq!(imported.script.actions(), served.actions());
    let text = String::from_utf8(log).unwrap();
    assert!(
        !text.contains("FAKE-KEY"),
        "the client's key never reached the log"
    );
}

/// A transparent session's log, recorded: the handle's index lags one
/// message behind what the server received, the connection fails, and the
/// session replays that message on the next before saying something new.
const TRANSPARENT: &str = r#"{"v":1,"kind":"wire_log","started_at_ms":0}
{"dir":"out","t_ms":0,"type":"text","json":{"setup":{"model":"models/m","sessionResumption":{"transparent":true}}}}
{"dir":"in","t_ms":40,"type":"binary","json":{"setupComplete":{}}}
{"dir":"out","t_ms":50,"type":"text","json":{"realtimeInput":{"text":"one"}}}
{"dir":"out","t_ms":60,"type":"text","json":{"realtimeInput":{"text":"two"}}}
{"dir":"in","t_ms":70,"type":"binary","json":{"sessionResumptionUpdate":{"newHandle":"SECRET-H","resumable":true,"lastConsumedClientMessageIndex":"1"}}}
{"dir":"in","t_ms":80,"type":"close","close":{"code":1011,"reason":"Internal error encountered."}}
{"dir":"out","t_ms":200,"type":"text","json":{"setup":{"model":"models/m","sessionResumption":{"handle":"SECRET-H","transparent":true}}}}
{"dir":"in","t_ms":240,"type":"binary","json":{"setupComplete":{}}}
{"dir":"out","t_ms":250,"type":"text","json":{"realtimeInput":{"text":"two"}}}
{"dir":"out","t_ms":260,"type":"text","json":{"realtimeInput":{"text":"three"}}}
{"dir":"in","t_ms":300,"type":"binary","json":{"serverContent":{"turnComplete":true}}}
"#;

/// An imported transparent resumption keeps how far its handle lagged
/// (`behind`, from the recorded index) and waits for what the resumed
/// session said new, not for its replays: played against a session that
/// resumes transparently, the script is satisfied and checks the replay.
#[test]
fn a_transparent_resumption_imports_with_its_lag_and_without_its_replays() {
    let imported = import_wire_log("transparent.jsonl", TRANSPARENT.as_bytes(), "t").unwrap();
    assert!(imported.damaged.is_empty(), "{:?}", imported.damaged);
    let actions: Vec<String> = imported
        .script
        .actions()
        .iter()
        .filter(|a| !matches!(a, Action::PauseMs(_)))
        .map(|a| serde_json::to_string(a).unwrap())
        .collect();
    assert_eq!(
        actions,
        [
            r#"{"expect":"realtimeInput.text"}"#,
            r#"{"expect":"realtimeInput.text"}"#,
            r#"{"resumption_update":{"handle":"handle-1","transparent":true,"behind":1}}"#,
            r#"{"close":{"code":1011,"reason":"Internal error encountered."}}"#,
            r#"{"reconnect":{"handle":"handle-1"}}"#,
            r#"{"expect":"realtimeInput.text"}"#,
            r#"{"send":{"serverContent":{"turnComplete":true}}}"#,
        ]
    );
    let script = imported.script;
    let texts = Simulation::new(Seed::new(5))
        .run(|| async move {
            let (connector, control) = script.into_connector();
            let handle = Live::builder()
                .text_only()
                .resumption(Resumption::on().transparent(true))
                .connect_with_connector(connector)
                .await
                .unwrap();
            let mut events = handle.events();
            control.release();
            handle.send_realtime_text("one").unwrap();
            handle.send_realtime_text("two").unwrap();
            while let Some(event) = events.next().await {
                if matches!(event, LiveEvent::Resumed { .. }) {
                    break;
                }
            }
            handle.send_realtime_text("three").unwrap();
            while let Some(event) = events.next().await {
                if matches!(event, LiveEvent::TurnComplete { .. }) {
                    break;
                }
            }
            control.drained().await;
            assert_eq!(control.errors(), vec![]);
            handle.disconnect().await;
            control
                .sent()
                .iter()
                .filter_map(|m| m.pointer("/realtimeInput/text").and_then(|t| t.as_str()))
                .map(String::from)
                .collect::<Vec<_>>()
        })
        .unwrap()
        .value;
    assert_eq!(texts, ["one", "two", "two", "three"]);
}

/// A recorded close a close frame cannot carry (a log that wrote 1006 for
/// a lost connection) imports as a dropped connection, and a reason longer
/// than a close frame holds is cut where the wire cuts it: the imported
/// script loads again.
#[test]
fn a_recorded_close_imports_as_a_close_frame_can_carry_it() {
    let long = "x".repeat(200);
    let log = format!(
        r#"{{"v":1,"kind":"wire_log","started_at_ms":0}}
{{"dir":"out","t_ms":0,"type":"text","json":{{"setup":{{"model":"m"}}}}}}
{{"dir":"in","t_ms":5,"type":"binary","json":{{"setupComplete":{{}}}}}}
{{"dir":"in","t_ms":9,"type":"close","close":{{"code":1006,"reason":""}}}}
{{"dir":"out","t_ms":30,"type":"text","json":{{"setup":{{"model":"m"}}}}}}
{{"dir":"in","t_ms":35,"type":"binary","json":{{"setupComplete":{{}}}}}}
{{"dir":"in","t_ms":40,"type":"close","close":{{"code":1011,"reason":"{long}"}}}}
"#
    );
    let imported = import_wire_log("closes.jsonl", log.as_bytes(), "c").unwrap();
    let closes: Vec<&Action> = imported
        .script
        .actions()
        .iter()
        .filter(|a| matches!(a, Action::Close(_) | Action::Abort))
        .collect();
    assert_eq!(closes.len(), 2, "{closes:?}");
    assert_eq!(closes[0], &Action::Abort);
    assert!(
        matches!(closes[1], Action::Close(c) if c.code == 1011 && c.reason == "x".repeat(123)),
        "{closes:?}"
    );
    let text = imported.script.to_json().to_string();
    ScriptedServer::from_json_str(&text, "closes.json").unwrap();
}
