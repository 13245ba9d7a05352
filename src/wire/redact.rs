//! Secrets, and the redaction that keeps them out of files, errors and logs.
//!
//! What counts as secret on the Live wire: the API key and any token
//! (query parameters `key=` / `access_token=`, headers `x-goog-api-key` and
//! `Authorization`), ephemeral token names (`auth_tokens/…`) anywhere, and
//! session resumption handles. This module owns the string-level part:
//!
//! * [`Secret`] holds a credential and prints as `<redacted>`;
//! * [`scrub_builtin`] removes secret-*shaped* text that needs no
//!   configuration (token names, key parameters, bearer tokens);
//! * a [`Redactor`] also removes the exact secrets it was given.
//!
//! Resumption handles are replaced by the wire log's recorder, which is the
//! only place that sees them in structure (`newHandle`).

use std::borrow::Cow;
use std::fmt;

/// A credential: an API key or a token. Its `Debug` and `Display` print
/// `<redacted>`; only [`Secret::expose`] gives the value, for the one
/// place that must send it.
///
/// ```
/// use livesim::wire::Secret;
///
/// let key = Secret::new("FAKE-KEY-1234567890");
/// assert_eq!(format!("{key} {key:?}"), "<redacted> <redacted>");
/// assert_eq!(key.expose(), "FAKE-KEY-1234567890");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a credential.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The credential itself. Call only where it is sent.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// What replaces a configured secret.
pub const REDACTED: &str = "<redacted>";
/// What replaces an ephemeral token name.
pub const REDACTED_TOKEN: &str = "<redacted:auth_token>";

/// Removes known secrets and secret-shaped text from strings.
///
/// ```
/// use livesim::wire::{Redactor, Secret};
///
/// let redactor = Redactor::new().with_secret(&Secret::new("FAKE-KEY-1234567890"));
/// assert_eq!(
///     redactor.scrub("key FAKE-KEY-1234567890 at wss://h/ws?key=FAKE-KEY-1234567890&alt=json"),
///     "key <redacted> at wss://h/ws?key=<redacted>&alt=json",
/// );
/// assert_eq!(redactor.scrub("Token auth_tokens/abc.123"), "Token <redacted:auth_token>");
/// ```
#[derive(Clone, Debug, Default)]
pub struct Redactor {
    /// Longest first, so a secret that contains another is removed whole.
    secrets: Vec<Secret>,
}

impl Redactor {
    /// A redactor that knows no secrets yet (built-in patterns only).
    pub fn new() -> Self {
        Redactor::default()
    }

    /// Also removes every occurrence of `secret`.
    pub fn with_secret(mut self, secret: &Secret) -> Self {
        self.add_secret(secret);
        self
    }

    /// Also removes every occurrence of `secret` (empty secrets are ignored).
    pub fn add_secret(&mut self, secret: &Secret) {
        if secret.expose().is_empty() || self.secrets.contains(secret) {
            return;
        }
        self.secrets.push(secret.clone());
        self.secrets
            .sort_by_key(|s| std::cmp::Reverse(s.expose().len()));
    }

    /// Whether `text` holds a configured secret.
    pub fn finds_secret_in(&self, text: &str) -> bool {
        self.secrets.iter().any(|s| text.contains(s.expose()))
    }

    /// Whether `bytes` hold a configured secret.
    pub fn finds_secret_in_bytes(&self, bytes: &[u8]) -> bool {
        self.secrets
            .iter()
            .any(|s| find_bytes(bytes, s.expose().as_bytes(), 0).is_some())
    }

    /// `text` with configured secrets and secret-shaped text replaced.
    pub fn scrub<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for secret in &self.secrets {
            if out.contains(secret.expose()) {
                out = Cow::Owned(out.replace(secret.expose(), REDACTED));
            }
        }
        match scrub_builtin(&out) {
            Cow::Borrowed(_) => out,
            Cow::Owned(scrubbed) => Cow::Owned(scrubbed),
        }
    }

    /// `bytes` with every configured secret's bytes replaced by `<redacted>`.
    pub fn scrub_bytes(&self, bytes: &[u8]) -> Vec<u8> {
        let mut out = bytes.to_vec();
        for secret in &self.secrets {
            let needle = secret.expose().as_bytes();
            let mut from = 0;
            let mut next = Vec::with_capacity(out.len());
            while let Some(at) = find_bytes(&out, needle, from) {
                next.extend_from_slice(&out[from..at]);
                next.extend_from_slice(REDACTED.as_bytes());
                from = at + needle.len();
            }
            next.extend_from_slice(&out[from..]);
            out = next;
        }
        out
    }
}

