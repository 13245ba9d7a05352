//! Peers that misbehave during the handshake and setup get clear errors:
//! a server that closes or rambles in its HTTP answer, answers 101 without
//! the accept key, or is not HTTP at all; a client that sends `livesim
//! serve` a request it cannot read; a key that cannot go in a header; a
//! server that ends a connection before `setupComplete`, refuses a
//! resumption, or sends a number that is not an int64. Each error is
//! checked for its variant and its words, and every wait is capped, so a
//! hang fails the test instead of stalling it.

use std::future::Future;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use livesim::Seed;
use livesim::executor::Simulation;
use livesim::prelude::*;
use livesim::session::{LiveHandle, Resumption, SessionError};
use livesim::testing::ScriptedServer;
use livesim::transport::memory::{self, MemoryTransport};
use livesim::transport::websocket::{Endpoint, GOOGLE_AI_PATH, WebSocketTransport};
use livesim::transport::{Transport, TransportError};
use livesim::wire::{CloseClass, CloseFrame, Frame, Secret, ServerMessage};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A listener on a free port of 127.0.0.1, and its `ws://` base URL.
async fn listen() -> (TcpListener, String) {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port on 127.0.0.1");
    let base_url = format!(
        "ws://{}",
        listener.local_addr().expect("the listener's address")
    );
    (listener, base_url)
}

/// The fake key every connection here carries; no error may show it.
const KEY: &str = "FAKE-KEY-bad-peers-0123456789";

/// The longest any wait here may take before the test fails as a hang.
const GUARD: Duration = Duration::from_secs(20);

/// `work`, or a failure naming `what` if it takes longer than [`GUARD`].
async fn guarded<F: Future>(what: &str, work: F) -> F::Output {
    tokio::time::timeout(GUARD, work)
        .await
        .unwrap_or_else(|_| panic!("{what}: still waiting after {GUARD:?} (a hang)"))
}

/// The Google AI endpoint, with the fake key, at `base_url`.
fn endpoint(base_url: &str) -> Endpoint {
    Endpoint::google_ai(Secret::new(KEY)).base_url(base_url)
}

/// Asserts that neither the Display nor the Debug of `error` holds the key.
fn assert_no_key<E: std::fmt::Display + std::fmt::Debug>(error: &E) {
    let shown = format!("{error} {error:?}");
    assert!(!shown.contains(KEY), "the key leaked into an error");
}

/// Reads the client's upgrade request up to its blank line.
async fn read_request(socket: &mut TcpStream) -> Vec<u8> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        socket
            .read_exact(&mut byte)
            .await
            .expect("the client sends a whole upgrade request");
        head.push(byte[0]);
    }
    head
}

/// Runs `server` on the one connection a WebSocket client makes to a fresh
/// port, and returns the error the client's connect ends with.
async fn connect_to<F, Fut>(server: F) -> (String, TransportError)
where
    F: FnOnce(TcpStream) -> Fut,
    Fut: Future<Output = ()>,
{
    let (listener, base_url) = listen().await;
    let peer = async move {
        let (socket, _) = listener.accept().await.expect("the client connects");
        server(socket).await;
    };
    let endpoint = endpoint(&base_url);
    let ((), connected) = guarded("connect", async {
        tokio::join!(peer, WebSocketTransport::connect(&endpoint))
    })
    .await;
    let error = match connected {
        Ok(_) => panic!("the client took the misbehaving server's answer as an upgrade"),
        Err(error) => error,
    };
    assert_no_key(&error);
    (endpoint.redacted_url(), error)
}

/// The `problem` of a connect error to `url`; panics on any other error.
fn connect_problem(url: &str, error: TransportError) -> String {
    match error {
        TransportError::Connect {
            url: shown,
            problem,
        } => {
            assert_eq!(shown, url, "the error names the URL, redacted");
            problem
        }
        other => panic!("expected a connect error, got {other:?}"),
    }
}

// --- handshake.rs:134, :140: an answer head that ends early or never ----

