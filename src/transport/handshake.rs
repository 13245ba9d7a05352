//! The WebSocket upgrade, done by livesim itself on both ends.
//!
//! The client's upgrade request carries the API key in a header. A
//! WebSocket library that writes the request also traces it (tungstenite
//! does, at `trace` level, header values included), so livesim writes the
//! request itself: TCP, TLS for `wss://`, the `GET` with its headers, the
//! `101` answer checked, and only then the socket is handed to tungstenite
//! as an open WebSocket. No dependency ever holds the key.
//!
//! HTTP heads are read with a bound ([`MAX_HEAD`]), and a refusal's body
//! with another ([`MAX_BODY`]), so a peer that never stops sending cannot
//! grow our memory. The server end ([`crate::serve`]) reads requests with
//! the same reader.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::handshake::client::generate_key;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// The most bytes an HTTP head (request or response line and headers) may
/// have.
pub(crate) const MAX_HEAD: usize = 16 * 1024;

/// The most bytes of a refused upgrade's body that are read.
pub(crate) const MAX_BODY: usize = 4 * 1024;

/// The most headers a request head may have: `livesim serve` answers more
/// with 431.
#[cfg(feature = "serve")]
pub(crate) const MAX_HEADERS: usize = 64;

/// How long a refusal's body may take to arrive once its head has.
const BODY_WAIT: Duration = Duration::from_secs(2);

/// An HTTP head that could not be read.
#[derive(Debug)]
pub(crate) enum HeadError {
    /// The peer closed before the head ended (`bytes` of it had come).
    Ended { bytes: usize },
    /// The head is longer than [`MAX_HEAD`].
    TooLong,
    /// The bytes cannot start an HTTP request (a TLS handshake sent to a
    /// plain port, say): `what` says where they stopped being one.
    #[cfg(feature = "serve")]
    NotHttp { what: String },
    /// Reading failed.
    Io(std::io::Error),
}

impl std::fmt::Display for HeadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HeadError::Ended { bytes: 0 } => {
                write!(f, "the connection closed before sending anything")
            }
            HeadError::Ended { bytes } => {
                write!(
                    f,
                    "the connection closed after {bytes} bytes of an HTTP head"
                )
            }
            HeadError::TooLong => write!(f, "the HTTP head is longer than {MAX_HEAD} bytes"),
            #[cfg(feature = "serve")]
            HeadError::NotHttp { what } => write!(f, "{what}"),
            HeadError::Io(e) => write!(f, "{e}"),
        }
    }
}

/// Reads up to the blank line that ends an HTTP head. Returns the head
/// (with its blank line) and whatever came after it in the same reads.
pub(crate) async fn read_head<S: AsyncRead + Unpin>(
    stream: &mut S,
) -> Result<(Vec<u8>, Vec<u8>), HeadError> {
    read_until(stream, |buf, before| {
        // Only the new bytes (and the three before them) can complete the
        // blank line: no rescan of the whole buffer per read.
        let from = before.saturating_sub(3);
        Ok(buf[from..]
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .map(|at| from + at + 4))
    })
    .await
}

/// Reads an HTTP request head, as [`read_head`] does, but answers as soon
/// as the bytes cannot be one (a TLS `ClientHello` on a plain port, a
/// line of junk) instead of waiting for a blank line that never comes,
/// and takes bare `LF` line ends, as HTTP parsers are asked to (RFC 9112,
/// section 2.2).
#[cfg(feature = "serve")]
pub(crate) async fn read_request_head<S: AsyncRead + Unpin>(
    stream: &mut S,
) -> Result<(Vec<u8>, Vec<u8>), HeadError> {
    read_until(stream, |buf, before| {
        // A head can only end, or go wrong, at a line end; the first
        // bytes are looked at at once (the request line's first word).
        if before > 0 && !buf[before..].contains(&b'\n') {
            return Ok(None);
        }
        let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
        match httparse::Request::new(&mut slots).parse(buf) {
            Ok(httparse::Status::Complete(end)) => Ok(Some(end)),
            Ok(httparse::Status::Partial) => Ok(None),
            // More headers than the upgrade reads: the caller's parse
            // says so.
            Err(httparse::Error::TooManyHeaders) => Ok(blank_line_end(buf)),
            Err(error) => Err(HeadError::NotHttp {
                what: if buf[0] == 0x16 {
                    "a TLS handshake (a wss:// client on a ws:// server?)".to_string()
                } else {
                    format!("{error} in its first line or headers")
                },
            }),
        }
    })
    .await
}

