//! `livesim serve` against clients that would hold it or grow it: a
//! client that stops talking is closed at the idle timeout (the setup
//! timeout is in `serve_protocol`), and a flood of large frames leaves
//! the server's peak memory bounded (read from /proc, so Linux only).

use livesim::testing::ScriptedServer;
use serde_json::json;

use super::harness::{LIMIT, next, send, serve, until};

/// A client that answers setup, then goes quiet while the script waits for
/// its tool answer, is closed with 1011 at the idle timeout; the server
/// logs it and exits 1.
#[tokio::test]
async fn a_client_gone_quiet_is_closed_at_the_idle_timeout() {
    let script = ScriptedServer::new()
        .named("quiet")
        .calls("get_weather", json!({ "city": "Paris" }))
        .says("Sunny.");
    let served = serve(&script.to_json(), &["--idle-timeout", "300ms"]).await;
    let (mut ws, _) = tokio_tungstenite::connect_async(served.url.as_str())
        .await
        .unwrap();
    send(&mut ws, json!({ "setup": { "model": "models/test" } })).await;
    until(&mut ws, "setupComplete").await;
    until(&mut ws, "toolCall").await;
    // Say nothing: the next thing from the server is its close.
    let close = until(&mut ws, "close").await;
    assert_eq!(
        close,
        json!({ "close": 1011, "reason": "Deadline expired before operation could complete." })
    );
    while next(&mut ws).await.is_some() {}
    let ended = served.finish().await;
    assert_eq!(ended.code, Some(1), "{}", ended.output());
    for line in [
        "no message either way for 300ms (pings do not count): closing with 1011",
        "connection 1: no message either way for 300ms (pings do not count), at action #1 (call get_weather as call-1) of script \"quiet\": closed with 1011",
    ] {
        assert!(
            ended.stderr.contains(line),
            "no {line:?} in:\n{}",
            ended.stderr
        );
    }
}

/// A client that stops reading while the script sends cannot hold the
/// server: once nothing can be written for the idle timeout, the
/// connection is dropped and the server exits 1.
#[tokio::test]
async fn a_client_that_reads_nothing_is_dropped_at_the_idle_timeout() {
    // 32 MB of model text: more than the sockets' buffers hold.
    let chunk = "x".repeat(256 * 1024);
    let mut script = ScriptedServer::new().named("unread");
    for _ in 0..128 {
        script = script.text(chunk.clone());
    }
    let served = serve(&script.to_json(), &["--idle-timeout", "500ms"]).await;
    let (mut ws, _) = tokio_tungstenite::connect_async(served.url.as_str())
        .await
        .unwrap();
    send(&mut ws, json!({ "setup": { "model": "models/test" } })).await;
    // Read nothing more: the server exits on its own.
    let ended = served.finish().await;
    drop(ws);
    assert_eq!(ended.code, Some(1), "{:.3000}", ended.output());
    assert!(
        ended
            .stderr
            .contains("the client read nothing for 500ms: dropping the connection"),
        "{:.3000}",
        ended.stderr
    );
    assert!(
        ended.stderr.contains("of script \"unread\": dropped"),
        "{:.3000}",
        ended.stderr
    );
}

