//! The Live session runtime, tested through its public API against
//! scripted servers: tools, lanes, clocks, lifecycle, and a real WebSocket.

mod clock;
mod extract;
mod governance;
mod lanes;
mod lifecycle;
mod resumption;
mod tools;
mod websocket;

use livesim::prelude::LiveEvent;

/// The warnings among `events`, in order.
fn warnings(events: &[LiveEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            LiveEvent::Warning { message } => Some(message.clone()),
            _ => None,
        })
        .collect()
}