/// A server that closes halfway through its answer's head is reported as
/// having closed after that many bytes, a retryable connect error.
#[tokio::test]
async fn a_server_that_closes_in_the_middle_of_its_answer_head_is_a_clear_connect_error() {
    const PARTIAL: &[u8] = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n";
    let (url, error) = connect_to(|mut socket| async move {
        read_request(&mut socket).await;
        socket.write_all(PARTIAL).await.expect("the head's start");
        // Dropped here: the blank line never comes.
    })
    .await;
    assert_eq!(error.class(), CloseClass::Retryable);
    assert_eq!(error.as_closed().code, 1006);
    assert_eq!(
        connect_problem(&url, error),
        format!(
            "reading the upgrade answer: the connection closed after {} bytes of an HTTP head",
            PARTIAL.len()
        )
    );
}

/// A server that closes without a byte of answer is reported as closing
/// before its answer, not before a request (the client sent the request).
#[tokio::test]
async fn a_server_that_closes_before_answering_is_said_to_close_before_its_answer() {
    let (url, error) = connect_to(|mut socket| async move {
        read_request(&mut socket).await;
    })
    .await;
    let problem = connect_problem(&url, error);
    assert!(
        problem.starts_with("reading the upgrade answer: the connection closed"),
        "{problem}"
    );
    assert!(!problem.contains("request"), "{problem}");
}

/// A server whose answer head never ends is cut off at 16 KiB with an
/// error that says so, without waiting for the server to stop.
#[tokio::test]
async fn a_server_whose_answer_head_never_ends_is_cut_off_at_the_head_limit() {
    let (url, error) = connect_to(|mut socket| async move {
        read_request(&mut socket).await;
        let _ = socket
            .write_all(b"HTTP/1.1 101 Switching Protocols\r\n")
            .await;
        let line = format!("X-Padding: {}\r\n", "a".repeat(1000));
        // Until the client hangs up: the head never ends and the socket
        // never closes from this side.
        while socket.write_all(line.as_bytes()).await.is_ok() {}
    })
    .await;
    assert_eq!(
        connect_problem(&url, error),
        "reading the upgrade answer: the HTTP head is longer than 16384 bytes"
    );
}

/// A server whose answer head does end, but one byte past 16 KiB, is
/// refused the same way: the read that crosses the limit always holds the
/// end, so this is the head found too long, not one that never ended.
#[tokio::test]
async fn a_server_whose_answer_head_ends_one_byte_past_the_limit_is_refused_as_too_long() {
    const LIMIT: usize = 16 * 1024;
    let start = "HTTP/1.1 101 Switching Protocols\r\nX-Padding: ";
    let end = "\r\n\r\n";
    let head = format!(
        "{start}{}{end}",
        "c".repeat(LIMIT + 1 - start.len() - end.len())
    );
    assert_eq!(head.len(), LIMIT + 1);
    let (url, error) = connect_to(|mut socket| async move {
        read_request(&mut socket).await;
        socket.write_all(head.as_bytes()).await.expect("the head");
        let mut rest = Vec::new();
        let _ = socket.read_to_end(&mut rest).await;
    })
    .await;
    assert_eq!(
        connect_problem(&url, error),
        "reading the upgrade answer: the HTTP head is longer than 16384 bytes"
    );
}

/// Through a session, the same endless answer ends `connect` with a
/// transport error that names the head limit.
#[tokio::test]
async fn a_session_connecting_to_an_endless_answer_gets_a_transport_error() {
    let (listener, base_url) = listen().await;
    let peer = async move {
        let (mut socket, _) = listener.accept().await.expect("the client connects");
        read_request(&mut socket).await;
        let line = format!("X-Padding: {}\r\n", "b".repeat(1000));
        let _ = socket
            .write_all(b"HTTP/1.1 101 Switching Protocols\r\n")
            .await;
        while socket.write_all(line.as_bytes()).await.is_ok() {}
    };
    let session = Live::builder()
        .text_only()
        .api_key(KEY)
        .base_url(base_url.clone())
        .connect();
    let ((), connected) = guarded("session connect", async { tokio::join!(peer, session) }).await;
    let error = connected.expect_err("no session over an endless answer");
    assert_no_key(&error);
    match &error {
        SessionError::Transport(text) => assert_eq!(
            text,
            &format!(
                "could not connect to {base_url}{GOOGLE_AI_PATH}: reading the upgrade answer: \
                 the HTTP head is longer than 16384 bytes"
            )
        ),
        other => panic!("expected a transport error, got {other:?}"),
    }
}

