//! The wire log: a JSONL record of every frame a transport moved.
//!
//! Line 1 is the header, then one line per frame:
//!
//! ```text
//! {"v":1,"kind":"wire_log","model":"models/…","started_at_ms":1764460800000,"connect":{…}}
//! {"dir":"out","t_ms":0,"type":"text","json":{"setup":{…}}}
//! {"dir":"in","t_ms":41,"type":"binary","json":{"setupComplete":{}}}
//! {"dir":"in","t_ms":980,"type":"close","close":{"code":1011,"reason":"Internal error encountered."}}
//! ```
//!
//! * `t_ms` is milliseconds since recording started, on the recorder's
//!   clock (virtual time under simulation); `started_at_ms` is the wall
//!   time the caller said the recording started (Unix milliseconds).
//! * A payload that is JSON is stored as `json` (so a replay can re-encode
//!   it); one that is UTF-8 but not JSON as `raw`; one that is not UTF-8 as
//!   `raw_base64`. A close frame stores `close` (absent when it had no
//!   code). A transport error stores `error`, its redacted message.
//! * Nothing secret is written: see [`recording`](super::recording).
//!
//! Reading uses [`crate::jsonl`], so a torn last line (a recorder killed
//! mid-write) is reported, not fatal.
//!
//! Every key, and what a damaged log gives: `docs/formats/wire-log.md`.

use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::jsonl::{JsonlDecoder, JsonlError, TornLine, drain_with};
use crate::wire::{CloseFrame, Frame};

/// The format version written in the header's `v`.
pub const WIRE_LOG_VERSION: u32 = 1;

/// The header's `kind`.
pub const WIRE_LOG_KIND: &str = "wire_log";

/// The first line of a wire log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Header {
    /// Format version; [`WIRE_LOG_VERSION`].
    pub v: u32,
    /// Always [`WIRE_LOG_KIND`].
    pub kind: String,
    /// The model the session asked for, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// When recording started, in Unix milliseconds, as the caller said.
    pub started_at_ms: u64,
    /// How the connection was made, redacted (see
    /// [`Endpoint::descriptor`](super::websocket::Endpoint::descriptor)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect: Option<Value>,
}

/// Which way a frame went.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Received from the peer.
    In,
    /// Sent to the peer.
    Out,
}

/// What a line records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LineType {
    /// A text frame.
    Text,
    /// A binary frame.
    Binary,
    /// A close frame.
    Close,
    /// A transport error instead of a frame.
    Error,
}

/// One frame (or transport error) in a wire log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrameLine {
    /// In or out.
    pub dir: Direction,
    /// Milliseconds since recording started.
    pub t_ms: u64,
    /// Text, binary, close or error.
    #[serde(rename = "type")]
    pub line_type: LineType,
    /// The payload, when it is JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json: Option<Value>,
    /// The payload, when it is UTF-8 but not JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    /// The payload, when it is not UTF-8 (standard base64).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_base64: Option<String>,
    /// A close frame's code and reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub close: Option<CloseLine>,
    /// A transport error's message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A close frame as logged.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CloseLine {
    /// The close code.
    pub code: u16,
    /// The reason, redacted.
    #[serde(default)]
    pub reason: String,
}

impl FrameLine {
    /// The frame this line recorded, rebuilt for replay (`None` for an
    /// error line). JSON payloads are re-encoded compactly, so the bytes
    /// may differ in whitespace from what was on the wire.
    pub fn to_frame(&self) -> Option<Frame> {
        let payload = || -> Option<Vec<u8>> {
            if let Some(json) = &self.json {
                return Some(json.to_string().into_bytes());
            }
            if let Some(raw) = &self.raw {
                return Some(raw.clone().into_bytes());
            }
            self.raw_base64
                .as_ref()
                .and_then(|b| STANDARD.decode(b).ok())
        };
        match self.line_type {
            LineType::Text => Some(Frame::Text(
                String::from_utf8_lossy(&payload().unwrap_or_default()).into_owned(),
            )),
            LineType::Binary => Some(Frame::Binary(payload().unwrap_or_default())),
            LineType::Close => Some(Frame::Close(
                self.close
                    .as_ref()
                    .map(|c| CloseFrame::new(c.code, c.reason.clone())),
            )),
            LineType::Error => None,
        }
    }
}

/// Any line of a wire log: the header (it has `v`) or a frame.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Record {
    /// The header line.
    Header(Header),
    /// A frame line.
    Frame(FrameLine),
}

