//! `livesim serve`: a script served to any WebSocket client, so an agent
//! written in any language (on Google's own SDK pointed at a custom base
//! URL, say) is tested against the same scripts as a Rust session.
//!
//! A [`Server`] listens on 127.0.0.1 at the Live API's paths
//! ([`SERVED_PATHS`]; any other path gets HTTP 404, a Live path without a
//! WebSocket upgrade 426) and plays its [`ScriptedServer`] on each connection
//! with the test kit's own player: strict like the real service, in real
//! time, accepting what real clients send (camelCase or snake_case keys,
//! the key in an `x-goog-api-key` header or, with a warning, in
//! `?key=`). Every frame is logged in one redacted line: no credential,
//! `Authorization` value, token name or resumption handle is ever
//! printed, and each line is one printable line of at most [`MAX_LINE`]
//! bytes. Every connection has [`Limits`]: a message size (over it: close
//! 1009), a setup and an idle timeout (close 1011); a client that breaks
//! the WebSocket protocol gets the RFC 6455 close code for it (1002,
//! 1007). With TLS it serves `wss://` on a fresh self-signed
//! certificate, written as PEM (the certificate only) for clients to
//! trust.
//!
//! Each connection's [`ConnectionReport`] says whether the script played
//! to its end, or what the client did that broke it.
//!
//! [`ScriptedServer`]: crate::testing::ScriptedServer

mod connection;
mod log;
mod report;
mod server;
mod summary;
mod tls;
mod upgrade;

pub use log::{MAX_LINE, ServeLog, one_line};
pub use report::{ConnectionReport, Outcome, ServeReport};
pub use server::{Connections, Limits, MAX_OPEN, ServeError, ServeOptions, Server};
pub use upgrade::SERVED_PATHS;