/// A port where something other than a Live server speaks first and then
/// waits (an SSH banner, no blank line) must not hold `connect` past the
/// session's setup timeout.
#[tokio::test]
async fn a_server_that_never_finishes_its_answer_is_bounded_by_the_setup_timeout() {
    let (listener, base_url) = listen().await;
    let peer = async move {
        let (mut socket, _) = listener.accept().await.expect("the client connects");
        socket
            .write_all(b"SSH-2.0-OpenSSH_9.6\r\n")
            .await
            .expect("the banner");
        // Waits for the client's own banner, which never comes, until the
        // client hangs up.
        let mut rest = Vec::new();
        let _ = socket.read_to_end(&mut rest).await;
    };
    let timeout = Duration::from_millis(500);
    let session = Live::builder()
        .text_only()
        .api_key(KEY)
        .base_url(base_url)
        .setup_timeout(timeout)
        .connect();
    let ((), connected) = guarded("session connect", async { tokio::join!(peer, session) }).await;
    assert!(
        matches!(connected, Err(SessionError::SetupTimeout(t)) if t == timeout),
        "{:?}",
        connected.err()
    );
}

// --- handshake.rs:185: a URL without a scheme ----------------------------

/// A base URL that is only a path (a relative proxy path) is refused
/// before any connection, naming the missing scheme.
#[tokio::test]
async fn a_base_url_that_is_only_a_path_is_refused_for_its_missing_scheme() {
    for base in ["", "/live-proxy"] {
        let endpoint = endpoint(base);
        let error = guarded("connect", WebSocketTransport::connect(&endpoint))
            .await
            .err()
            .expect("no connection without a scheme");
        assert_no_key(&error);
        assert_eq!(
            error,
            TransportError::Connect {
                url: format!("{base}{GOOGLE_AI_PATH}"),
                problem: "the URL has no scheme (ws:// or wss://)".to_string(),
            }
        );
    }
}

/// A base URL that forgot its scheme (`127.0.0.1:9000`, the most common
/// way to miss it) is refused naming the missing scheme.
#[tokio::test]
async fn a_base_url_of_host_and_port_is_refused_for_its_missing_scheme() {
    for base in ["127.0.0.1:9000", "localhost:9000"] {
        let error = guarded("connect", WebSocketTransport::connect(&endpoint(base)))
            .await
            .err()
            .expect("no connection without a scheme");
        let text = error.to_string();
        assert!(text.contains("no scheme (ws:// or wss://)"), "{text}");
    }
}

// --- handshake.rs:255: a key that cannot be a header value ---------------

/// Connects with `key` to a server that records every byte it gets, and
/// returns the client's error and those bytes.
async fn connect_with_key(key: &str) -> (TransportError, Vec<u8>) {
    let (listener, base_url) = listen().await;
    let peer = async move {
        let (mut socket, _) = listener.accept().await.expect("the client connects");
        let mut got = Vec::new();
        let mut chunk = [0u8; 1024];
        while !got.windows(4).any(|w| w == b"\r\n\r\n") {
            match socket.read(&mut chunk).await {
                Ok(0) | Err(_) => return got,
                Ok(n) => got.extend_from_slice(&chunk[..n]),
            }
        }
        // A request came after all: refused, as a strict server would.
        let _ = socket
            .write_all(
                b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            )
            .await;
        got
    };
    let endpoint = Endpoint::google_ai(Secret::new(key)).base_url(base_url);
    let (got, connected) = guarded("connect", async {
        tokio::join!(peer, WebSocketTransport::connect(&endpoint))
    })
    .await;
    let error = connected
        .err()
        .expect("no upgrade with a key that is not a header value");
    (error, got)
}

/// A key with a line break is refused before a byte of the request is
/// written, so it can neither inject a header nor reach the server.
#[tokio::test]
async fn a_key_with_a_line_break_is_refused_before_anything_is_sent() {
    for key in ["FAKE-KEY\r\nX-Injected: yes", "FAKE-KEY\nsecond-line"] {
        let (error, got) = connect_with_key(key).await;
        assert!(got.is_empty(), "{} bytes reached the server", got.len());
        let TransportError::Connect { problem, .. } = &error else {
            panic!("expected a connect error, got {error:?}")
        };
        assert_eq!(
            problem,
            "the x-goog-api-key header value is not a valid HTTP header value"
        );
        assert!(!format!("{error} {error:?}").contains("FAKE-KEY"));
    }
}

