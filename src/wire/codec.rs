//! Decoding frames into messages and encoding messages into frames.
//!
//! Decoding never panics and never guesses: the frame's bytes must be
//! UTF-8 JSON holding an object, and a frame that is not is a
//! [`ProtocolError`] naming the frame kind, its size and serde's account
//! of what was wrong. A close frame decodes to [`Decoded::Closed`] with
//! its class. Encoding always yields camelCase JSON.

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::close::Closed;
use super::frame::{Frame, FrameKind, truncate_at_char};
use super::redact::scrub_builtin;

/// A frame could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    /// The bytes are not UTF-8.
    #[error("{kind} frame of {len} bytes is not UTF-8 (invalid byte at offset {valid_up_to})")]
    NotUtf8 {
        /// Text or binary.
        kind: FrameKind,
        /// The frame's size in bytes.
        len: usize,
        /// Where the first invalid byte is.
        valid_up_to: usize,
    },
    /// The text is not JSON, or not the shape of the expected message.
    #[error("{kind} frame of {len} bytes is not a valid {expected}: {problem}")]
    Invalid {
        /// Text or binary.
        kind: FrameKind,
        /// The frame's size in bytes.
        len: usize,
        /// The message type expected, e.g. `ServerMessage`.
        expected: &'static str,
        /// serde's message, with line and column (shortened, redacted).
        problem: String,
    },
}

/// What a frame decodes to.
#[derive(Clone, Debug, PartialEq)]
pub enum Decoded<M> {
    /// A text or binary frame's message.
    Message(M),
    /// A close frame: how the connection ended.
    Closed(Closed),
}

/// Longest serde message kept in an error: a wrong-typed huge string would
/// otherwise be quoted whole.
const MAX_PROBLEM: usize = 300;

/// Decodes `bytes` of a `kind` frame as a message of type `M`.
pub fn decode_bytes<M: DeserializeOwned>(
    kind: FrameKind,
    bytes: &[u8],
) -> Result<M, ProtocolError> {
    let text = std::str::from_utf8(bytes).map_err(|e| ProtocolError::NotUtf8 {
        kind,
        len: bytes.len(),
        valid_up_to: e.valid_up_to(),
    })?;
    serde_json::from_str(text).map_err(|e| {
        let problem = e.to_string();
        ProtocolError::Invalid {
            kind,
            len: bytes.len(),
            expected: short_type_name::<M>(),
            // Redacted first: a cut first could keep half a key.
            problem: truncate_at_char(&scrub_builtin(&problem), MAX_PROBLEM).to_string(),
        }
    })
}

/// Decodes a frame: its message, or how the connection closed.
///
/// ```
/// use livesim::wire::{CloseClass, Decoded, Frame, ServerMessage, decode};
///
/// let binary = Frame::Binary(br#"{"setupComplete":{}}"#.to_vec());
/// let Decoded::Message(msg) = decode::<ServerMessage>(&binary).unwrap() else { panic!() };
/// assert!(msg.setup_complete.is_some());
///
/// let Decoded::Closed(closed) = decode::<ServerMessage>(&Frame::close(1011, "Internal error occurred.")).unwrap()
/// else { panic!() };
/// assert_eq!(closed.class, CloseClass::Retryable);
///
/// let err = decode::<ServerMessage>(&Frame::Binary(vec![0xff, b'{'])).unwrap_err();
/// assert_eq!(err.to_string(), "binary frame of 2 bytes is not UTF-8 (invalid byte at offset 0)");
/// ```
pub fn decode<M: DeserializeOwned>(frame: &Frame) -> Result<Decoded<M>, ProtocolError> {
    match frame {
        Frame::Text(text) => decode_bytes(FrameKind::Text, text.as_bytes()).map(Decoded::Message),
        Frame::Binary(bytes) => decode_bytes(FrameKind::Binary, bytes).map(Decoded::Message),
        Frame::Close(close) => Ok(Decoded::Closed(Closed::from_close(close.as_ref()))),
    }
}

/// Encodes a message as camelCase JSON.
pub fn to_json<M: Serialize>(message: &M) -> String {
    // Wire types have string map keys and infallible field serializers,
    // which are the only ways serde_json's encoder can fail.
    serde_json::to_string(message).expect("wire messages always encode")
}

fn short_type_name<M>() -> &'static str {
    let full = std::any::type_name::<M>();
    full.rsplit("::").next().unwrap_or(full)
}

/// The codec methods shared by [`ClientMessage`](super::ClientMessage)
/// and [`ServerMessage`](super::ServerMessage).
macro_rules! message_codec {
    ($name:ident) => {
        impl $name {
            /// Decodes the JSON bytes of a text or binary frame.
            pub fn from_slice(bytes: &[u8]) -> Result<Self, ProtocolError> {
                decode_bytes(FrameKind::Text, bytes)
            }

            /// Decodes a frame: a message, or how the connection closed.
            pub fn from_frame(frame: &Frame) -> Result<Decoded<Self>, ProtocolError> {
                decode(frame)
            }

            /// Encodes as camelCase JSON.
            pub fn to_json(&self) -> String {
                to_json(self)
            }

            /// Encodes as a text frame (what clients send).
            pub fn to_frame(&self) -> Frame {
                Frame::Text(self.to_json())
            }

            /// Encodes as a binary frame (what the Live server usually sends).
            pub fn to_binary_frame(&self) -> Frame {
                Frame::Binary(self.to_json().into_bytes())
            }
        }
    };
}

use super::client::ClientMessage;
use super::server::ServerMessage;

message_codec!(ClientMessage);
message_codec!(ServerMessage);