/// Where the first blank line of `buf` ends, its line ends `CRLF` or bare
/// `LF` alike.
#[cfg(feature = "serve")]
fn blank_line_end(buf: &[u8]) -> Option<usize> {
    buf.iter().enumerate().find_map(|(at, &byte)| {
        (byte == b'\n').then_some(())?;
        match &buf[at + 1..] {
            [b'\n', ..] => Some(at + 2),
            [b'\r', b'\n', ..] => Some(at + 3),
            _ => None,
        }
    })
}

/// Reads until `ends` finds the end of the head in what came so far (it
/// is given the bytes and how many there were before the last read),
/// within [`MAX_HEAD`].
async fn read_until<S: AsyncRead + Unpin>(
    stream: &mut S,
    mut ends: impl FnMut(&[u8], usize) -> Result<Option<usize>, HeadError>,
) -> Result<(Vec<u8>, Vec<u8>), HeadError> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    loop {
        let n = stream.read(&mut chunk).await.map_err(HeadError::Io)?;
        if n == 0 {
            return Err(HeadError::Ended { bytes: buf.len() });
        }
        let before = buf.len();
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = ends(&buf, before)? {
            if end > MAX_HEAD {
                return Err(HeadError::TooLong);
            }
            let rest = buf.split_off(end);
            return Ok((buf, rest));
        }
        if buf.len() > MAX_HEAD {
            return Err(HeadError::TooLong);
        }
    }
}

/// The value of header `name` (ASCII case ignored) in parsed headers.
pub(crate) fn header<'h>(headers: &'h [httparse::Header<'_>], name: &str) -> Option<&'h [u8]> {
    headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case(name))
        .map(|h| h.value)
}

/// Whether a comma-separated header value lists `token` (case ignored).
pub(crate) fn lists(value: Option<&[u8]>, token: &str) -> bool {
    value.is_some_and(|v| {
        String::from_utf8_lossy(v)
            .split(',')
            .any(|t| t.trim().eq_ignore_ascii_case(token))
    })
}

/// Where to connect, from a `ws://` or `wss://` URL.
struct Target {
    tls: bool,
    host: String,
    port: u16,
    /// `host` or `host:port`, as the `Host` header gives it.
    authority: String,
    path_and_query: String,
}

fn target(url: &str) -> Result<Target, String> {
    // `host:port/path` would parse as some other URL (or not at all): say
    // what is missing rather than how the parse failed.
    if !url.contains("://") {
        return Err("the URL has no scheme (ws:// or wss://)".to_string());
    }
    let uri: tokio_tungstenite::tungstenite::http::Uri =
        url.parse().map_err(|e| format!("not a valid URL: {e}"))?;
    let tls = match uri.scheme_str() {
        Some("wss") => true,
        Some("ws") => false,
        Some(other) => return Err(format!("the scheme must be ws or wss, not {other}")),
        None => return Err("the URL has no scheme (ws:// or wss://)".to_string()),
    };
    let host = uri
        .host()
        .ok_or_else(|| "the URL has no host".to_string())?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
    let authority = match uri.port_u16() {
        Some(port) => format!("{}:{port}", uri.host().unwrap_or_default()),
        None => uri.host().unwrap_or_default().to_string(),
    };
    let path_and_query = uri
        .path_and_query()
        .map_or("/".to_string(), |p| p.as_str().to_string());
    Ok(Target {
        tls,
        host,
        port,
        authority,
        path_and_query,
    })
}

/// How a client upgrade failed, before redaction.
pub(crate) enum UpgradeError {
    /// DNS, TCP, TLS, or an answer that is not a valid upgrade.
    Connect(String),
    /// The server answered with an HTTP status other than 101.
    Refused {
        /// The status.
        status: u16,
        /// The start of the body, lossily decoded (at most [`MAX_BODY`]).
        body: String,
    },
}

