//! Credentials, and the process-wide list of them that log output is
//! scrubbed with.
//!
//! A [`Secret`] prints as `<redacted>`. Whatever the process connects with
//! ([`remember`]: every `connect()` does) is also known to
//! [`known_secrets`], which livesim's log set-up
//! ([`executor::logs`](crate::executor::logs)) and failure reports run each
//! line through: a dependency that logs what it was handed (a handshake, a
//! frame a server echoed) is scrubbed on the way out too.

use std::fmt;
use std::sync::{PoisonError, RwLock};

use super::redact::Redactor;

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

/// Every secret this process was told to keep out of its logs.
static KNOWN: RwLock<Option<Redactor>> = RwLock::new(None);

/// Adds `secret` to the secrets every log line livesim writes is scrubbed
/// of ([`known_secrets`]). `connect()` calls it with its key; call it for
/// any other credential your process handles.
///
/// ```
/// use livesim::wire::{Secret, known_secrets, remember};
///
/// remember(&Secret::new("FAKE-KEY-remember-doc"));
/// assert_eq!(known_secrets().scrub("got FAKE-KEY-remember-doc"), "got <redacted>");
/// ```
pub fn remember(secret: &Secret) {
    let mut known = KNOWN.write().unwrap_or_else(PoisonError::into_inner);
    known.get_or_insert_with(Redactor::new).add_secret(secret);
}

/// A redactor that knows every [`remember`]ed secret.
pub fn known_secrets() -> Redactor {
    KNOWN
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
        .unwrap_or_default()
}

/// `text` scrubbed of every remembered secret and of secret-shaped text,
/// without copying the redactor.
#[cfg(feature = "simulation")]
pub(crate) fn scrub_known(text: &str) -> String {
    known_scrubbed(text).into_owned()
}

/// Like [`scrub_known`], borrowing `text` when there was nothing to scrub
/// (log lines, most of which hold no secret).
#[cfg(feature = "simulation")]
pub(crate) fn known_scrubbed(text: &str) -> std::borrow::Cow<'_, str> {
    let known = KNOWN.read().unwrap_or_else(PoisonError::into_inner);
    match known.as_ref() {
        Some(redactor) => redactor.scrub(text),
        None => super::redact::scrub_builtin(text),
    }
}
