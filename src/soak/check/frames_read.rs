//! The frames as the protocol reads them: what the checks that model the
//! frames read, so that a payload the protocol cannot read (a usage
//! count that is a word, a text that is a number) is expected to be left
//! out, as the session must leave it out, not read as meant.
//!
//! What the protocol can read of a payload is for the wire types to say
//! (the wire layer's own tests hold them to the protocol): each payload
//! of a frame is tried alone against them here. Which payloads the
//! session kept, and what it made of them, is what the checks check, and
//! this module shares no code with the session's reading of a frame.
//!
//! A run whose session warned about no server frame (every soak run:
//! the soak's scripts send no malformed payload) is read as it is,
//! without decoding a frame: a session that left a readable payload out
//! without a word then disagrees with the models, and one that warned
//! has every frame of its run decoded here, so a readable payload it
//! left out disagrees with them too.

use serde_json::{Map, Value};

use crate::session::LiveEvent;
use crate::soak::run::record::RunRecord;
use crate::wire::{Decoded, Frame, ServerMessage};

/// The start of every warning the session gives about a server frame it
/// could not read whole.
const FRAME_WARNING: &str = "server frame #";

/// The run's server frames with every payload the protocol cannot read
/// taken out, or `None` when the session warned about no frame (they
/// are then read as they are).
pub(crate) fn frames_read(run: &RunRecord) -> Option<Vec<Frame>> {
    let warned = run.events.iter().any(|timed| {
        matches!(&timed.event, LiveEvent::Warning { message } if message.starts_with(FRAME_WARNING))
    });
    warned.then(|| run.server_frames.iter().map(read).collect())
}

/// `frame` with the payloads the protocol cannot read taken out: as it
/// is when it reads whole, or is no JSON object (nothing of it is read).
fn read(frame: &Frame) -> Frame {
    let Some(bytes) = frame.payload() else {
        return frame.clone();
    };
    if matches!(ServerMessage::from_frame(frame), Ok(Decoded::Message(_))) {
        return frame.clone();
    }
    let Ok(payloads) = serde_json::from_slice::<Map<String, Value>>(bytes) else {
        return frame.clone();
    };
    let readable: Map<String, Value> = payloads
        .into_iter()
        .filter(|(key, value)| {
            let alone = Value::Object(Map::from_iter([(key.clone(), value.clone())]));
            serde_json::from_value::<ServerMessage>(alone).is_ok()
        })
        .collect();
    Frame::Binary(serde_json::to_vec(&readable).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_text(text: &str) -> String {
        let frame = read(&Frame::Binary(text.as_bytes().to_vec()));
        String::from_utf8(frame.payload().unwrap_or_default().to_vec()).unwrap_or_default()
    }

    #[test]
    fn a_malformed_payload_is_taken_out_and_the_rest_kept() {
        assert_eq!(
            read_text(
                r#"{"serverContent":{"turnComplete":true},"usageMetadata":{"totalTokenCount":"many"}}"#
            ),
            r#"{"serverContent":{"turnComplete":true}}"#
        );
        assert_eq!(
            read_text(
                r#"{"serverContent":{"modelTurn":{"parts":[{"text":0.5}]},"turnComplete":true}}"#
            ),
            "{}"
        );
    }

    #[test]
    fn a_frame_that_reads_whole_or_is_no_object_is_kept_as_it_is() {
        let whole = r#"{"serverContent": {"turnComplete": true}, "somethingNew": 5}"#;
        assert_eq!(read_text(whole), whole);
        assert_eq!(read_text("[1, 2]"), "[1, 2]");
        assert_eq!(read_text("not json"), "not json");
    }
}
