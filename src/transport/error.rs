//! What can go wrong moving frames, in words safe to show anyone.
//!
//! Every message here has already been redacted by whoever built it: URLs
//! appear without their query, and configured secrets never appear.

use crate::wire::{CloseClass, Closed, Redactor, codes};

/// A transport failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TransportError {
    /// The connection could not be opened: DNS, TCP, TLS or the WebSocket
    /// handshake.
    #[error("could not connect to {url}: {problem}")]
    Connect {
        /// The URL, redacted.
        url: String,
        /// What went wrong, redacted.
        problem: String,
    },
    /// The server answered the upgrade with an HTTP error.
    #[error(
        "{url} refused the WebSocket upgrade with HTTP {status}{}",
        body_suffix(body)
    )]
    Rejected {
        /// The URL, redacted.
        url: String,
        /// The HTTP status (401, 404, 429, …).
        status: u16,
        /// The start of the response body, redacted.
        body: String,
    },
    /// A send on a transport that is closing or closed.
    #[error("the transport is closed")]
    Closed,
    /// The connection ended without a close frame.
    #[error("connection lost without a close frame: {problem}")]
    ConnectionLost {
        /// What went wrong, redacted.
        problem: String,
    },
    /// The peer broke the WebSocket protocol (invalid UTF-8 in a text
    /// message, a message over the size limit, a malformed frame); this
    /// end closed the connection with `code`.
    #[error("the peer broke the WebSocket protocol ({problem}); closed with {code}")]
    Violation {
        /// The close code sent: 1002, 1007 or 1009.
        code: u16,
        /// What was wrong, redacted.
        problem: String,
    },
    /// Any other failure while moving frames.
    #[error("transport failure: {problem}")]
    Io {
        /// What went wrong, redacted.
        problem: String,
    },
}

fn body_suffix(body: &str) -> String {
    if body.is_empty() {
        String::new()
    } else {
        format!(": {body}")
    }
}

impl TransportError {
    /// What the session should make of it, in close-code terms. A
    /// connection that failed or was lost counts as 1006 (retryable); an
    /// upgrade refused with 400/401/403/404 is fatal, since retrying the
    /// same request gets the same answer, while 408/429/5xx are retryable.
    pub fn as_closed(&self) -> Closed {
        match self {
            TransportError::Rejected { status, body, .. } => {
                let reason = format!("HTTP {status} at upgrade{}", body_suffix(body));
                let mut closed = Closed::abnormal(&reason);
                if matches!(status, 400..=404) {
                    closed.class = CloseClass::Fatal;
                }
                closed
            }
            TransportError::Closed => Closed::new(codes::NORMAL, "the transport is closed"),
            TransportError::Violation { code, .. } => Closed::new(*code, &self.to_string()),
            other => Closed::abnormal(&other.to_string()),
        }
    }

    /// The same error with every string run through `redactor`.
    pub fn redacted(self, redactor: &Redactor) -> Self {
        let clean = |text: String| redactor.scrub(&text).into_owned();
        match self {
            TransportError::Connect { url, problem } => TransportError::Connect {
                url: clean(url),
                problem: clean(problem),
            },
            TransportError::Rejected { url, status, body } => TransportError::Rejected {
                url: clean(url),
                status,
                body: clean(body),
            },
            TransportError::Closed => TransportError::Closed,
            TransportError::ConnectionLost { problem } => TransportError::ConnectionLost {
                problem: clean(problem),
            },
            TransportError::Violation { code, problem } => TransportError::Violation {
                code,
                problem: clean(problem),
            },
            TransportError::Io { problem } => TransportError::Io {
                problem: clean(problem),
            },
        }
    }

    /// Shorthand for `self.as_closed().class`.
    pub fn class(&self) -> CloseClass {
        self.as_closed().class
    }
}
