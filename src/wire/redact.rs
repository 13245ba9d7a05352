//! Redaction: keeping credentials out of files, errors and logs.
//!
//! What counts as secret on the Live wire: the API key and any token
//! (query parameters `key=` / `access_token=`, headers `x-goog-api-key` and
//! `Authorization`), ephemeral token names (`auth_tokens/…`) anywhere, and
//! session resumption handles. This module owns the string-level part:
//!
//! * [`scrub_builtin`] removes secret-*shaped* text that needs no
//!   configuration (token names, key parameters, bearer tokens);
//! * a [`Redactor`] also removes the exact secrets it was given;
//! * [`clip`] shortens text for a message, after redaction, so a cut can
//!   never leave half a key behind.
//!
//! Every scrub is linear in the text: secrets are found by one
//! multi-pattern (Aho-Corasick) scan, secret-shaped text by another, and
//! after a cut the scan resumes behind it, so no byte is looked at more
//! than a bounded number of times whatever the input (`?key=` repeated a
//! million times included; see `benches/redact.rs`).
//!
//! Resumption handles are replaced by the wire log's recorder, which is the
//! only place that sees them in structure (`newHandle`).

use std::borrow::Cow;
use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, Input, MatchKind};

pub use super::secret::Secret;

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
    secrets: Vec<Secret>,
    /// One automaton over every secret, rebuilt when one is added (rare);
    /// `None` while there are none.
    matcher: Option<AhoCorasick>,
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

    /// Also removes every occurrence of `secret`. Empty secrets are
    /// ignored, and so are those found inside the replacement words
    /// themselves (`e`, `act`): scrubbed again, a line would lose its own
    /// `<redacted>` markers letter by letter, and no real credential is
    /// that short.
    pub fn add_secret(&mut self, secret: &Secret) {
        let value = secret.expose();
        if value.is_empty()
            || REDACTED.contains(value)
            || REDACTED_TOKEN.contains(value)
            || self.secrets.contains(secret)
        {
            return;
        }
        self.secrets.push(secret.clone());
        // Leftmost-longest: where two secrets start at the same byte (one
        // a prefix of the other), the longer goes whole.
        self.matcher = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(self.secrets.iter().map(|s| s.expose().as_bytes()))
            .ok();
    }

    /// Also removes every secret `other` knows.
    pub fn absorb(&mut self, other: &Redactor) {
        for secret in &other.secrets {
            self.add_secret(secret);
        }
    }

    /// Whether this redactor knows any secret.
    pub fn knows_secrets(&self) -> bool {
        !self.secrets.is_empty()
    }

    /// Whether `text` holds a configured secret.
    pub fn finds_secret_in(&self, text: &str) -> bool {
        self.finds_secret_in_bytes(text.as_bytes())
    }

    /// Whether `bytes` hold a configured secret.
    pub fn finds_secret_in_bytes(&self, bytes: &[u8]) -> bool {
        self.matcher.as_ref().is_some_and(|m| m.is_match(bytes))
    }

    /// `text` with configured secrets and secret-shaped text replaced.
    pub fn scrub<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match self.scrub_secrets(text) {
            Cow::Borrowed(text) => scrub_builtin(text),
            Cow::Owned(text) => Cow::Owned(scrub_builtin(&text).into_owned()),
        }
    }

    /// `text` with configured secrets replaced, and nothing else: for
    /// content that is not ours to judge (a model's text, a server
    /// message), where secret-*shaped* words such as "bearer" are fine.
    pub fn scrub_secrets<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match self.scrub_secret_bytes(text.as_bytes()) {
            Cow::Borrowed(_) => Cow::Borrowed(text),
            // Secrets are whole strings and their matches start and end on
            // character boundaries, so replacing them keeps UTF-8 valid.
            Cow::Owned(bytes) => Cow::Owned(
                String::from_utf8(bytes)
                    .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
            ),
        }
    }

    /// `bytes` with every configured secret's bytes replaced by `<redacted>`.
    pub fn scrub_bytes(&self, bytes: &[u8]) -> Vec<u8> {
        self.scrub_secret_bytes(bytes).into_owned()
    }

    fn scrub_secret_bytes<'a>(&self, bytes: &'a [u8]) -> Cow<'a, [u8]> {
        match &self.matcher {
            Some(matcher) => replace_all(matcher, bytes, |_| REDACTED.as_bytes()),
            None => Cow::Borrowed(bytes),
        }
    }
}

