//! The fast lane: text, transcripts and media, emitted as they come with
//! nothing to wait for (its callbacks are synchronous).

use std::sync::Arc;

use tokio::sync::mpsc;

use super::bus::EventBus;
use super::route::Routed;

pub(crate) async fn run(bus: Arc<EventBus>, mut inbox: mpsc::UnboundedReceiver<Routed>) {
    while let Some(routed) = inbox.recv().await {
        match routed {
            Routed::Event(event, at) => bus.emit(event, at),
            Routed::Ended(..) => break,
            Routed::TurnEnded(..)
            | Routed::Tick
            | Routed::Activity
            | Routed::Interrupted
            | Routed::NewConnection => {}
        }
    }
}
