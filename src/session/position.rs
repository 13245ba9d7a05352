//! Where an event stands in the session's stored log.
//!
//! The wire lane numbers every inbound frame (one counter per session) and
//! gives each event it routes a [`Position`]: the frame's number and the
//! event's place in that frame's aggregation output. The stored log is
//! ordered by position, not by when a lane emitted the event, so it is the
//! conversation in wire order whatever the lanes and the seed do.
//!
//! The session's own stored events take positions by fixed rules, never by
//! timing: `connected` stands before the first frame; a tool's response
//! (or its refusal) right after the `tool_call` event that carried the
//! call, in the order of the calls within that message; an extraction
//! right after the `turn_complete` of the turn it read, in the order the
//! extractors were added; `disconnected` at the close (or failure) that
//! ended the connection, after every frame.

/// A place in the stored log. Positions order by frame, then by place in
/// the frame's output, then by place among the events the session adds
/// after that one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Position {
    frame: u64,
    index: u32,
    after: u32,
}

impl Position {
    /// Before every frame: where `connected` stands.
    pub const OPENING: Position = Position {
        frame: 0,
        index: 0,
        after: 0,
    };

    /// The `index`-th event (0-based) of inbound frame number `frame`
    /// (1-based; a close counts as a frame).
    pub fn wire(frame: u64, index: u32) -> Self {
        Position {
            frame,
            index,
            after: 0,
        }
    }

    /// The inbound frame this position belongs to.
    pub fn frame(self) -> u64 {
        self.frame
    }

    /// The `n`-th (1-based) event the session adds right after the event
    /// at `self`.
    fn then(self, n: u32) -> Self {
        debug_assert!(self.after == 0 && n > 0, "one level of added events");
        Position { after: n, ..self }
    }

    /// Where the refusal of the `call`-th call (0-based) of a `tool_call`
    /// event at `self` stands: before that call's response.
    pub fn refusal(self, call: usize) -> Self {
        self.then(call_slot(call))
    }

    /// Where the response to the `call`-th call (0-based) of a `tool_call`
    /// event at `self` stands: after that call's refusal, before the next
    /// call's.
    pub fn response(self, call: usize) -> Self {
        self.then(call_slot(call).saturating_add(1))
    }

    /// Where the `extractor`-th extractor's (0-based) result for the turn
    /// that ended at `self` (a `turn_complete`) stands.
    pub fn extraction(self, extractor: usize) -> Self {
        self.then(
            u32::try_from(extractor)
                .unwrap_or(u32::MAX - 1)
                .saturating_add(1),
        )
    }
}

/// Two slots per call (refusal, response), from 1.
fn call_slot(call: usize) -> u32 {
    u32::try_from(call)
        .unwrap_or(u32::MAX / 2 - 1)
        .saturating_mul(2)
        .saturating_add(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn added_events_stand_between_their_event_and_the_next() {
        let call = Position::wire(3, 1);
        let next = Position::wire(3, 2);
        let order = [
            Position::OPENING,
            Position::wire(1, 0),
            call,
            call.refusal(0),
            call.response(0),
            call.refusal(1),
            call.response(1),
            next,
            Position::wire(4, 0),
        ];
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");
    }
}