/// Every match of `matcher` in `bytes` replaced by `replacement(pattern)`,
/// in one left-to-right pass.
pub(crate) fn replace_all<'a, 'r>(
    matcher: &AhoCorasick,
    bytes: &'a [u8],
    replacement: impl Fn(usize) -> &'r [u8],
) -> Cow<'a, [u8]> {
    let mut out: Option<Vec<u8>> = None;
    let mut copied = 0;
    for found in matcher.find_iter(bytes) {
        let out = out.get_or_insert_with(|| Vec::with_capacity(bytes.len()));
        out.extend_from_slice(&bytes[copied..found.start()]);
        out.extend_from_slice(replacement(found.pattern().as_usize()));
        copied = found.end();
    }
    match out {
        Some(mut out) => {
            out.extend_from_slice(&bytes[copied..]);
            Cow::Owned(out)
        }
        None => Cow::Borrowed(bytes),
    }
}

/// What a built-in pattern marks, and how far its secret reaches.
#[derive(Clone, Copy)]
enum Marker {
    /// `auth_tokens/` and the token name after it, replaced whole.
    TokenName,
    /// A query parameter name and `=`; only after `?`, `&` or `;`.
    Param,
    /// An auth scheme or the key header's name; the credential follows
    /// after optional spaces.
    Credential,
}

/// The built-in patterns, matched ignoring ASCII case.
const MARKERS: [(&str, Marker); 7] = [
    ("auth_tokens/", Marker::TokenName),
    ("key=", Marker::Param),
    ("api_key=", Marker::Param),
    ("access_token=", Marker::Param),
    ("token=", Marker::Param),
    ("bearer ", Marker::Credential),
    ("x-goog-api-key:", Marker::Credential),
];

fn markers() -> &'static AhoCorasick {
    static MATCHER: OnceLock<AhoCorasick> = OnceLock::new();
    MATCHER.get_or_init(|| {
        AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::LeftmostLongest)
            .build(MARKERS.map(|(pattern, _)| pattern))
            .expect("the built-in patterns are a valid automaton")
    })
}

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
    let bytes = text.as_bytes();
    let matcher = markers();
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut from = 0;
    while from < bytes.len() {
        let Some(found) = matcher.find(Input::new(bytes).range(from..)) else {
            break;
        };
        let (start, end) = (found.start(), found.end());
        let (cut, replacement) = match MARKERS[found.pattern().as_usize()].1 {
            Marker::TokenName => ((start, token_end(bytes, end)), REDACTED_TOKEN),
            Marker::Param if start > 0 && matches!(bytes[start - 1], b'?' | b'&' | b';') => {
                ((end, param_end(bytes, end)), REDACTED)
            }
            Marker::Param => {
                // Not a parameter (`monkey=`): look again one byte on, so
                // a marker inside this one is still found.
                from = start + 1;
                continue;
            }
            Marker::Credential => {
                let value = end + bytes[end..].iter().take_while(|&&b| b == b' ').count();
                ((value, token_end(bytes, value)), REDACTED)
            }
        };
        if cut.1 > cut.0 {
            let out = out.get_or_insert_with(|| String::with_capacity(text.len()));
            out.push_str(&text[copied..cut.0]);
            out.push_str(replacement);
            copied = cut.1;
            from = cut.1;
        } else {
            from = end;
        }
    }
    match out {
        Some(mut out) => {
            out.push_str(&text[copied..]);
            Cow::Owned(out)
        }
        None => Cow::Borrowed(text),
    }
}

