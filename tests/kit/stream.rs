//! A script's `stream`: a voice client streams microphone chunks whenever
//! it likes (before, during and after the model's reply, while a tool
//! runs), and a script that names the kind takes them all; without it,
//! the same traffic breaks the script as it always did.

use std::time::Duration;

use livesim::testing::{ReplayControl, ReplayTransport, ScriptedServer};
use livesim::transport::Transport;
use livesim::wire::Frame;
use serde_json::{Value, json};

use super::strict::client;

fn text(message: Value) -> Frame {
    Frame::Text(message.to_string())
}

/// 20 ms of 16 kHz silence, as Google's Python SDK sends a microphone.
fn chunk() -> Frame {
    text(json!({ "realtime_input": { "audio": {
        "data": "AAAAAAAAAAAAAAAA", "mime_type": "audio/pcm;rate=16000" } } }))
}

/// The conversation: the user speaks (audio), the model hears, calls a
/// tool (with a pause before it), answers, then waits for a typed turn
/// (`clientContent` stays strict) and says goodbye.
fn conversation(streamed: bool) -> ScriptedServer {
    let script = ScriptedServer::new().named("mic");
    let script = if streamed {
        script.streams("realtimeInput.audio")
    } else {
        script
    };
    script
        .expects("realtimeInput.audio")
        .hears("What's the weather in Paris?")
        .pause(Duration::from_millis(30))
        .calls("get_weather", json!({ "city": "Paris" }))
        .says("It is sunny in Paris.")
        .expects("clientContent")
        .says("Bye.")
}

/// How the microphone client behaves: a chunk every `period`, `pre_roll`
/// chunks at once before anything, and the tool answered only after
/// `tool_chunks` more chunks (the tool takes a while).
#[derive(Clone, Copy)]
struct Mic {
    period: Duration,
    pre_roll: u64,
    tool_chunks: u64,
}

/// What the client saw: chunks sent, the close it got (if the server
/// closed), and every server message.
struct Talked {
    chunks: u64,
    close: Option<u16>,
    heard: Vec<Value>,
}

/// Plays the microphone client against `script` until the script says
/// goodbye (then it sends three more chunks and hangs up) or the server
/// closes. Runs on the paused clock: the same `mic` gives the same run.
async fn talk(script: ScriptedServer, mic: Mic) -> (ReplayControl, Talked) {
    let (mut t, control) = client(script).await;
    let mut chunks = 0;
    for _ in 0..mic.pre_roll {
        t.send(chunk()).await.unwrap();
        chunks += 1;
    }
    let mut interval = tokio::time::interval(mic.period);
    let mut turns = 0;
    let mut call: Option<(String, u64)> = None;
    let mut heard = Vec::new();
    let close = loop {
        tokio::select! {
            biased;
            frame = t.recv() => match frame {
                Some(Ok(Frame::Close(close))) => break close.map(|c| c.code),
                Some(Ok(frame)) => {
                    let message: Value = serde_json::from_slice(frame.payload().unwrap()).unwrap();
                    if let Some(id) = message.pointer("/toolCall/functionCalls/0/id") {
                        call = Some((id.as_str().unwrap().to_string(), chunks + mic.tool_chunks));
                    }
                    if message.pointer("/serverContent/turnComplete").is_some() {
                        turns += 1;
                        if turns == 1 {
                            t.send(text(json!({ "client_content": { "turns": [
                                { "role": "user", "parts": [{ "text": "Thanks!" }] }
                            ], "turn_complete": true } }))).await.unwrap();
                        }
                    }
                    heard.push(message);
                    if turns == 2 {
                        for _ in 0..3 {
                            t.send(chunk()).await.unwrap();
                            chunks += 1;
                        }
                        t.close(None).await.unwrap();
                        break None;
                    }
                }
                other => panic!("the connection ended without a close: {other:?}"),
            },
            _ = interval.tick() => {
                t.send(chunk()).await.unwrap();
                chunks += 1;
            }
        }
        if let Some((id, _)) = call.as_ref().filter(|(_, after)| chunks >= *after) {
            t.send(text(json!({ "tool_response": { "function_responses": [
                { "id": id, "name": "get_weather", "response": { "sky": "sunny" } }
            ] } })))
            .await
            .unwrap();
            call = None;
        }
    };
    control.wait_until(ReplayControl::is_finished).await;
    let talked = Talked {
        chunks,
        close,
        heard,
    };
    (control, talked)
}

const MICS: [Mic; 3] = [
    Mic {
        period: Duration::from_millis(20),
        pre_roll: 0,
        tool_chunks: 1,
    },
    Mic {
        period: Duration::from_millis(20),
        pre_roll: 3,
        tool_chunks: 4,
    },
    Mic {
        period: Duration::from_millis(7),
        pre_roll: 10,
        tool_chunks: 0,
    },
];

