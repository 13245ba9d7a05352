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
    /// What makes this line something no recorder writes, if anything: a
    /// payload given twice (`json` and `raw`: which one was sent cannot be
    /// told), a `raw_base64` that is not base64, or keys of another type
    /// of line (a `close` on a text frame). Serde's derive cannot say
    /// these, and [`to_frame`](Self::to_frame) would pick one payload, or
    /// none, without a word; both readers (`WireLog::read` and `sim
    /// import`) ask this of every frame.
    pub fn problem(&self) -> Option<String> {
        let payloads: Vec<&str> = [
            ("json", self.json.is_some()),
            ("raw", self.raw.is_some()),
            ("raw_base64", self.raw_base64.is_some()),
        ]
        .into_iter()
        .filter_map(|(key, given)| given.then_some(key))
        .collect();
        let type_name = match self.line_type {
            LineType::Text => "text",
            LineType::Binary => "binary",
            LineType::Close => "close",
            LineType::Error => "error",
        };
        let listed = |keys: &[&str]| {
            keys.iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(" and ")
        };
        match self.line_type {
            LineType::Text | LineType::Binary => {
                if payloads.len() > 1 {
                    return Some(format!(
                        "both {} are given: a frame's payload is recorded in one of `json`, \
                         `raw` and `raw_base64`, so which one was sent cannot be told",
                        listed(&payloads)
                    ));
                }
                if payloads.is_empty() {
                    return Some(format!(
                        "a {type_name} frame without its payload: one of `json`, `raw` and \
                         `raw_base64` records it"
                    ));
                }
                if let Some(b64) = &self.raw_base64
                    && STANDARD.decode(b64).is_err()
                {
                    return Some("`raw_base64` is not standard base64".to_string());
                }
                let other: Vec<&str> = [
                    ("close", self.close.is_some()),
                    ("error", self.error.is_some()),
                ]
                .into_iter()
                .filter_map(|(key, given)| given.then_some(key))
                .collect();
                (!other.is_empty()).then(|| {
                    format!(
                        "{} on a {type_name} frame, which records a payload",
                        listed(&other)
                    )
                })
            }
            LineType::Close | LineType::Error => {
                let mut other = payloads;
                if self.line_type == LineType::Close && self.error.is_some() {
                    other.push("error");
                }
                if self.line_type == LineType::Error && self.close.is_some() {
                    other.push("close");
                }
                if !other.is_empty() {
                    return Some(format!(
                        "{} on {} line, which records no payload",
                        listed(&other),
                        if self.line_type == LineType::Close {
                            "a close"
                        } else {
                            "an error"
                        }
                    ));
                }
                (self.line_type == LineType::Error && self.error.is_none())
                    .then(|| "an error line without its `error` message".to_string())
            }
        }
    }

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

/// Checks the header line `text` of a wire log as [`WireLog::read`]
/// does (every key known, `kind` and `v` this build's): `sim import`,
/// which keeps the good frames of a damaged log, still refuses a log
/// whose header says it is something else. The error is the problem, for
/// after the file's name and line.
#[cfg(feature = "simulation")]
pub(crate) fn check_header(text: &str) -> Result<Header, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        format!(
            "not a wire log header: {}",
            crate::jsonl::explain_in_line(text, &e)
        )
    })?;
    if let Some(kind) = value.get("kind").and_then(Value::as_str)
        && kind != WIRE_LOG_KIND
    {
        return Err(format!(
            "this is a {kind} file, not a wire log (its header says \"kind\": {kind:?})"
        ));
    }
    if let Some(problem) = crate::jsonl::duplicate_key_in_line(text) {
        return Err(format!("not a wire log header: {problem}"));
    }
    let header: Header = serde_json::from_str(text).map_err(|e| {
        format!(
            "not a wire log header: {}",
            crate::jsonl::explain_in_line(text, &e)
        )
    })?;
    if header.v != WIRE_LOG_VERSION {
        return Err(format!(
            "wire log version {} is not supported (this build reads {WIRE_LOG_VERSION})",
            header.v
        ));
    }
    Ok(header)
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
        let mut decoder = JsonlDecoder::<Record>::new(file).unique_keys();
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
                (Record::Frame(f), Some(_)) => {
                    if let Some(problem) = f.problem() {
                        return Err(WireLogError::Jsonl(JsonlError::BadLine {
                            file: file.into(),
                            line,
                            problem: format!("a damaged frame: {problem}"),
                        }));
                    }
                    frames.push(f)
                }
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
