//! What can go wrong connecting or talking to a session.

use std::time::Duration;

/// Why a session could not be set up, or can no longer be used.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The server closed the connection instead of completing setup.
    #[error("setup rejected: the server closed with {code} ({class}): {reason}")]
    SetupRejected {
        /// The close code.
        code: u16,
        /// fatal, retryable or resume-rejected.
        class: String,
        /// The close reason, redacted.
        reason: String,
    },
    /// The connection ended before setup completed, without a close frame.
    #[error("setup failed: {0}")]
    SetupFailed(String),
    /// No `setupComplete` arrived in time.
    #[error("setup timed out: no setupComplete within {}", super::dispatch::human(*.0))]
    SetupTimeout(Duration),
    /// The transport failed.
    #[error("transport: {0}")]
    Transport(String),
    /// The builder is missing something it needs.
    #[error("configuration: {0}")]
    Config(String),
    /// The session has ended; nothing more can be sent.
    #[error("the session has ended")]
    Closed,
}