fn find_bytes(haystack: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    if needle.is_empty() || haystack.len() < needle.len() {
        return None;
    }
    (from..=haystack.len() - needle.len()).find(|&i| haystack[i..].starts_with(needle))
}

/// Query parameters whose values are credentials.
const SECRET_PARAMS: [&str; 4] = ["key", "api_key", "access_token", "token"];

/// Removes secret-shaped text that needs no configuration: ephemeral
/// token names (`auth_tokens/…`), credential query parameters (`?key=…`,
/// `&access_token=…`), `Bearer …` credentials and
/// `x-goog-api-key: …` header text.
///
/// ```
/// use livesim::wire::scrub_builtin;
///
/// assert_eq!(scrub_builtin("GET /ws?alt=1&key=AIzaSECRET"), "GET /ws?alt=1&key=<redacted>");
/// assert_eq!(scrub_builtin("Authorization: Bearer ya29.SECRET"), "Authorization: Bearer <redacted>");
/// assert_eq!(scrub_builtin("no secrets here"), "no secrets here");
/// ```
pub fn scrub_builtin(text: &str) -> Cow<'_, str> {
    let lower = text.to_ascii_lowercase();
    let mut cuts: Vec<(usize, usize, &'static str)> = Vec::new();

    // Ephemeral token names, anywhere.
    for (at, _) in lower.match_indices("auth_tokens/") {
        let end = token_end(text, at + "auth_tokens/".len());
        cuts.push((at, end, REDACTED_TOKEN));
    }
    // Credential query parameters: `?key=` or `&key=`.
    for param in SECRET_PARAMS {
        let pattern = format!("{param}=");
        for (at, _) in lower.match_indices(&pattern) {
            if at > 0 && matches!(text.as_bytes()[at - 1], b'?' | b'&' | b';') {
                let start = at + pattern.len();
                let end = param_end(text, start);
                if end > start {
                    cuts.push((start, end, REDACTED));
                }
            }
        }
    }
    // Credentials after an auth scheme or the key header's name.
    for marker in ["bearer ", "x-goog-api-key: ", "x-goog-api-key:"] {
        for (at, _) in lower.match_indices(marker) {
            let start = at + marker.len();
            let end = token_end(text, start);
            if end > start {
                cuts.push((start, end, REDACTED));
            }
        }
    }
    if cuts.is_empty() {
        return Cow::Borrowed(text);
    }
    cuts.sort();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for (start, end, replacement) in cuts {
        if start < copied {
            // Overlaps a cut already made (e.g. `Token auth_tokens/x`).
            continue;
        }
        out.push_str(&text[copied..start]);
        out.push_str(replacement);
        copied = end;
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

/// End of a credential token starting at `start`: letters, digits and the
/// URL-safe and base64 punctuation.
fn token_end(text: &str, start: usize) -> usize {
    let rest = &text.as_bytes()[start..];
    let len = rest
        .iter()
        .position(|b| !(b.is_ascii_alphanumeric() || b"-._~+/=%".contains(b)))
        .unwrap_or(rest.len());
    start + len
}

/// End of a query parameter's value.
fn param_end(text: &str, start: usize) -> usize {
    let rest = &text.as_bytes()[start..];
    let len = rest
        .iter()
        .position(|b| b"&#\"' <>\n\r\t,;)".contains(b))
        .unwrap_or(rest.len());
    start + len
}

/// A URL safe to show: no user info, no query, no fragment; a query that
/// was there is shown as `?<redacted>`.
///
/// ```
/// use livesim::wire::redact_url;
///
/// assert_eq!(redact_url("wss://h.example/ws/Bidi?key=SECRET"), "wss://h.example/ws/Bidi?<redacted>");
/// assert_eq!(redact_url("ws://user:pw@127.0.0.1:9/ws"), "ws://127.0.0.1:9/ws");
/// ```
pub fn redact_url(url: &str) -> String {
    let (base, had_query) = match url.find(['?', '#']) {
        Some(at) => (&url[..at], url[at..].starts_with('?')),
        None => (url, false),
    };
    let base = match base.find("://") {
        Some(scheme_end) => {
            let authority_start = scheme_end + 3;
            let authority_end = base[authority_start..]
                .find('/')
                .map_or(base.len(), |i| authority_start + i);
            match base[authority_start..authority_end].rfind('@') {
                Some(at) => format!(
                    "{}{}",
                    &base[..authority_start],
                    &base[authority_start + at + 1..]
                ),
                None => base.to_owned(),
            }
        }
        None => base.to_owned(),
    };
    if had_query {
        format!("{base}?{REDACTED}")
    } else {
        base
    }
}
