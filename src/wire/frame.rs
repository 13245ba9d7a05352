//! Frames: the unit a transport moves, one WebSocket message each.
//!
//! A frame is text, binary or a close. Live JSON may come in either text
//! or binary frames (the server usually sends binary); both decode the
//! same way. Ping and pong never reach this level: transports answer them.

use std::fmt;

/// One WebSocket message.
///
/// ```
/// use livesim::wire::{CloseFrame, Frame, FrameKind};
///
/// let frame = Frame::Binary(br#"{"setupComplete":{}}"#.to_vec());
/// assert_eq!(frame.kind(), FrameKind::Binary);
/// assert_eq!(frame.payload(), Some(&br#"{"setupComplete":{}}"#[..]));
/// let bye = Frame::close(1011, "Internal error encountered.");
/// assert_eq!(bye, Frame::Close(Some(CloseFrame::new(1011, "Internal error encountered."))));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame {
    /// A text frame: UTF-8 JSON. What clients send.
    Text(String),
    /// A binary frame: for Live, UTF-8 JSON bytes. What the server sends.
    Binary(Vec<u8>),
    /// A close frame, with a code and reason unless the peer sent none.
    Close(Option<CloseFrame>),
}

/// The three kinds of [`Frame`], for messages and logs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FrameKind {
    /// [`Frame::Text`].
    Text,
    /// [`Frame::Binary`].
    Binary,
    /// [`Frame::Close`].
    Close,
}

impl FrameKind {
    /// `text`, `binary` or `close`: the spelling used in wire logs.
    pub fn as_str(self) -> &'static str {
        match self {
            FrameKind::Text => "text",
            FrameKind::Binary => "binary",
            FrameKind::Close => "close",
        }
    }
}

impl fmt::Display for FrameKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The code and reason of a close frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CloseFrame {
    /// The close code (1000, 1007, 1011, …).
    pub code: u16,
    /// A human-readable reason, at most 123 bytes on the wire.
    pub reason: String,
}

/// Longest close reason RFC 6455 allows (125-byte control payload less the code).
pub const MAX_CLOSE_REASON: usize = 123;

impl CloseFrame {
    /// A close frame with this code and reason.
    pub fn new(code: u16, reason: impl Into<String>) -> Self {
        CloseFrame {
            code,
            reason: reason.into(),
        }
    }

    /// The reason cut to [`MAX_CLOSE_REASON`] bytes at a character
    /// boundary, as it must be before going on the wire.
    pub fn wire_reason(&self) -> &str {
        truncate_at_char(&self.reason, MAX_CLOSE_REASON)
    }
}

impl Frame {
    /// Which kind of frame this is.
    pub fn kind(&self) -> FrameKind {
        match self {
            Frame::Text(_) => FrameKind::Text,
            Frame::Binary(_) => FrameKind::Binary,
            Frame::Close(_) => FrameKind::Close,
        }
    }

    /// The bytes of a text or binary frame; `None` for a close.
    pub fn payload(&self) -> Option<&[u8]> {
        match self {
            Frame::Text(text) => Some(text.as_bytes()),
            Frame::Binary(bytes) => Some(bytes),
            Frame::Close(_) => None,
        }
    }

    /// A close frame with this code and reason.
    pub fn close(code: u16, reason: impl Into<String>) -> Self {
        Frame::Close(Some(CloseFrame::new(code, reason)))
    }

    /// Whether this is a close frame.
    pub fn is_close(&self) -> bool {
        matches!(self, Frame::Close(_))
    }
}

/// The longest prefix of `text` of at most `max` bytes that ends on a
/// character boundary.
pub(crate) fn truncate_at_char(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}