/// Opens a WebSocket to `url` as a client, sending `headers` with the
/// upgrade request. Errors are raw: the caller redacts them.
pub(crate) async fn connect(
    url: &str,
    headers: &[(&str, &str)],
) -> Result<WebSocketStream<MaybeTlsStream<TcpStream>>, UpgradeError> {
    let target = target(url).map_err(UpgradeError::Connect)?;
    let tcp = TcpStream::connect((target.host.as_str(), target.port))
        .await
        .map_err(|e| UpgradeError::Connect(e.to_string()))?;
    let _ = tcp.set_nodelay(true);
    let mut stream = if target.tls {
        let name = rustls::pki_types::ServerName::try_from(target.host.clone()).map_err(|_| {
            UpgradeError::Connect(format!("{} is not a valid TLS name", target.host))
        })?;
        let tls = tokio_rustls::TlsConnector::from(client_tls()?)
            .connect(name, tcp)
            .await
            .map_err(|e| UpgradeError::Connect(format!("TLS: {e}")))?;
        MaybeTlsStream::Rustls(tls)
    } else {
        MaybeTlsStream::Plain(tcp)
    };

    let key = generate_key();
    let mut request = format!(
        "GET {} HTTP/1.1\r\nHost: {}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
         Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: {key}\r\n",
        target.path_and_query, target.authority
    );
    for (name, value) in headers {
        // RFC 9110, section 5.5: no control byte but a tab in a value (a
        // line break would even start a header of its own).
        if value.bytes().any(|b| (b < 0x20 && b != b'\t') || b == 0x7f) {
            return Err(UpgradeError::Connect(format!(
                "the {name} header value is not a valid HTTP header value"
            )));
        }
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(|e| UpgradeError::Connect(format!("sending the upgrade request: {e}")))?;
    drop(request);

    let (head, rest) = read_head(&mut stream)
        .await
        .map_err(|e| UpgradeError::Connect(format!("reading the upgrade answer: {e}")))?;
    let mut slots = [httparse::EMPTY_HEADER; 64];
    let mut response = httparse::Response::new(&mut slots);
    match response.parse(&head) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) | Err(_) => {
            return Err(UpgradeError::Connect(
                "the server's answer is not an HTTP response".to_string(),
            ));
        }
    }
    let status = response.code.unwrap_or(0);
    if status != 101 {
        let length = header(response.headers, "content-length")
            .and_then(|v| std::str::from_utf8(v).ok())
            .and_then(|v| v.trim().parse::<usize>().ok());
        let body = read_body(&mut stream, rest, length).await;
        return Err(UpgradeError::Refused {
            status,
            body: String::from_utf8_lossy(&body).into_owned(),
        });
    }
    let accept = header(response.headers, "sec-websocket-accept");
    if !lists(header(response.headers, "upgrade"), "websocket")
        || !lists(header(response.headers, "connection"), "upgrade")
        || accept != Some(derive_accept_key(key.as_bytes()).as_bytes())
    {
        return Err(UpgradeError::Connect(
            "the server answered 101 without a valid WebSocket accept".to_string(),
        ));
    }
    Ok(WebSocketStream::from_partially_read(stream, rest, Role::Client, None).await)
}

/// At most [`MAX_BODY`] bytes of a refusal's body: `length` of them when
/// the head said, else what comes before the peer closes or goes quiet.
async fn read_body<S: AsyncRead + Unpin>(
    stream: &mut S,
    mut body: Vec<u8>,
    length: Option<usize>,
) -> Vec<u8> {
    let want = length.unwrap_or(MAX_BODY).min(MAX_BODY);
    let read = async {
        let mut chunk = [0u8; 1024];
        while body.len() < want {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => body.extend_from_slice(&chunk[..n]),
            }
        }
    };
    let _ = tokio::time::timeout(BODY_WAIT, read).await;
    body.truncate(want);
    body
}

/// rustls with the `ring` provider and the webpki root store: nothing is
/// read from the OS.
fn client_tls() -> Result<Arc<rustls::ClientConfig>, UpgradeError> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    // ring, not aws-lc-rs (rustls's default, a C library to build): rustls
    // 0.23.48 deprecates ring's provider for lacking post-quantum key
    // exchange, which a test server or a test client does not need.
    #[allow(deprecated)]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| UpgradeError::Connect(format!("TLS versions: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn heads_end_at_the_blank_line_even_split() {
        let (mut client, mut server) = tokio::io::duplex(64);
        let writer = tokio::spawn(async move {
            for piece in [&b"HTTP/1.1 101 OK\r"[..], b"\n\r", b"\n", b"\x81\x00"] {
                client.write_all(piece).await.unwrap();
            }
            client
        });
        let (head, rest) = read_head(&mut server).await.unwrap();
        assert_eq!(head, b"HTTP/1.1 101 OK\r\n\r\n");
        let _client = writer.await.unwrap();
        assert!(rest.is_empty() || rest == b"\x81\x00");
    }

    #[tokio::test]
    async fn endless_heads_are_refused() {
        let (mut client, mut server) = tokio::io::duplex(1 << 16);
        tokio::spawn(async move {
            let junk = vec![b'a'; 4096];
            while client.write_all(&junk).await.is_ok() {}
        });
        assert!(matches!(
            read_head(&mut server).await,
            Err(HeadError::TooLong)
        ));
    }

    #[test]
    fn targets() {
        let t = target("wss://h.example/ws/x?alt=1").unwrap();
        assert_eq!(
            (
                t.tls,
                t.port,
                t.authority.as_str(),
                t.path_and_query.as_str()
            ),
            (true, 443, "h.example", "/ws/x?alt=1")
        );
        let t = target("ws://127.0.0.1:9/").unwrap();
        assert_eq!((t.port, t.authority.as_str()), (9, "127.0.0.1:9"));
        assert!(target("http://h/").is_err());
    }
}