/// A key with another byte a header value may not hold (NUL, a control
/// character) is refused the same way, before anything is sent.
#[tokio::test]
async fn a_key_with_a_nul_or_control_byte_is_refused_before_anything_is_sent() {
    for key in ["FAKE-KEY\0tail", "FAKE-KEY\x7ftail", "FAKE-KEY\x01tail"] {
        let (error, got) = connect_with_key(key).await;
        assert!(got.is_empty(), "{} bytes reached the server", got.len());
        assert!(
            matches!(&error, TransportError::Connect { problem, .. }
                if problem == "the x-goog-api-key header value is not a valid HTTP header value"),
            "{error}"
        );
    }
}

// --- handshake.rs:276: an answer that is not HTTP -----------------------

/// A server that answers in another protocol (its lines end in a blank
/// line) is refused as not answering in HTTP.
#[tokio::test]
async fn a_server_that_answers_in_another_protocol_is_not_taken_for_http() {
    for answer in [
        &b"220 mail.example ESMTP ready\r\n\r\n"[..],
        b"HTTP/1.1 abc Switching Protocols\r\n\r\n",
        b"\r\n\r\n",
    ] {
        let (url, error) = connect_to(|mut socket| async move {
            read_request(&mut socket).await;
            socket.write_all(answer).await.expect("the answer");
            let mut rest = Vec::new();
            let _ = socket.read_to_end(&mut rest).await;
        })
        .await;
        assert_eq!(
            connect_problem(&url, error),
            "the server's answer is not an HTTP response",
            "{}",
            String::from_utf8_lossy(answer)
        );
    }
}

// --- handshake.rs:297: 101 without a valid accept -----------------------

/// A server that answers 101 without the accept key, or with the key for
/// another request, is refused: the socket is never taken for a WebSocket.
#[tokio::test]
async fn a_server_that_answers_101_without_the_accept_key_is_refused() {
    let answers = [
        // No Sec-WebSocket-Accept at all.
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
        // The accept for RFC 6455's sample key, not for this request's key.
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n",
    ];
    for answer in answers {
        let (url, error) = connect_to(|mut socket| async move {
            read_request(&mut socket).await;
            socket
                .write_all(answer.as_bytes())
                .await
                .expect("the answer");
            let mut rest = Vec::new();
            let _ = socket.read_to_end(&mut rest).await;
        })
        .await;
        assert_eq!(
            connect_problem(&url, error),
            "the server answered 101 without a valid WebSocket accept",
            "{answer}"
        );
    }
}

/// The right accept key is not enough: a 101 that does not say it
/// upgrades to a WebSocket is refused too.
#[tokio::test]
async fn a_server_that_answers_101_with_the_key_but_no_upgrade_headers_is_refused() {
    let (url, error) = connect_to(|mut socket| async move {
        let request = String::from_utf8(read_request(&mut socket).await)
            .expect("the upgrade request is text");
        let key = request
            .lines()
            .find_map(|l| l.strip_prefix("Sec-WebSocket-Key: "))
            .expect("the request carries its key");
        let accept =
            tokio_tungstenite::tungstenite::handshake::derive_accept_key(key.trim().as_bytes());
        let answer =
            format!("HTTP/1.1 101 Switching Protocols\r\nSec-WebSocket-Accept: {accept}\r\n\r\n");
        socket
            .write_all(answer.as_bytes())
            .await
            .expect("the answer");
        let mut rest = Vec::new();
        let _ = socket.read_to_end(&mut rest).await;
    })
    .await;
    assert_eq!(
        connect_problem(&url, error),
        "the server answered 101 without a valid WebSocket accept"
    );
}

// --- serve/upgrade.rs:104: a request `livesim serve` cannot parse -------

#[cfg(feature = "serve")]
mod served {
    use std::num::NonZeroUsize;
    use std::sync::{Arc, Mutex};

    use livesim::serve::{Connections, SERVED_PATHS, ServeOptions, ServeReport, Server};

    use super::*;