impl<'de> Deserialize<'de> for Record {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        // Dispatch on `v` so each kind of line gets serde's own message for
        // what is wrong with it, not untagged's "matched no variant".
        let value = Value::deserialize(d)?;
        if let Some(kind) = value.get("kind").and_then(Value::as_str)
            && value.get("v").is_some()
            && kind != WIRE_LOG_KIND
        {
            return Err(D::Error::custom(format_args!(
                "this is a {kind} file, not a wire log (its header says \"kind\": {kind:?})"
            )));
        }
        if value.get("v").is_some() {
            Header::deserialize(value)
                .map(Record::Header)
                .map_err(D::Error::custom)
        } else {
            FrameLine::deserialize(value)
                .map(Record::Frame)
                .map_err(D::Error::custom)
        }
    }
}

/// A wire log read back.
#[derive(Clone, Debug, PartialEq)]
pub struct WireLog {
    /// Its header.
    pub header: Header,
    /// Its frames, in order.
    pub frames: Vec<FrameLine>,
    /// A torn last line, if the recorder stopped mid-write.
    pub torn: Option<TornLine>,
}

/// A wire log could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WireLogError {
    /// A line is not JSON, or not a header or frame.
    #[error(transparent)]
    Jsonl(#[from] JsonlError),
    /// The first line is not a header.
    #[error("{file}:{line}: a wire log starts with a header line (with \"v\"); found a frame")]
    MissingHeader {
        /// The file.
        file: String,
        /// The first non-blank line.
        line: u64,
    },
    /// A header in the middle.
    #[error("{file}:{line}: a second header line")]
    ExtraHeader {
        /// The file.
        file: String,
        /// Where.
        line: u64,
    },
    /// A version this build cannot read.
    #[error(
        "{file}:{line}: wire log version {found} is not supported (this build reads {WIRE_LOG_VERSION})"
    )]
    Version {
        /// The file.
        file: String,
        /// The header's line.
        line: u64,
        /// The version found.
        found: u32,
    },
    /// The input was empty.
    #[error("{file}: empty; a wire log has at least a header line")]
    Empty {
        /// The file.
        file: String,
    },
}

impl WireLog {
    /// Reads a wire log from a file, within the bounds of a JSONL file
    /// ([`read_bytes`](crate::jsonl::read_bytes)); errors name the path and
    /// the line.
    pub fn read(path: impl AsRef<Path>) -> Result<WireLog, WireLogError> {
        let path = path.as_ref();
        let name = path.display().to_string();
        let bytes = crate::jsonl::read_bytes(path)?;
        WireLog::parse(&name, &bytes)
    }

    /// Reads a wire log held in memory; `file` names it in errors.
    ///
    /// ```
    /// use livesim::transport::wire_log::{Direction, WireLog};
    ///
    /// let log = WireLog::parse("demo.jsonl", br#"{"v":1,"kind":"wire_log","started_at_ms":0}
    /// {"dir":"in","t_ms":5,"type":"binary","json":{"setupComplete":{}}}
    /// "#).unwrap();
    /// assert_eq!(log.frames[0].dir, Direction::In);
    /// assert_eq!(log.frames[0].to_frame().unwrap().payload().unwrap(), br#"{"setupComplete":{}}"#);
    /// ```
    pub fn parse(file: &str, bytes: &[u8]) -> Result<WireLog, WireLogError> {
        let mut decoder = JsonlDecoder::<Record>::new(file);
        decoder.feed(bytes);
        decoder.end();
        let mut header = None;
        let mut frames = Vec::new();
        let torn = drain_with(decoder, |line, record| {
            match (record, &header) {
                (Record::Header(h), None) => {
                    if h.v != WIRE_LOG_VERSION {
                        return Err(WireLogError::Version {
                            file: file.into(),
                            line,
                            found: h.v,
                        });
                    }
                    header = Some(h);
                }
                (Record::Header(_), Some(_)) => {
                    return Err(WireLogError::ExtraHeader {
                        file: file.into(),
                        line,
                    });
                }
                (Record::Frame(_), None) => {
                    return Err(WireLogError::MissingHeader {
                        file: file.into(),
                        line,
                    });
                }
                (Record::Frame(f), Some(_)) => frames.push(f),
            }
            Ok(())
        })?;
        let header = header.ok_or_else(|| WireLogError::Empty { file: file.into() })?;
        Ok(WireLog {
            header,
            frames,
            torn,
        })
    }
}
