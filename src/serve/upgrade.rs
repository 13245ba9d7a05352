//! The WebSocket upgrade, answered as the Live service answers it: the
//! path must be a Live endpoint (anything else gets HTTP 404), a Live path
//! asked for without an upgrade gets 426, and the credential is noted
//! (never recorded) wherever the client put it.
//!
//! The request is read by livesim (a bounded head, see
//! [`handshake`](crate::transport::handshake)), so every refusal gets a
//! status line and a one-line body instead of a dropped socket, and the
//! accepted socket is handed to the WebSocket layer with the connection's
//! limits. What comes out is safe to print: which path was asked for,
//! which credential carriers were present, and a [`Redactor`] that knows
//! the credential values so nothing downstream can print them.

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};

use crate::transport::handshake::{MAX_HEADERS, header, lists, read_request_head};
use crate::wire::{Redactor, Secret};

/// The paths `livesim serve` answers on: the Google AI Live endpoint, in
/// the v1beta, v1alpha and v1 API versions, for API keys
/// (`BidiGenerateContent`) and ephemeral tokens
/// (`BidiGenerateContentConstrained`). The first is the one printed.
pub const SERVED_PATHS: [&str; 6] = [
    "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent",
    "/ws/google.ai.generativelanguage.v1alpha.GenerativeService.BidiGenerateContent",
    "/ws/google.ai.generativelanguage.v1.GenerativeService.BidiGenerateContent",
    "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContentConstrained",
    "/ws/google.ai.generativelanguage.v1alpha.GenerativeService.BidiGenerateContentConstrained",
    "/ws/google.ai.generativelanguage.v1.GenerativeService.BidiGenerateContentConstrained",
];

/// `path` with each run of slashes made one: Google's JavaScript SDK
/// joins a base URL that ends in `/` to `/ws/…`, asking for `//ws/…`,
/// which the Live service serves as `/ws/…`.
fn single_slashes(path: &str) -> std::borrow::Cow<'_, str> {
    if !path.contains("//") {
        return path.into();
    }
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        if !(c == '/' && out.ends_with('/')) {
            out.push(c);
        }
    }
    out.into()
}

/// Query parameters that carry a credential on the Live endpoint.
const CREDENTIAL_PARAMS: [&str; 2] = ["key", "access_token"];

/// What one upgrade request carried, without the secrets themselves.
#[derive(Debug, Default)]
pub(crate) struct Inspection {
    /// The path asked for, scrubbed.
    pub path: String,
    /// Lines worth logging about the request (credential placement).
    pub notes: Vec<String>,
    /// Knows every credential value the request carried.
    pub redactor: Redactor,
}

/// An accepted upgrade: the open WebSocket and what its request carried.
pub(crate) struct Accepted<S> {
    pub ws: WebSocketStream<S>,
    pub inspection: Inspection,
}

/// Reads the upgrade request on `stream` and answers it: `101` and the
/// open WebSocket (with `config`'s limits), or an HTTP refusal, whose log
/// line is the error.
pub(crate) async fn accept<S>(mut stream: S, config: WebSocketConfig) -> Result<Accepted<S>, String>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let (head, rest) = match read_request_head(&mut stream).await {
        Ok(read) => read,
        Err(problem) => {
            let line = format!("not an HTTP request: {problem}");
            refuse(
                &mut stream,
                400,
                "Bad Request",
                &[],
                "livesim serve: bad request",
            )
            .await;
            return Err(line);
        }
    };
    let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut slots);
    let parsed = request.parse(&head);
    if let Err(httparse::Error::TooManyHeaders) = parsed {
        let body = format!("livesim serve: more than {MAX_HEADERS} headers");
        refuse(
            &mut stream,
            431,
            "Request Header Fields Too Large",
            &[],
            &body,
        )
        .await;
        return Err(format!(
            "refused a request with more than {MAX_HEADERS} headers (HTTP 431)"
        ));
    }
    if !matches!(parsed, Ok(httparse::Status::Complete(_))) {
        refuse(
            &mut stream,
            400,
            "Bad Request",
            &[],
            "livesim serve: bad request",
        )
        .await;
        return Err("not an HTTP request: its head does not parse".to_string());
    }
    let mut inspection = Inspection::default();
    let target = request.path.unwrap_or("/");
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    inspection.learn_secrets(request.headers, query);
    inspection.path = inspection.redactor.scrub(path).into_owned();
    let method = request.method.unwrap_or_default();

    if !SERVED_PATHS.contains(&&*single_slashes(path)) {
        let body = format!(
            "livesim serve: no Live endpoint at this path; served paths: {}",
            SERVED_PATHS.join(", ")
        );
        refuse(&mut stream, 404, "Not Found", &[], &body).await;
        return Err(format!(
            "refused the upgrade to {} with HTTP 404: served paths are {}",
            inspection.path,
            SERVED_PATHS.join(", ")
        ));
    }
    let headers = request.headers;
    let key = header(headers, "sec-websocket-key");
    let upgrade = method == "GET"
        && lists(header(headers, "upgrade"), "websocket")
        && lists(header(headers, "connection"), "upgrade")
        && header(headers, "sec-websocket-version") == Some(b"13")
        && key.is_some();
    let Some(key) = key.filter(|_| upgrade) else {
        refuse(
            &mut stream,
            426,
            "Upgrade Required",
            &["Upgrade: websocket", "Sec-WebSocket-Version: 13"],
            "livesim serve: this is a Live WebSocket endpoint; connect with a WebSocket client",
        )
        .await;
        return Err(format!(
            "refused {method} {} with HTTP 426: a Live path, asked for without a WebSocket upgrade",
            inspection.path
        ));
    };
    if let Some(fault) = upgrade_fault(request.version, headers) {
        let body = format!("livesim serve: bad WebSocket upgrade: {fault}");
        refuse(&mut stream, 400, "Bad Request", &[], &body).await;
        return Err(format!(
            "refused the upgrade to {} with HTTP 400: {fault}",
            inspection.path
        ));
    }
    let answer = format!(
        "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
         Sec-WebSocket-Accept: {}\r\n\r\n",
        derive_accept_key(key)
    );
    if let Err(e) = stream.write_all(answer.as_bytes()).await {
        return Err(format!("the upgrade could not be answered: {e}"));
    }
    let _ = stream.flush().await;
    inspection.note_credentials(headers, query);
    let ws = WebSocketStream::from_partially_read(stream, rest, Role::Server, Some(config)).await;
    Ok(Accepted { ws, inspection })
}

