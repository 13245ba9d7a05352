//! Close codes, classified for the session's reconnect policy.
//!
//! The Live API has no in-band error message: failures arrive as a close
//! frame with a code and a reason of at most 123 bytes. The classes:
//!
//! * **fatal**: 1007 (bad request, bad key, unknown field) and 1008
//!   (policy: model not found, feature unsupported). Retrying the same
//!   request fails the same way.
//! * **resume rejected**: 1007/1008 whose reason says the session was not
//!   found: the resumption handle is stale. Drop it and start afresh.
//! * **retryable**: everything else, 1000 included when the client did
//!   not ask for it (the server closes at its connection limit with 1000),
//!   1006 (no close frame; also HTTP errors at upgrade in browsers) and
//!   1011 (server trouble). Reconnect with backoff and the handle.
//!
//! A close the client asked for is not classified here: only the session
//! knows it asked, so it ignores that close's class.

use std::fmt;

use super::frame::CloseFrame;
use super::redact::scrub_builtin;

/// Well-known close codes.
pub mod codes {
    /// Normal closure.
    pub const NORMAL: u16 = 1000;
    /// The endpoint is going away.
    pub const GOING_AWAY: u16 = 1001;
    /// Protocol error.
    pub const PROTOCOL_ERROR: u16 = 1002;
    /// A close frame with no status code (never sent on the wire).
    pub const NO_STATUS: u16 = 1005;
    /// The connection ended without a close frame (never sent on the wire).
    pub const ABNORMAL: u16 = 1006;
    /// The payload was invalid: Live's "bad request".
    pub const INVALID_PAYLOAD: u16 = 1007;
    /// Policy violation: Live's "not found / not supported".
    pub const POLICY_VIOLATION: u16 = 1008;
    /// A message was too big.
    pub const MESSAGE_TOO_BIG: u16 = 1009;
    /// The server hit an internal error.
    pub const INTERNAL_ERROR: u16 = 1011;

    /// Whether a close frame may carry `code` (RFC 6455, section 7.4):
    /// the codes defined for endpoints to send (1000–1003, 1007–1013) and
    /// those registered for libraries and applications (3000–4999).
    /// 1005, 1006 and 1015 only report what happened; the rest are
    /// reserved.
    ///
    /// ```
    /// use livesim::wire::codes;
    ///
    /// assert!(codes::sendable(codes::INTERNAL_ERROR));
    /// assert!(codes::sendable(4000));
    /// assert!(!codes::sendable(codes::ABNORMAL));
    /// assert!(!codes::sendable(0));
    /// ```
    pub fn sendable(code: u16) -> bool {
        matches!(code, 1000..=1003 | 1007..=1013 | 3000..=4999)
    }
}

/// What a close means for the session.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CloseClass {
    /// Not retryable without changing the request.
    Fatal,
    /// Reconnect (with backoff, resuming with the handle if there is one).
    Retryable,
    /// The resumption handle was rejected: drop it and start a fresh session.
    ResumeRejected,
}

impl fmt::Display for CloseClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CloseClass::Fatal => "fatal",
            CloseClass::Retryable => "retryable",
            CloseClass::ResumeRejected => "resume rejected",
        })
    }
}

/// The class of close `code` with `reason` (as if the client had not
/// asked for it).
///
/// ```
/// use livesim::wire::{CloseClass, classify};
///
/// assert_eq!(classify(1007, "API key not valid."), CloseClass::Fatal);
/// assert_eq!(classify(1008, "BidiGenerateContent session not found"), CloseClass::ResumeRejected);
/// assert_eq!(classify(1011, "Internal error encountered."), CloseClass::Retryable);
/// assert_eq!(classify(1000, ""), CloseClass::Retryable);
/// ```
pub fn classify(code: u16, reason: &str) -> CloseClass {
    match code {
        codes::INVALID_PAYLOAD | codes::POLICY_VIOLATION => {
            if reason.to_ascii_lowercase().contains("session not found") {
                CloseClass::ResumeRejected
            } else {
                CloseClass::Fatal
            }
        }
        _ => CloseClass::Retryable,
    }
}

/// How a connection ended: code, redacted reason and class.
///
/// ```
/// use livesim::wire::{CloseClass, CloseFrame, Closed};
///
/// let closed = Closed::from_close(Some(&CloseFrame::new(1007, "Request contains an invalid argument.")));
/// assert_eq!((closed.code, closed.class), (1007, CloseClass::Fatal));
/// assert_eq!(closed.to_string(), "closed with 1007 (fatal): Request contains an invalid argument.");
/// assert_eq!(Closed::from_close(None).code, 1005);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Closed {
    /// The close code; 1005 when the close frame had none, 1006 when there
    /// was no close frame at all.
    pub code: u16,
    /// The reason, with secret-shaped text (tokens, key parameters) redacted.
    pub reason: String,
    /// What the session should do about it.
    pub class: CloseClass,
}

impl Closed {
    /// A close with this code and reason; the reason is redacted.
    pub fn new(code: u16, reason: &str) -> Self {
        Closed {
            code,
            reason: scrub_builtin(reason).into_owned(),
            class: classify(code, reason),
        }
    }

    /// The close a close frame announces (1005 if it carried no code).
    pub fn from_close(frame: Option<&CloseFrame>) -> Self {
        match frame {
            Some(frame) => Closed::new(frame.code, &frame.reason),
            None => Closed::new(codes::NO_STATUS, ""),
        }
    }

    /// A connection that ended without a close frame (1006).
    pub fn abnormal(detail: &str) -> Self {
        Closed::new(codes::ABNORMAL, detail)
    }
}

impl fmt::Display for Closed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "closed with {} ({})", self.code, self.class)?;
        if !self.reason.is_empty() {
            write!(f, ": {}", self.reason)?;
        }
        Ok(())
    }
}
