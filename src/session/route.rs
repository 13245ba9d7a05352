//! What the wire lane hands the other lanes.

use super::events::LiveEvent;
use super::extractors::Transcript;
use super::position::Position;

/// A hand-off from the wire lane (or the telemetry timer) to a lane.
#[derive(Debug)]
pub(crate) enum Routed {
    /// An event for the lane to handle and emit, with its place in the
    /// stored log.
    Event(LiveEvent, Position),
    /// A `turn_complete` event (to control), with the transcript as it
    /// stood at that frame: what the turn's extractors read.
    TurnEnded(LiveEvent, Position, Transcript),
    /// The signal timer fired (to the control lane: check patterns).
    Tick,
    /// Content moved in either direction (to telemetry: silence resets).
    Activity,
    /// The session is on a new connection (to telemetry: a `goAway` of an
    /// earlier one no longer counts down).
    NewConnection,
    /// A server message reported an interruption (to control: the flow
    /// counts it toward escalation).
    Interrupted,
    /// The connection ended; emit this (at its place, after every frame)
    /// and finish.
    Ended(LiveEvent, Position),
}