/// However many chunks come, and wherever they fall (before the first
/// `expect`, during a pause, while the call runs, while the script waits
/// for the typed turn, after its last action), a script that streams
/// audio plays to its end, and counts every chunk it took.
#[tokio::test(start_paused = true)]
async fn a_streamed_microphone_plays_the_script_through_whatever_the_chunk_count() {
    let mut counts = Vec::new();
    for mic in MICS {
        let (control, talked) = talk(conversation(true), mic).await;
        assert!(control.errors().is_empty(), "{:?}", control.errors());
        assert_eq!(talked.close, None, "the script never closes");
        assert!(control.is_drained(), "every action was performed");
        assert!(control.unanswered_calls().is_empty());
        assert_eq!(control.streamed(), talked.chunks);
        let said: Vec<&str> = talked
            .heard
            .iter()
            .filter_map(|m| m.pointer("/serverContent/modelTurn/parts/0/text"))
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(said, ["It is sunny in Paris.", "Bye."]);
        counts.push(talked.chunks);
    }
    // The point: the count depends on timing, and the script does not.
    counts.dedup();
    assert_eq!(counts.len(), MICS.len(), "{counts:?}");
}

/// Without `stream` the same traffic breaks the script at the second
/// chunk, as it always has (the first one meets the `expect`).
#[tokio::test(start_paused = true)]
async fn without_stream_the_same_microphone_breaks_the_script() {
    let (control, talked) = talk(conversation(false), MICS[1]).await;
    assert_eq!(talked.close, Some(1007));
    let errors = control.errors();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0]
            .problem
            .starts_with("the client sent realtimeInput, which the script does not expect here"),
        "{}",
        errors[0]
    );
    assert_eq!(control.streamed(), 0);
}

/// The server messages `t` has been sent so far, without waiting for more.
async fn pending(t: &mut ReplayTransport) -> Vec<Value> {
    let mut got = Vec::new();
    while let Ok(Some(Ok(frame))) = tokio::time::timeout(Duration::from_millis(1), t.recv()).await {
        got.push(serde_json::from_slice(frame.payload().unwrap()).unwrap());
    }
    got
}

/// An `expect` of a streamed kind means "the user spoke after this
/// point": chunks that came before the script reached it do not meet it.
/// Each chunk is content the session consumed, so a transparent
/// resumption's index counts them all.
#[tokio::test(start_paused = true)]
async fn a_streamed_expect_waits_for_a_chunk_after_it_is_reached_and_the_index_counts_chunks() {
    let script = ScriptedServer::new()
        .named("new-chunk")
        .streams("realtimeInput.audio")
        .pause(Duration::from_millis(50))
        .expects("realtimeInput.audio")
        .resumption_update_transparent("h-1")
        .says("I heard you.");
    // The script sends resumption updates: the setup asks for them.
    let (mut t, control) = script.into_transport();
    t.send(text(
        json!({ "setup": { "model": "models/m", "sessionResumption": {} } }),
    ))
    .await
    .unwrap();
    assert_eq!(pending(&mut t).await, [json!({ "setupComplete": {} })]);
    control.release();
    for _ in 0..3 {
        t.send(chunk()).await.unwrap();
    }
    // Past the pause: the script reached its `expect` and still waits,
    // the three chunks taken but not counted as the user speaking.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(control.expects_reached(), 1);
    assert_eq!(control.streamed(), 3);
    assert_eq!(pending(&mut t).await, Vec::<Value>::new());
    t.send(chunk()).await.unwrap();
    let got = pending(&mut t).await;
    assert_eq!(
        got[0]["sessionResumptionUpdate"]["lastConsumedClientMessageIndex"], "4",
        "{got:?}"
    );
    assert_eq!(
        got[1]["serverContent"]["modelTurn"]["parts"][0]["text"],
        "I heard you."
    );
    assert!(control.errors().is_empty(), "{:?}", control.errors());
}

/// A kind the stream names is checked as an `expect` is: a typo is
/// refused at load, naming the file, the line and the nearest kind.
#[test]
fn an_unknown_stream_kind_is_refused_naming_the_nearest() {
    let error = ScriptedServer::from_json_str(
        "{\"v\": 1,\n \"stream\": [\"realtimeInput.audio\", \"realtimeInput.vidoe\"],\n \"actions\": []}",
        "mic.json",
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        error,
        "script mic.json: stream entry #2 at line 2, column 36: stream `realtimeInput.vidoe` names no member a realtimeInput message holds; did you mean `realtimeInput.video`? (expected one of `audio`, `video`, `text`, `mediaChunks`, `activityStart`, `activityEnd`, `audioStreamEnd`)"
    );
    let error = ScriptedServer::from_json_str(
        r#"{"v": 1, "stream": ["realtimeinput"], "actions": []}"#,
        "mic.json",
    )
    .unwrap_err()
    .to_string();
    assert!(error.contains("did you mean `realtimeInput`?"), "{error}");
    // Written back, a streamed script reads the same.
    let script = ScriptedServer::new()
        .streams("realtime_input.audio")
        .expects("realtimeInput.audio");
    let again = ScriptedServer::from_json_str(&script.to_json().to_string(), "again").unwrap();
    assert_eq!(again, script);
}
