//! `livesim serve` against clients that do not speak the protocol: bytes
//! that break RFC 6455 get the close code it gives (1007, 1002, 1009), a
//! plain HTTP request gets a status line and a one-line body, every log
//! line stays one bounded, printable line, the v1 path Google's Python
//! SDK uses is served, and so is the `//ws/…` path its JavaScript SDK asks
//! for.

use livesim::serve::MAX_LINE;
use livesim::testing::ScriptedServer;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::harness::{KEY, LIMIT, Served, next, send, serve, until};

/// Where the served connection's TCP end is.
pub(super) fn address(served: &Served) -> String {
    served.base_url.trim_start_matches("ws://").to_string()
}

/// An HTTP request on a fresh connection, and everything the server
/// answered before it closed.
pub(super) async fn http(served: &Served, request: &str) -> String {
    let mut tcp = TcpStream::connect(address(served)).await.unwrap();
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(LIMIT, tcp.read_to_end(&mut answer))
        .await
        .expect("the server answered and closed in time")
        .unwrap();
    String::from_utf8(answer).unwrap()
}

/// A WebSocket upgrade written by hand, so the test can then write any
/// bytes at all; returns the socket after the server's 101.
pub(super) async fn upgraded(served: &Served, path: &str) -> TcpStream {
    let host = address(served);
    let mut tcp = TcpStream::connect(&host).await.unwrap();
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
         Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
         x-goog-api-key: {KEY}\r\n\r\n"
    );
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        tcp.read_exact(&mut byte).await.unwrap();
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap();
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    assert!(
        head.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo="),
        "{head}"
    );
    tcp
}