/// Peak resident memory of a process, in bytes (`VmHWM`).
fn peak_rss(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// `frames` messages of 1 MiB each (audio the script accepts), one
/// connection: the server keeps none of them, so its peak memory stays
/// far below what they add up to. 300 frames in `cargo test`, 600 in the
/// nightly run.
#[tokio::test]
async fn a_flood_of_large_frames_leaves_memory_bounded() {
    if std::fs::metadata("/proc/self/status").is_err() {
        eprintln!("no /proc: peak memory cannot be read here");
        return;
    }
    let frames = if super::large() { 600 } else { 300 };
    let mut script = ScriptedServer::new().named("flood");
    for _ in 0..frames {
        script = script.expects("realtimeInput");
    }
    let script = script.says("Got it.");
    let served = serve(&script.to_json(), &[]).await;
    let pid = served.pid();
    let (mut ws, _) = tokio_tungstenite::connect_async(served.url.as_str())
        .await
        .unwrap();
    send(&mut ws, json!({ "setup": { "model": "models/test" } })).await;
    until(&mut ws, "setupComplete").await;
    // 1 MiB of junk audio per message (base64 of nothing in particular).
    let junk = "QUJD".repeat(256 * 1024);
    let message = json!({ "realtimeInput": { "audio": { "mimeType": "audio/pcm;rate=16000", "data": junk } } });
    for _ in 0..frames {
        send(&mut ws, message.clone()).await;
    }
    let reply = tokio::time::timeout(LIMIT * 4, until(&mut ws, "serverContent"))
        .await
        .expect("the script answered after the flood");
    assert!(reply.to_string().contains("Got it."), "{reply}");
    let peak = peak_rss(pid).expect("the server's peak memory");
    super::harness::hang_up(&mut ws).await;
    let ended = served.finish().await;
    assert_eq!(ended.code, Some(0), "{}", ended.output());
    println!(
        "livesim serve peak RSS after {frames} x 1 MiB frames: {:.1} MB",
        peak as f64 / 1e6
    );
    assert!(
        peak <= 150_000_000,
        "peak RSS {:.1} MB after {frames} x 1 MiB frames (limit 150 MB)",
        peak as f64 / 1e6
    );
}

/// One 60 MiB message (sent whole, in the nightly run) is refused with
/// 1009 without the server ever holding it.
#[tokio::test]
async fn a_60_mib_message_is_refused_without_being_held() {
    if !super::large() || std::fs::metadata("/proc/self/status").is_err() {
        return;
    }
    let script = ScriptedServer::new().named("big").expects("realtimeInput");
    // Serving on after this connection, so its memory can be read once
    // the connection is over; killed when `served` drops.
    let served = serve(&script.to_json(), &["--keep-serving"]).await;
    let pid = served.pid();
    let (mut ws, _) = tokio_tungstenite::connect_async(served.url.as_str())
        .await
        .unwrap();
    send(&mut ws, json!({ "setup": { "model": "models/test" } })).await;
    until(&mut ws, "setupComplete").await;
    let junk = "QUJD".repeat(15 * 1024 * 1024);
    // The server may close before the whole message is written.
    let _ = futures::SinkExt::send(
        &mut ws,
        tokio_tungstenite::tungstenite::Message::Text(
            json!({ "realtimeInput": { "text": junk } })
                .to_string()
                .into(),
        ),
    )
    .await;
    let mut code = None;
    while let Some(message) = next(&mut ws).await {
        if let Some(c) = message.get("close") {
            code = c.as_u64();
        }
    }
    let peak = peak_rss(pid).expect("the server's peak memory");
    drop(served);
    assert_eq!(code, Some(1009));
    println!(
        "livesim serve peak RSS after a 60 MiB message: {:.1} MB",
        peak as f64 / 1e6
    );
    assert!(peak <= 100_000_000, "peak RSS {:.1} MB", peak as f64 / 1e6);
}

/// The limits' flags refuse values that make no sense, with exit 2.
#[test]
fn limit_flags_refuse_nonsense() {
    let script = super::Scratch::new("script.json");
    script.write(ScriptedServer::new().to_json().to_string().as_bytes());
    let path = script.path().to_str().unwrap();
    for (flag, value, said) in [
        ("--max-message-size", "0", "at least one byte"),
        ("--max-message-size", "4GB", "unknown unit"),
        ("--setup-timeout", "0s", "longer than zero"),
        ("--idle-timeout", "soon", "not a duration"),
        // A file where the recording's folder should be.
        ("--record", path, "give --record a folder"),
    ] {
        let ended = super::harness::livesim(&["serve", path, flag, value]);
        assert_eq!(ended.code, Some(2), "{flag} {value}: {}", ended.output());
        assert!(
            ended.stderr.contains(said),
            "{flag} {value}: {}",
            ended.stderr
        );
    }
}

/// A client that floods pings and never reads the pongs: the server
/// answers only the latest ping once its writes back up, so its peak
/// memory stays far below the flood (150 MB of pings).
#[tokio::test]
async fn a_ping_flood_that_reads_nothing_leaves_memory_bounded() {
    use super::serve_protocol::{frame, upgraded, waiting_script};
    use tokio::io::AsyncWriteExt;
    if std::fs::metadata("/proc/self/status").is_err() {
        eprintln!("no /proc: peak memory cannot be read here");
        return;
    }
    let served = serve(&waiting_script(), &[]).await;
    let pid = served.pid();
    let mut tcp = upgraded(&served, super::harness::PATH).await;
    let ping = frame(0x9, &[b'p'; 125], true);
    let burst: Vec<u8> = ping.repeat(1024 * 1024 / ping.len());
    for _ in 0..150 {
        tcp.write_all(&burst).await.unwrap();
    }
    let peak = peak_rss(pid).expect("the server's peak memory");
    drop(tcp);
    served.finish().await;
    assert!(
        peak <= 80_000_000,
        "peak RSS {:.1} MB after 150 MB of unread pings (limit 80 MB)",
        peak as f64 / 1e6
    );
}

/// A script across connections whose client leaves at the reconnect and
/// never comes back: the server gives the session up once nothing has
/// played for the setup and idle timeouts together, and exits 1.
#[tokio::test]
async fn a_client_that_never_reconnects_ends_its_session() {
    let script = json!({
        "v": 1,
        "name": "resumes",
        "actions": [
            { "resumption_update": { "handle": "h-1" } },
            { "reconnect": { "handle": "h-1" } },
            { "send": { "serverContent": { "turnComplete": true } } }
        ]
    });
    let served = serve(
        &script,
        &["--setup-timeout", "200ms", "--idle-timeout", "200ms"],
    )
    .await;
    let mut ws = super::harness::resuming_client(&served).await;
    until(&mut ws, "sessionResumptionUpdate").await;
    super::harness::hang_up(&mut ws).await;
    let ended = tokio::time::timeout(LIMIT, served.finish())
        .await
        .expect("the server gave the session up");
    assert_eq!(ended.code, Some(1), "{}", ended.output());
    assert!(
        ended
            .stderr
            .contains("nothing played for 400ms and no client connection"),
        "{}",
        ended.stderr
    );
}

/// Sockets that never finish their upgrade hold no slot: with one
/// connection to serve, a real client behind two silent sockets and one
/// that sent a TLS handshake to the plain port is served at once (the TLS
/// one gets 400 at once too), and the server exits when it is done.
#[tokio::test]
async fn sockets_that_never_upgrade_hold_no_slot() {
    use super::serve_protocol::{address, waiting_script};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let served = serve(&waiting_script(), &[]).await;
    let silent = tokio::net::TcpStream::connect(address(&served))
        .await
        .unwrap();
    let mut half = tokio::net::TcpStream::connect(address(&served))
        .await
        .unwrap();
    half.write_all(b"GET /ws/").await.unwrap();
    let mut tls = tokio::net::TcpStream::connect(address(&served))
        .await
        .unwrap();
    tls.write_all(&[0x16, 0x03, 0x01, 0x00, 0xa5, 0x01, 0x00])
        .await
        .unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(
        std::time::Duration::from_secs(5),
        tls.read_to_end(&mut answer),
    )
    .await
    .expect("the TLS handshake was answered at once")
    .unwrap();
    assert!(
        answer.starts_with(b"HTTP/1.1 400 "),
        "{}",
        String::from_utf8_lossy(&answer)
    );
    let (mut ws, _) = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        tokio_tungstenite::connect_async(served.url.as_str()),
    )
    .await
    .expect("the real client was upgraded at once")
    .unwrap();
    send(&mut ws, json!({ "setup": { "model": "models/test" } })).await;
    until(&mut ws, "setupComplete").await;
    send(
        &mut ws,
        json!({ "clientContent": { "turns": [{ "role": "user", "parts": [{ "text": "hi" }] }], "turnComplete": true } }),
    )
    .await;
    until(&mut ws, "serverContent").await;
    super::harness::hang_up(&mut ws).await;
    let ended = tokio::time::timeout(std::time::Duration::from_secs(5), served.finish())
        .await
        .expect("the server exited without waiting for the silent sockets");
    assert_eq!(ended.code, Some(0), "{}", ended.output());
    assert!(ended.stderr.contains("a TLS handshake"), "{}", ended.stderr);
    drop((silent, half));
}

