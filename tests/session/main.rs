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

/// Hangs up as the first tool call comes, and returns the events after
/// it: the session's end as the user's hang-up leaves it.
async fn hang_up_at_first_call(handle: &livesim::prelude::LiveHandle) -> Vec<LiveEvent> {
    let mut events = handle.events();
    while let Some(event) = events.next().await {
        if event.kind() == "tool_call" {
            break;
        }
    }
    handle.disconnect().await;
    let mut rest = Vec::new();
    while let Some(event) = events.next().await {
        rest.push(event);
    }
    rest
}

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
