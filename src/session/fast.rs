//! The fast lane: text, transcripts and media, emitted as they come with
//! nothing to wait for (its callbacks are synchronous).

use std::sync::Arc;

use tokio::sync::mpsc;

use super::bus::EventBus;
use super::route::Routed;

pub(crate) async fn run(bus: Arc<EventBus>, mut inbox: mpsc::UnboundedReceiver<Routed>) {
    while let Some(routed) = inbox.recv().await {
        match routed {
            Routed::Event(event) => bus.emit(event),
            Routed::Ended(_) => break,
            Routed::Tick | Routed::Activity | Routed::Interrupted => {}
        }
    }
}