    /// A `livesim serve` of `script` for one play, on a free port: its base
    /// URL, the task that runs it, and its log lines.
    pub(super) async fn serve(
        script: ScriptedServer,
    ) -> (
        String,
        tokio::task::JoinHandle<ServeReport>,
        Arc<Mutex<Vec<String>>>,
    ) {
        let options = ServeOptions {
            connections: Connections::Count(NonZeroUsize::MIN),
            ..ServeOptions::default()
        };
        let server = Server::bind(script, options)
            .await
            .expect("livesim serve binds a free port");
        let base_url = server.base_url();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let log = lines.clone();
        let run = tokio::spawn(server.run(Arc::new(move |line: &str| {
            log.lock().expect("the log").push(line.to_string());
        })));
        (base_url, run, lines)
    }

    /// A request to the served Live path that carries `extra` headers of
    /// its own after the upgrade's, its lines ended with `eol`.
    pub(super) fn request_with_headers(host: &str, extra: usize, eol: &str) -> String {
        let mut request = format!(
            "GET {} HTTP/1.1{eol}Host: {host}{eol}Connection: Upgrade{eol}Upgrade: websocket{eol}\
             Sec-WebSocket-Version: 13{eol}Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=={eol}",
            SERVED_PATHS[0]
        );
        for n in 0..extra {
            request.push_str(&format!("X-Extra-{n}: {n}{eol}"));
        }
        request.push_str(eol);
        request
    }

    /// Sends `request` on a fresh connection and returns all the server
    /// answered before it closed.
    pub(super) async fn answer_to(base_url: &str, request: &str) -> String {
        let host = base_url.trim_start_matches("ws://");
        let mut tcp = TcpStream::connect(host)
            .await
            .expect("livesim serve accepts");
        tcp.write_all(request.as_bytes())
            .await
            .expect("the request is sent");
        let mut answer = Vec::new();
        guarded("the server's answer", tcp.read_to_end(&mut answer))
            .await
            .expect("the answer is read");
        String::from_utf8(answer).expect("the answer is text")
    }

    /// The served script: one short turn.
    pub(super) fn hello() -> ScriptedServer {
        ScriptedServer::new().named("hello").says("Hello.")
    }

    /// Plays the hello script with livesim's own session, to its end.
    pub(super) async fn play_hello(base_url: &str) {
        let handle = guarded(
            "the session connects",
            Live::builder()
                .text_only()
                .api_key(KEY)
                .base_url(base_url)
                .connect(),
        )
        .await
        .expect("a session after the bad client");
        let mut events = handle.events();
        let mut text = String::new();
        guarded("the turn", async {
            while let Some(event) = events.next().await {
                match event {
                    LiveEvent::TextDelta { text: t, .. } => text.push_str(&t),
                    LiveEvent::TurnComplete { .. } => break,
                    _ => {}
                }
            }
        })
        .await;
        assert_eq!(text, "Hello.");
        handle.disconnect().await;
    }
}

/// A client whose request has more headers than the server reads (65,
/// past 64) gets HTTP 431 with a one-line body saying so, the server logs
/// it as that (not as a request that is not HTTP), and the next client is
/// served as if nothing happened.
#[cfg(feature = "serve")]
#[tokio::test]
async fn a_request_with_too_many_headers_gets_431_and_the_server_serves_the_next_client() {
    let (base_url, run, lines) = served::serve(served::hello()).await;
    let request = served::request_with_headers(base_url.trim_start_matches("ws://"), 65, "\r\n");
    let answer = served::answer_to(&base_url, &request).await;
    assert!(
        answer.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"),
        "{answer}"
    );
    assert!(answer.contains("\r\nConnection: close\r\n"), "{answer}");
    assert!(
        answer.ends_with("\r\n\r\nlivesim serve: more than 64 headers\n"),
        "{answer}"
    );

    served::play_hello(&base_url).await;
    let report = guarded("livesim serve ends", run)
        .await
        .expect("livesim serve does not panic");
    assert_eq!(report.connections.len(), 1, "{report:?}");
    assert_eq!(report.connections[0].number, 2, "{report:?}");
    assert!(report.success(), "{report:?}");
    let lines = lines.lock().expect("the log").clone();
    assert!(
        lines.iter().any(
            |l| l == "livesim serve: #1 refused a request with more than 64 headers (HTTP 431)"
        ),
        "{lines:#?}"
    );
}