/// A 256-entry membership table, so a scan costs one load per byte.
const fn table(members: &[u8], alphanumeric: bool) -> [bool; 256] {
    let mut table = [false; 256];
    let mut i = 0;
    while i < members.len() {
        table[members[i] as usize] = true;
        i += 1;
    }
    if alphanumeric {
        let mut b = 0;
        while b < 256 {
            if (b as u8).is_ascii_alphanumeric() {
                table[b] = true;
            }
            b += 1;
        }
    }
    table
}

/// Bytes of a credential token: letters, digits and the URL-safe and
/// base64 punctuation.
const TOKEN: [bool; 256] = table(b"-._~+/=%", true);
/// Bytes that end a query parameter's value.
const PARAM_END: [bool; 256] = table(b"&#\"' <>\n\r\t,;)", false);

/// End of a credential token starting at `start`. Stops at an ASCII byte
/// or the end, so it is a character boundary.
fn token_end(bytes: &[u8], start: usize) -> usize {
    let rest = &bytes[start..];
    start
        + rest
            .iter()
            .position(|&b| !TOKEN[b as usize])
            .unwrap_or(rest.len())
}

/// End of a query parameter's value (an ASCII byte or the end).
fn param_end(bytes: &[u8], start: usize) -> usize {
    let rest = &bytes[start..];
    start
        + rest
            .iter()
            .position(|&b| PARAM_END[b as usize])
            .unwrap_or(rest.len())
}

/// `text` cut to at most `max` bytes on a character boundary, with `…` and
/// the full length when it was cut. Cut only text that was already
/// redacted: a cut before redaction can leave the start of a secret that
/// no longer matches.
///
/// ```
/// use livesim::wire::clip;
///
/// assert_eq!(clip("short", 10), "short");
/// assert_eq!(clip("ééééé", 5), "éé…(10 bytes)");
/// ```
pub fn clip(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!("{}…({} bytes)", &text[..end], text.len()))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A "secret" inside the markers themselves would eat them when a
    /// line is scrubbed twice; it is not learned, and the markers stay.
    #[test]
    fn a_secret_inside_the_markers_is_not_learned() {
        let redactor = Redactor::new()
            .with_secret(&Secret::new("e"))
            .with_secret(&Secret::new("auth_token"))
            .with_secret(&Secret::new("KEY-1234567890"));
        let once = redactor.scrub("/ws?key=e and KEY-1234567890").into_owned();
        assert_eq!(redactor.scrub(&once), once);
        assert_eq!(once, "/ws?key=<redacted> and <redacted>");
    }

    #[test]
    fn markers_inside_rejected_markers_are_found() {
        // `api_key=` not after `?`: its `key=` is not a parameter either.
        assert_eq!(scrub_builtin("x_api_key=1"), "x_api_key=1");
        assert_eq!(scrub_builtin("a?x=1&api_key=S"), "a?x=1&api_key=<redacted>");
        assert_eq!(
            scrub_builtin("?KEY=S;Access_Token=T"),
            "?KEY=<redacted>;Access_Token=<redacted>"
        );
        assert_eq!(
            scrub_builtin("x-goog-api-key:   S x"),
            "x-goog-api-key:   <redacted> x"
        );
        assert_eq!(
            scrub_builtin("Token auth_tokens/x y"),
            "Token <redacted:auth_token> y"
        );
    }

    #[test]
    fn repeated_markers_are_one_cut() {
        let text = "?key=".repeat(1000);
        assert_eq!(scrub_builtin(&text), "?key=<redacted>");
    }

    #[test]
    fn longer_secrets_win_and_bytes_are_scrubbed() {
        let r = Redactor::new()
            .with_secret(&Secret::new("abc"))
            .with_secret(&Secret::new("abcdef"));
        assert_eq!(r.scrub("xabcdefx abc"), "x<redacted>x <redacted>");
        assert_eq!(r.scrub_bytes(b"\xffabc\xfe"), b"\xff<redacted>\xfe");
        assert!(r.finds_secret_in("zzabczz"));
        assert!(!Redactor::new().finds_secret_in("abc"));
    }
}