/// What RFC 6455 (section 4.2.1) says makes an upgrade request bad, past
/// the headers that mark it as one: HTTP/1.1 or later, one `Host`, one
/// `Sec-WebSocket-Key` that is 16 bytes in base64.
fn upgrade_fault(version: Option<u8>, headers: &[httparse::Header<'_>]) -> Option<&'static str> {
    use base64::Engine;
    let count = |name: &str| {
        headers
            .iter()
            .filter(|h| h.name.eq_ignore_ascii_case(name))
            .count()
    };
    if version != Some(1) {
        return Some("a WebSocket upgrade needs HTTP/1.1");
    }
    if count("host") != 1 {
        return Some("the request needs exactly one Host header");
    }
    if count("sec-websocket-key") != 1 {
        return Some("the request needs exactly one Sec-WebSocket-Key header");
    }
    let key = header(headers, "sec-websocket-key").unwrap_or_default();
    match base64::engine::general_purpose::STANDARD.decode(key) {
        Ok(nonce) if nonce.len() == 16 => None,
        _ => Some("Sec-WebSocket-Key must be 16 random bytes in base64"),
    }
}

/// Writes an HTTP refusal with a one-line body and closes the stream.
async fn refuse<S>(stream: &mut S, status: u16, text: &str, extra: &[&str], body: &str)
where
    S: AsyncWrite + Unpin,
{
    let mut response = format!(
        "HTTP/1.1 {status} {text}\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n",
        body.len() + 1
    );
    for line in extra {
        response.push_str(line);
        response.push_str("\r\n");
    }
    response.push_str("\r\n");
    response.push_str(body);
    response.push('\n');
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

impl Inspection {
    /// Every credential value, wherever it is, goes into the redactor
    /// first, so no line built afterwards can show it.
    fn learn_secrets(&mut self, headers: &[httparse::Header<'_>], query: &str) {
        for h in headers {
            if !["x-goog-api-key", "authorization"]
                .iter()
                .any(|name| h.name.eq_ignore_ascii_case(name))
            {
                continue;
            }
            let value = String::from_utf8_lossy(h.value).trim().to_string();
            // `Bearer X` / `Token X`: the credential alone may turn up
            // elsewhere, so it is a secret on its own too.
            if let Some((_, credential)) = value.split_once(' ') {
                self.redactor.add_secret(&Secret::new(credential.trim()));
            }
            self.redactor.add_secret(&Secret::new(value));
        }
        for (_, value) in credential_params(query) {
            self.redactor.add_secret(&Secret::new(value));
        }
    }

    fn note_credentials(&mut self, headers: &[httparse::Header<'_>], query: &str) {
        let mut carriers = Vec::new();
        if header(headers, "x-goog-api-key").is_some() {
            carriers.push("an x-goog-api-key header".to_string());
        }
        if let Some(value) = header(headers, "authorization") {
            let scheme = String::from_utf8_lossy(value)
                .split(' ')
                .next()
                .unwrap_or_default()
                .to_string();
            carriers.push(format!(
                "an Authorization header ({} …)",
                self.redactor.scrub(&scheme)
            ));
        }
        let in_query: Vec<&str> = credential_params(query)
            .into_iter()
            .map(|(name, _)| name)
            .collect();
        for name in &in_query {
            carriers.push(format!("?{name}= in the URL"));
        }
        if carriers.is_empty() {
            self.notes.push(
                "no credential (the Live service would refuse this upgrade; send the key in an x-goog-api-key header)"
                    .to_string(),
            );
        } else {
            self.notes.push(format!(
                "credential present: {} (value not logged)",
                carriers.join(", ")
            ));
        }
        if !in_query.is_empty() {
            self.notes.push(format!(
                "warning: the credential came in the URL query (?{}=); it belongs in a header \
                 (x-goog-api-key, or Authorization for tokens): URLs end up in logs. (Google's \
                 JavaScript SDK puts it there, as a browser cannot set a WebSocket's headers: \
                 keep such a key out of logs you share, or use an ephemeral token)",
                in_query.join("=, ?")
            ));
        }
    }
}

/// The credential query parameters of `query`, as (name, value).
fn credential_params(query: &str) -> Vec<(&'static str, &str)> {
    query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .filter(|(_, value)| !value.is_empty())
        .filter_map(|(name, value)| {
            CREDENTIAL_PARAMS
                .iter()
                .find(|p| **p == name)
                .map(|p| (*p, value))
        })
        .collect()
}