/// With one connection to serve, a second client that upgrades while the
/// first plays is told to try again later (1013), and not counted.
#[tokio::test]
async fn a_client_past_the_connections_asked_for_gets_1013() {
    use super::serve_protocol::waiting_script;
    let served = serve(&waiting_script(), &[]).await;
    let (mut first, _) = tokio_tungstenite::connect_async(served.url.as_str())
        .await
        .unwrap();
    send(&mut first, json!({ "setup": { "model": "models/test" } })).await;
    until(&mut first, "setupComplete").await;
    let (mut second, _) = tokio_tungstenite::connect_async(served.url.as_str())
        .await
        .unwrap();
    let close = until(&mut second, "close").await;
    assert_eq!(close, json!({ "close": 1013, "reason": "Try Again Later" }));
    super::harness::hang_up(&mut first).await;
    let ended = served.finish().await;
    assert!(
        ended.stderr.contains("closing with 1013"),
        "{}",
        ended.stderr
    );
}

/// A script across connections reports its connection's cut as a
/// one-connection script does: a client gone quiet is closed with 1011
/// and the report says so, not that the client hung up.
#[tokio::test]
async fn a_spanning_script_reports_the_idle_timeout_that_cut_it() {
    let script = json!({
        "v": 1,
        "name": "spans",
        "actions": [
            { "resumption_update": { "handle": "h-1" } },
            { "expect": "clientContent" },
            { "reconnect": { "handle": "h-1" } }
        ]
    });
    let served = serve(
        &script,
        &["--setup-timeout", "200ms", "--idle-timeout", "200ms"],
    )
    .await;
    let mut ws = super::harness::resuming_client(&served).await;
    until(&mut ws, "sessionResumptionUpdate").await;
    let close = until(&mut ws, "close").await;
    assert_eq!(close["close"], 1011);
    while next(&mut ws).await.is_some() {}
    let ended = served.finish().await;
    assert_eq!(ended.code, Some(1), "{}", ended.output());
    assert!(
        ended
            .stderr
            .contains("connection 1: no message either way for 200ms (pings do not count)"),
        "{}",
        ended.stderr
    );
    assert!(!ended.stderr.contains("hung up"), "{}", ended.stderr);
}