/// A client frame: FIN, `opcode`, masked (as RFC 6455 requires of
/// clients) unless `masked` is false.
pub(super) fn frame(opcode: u8, payload: &[u8], masked: bool) -> Vec<u8> {
    let mut out = vec![0x80 | opcode];
    let mask_bit = if masked { 0x80 } else { 0 };
    match payload.len() {
        n if n < 126 => out.push(mask_bit | n as u8),
        n if n < 65536 => {
            out.push(mask_bit | 126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(mask_bit | 127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    if masked {
        let mask = [0x11, 0x22, 0x33, 0x44];
        out.extend_from_slice(&mask);
        out.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    } else {
        out.extend_from_slice(payload);
    }
    out
}

/// Reads server frames until a close frame, returning its code and
/// reason (`None` if the connection ended without one).
pub(super) async fn close_code(tcp: &mut TcpStream) -> Option<(u16, String)> {
    let read = async {
        loop {
            let mut head = [0u8; 2];
            tcp.read_exact(&mut head).await.ok()?;
            let len = match head[1] & 0x7f {
                126 => {
                    let mut n = [0u8; 2];
                    tcp.read_exact(&mut n).await.ok()?;
                    u16::from_be_bytes(n) as usize
                }
                127 => {
                    let mut n = [0u8; 8];
                    tcp.read_exact(&mut n).await.ok()?;
                    u64::from_be_bytes(n) as usize
                }
                n => n as usize,
            };
            let mut payload = vec![0u8; len];
            tcp.read_exact(&mut payload).await.ok()?;
            if head[0] & 0x0f == 0x8 {
                let code = u16::from_be_bytes([payload[0], payload[1]]);
                return Some((code, String::from_utf8_lossy(&payload[2..]).into_owned()));
            }
        }
    };
    tokio::time::timeout(LIMIT, read)
        .await
        .expect("a close in time")
}

/// Upgrades, sends setup, and reads setupComplete.
async fn set_up(served: &Served) -> TcpStream {
    let mut tcp = upgraded(served, super::harness::PATH).await;
    let setup = json!({ "setup": { "model": "models/test" } }).to_string();
    tcp.write_all(&frame(0x1, setup.as_bytes(), true))
        .await
        .unwrap();
    let mut head = [0u8; 2];
    tcp.read_exact(&mut head).await.unwrap();
    let mut body = vec![0u8; (head[1] & 0x7f) as usize];
    tcp.read_exact(&mut body).await.unwrap();
    assert_eq!(body, br#"{"setupComplete":{}}"#);
    tcp
}

pub(super) fn waiting_script() -> serde_json::Value {
    ScriptedServer::new()
        .named("waits")
        .expects("clientContent")
        .says("Hello.")
        .to_json()
}

/// A setup that is not an object (a string, null, a list) is refused
/// with 1007, as the service refuses a message it cannot read as one.
#[tokio::test]
async fn a_setup_that_is_not_an_object_gets_1007() {
    for setup in [
        r#"{"setup":"hello"}"#,
        r#"{"setup":null}"#,
        r#"{"setup":[1]}"#,
    ] {
        let served = serve(&waiting_script(), &[]).await;
        let mut tcp = upgraded(&served, super::harness::PATH).await;
        tcp.write_all(&frame(0x1, setup.as_bytes(), true))
            .await
            .unwrap();
        assert_eq!(
            close_code(&mut tcp).await.map(|c| c.0),
            Some(1007),
            "{setup}"
        );
        drop(tcp);
        let ended = served.finish().await;
        assert!(
            ended.stderr.contains("the setup must be an object"),
            "{}",
            ended.stderr
        );
    }
}

/// Each breach of RFC 6455 gets its close code, the log line says which,
/// and the run exits 1 with the report naming it.
#[tokio::test]
async fn protocol_breaches_get_their_rfc_6455_close_codes() {
    let cases: [(&str, Vec<u8>, u16); 4] = [
        (
            "invalid UTF-8 in a text frame",
            frame(0x1, b"{\"a\":\"\xff\xfe\"}", true),
            1007,
        ),
        ("a reserved opcode", frame(0x3, b"{}", true), 1002),
        ("an unmasked client frame", frame(0x1, b"{}", false), 1002),
        // Only the header: the length alone is over the limit, so the
        // server must not wait for (or buffer) 60 MiB.
        (
            "a 60 MiB message",
            frame(0x2, &[], true)[..2].to_vec(),
            1009,
        ),
    ];
    for (what, bytes, code) in cases {
        let served = serve(&waiting_script(), &[]).await;
        let mut tcp = set_up(&served).await;
        let bytes = if code == 1009 {
            let mut header = vec![0x82, 0x80 | 127];
            header.extend_from_slice(&(60u64 << 20).to_be_bytes());
            header.extend_from_slice(&[1, 2, 3, 4]);
            header
        } else {
            bytes
        };
        tcp.write_all(&bytes).await.unwrap();
        let close = close_code(&mut tcp).await;
        assert_eq!(close.map(|c| c.0), Some(code), "{what}");
        let ended = served.finish().await;
        assert_eq!(ended.code, Some(1), "{what}: {}", ended.output());
        assert!(
            ended.stderr.contains("breaks the WebSocket protocol"),
            "{what}: {}",
            ended.stderr
        );
        assert!(
            ended
                .stderr
                .contains(&format!("of script \"waits\": closed with {code}")),
            "{what}: {}",
            ended.stderr
        );
    }
}

/// A message over `--max-message-size`, sent whole by a real client, is
/// closed with 1009.
#[tokio::test]
async fn a_message_over_the_limit_is_closed_with_1009() {
    let served = serve(&waiting_script(), &["--max-message-size", "64KiB"]).await;
    let (mut ws, _) = tokio_tungstenite::connect_async(served.url.as_str())
        .await
        .unwrap();
    send(&mut ws, json!({ "setup": { "model": "models/test" } })).await;
    until(&mut ws, "setupComplete").await;
    let big = "x".repeat(100 * 1024);
    send(&mut ws, json!({ "realtimeInput": { "text": big } })).await;
    let close = until(&mut ws, "close").await;
    assert_eq!(close["close"], 1009, "{close}");
    while next(&mut ws).await.is_some() {}
    let ended = served.finish().await;
    assert_eq!(ended.code, Some(1), "{}", ended.output());
    assert!(
        ended.stderr.contains("Message too long"),
        "{}",
        ended.stderr
    );
}

/// Plain HTTP gets an answer: 404 off the Live paths, 426 on one without
/// an upgrade; each with a one-line body, and neither uses up the one
/// connection to serve.
#[tokio::test]
async fn plain_http_gets_404_or_426_with_a_one_line_body() {
    let served = serve(&waiting_script(), &["--setup-timeout", "200ms"]).await;
    let host = address(&served);
    let root = http(&served, &format!("GET / HTTP/1.1\r\nHost: {host}\r\n\r\n")).await;
    assert!(root.starts_with("HTTP/1.1 404 Not Found\r\n"), "{root}");
    let body = root.split("\r\n\r\n").nth(1).unwrap();
    assert!(
        body.starts_with("livesim serve: no Live endpoint at this path"),
        "{body}"
    );
    assert_eq!(body.matches('\n').count(), 1, "one line: {body:?}");

    let live = http(
        &served,
        &format!(
            "GET {} HTTP/1.1\r\nHost: {host}\r\n\r\n",
            super::harness::PATH
        ),
    )
    .await;
    assert!(
        live.starts_with("HTTP/1.1 426 Upgrade Required\r\n"),
        "{live}"
    );
    assert!(live.contains("\r\nUpgrade: websocket\r\n"), "{live}");
    let body = live.split("\r\n\r\n").nth(1).unwrap();
    assert_eq!(body.matches('\n').count(), 1, "one line: {body:?}");

    // Junk that is not HTTP at all: 400, not a hang.
    let junk = http(&served, "\x16\x03\x01 not http\r\n\r\n").await;
    assert!(junk.starts_with("HTTP/1.1 400 "), "{junk}");

    // The connection to serve is still there: a client that then stays
    // silent is closed at the setup timeout, and the server exits.
    let mut tcp = upgraded(&served, super::harness::PATH).await;
    assert_eq!(
        close_code(&mut tcp).await,
        Some((
            1011,
            "Deadline expired before operation could complete.".to_string()
        ))
    );
    let ended = served.finish().await;
    assert_eq!(ended.code, Some(1), "{}", ended.output());
    for line in [
        "#1 refused the upgrade to / with HTTP 404",
        "#2 refused GET /ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent with HTTP 426",
        "#3 not an HTTP request",
        "#4 no setup within 200ms: closing with 1011",
        "connection 4: no setup within 200ms, at the handshake of script \"waits\": closed with 1011",
    ] {
        assert!(
            ended.stderr.contains(line),
            "no {line:?} in:\n{}",
            ended.stderr
        );
    }
}

/// Upgrade requests RFC 6455 (section 4.2.1) makes bad get 400 with a
/// body saying what was wrong: no `Host` or two, HTTP/1.0, a key that is
/// not 16 bytes in base64, two keys.
#[tokio::test]
async fn upgrades_the_rfc_forbids_get_400() {
    let served = serve(&waiting_script(), &[]).await;
    let path = super::harness::PATH;
    let host = address(&served);
    let head = "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n";
    let good_key = "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n";
    let cases = [
        (
            format!("GET {path} HTTP/1.1\r\n{head}{good_key}\r\n"),
            "exactly one Host",
        ),
        (
            format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nHost: {host}\r\n{head}{good_key}\r\n"),
            "exactly one Host",
        ),
        (
            format!("GET {path} HTTP/1.0\r\nHost: {host}\r\n{head}{good_key}\r\n"),
            "HTTP/1.1",
        ),
        (
            format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n{head}Sec-WebSocket-Key: abc\r\n\r\n"),
            "16 random bytes in base64",
        ),
        (
            format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n{head}{good_key}{good_key}\r\n"),
            "exactly one Sec-WebSocket-Key",
        ),
    ];
    for (request, says) in &cases {
        let answer = http(&served, request).await;
        assert!(
            answer.starts_with("HTTP/1.1 400 "),
            "{request:?} got {answer}"
        );
        assert!(answer.contains(says), "{request:?} got {answer}");
    }
    // A good request still upgrades after them.
    drop(upgraded(&served, path).await);
    let ended = served.finish().await;
    assert_eq!(
        ended.stderr.matches("with HTTP 400").count(),
        cases.len(),
        "{}",
        ended.stderr
    );
}

/// Every log line is one line of at most MAX_LINE bytes (plus the
/// `…(N bytes)` note), with control characters escaped: a client's
/// `ESC[2J` and newlines never reach the terminal raw.
#[tokio::test]
async fn log_lines_stay_single_bounded_and_escaped() {
    let served = serve(&waiting_script(), &[]).await;
    let (mut ws, _) = tokio_tungstenite::connect_async(served.url.as_str())
        .await
        .unwrap();
    send(
        &mut ws,
        json!({ "setup": { "model": "models/\u{1b}[2J\nfake line" } }),
    )
    .await;
    until(&mut ws, "setupComplete").await;
    // Thousands of top-level keys, each with an escape sequence: the
    // summary lists them all, so the line must be cut.
    let mut keys = serde_json::Map::new();
    for i in 0..3000 {
        keys.insert(format!("k{i}\u{1b}[31m\r"), json!(i));
    }
    send(&mut ws, serde_json::Value::Object(keys)).await;
    let close = until(&mut ws, "close").await;
    assert_eq!(close["close"], 1007);
    while next(&mut ws).await.is_some() {}
    let ended = served.finish().await;
    assert!(
        !ended.stderr.contains('\u{1b}'),
        "a raw ESC reached the log"
    );
    assert!(!ended.stderr.contains('\r'), "a raw CR reached the log");
    assert!(
        ended.stderr.contains("models/\\u{1b}[2J\\nfake line"),
        "{}",
        ended.stderr
    );
    let mut cut = 0;
    for line in ended.stderr.lines() {
        let note = line
            .rsplit_once('…')
            .map_or(0, |(_, note)| note.len() + '…'.len_utf8());
        assert!(
            line.len() <= MAX_LINE + note,
            "{} bytes: {line:.200}",
            line.len()
        );
        if line.ends_with(" bytes)") && line.contains("…(") {
            cut += 1;
        }
    }
    assert!(
        cut >= 1,
        "the long line was not cut:\n{:.3000}",
        ended.stderr
    );
}

/// The script of `docs/guide/serving.md` for a client that speaks first,
/// played on the v1 path (google-genai 3.x's default) with frames shaped as
/// that SDK sends them: setup, `client_content` before the server says anything,
/// `tool_response`, then a normal close. The script plays to its end.
#[tokio::test]
async fn the_readme_script_for_a_client_that_speaks_first_plays_on_the_v1_path() {
    let script = readme_script();
    let served = serve(&script, &[]).await;
    let url = served.url.replace(".v1beta.", ".v1.");
    let mut request =
        tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(
            url.as_str(),
        )
        .unwrap();
    request
        .headers_mut()
        .insert("x-goog-api-key", KEY.parse().unwrap());
    let (mut ws, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    weather_conversation(
        &mut ws,
        json!({ "client_content": {
            "turns": [{ "role": "user", "parts": [{ "text": "What's the weather in Paris?" }] }],
            "turn_complete": true } }),
        json!({ "tool_response": { "function_responses": [
            { "id": "call-1", "name": "get_weather", "response": { "city": "Paris", "sky": "sunny" } } ] } }),
    )
    .await;
    let ended = served.finish().await;
    assert_eq!(ended.code, Some(0), "{}", ended.output());
    for line in [
        "upgraded on /ws/google.ai.generativelanguage.v1.GenerativeService.BidiGenerateContent",
        "client → client_content: user \"What's the weather in Paris?\" (turn complete)",
        "connection 1: script \"weather\" played to its end",
    ] {
        assert!(
            ended.stderr.contains(line),
            "no {line:?} in:\n{}",
            ended.stderr
        );
    }
}

/// Google's JavaScript SDK (`@google/genai`) asks for `//ws/…`: it joins
/// the base URL, which `new URL()` always ends in `/`, to `/ws/…`, and
/// puts the key in the query. The Live service serves that path as
/// `/ws/…`, and so does `livesim serve`, with frames shaped as that SDK
/// sends them (camelCase, `models/` before the model).
#[tokio::test]
async fn the_javascript_sdks_double_slash_path_is_served() {
    let script = readme_script();
    let served = serve(&script, &[]).await;
    let url = format!("{}?key={KEY}", served.url.replacen("/ws/", "//ws/", 1));
    assert!(
        url.contains("//ws/google.ai.generativelanguage.v1beta."),
        "{url}"
    );
    // A doubled path that names no Live endpoint is still refused.
    let host = address(&served);
    let stray = http(
        &served,
        &format!("GET //ws//elsewhere HTTP/1.1\r\nHost: {host}\r\n\r\n"),
    )
    .await;
    assert!(stray.starts_with("HTTP/1.1 404 Not Found\r\n"), "{stray}");
    let (mut ws, _) = tokio_tungstenite::connect_async(url.as_str())
        .await
        .unwrap();
    weather_conversation(
        &mut ws,
        json!({ "clientContent": {
            "turns": [{ "role": "user", "parts": [{ "text": "What's the weather in Paris?" }] }],
            "turnComplete": true } }),
        json!({ "toolResponse": { "functionResponses": [
            { "id": "call-1", "name": "get_weather", "response": { "city": "Paris", "sky": "sunny" } } ] } }),
    )
    .await;
    let ended = served.finish().await;
    assert_eq!(ended.code, Some(0), "{}", ended.output());
    assert!(
        ended.stderr.contains(
            "upgraded on //ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent"
        ),
        "{}",
        ended.stderr
    );
}

/// The script of `docs/guide/serving.md` for a client that speaks first.
fn readme_script() -> serde_json::Value {
    let readme = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/guide/serving.md"
    ))
    .unwrap();
    let block = readme
        .split("```json script file=weather-first.json\n")
        .map(|rest| rest.split("```").next().unwrap())
        .find(|block| block.contains("\"expect\": \"clientContent\""))
        .expect("docs/guide/serving.md has a script with an expect");
    serde_json::from_str(block).unwrap()
}

/// The weather conversation of [`readme_script`], as a client SDK has
/// it: setup, the user's `turn`, the `answer` to the call, the spoken
/// answer, then a normal close. `turn` and `answer` are shaped as that
/// SDK sends them.
async fn weather_conversation<S>(
    ws: &mut super::harness::Ws<S>,
    turn: serde_json::Value,
    answer: serde_json::Value,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    send(
        ws,
        json!({ "setup": { "model": "models/gemini-live-2.5-flash-preview",
            "generationConfig": { "responseModalities": ["TEXT"] },
            "tools": [{ "functionDeclarations": [{ "name": "get_weather", "description": "Weather for a city",
                "parameters": { "type": "OBJECT", "properties": { "city": { "type": "STRING" } } } }] }] } }),
    )
    .await;
    until(ws, "setupComplete").await;
    send(ws, turn).await;
    let call = until(ws, "toolCall").await;
    assert_eq!(
        call["toolCall"]["functionCalls"][0]["args"]["city"],
        "Paris"
    );
    send(ws, answer).await;
    let text = until(ws, "serverContent").await;
    assert_eq!(
        text["serverContent"]["modelTurn"]["parts"][0]["text"],
        "It is sunny in Paris."
    );
    super::harness::hang_up(ws).await;
}
