//! Running `livesim serve` as a user runs it: the built binary, a script
//! file in the temp directory, the URL read from its first stdout line,
//! and its exit status and output once it ends. Nothing sleeps: every
//! wait is for a real event (a line, a frame, the process's exit), capped
//! so a broken server fails the test instead of hanging it.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStderr, ChildStdout, Command};
use tokio_tungstenite::tungstenite::Message;

/// The fake API key every test connects with; it must never be printed.
pub const KEY: &str = "FAKE-KEY-serve-0123456789";

/// The v1beta Live path.
pub const PATH: &str =
    "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent";

/// The most any single wait takes before the test fails.
pub const LIMIT: Duration = Duration::from_secs(60);

/// A file under the system temp directory, removed on drop.
pub struct TempFile(pub PathBuf);

impl TempFile {
    /// A fresh, unique path (nothing written yet).
    pub fn unique(label: &str, extension: &str) -> TempFile {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        TempFile(std::env::temp_dir().join(format!(
            "livesim-serve-test-{}-{n}-{label}.{extension}",
            std::process::id()
        )))
    }

    /// A unique file holding `text`.
    pub fn with(label: &str, extension: &str, text: &str) -> TempFile {
        let file = TempFile::unique(label, extension);
        std::fs::write(&file.0, text).unwrap();
        file
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A running `livesim serve`; killed if the test ends without `finish`.
pub struct Served {
    child: Child,
    stdout: Lines<BufReader<ChildStdout>>,
    stderr: ChildStderr,
    /// The first stdout line's URL.
    pub url: String,
    /// `ws://127.0.0.1:PORT` (or `wss://`).
    pub base_url: String,
    /// Every stdout line read so far.
    pub lines: Vec<String>,
    _script: TempFile,
}

/// How a `livesim serve` run ended.
#[derive(Debug)]
pub struct Ended {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Ended {
    /// Both streams, for assertions about anything printed.
    pub fn output(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

/// Writes `script` to a temp file and starts `livesim serve` on it with
/// `args`, returning once it printed where it listens.
pub async fn serve(script: &Value, args: &[&str]) -> Served {
    let file = TempFile::with(
        "script",
        "json",
        &serde_json::to_string_pretty(script).unwrap(),
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_livesim"))
        .arg("serve")
        .arg(file.path())
        .args(["--port", "0"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the livesim binary starts");
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let stderr = child.stderr.take().unwrap();
    let first = tokio::time::timeout(LIMIT, stdout.next_line())
        .await
        .expect("livesim serve printed its URL in time")
        .unwrap()
        .expect("livesim serve printed a first line");
    let url = first
        .strip_prefix("livesim serve: listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
        .to_string();
    assert!(url.ends_with(PATH), "{url} is not at the v1beta Live path");
    let at = url.find("/ws/").expect("the URL has the Live path");
    let base_url = url[..at].to_string();
    Served {
        child,
        stdout,
        stderr,
        url,
        base_url,
        lines: vec![first],
        _script: file,
    }
}

impl Served {
    /// The server's process id (tests/hostile reads its memory; it shares
    /// this harness).
    #[allow(dead_code)]
    pub fn pid(&self) -> u32 {
        self.child.id().expect("the server is running")
    }

    /// The next stdout line.
    pub async fn line(&mut self) -> String {
        let line = tokio::time::timeout(LIMIT, self.stdout.next_line())
            .await
            .expect("a stdout line in time")
            .unwrap()
            .expect("another stdout line");
        self.lines.push(line.clone());
        line
    }

    /// Waits for the server to exit and collects what it printed.
    pub async fn finish(mut self) -> Ended {
        let status = tokio::time::timeout(LIMIT, self.child.wait())
            .await
            .expect("livesim serve exited in time")
            .unwrap();
        let mut stdout = self.lines.join("\n");
        while let Ok(Some(line)) = self.stdout.next_line().await {
            stdout.push('\n');
            stdout.push_str(&line);
        }
        let mut stderr = String::new();
        self.stderr.read_to_string(&mut stderr).await.unwrap();
        Ended {
            code: status.code(),
            stdout,
            stderr,
        }
    }
}

/// `livesim ARGS` run to completion (for usage errors).
pub fn livesim(args: &[&str]) -> Ended {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_livesim"))
        .args(args)
        .output()
        .expect("the livesim binary runs");
    Ended {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A WebSocket client as another language's SDK would be: raw frames.
pub type Ws<S> = tokio_tungstenite::WebSocketStream<S>;

/// A client of `served` that has sent a setup asking for resumption
/// updates (what a script that issues handles expects). The hostile
/// suite's tests use it; this suite's own clients are SDK-shaped.
#[allow(dead_code)]
pub async fn resuming_client(
    served: &Served,
) -> Ws<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>> {
    let (mut ws, _) = tokio_tungstenite::connect_async(served.url.as_str())
        .await
        .unwrap();
    send(
        &mut ws,
        serde_json::json!({ "setup": { "model": "models/test", "sessionResumption": {} } }),
    )
    .await;
    ws
}

/// Sends one JSON message as a text frame, as every SDK does.
pub async fn send<S>(ws: &mut Ws<S>, message: Value)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    ws.send(Message::Text(message.to_string().into()))
        .await
        .unwrap();
}

/// What the server sent next: a JSON message (text or binary frame), or
/// its close frame as `{"close": code, "reason": …}`. `None` once the
/// connection is over.
pub async fn next<S>(ws: &mut Ws<S>) -> Option<Value>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    loop {
        let message = tokio::time::timeout(LIMIT, ws.next())
            .await
            .expect("a server frame in time")?
            .ok()?;
        return Some(match message {
            Message::Text(text) => serde_json::from_str(text.as_str()).unwrap(),
            Message::Binary(bytes) => serde_json::from_slice(&bytes).unwrap(),
            Message::Close(close) => {
                let (code, reason) = close
                    .map(|c| (u16::from(c.code), c.reason.to_string()))
                    .unwrap_or((1005, String::new()));
                serde_json::json!({ "close": code, "reason": reason })
            }
            _ => continue,
        });
    }
}

/// Reads server messages until one has `key` at the top level.
pub async fn until<S>(ws: &mut Ws<S>, key: &str) -> Value
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    loop {
        let message = next(ws)
            .await
            .unwrap_or_else(|| panic!("the connection ended before {key}"));
        if message.get(key).is_some() {
            return message;
        }
    }
}

/// Closes with 1000 and waits for the server's answering close.
pub async fn hang_up<S>(ws: &mut Ws<S>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let normal = tokio_tungstenite::tungstenite::protocol::CloseFrame {
        code: 1000.into(),
        reason: "".into(),
    };
    ws.close(Some(normal)).await.unwrap();
    while next(ws).await.is_some() {}
}
