//! What the wire lane hands the other lanes.

use super::events::LiveEvent;

/// A hand-off from the wire lane (or the telemetry timer) to a lane.
#[derive(Debug)]
pub(crate) enum Routed {
    /// An event for the lane to handle and emit.
    Event(LiveEvent),
    /// The signal timer fired (to the control lane: check patterns).
    Tick,
    /// Content moved in either direction (to telemetry: silence resets).
    Activity,
    /// A server message reported an interruption (to control: the flow
    /// counts it toward escalation).
    Interrupted,
    /// The connection ended; emit this and finish.
    Ended(LiveEvent),
}