/// The same request with bare LF line ends (which the server otherwise
/// takes) gets its 431 at once, not after the 10 s handshake limit.
#[cfg(feature = "serve")]
#[tokio::test]
async fn a_bare_lf_request_with_too_many_headers_is_answered_at_once() {
    let (base_url, run, _lines) = served::serve(served::hello()).await;
    let request = served::request_with_headers(base_url.trim_start_matches("ws://"), 65, "\n");
    let started = tokio::time::Instant::now();
    let answer = served::answer_to(&base_url, &request).await;
    run.abort();
    assert!(
        answer.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"),
        "answered {answer:?} after {:?}",
        started.elapsed()
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

// --- session/connect.rs:198: the connection ends before setupComplete ---

/// A transport that reports the peer's hang-up as a plain end (`None`)
/// rather than as `ConnectionLost`, as a user's own transport over some
/// other stream might.
struct EndsQuietly(MemoryTransport);

impl Transport for EndsQuietly {
    fn send(&mut self, frame: Frame) -> BoxFuture<'_, Result<(), TransportError>> {
        self.0.send(frame)
    }

    fn recv(&mut self) -> BoxFuture<'_, Option<Result<Frame, TransportError>>> {
        async move {
            match self.0.recv().await {
                Some(Err(TransportError::ConnectionLost { .. })) => None,
                other => other,
            }
        }
        .boxed()
    }

    fn close(&mut self, close: Option<CloseFrame>) -> BoxFuture<'_, Result<(), TransportError>> {
        self.0.close(close)
    }
}