/// A connection the idle timeout cut does not end its client session: the
/// client resumes on a new connection, the script plays to its end, and
/// the session's report is that of its latest connection (played, exit 0),
/// not the cut of the one before.
#[tokio::test]
async fn a_session_that_resumes_after_a_cut_is_judged_by_its_latest_connection() {
    let script = json!({
        "v": 1,
        "name": "resumes-after-a-cut",
        "actions": [
            { "resumption_update": { "handle": "h-1" } },
            { "reconnect": { "handle": "h-1" } },
            { "expect": "clientContent" },
            { "send": { "serverContent": { "turnComplete": true } } }
        ]
    });
    let served = serve(
        &script,
        &["--setup-timeout", "300ms", "--idle-timeout", "300ms"],
    )
    .await;
    let mut first = super::harness::resuming_client(&served).await;
    until(&mut first, "sessionResumptionUpdate").await;
    let close = until(&mut first, "close").await;
    assert_eq!(close["close"], 1011);
    while next(&mut first).await.is_some() {}

    let (mut second, _) = tokio_tungstenite::connect_async(served.url.as_str())
        .await
        .unwrap();
    send(
        &mut second,
        json!({ "setup": { "model": "models/test", "sessionResumption": { "handle": "h-1" } } }),
    )
    .await;
    until(&mut second, "setupComplete").await;
    send(
        &mut second,
        json!({ "clientContent": { "turns": [{ "role": "user", "parts": [{ "text": "Hi" }] }], "turnComplete": true } }),
    )
    .await;
    until(&mut second, "serverContent").await;
    super::harness::hang_up(&mut second).await;
    let ended = served.finish().await;
    assert_eq!(ended.code, Some(0), "{}", ended.output());
    assert!(
        ended
            .stderr
            .contains("script \"resumes-after-a-cut\" played to its end"),
        "{}",
        ended.stderr
    );
}