/// A server that takes the setup and hangs up without a close frame or
/// an answer, on a transport that reports that as its end, fails setup
/// with "the connection ended before setupComplete".
#[tokio::test]
async fn a_server_that_hangs_up_after_the_setup_fails_it_before_setup_complete() {
    let (client, mut server) = memory::pair();
    let peer = async move {
        let setup = server.recv().await.expect("a frame").expect("the setup");
        drop(server);
        setup
    };
    let session = Live::builder()
        .text_only()
        .api_key(KEY)
        .connect_with_transport(EndsQuietly(client));
    let (setup, connected) = guarded("setup", async { tokio::join!(peer, session) }).await;
    let Frame::Text(setup) = setup else {
        panic!("the setup went as text")
    };
    assert!(setup.starts_with(r#"{"setup":"#), "{setup}");
    let error = connected.expect_err("no session without setupComplete");
    assert!(
        matches!(&error, SessionError::SetupFailed(m) if m == "the connection ended before setupComplete"),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "setup failed: the connection ended before setupComplete"
    );
}

/// Over a real WebSocket the same server (setup read, TCP closed without
/// a close frame) is a lost connection: a transport error, not a hang.
#[tokio::test]
async fn a_websocket_server_that_hangs_up_after_the_setup_is_a_lost_connection() {
    let (listener, base_url) = listen().await;
    let peer = async move {
        let (socket, _) = listener.accept().await.expect("the client connects");
        let mut ws = tokio_tungstenite::accept_async(socket)
            .await
            .expect("the upgrade");
        let setup = futures::StreamExt::next(&mut ws)
            .await
            .expect("a message")
            .expect("the setup");
        drop(ws);
        setup.into_text().expect("the setup is text").to_string()
    };
    let session = Live::builder()
        .text_only()
        .api_key(KEY)
        .base_url(base_url)
        .connect();
    let (setup, connected) = guarded("setup", async { tokio::join!(peer, session) }).await;
    assert!(setup.starts_with(r#"{"setup":"#), "{setup}");
    let error = connected.expect_err("no session without setupComplete");
    assert_no_key(&error);
    assert!(
        matches!(&error, SessionError::Transport(m)
            if m.starts_with("connection lost without a close frame")),
        "{error:?}"
    );
}

// --- session/reconnect.rs:434, :450: a resumption whose setup is refused -

/// The kinds of `log`'s events, reconnects and resumes with their numbers.
fn kinds(log: &[LiveEvent]) -> Vec<String> {
    log.iter()
        .map(|e| match e {
            LiveEvent::Reconnecting { attempt, .. } => format!("reconnecting {attempt}"),
            LiveEvent::Resumed { connection, fresh } => {
                format!("resumed #{connection} fresh={fresh}")
            }
            other => other.kind().to_string(),
        })
        .collect()
}

/// Connects a text session with resumption on to `script` over its
/// connector, and waits for the session to end.
async fn run_to_its_end(script: ScriptedServer) -> (LiveHandle, livesim::testing::ReplayControl) {
    let (connector, control) = script.into_connector();
    let handle = Live::builder()
        .text_only()
        .resumption(Resumption::on())
        .connect_with_connector(connector)
        .await
        .expect("the first connection is set up");
    control.release();
    handle.closed().await;
    (handle, control)
}

/// Every setup the session sent, in order.
fn setups(control: &livesim::testing::ReplayControl) -> Vec<Value> {
    control
        .sent()
        .into_iter()
        .filter_map(|m| m.get("setup").cloned())
        .collect()
}

/// A server that forgets the session (resumption refused with "session
/// not found") and then refuses the fresh setup the same way ends the
/// session with that close: one fresh try, no loop.
#[test]
fn a_server_that_refuses_the_resumption_and_then_the_fresh_setup_ends_the_session() {
    Simulation::new(Seed::new(11))
        .run(|| async {
            let script = ScriptedServer::new()
                .named("forgets every session")
                .resumption_update("h-stale", true)
                .abort()
                .reconnect_resuming("h-stale")
                .rejects_setup(1008, "BidiGenerateContent session not found")
                .reconnect_fresh()
                .rejects_setup(1008, "BidiGenerateContent session not found");
            let (handle, control) = run_to_its_end(script).await;
            assert_eq!(control.errors(), vec![]);
            let setups = setups(&control);
            assert_eq!(setups.len(), 3, "{setups:?}");
            assert_eq!(setups[1]["sessionResumption"]["handle"], "h-stale");
            assert_eq!(setups[2]["sessionResumption"], json!({}));
            let log = handle.session_log();
            let kinds = kinds(&log);
            let from = kinds
                .iter()
                .position(|k| k == "reconnecting 1")
                .expect("a reconnect");
            assert_eq!(
                kinds[from..],
                [
                    "reconnecting 1",
                    "resumption_failed",
                    "reconnecting 1",
                    "disconnected"
                ]
            );
            assert!(
                matches!(
                    log.last(),
                    Some(LiveEvent::Disconnected { code: Some(1008), reason, class: Some(class) })
                        if reason == "reconnecting: setup rejected: BidiGenerateContent session not found"
                            && class == "resume rejected"
                ),
                "{log:?}"
            );
        })
        .expect("the simulation runs to its end");
}

/// A resumption refused with a policy close that is not "session not
/// found" is fatal: the session ends at once with the server's code,
/// class and reason, with no further attempt.
#[test]
fn a_resumption_refused_for_policy_ends_the_session_with_the_servers_reason() {
    Simulation::new(Seed::new(12))
        .run(|| async {
            let reason = "Operation is not implemented, or supported, or enabled.";
            let script = ScriptedServer::new()
                .named("refuses resumption")
                .resumption_update("h-1", true)
                .close(1011, "Internal error encountered.")
                .reconnect_resuming("h-1")
                .rejects_setup(1008, reason);
            let (handle, control) = run_to_its_end(script).await;
            assert_eq!(control.errors(), vec![]);
            assert_eq!(setups(&control).len(), 2);
            let log = handle.session_log();
            let kinds = kinds(&log);
            assert!(!kinds.contains(&"resumption_failed".to_string()), "{kinds:?}");
            assert_eq!(
                kinds.iter().filter(|k| k.starts_with("reconnecting")).count(),
                1,
                "{kinds:?}"
            );
            assert!(
                matches!(
                    log.last(),
                    Some(LiveEvent::Disconnected { code: Some(1008), reason: r, class: Some(class) })
                        if *r == format!("reconnecting: setup rejected: {reason}") && class == "fatal"
                ),
                "{log:?}"
            );
        })
        .expect("the simulation runs to its end");
}

// --- wire/numbers.rs:42: an int64 that is not an integer -----------------

/// Plays `frame` (raw JSON text) then a turn, and returns every event
/// the session delivered (warnings are delivered, never stored).
async fn events_after(frame: &str) -> Vec<LiveEvent> {
    let message: Value = serde_json::from_str(frame).expect("the frame is JSON");
    let script = ScriptedServer::new()
        .named("bad number")
        .frame(message)
        .says("Still here.");
    let (transport, control) = script.into_transport();
    let handle = guarded(
        "setup",
        Live::builder()
            .text_only()
            .connect_with_transport(transport),
    )
    .await
    .expect("the session is set up");
    let mut events = handle.events();
    control.release();
    let mut seen = Vec::new();
    guarded("the turn after the bad frame", async {
        while let Some(event) = events.next().await {
            let done = matches!(event, LiveEvent::TurnComplete { .. });
            seen.push(event);
            if done {
                break;
            }
        }
        handle.disconnect().await;
        while let Some(event) = events.next().await {
            seen.push(event);
        }
    })
    .await;
    assert_eq!(control.errors(), vec![]);
    seen
}

/// The warnings among `events`, in order.
fn warnings(events: &[LiveEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            LiveEvent::Warning { message } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

/// Resumption updates whose int64 field holds no int64, each with the
/// value as the warning names it (the JSON reader writes an exponent with
/// its sign).
const NOT_INT64: [(&str, &str); 2] = [
    (
        r#"{"sessionResumptionUpdate":{"resumable":true,"newHandle":"h-1","lastConsumedClientMessageIndex":1.5}}"#,
        "1.5",
    ),
    (
        r#"{"sessionResumptionUpdate":{"resumable":true,"newHandle":"h-1","lastConsumedClientMessageIndex":1e30}}"#,
        "1e+30",
    ),
];

/// A server frame whose int64 field holds `1.5` or `1e30` is refused (a
/// warning, the frame ignored, its handle not taken) and the session
/// goes on to the next turn.
#[tokio::test]
async fn a_server_frame_whose_int64_is_not_an_integer_is_ignored_and_the_session_goes_on() {
    for (frame, _) in NOT_INT64 {
        let log = events_after(frame).await;
        let warnings = warnings(&log);
        assert_eq!(warnings.len(), 1, "{frame}: {warnings:?}");
        assert!(
            warnings[0].starts_with("server frame #1 ignored: text frame of ")
                || warnings[0].starts_with("server frame #1 ignored: binary frame of "),
            "{}",
            warnings[0]
        );
        assert!(
            warnings[0].contains("is not a valid ServerMessage"),
            "{}",
            warnings[0]
        );
        assert!(
            !log.iter().any(|e| e.kind() == "resumption_update"),
            "{frame}: the refused frame's update was taken: {log:?}"
        );
        assert!(
            log.iter().any(
                |e| matches!(e, LiveEvent::TextComplete { text, .. } if text == "Still here.")
            ),
            "{log:?}"
        );
    }
}

/// The warning for such a frame names the value that is not an int64.
#[tokio::test]
async fn the_warning_for_an_int64_that_is_not_an_integer_names_the_value() {
    for (frame, value) in NOT_INT64 {
        let log = events_after(frame).await;
        let warnings = warnings(&log);
        assert_eq!(warnings.len(), 1, "{frame}: {warnings:?}");
        assert!(warnings[0].contains("is not an int64"), "{}", warnings[0]);
        assert!(warnings[0].contains(value), "{}", warnings[0]);
        assert!(
            !warnings[0].contains("invalid type: map"),
            "{}",
            warnings[0]
        );
    }
}

/// An int64 written as an integral float (`7.0`), which numbers.rs says it
/// accepts, is read as that integer from a frame.
#[test]
fn an_int64_written_as_an_integral_float_is_read_from_a_frame() {
    let message = ServerMessage::from_slice(
        br#"{"sessionResumptionUpdate":{"lastConsumedClientMessageIndex":7.0}}"#,
    )
    .expect("7.0 is an integral int64");
    assert_eq!(
        message
            .session_resumption_update
            .expect("the update")
            .last_consumed_client_message_index,
        Some(7)
    );
}

/// numbers.rs:42 itself is reached only when a message is read from a
/// `serde_json::Value` (no number in it is a map): there it names the value.
#[test]
fn a_server_message_read_from_a_json_value_names_the_value_that_is_not_an_int64() {
    for (frame, shown) in [
        (NOT_INT64[0].0, "1.5 is not an int64"),
        (
            NOT_INT64[1].0,
            "1000000000000000000000000000000 is not an int64",
        ),
    ] {
        let value: Value = serde_json::from_str(frame).expect("the frame is JSON");
        let error = serde_json::from_value::<ServerMessage>(value)
            .expect_err("a fraction or 1e30 is no int64");
        assert_eq!(error.to_string(), shown);
    }
}
