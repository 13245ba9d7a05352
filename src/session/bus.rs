//! The event bus: where lanes emit events, and where subscribers, the
//! stored log, callbacks and the trace receive them.
//!
//! Emitting appends the event to the executor's trace (under the emitting
//! lane's label), keeps it in the session log if it is stored, runs the
//! user's callbacks and hands a copy to every subscriber. Subscribers get
//! unbounded queues: a slow reader never makes the session drop an event.

use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::mpsc;

use super::events::LiveEvent;

/// A sync callback run on the lane that emits the event.
pub type EventCallback = Arc<dyn Fn(&LiveEvent) + Send + Sync>;

#[derive(Default)]
pub(crate) struct EventBus {
    inner: Mutex<Inner>,
    callbacks: Vec<EventCallback>,
}

#[derive(Default)]
struct Inner {
    subscribers: Vec<mpsc::UnboundedSender<LiveEvent>>,
    log: Vec<LiveEvent>,
}

impl EventBus {
    pub fn new(callbacks: Vec<EventCallback>) -> Self {
        EventBus {
            inner: Mutex::new(Inner::default()),
            callbacks,
        }
    }

    fn inner(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Emits one event.
    pub fn emit(&self, event: LiveEvent) {
        crate::record!("{event}");
        tracing::debug!(target: "livesim::session", lane = %event.lane(), "{event}");
        for callback in &self.callbacks {
            callback(&event);
        }
        let mut inner = self.inner();
        if event.is_stored() {
            inner.log.push(event.clone());
        }
        inner
            .subscribers
            .retain(|subscriber| subscriber.send(event.clone()).is_ok());
    }

    /// A stream of every event emitted from now on.
    pub fn subscribe(&self) -> EventStream {
        let (tx, rx) = mpsc::unbounded_channel();
        self.inner().subscribers.push(tx);
        EventStream { rx }
    }

    /// The stored events so far.
    pub fn log(&self) -> Vec<LiveEvent> {
        self.inner().log.clone()
    }

    /// Ends every subscription: streams return `None` once drained.
    pub fn close(&self) {
        self.inner().subscribers.clear();
    }
}

/// Events of one session, from the moment of subscription, in emission
/// order. Nothing is dropped while the stream lives.
#[derive(Debug)]
pub struct EventStream {
    rx: mpsc::UnboundedReceiver<LiveEvent>,
}

impl EventStream {
    /// The next event; `None` once the session has ended and every event
    /// was read.
    pub async fn next(&mut self) -> Option<LiveEvent> {
        self.rx.recv().await
    }

    /// The next event if one is waiting.
    pub fn try_next(&mut self) -> Option<LiveEvent> {
        self.rx.try_recv().ok()
    }

    /// Every event waiting now.
    pub fn drain(&mut self) -> Vec<LiveEvent> {
        std::iter::from_fn(|| self.try_next()).collect()
    }
}

impl futures::Stream for EventStream {
    type Item = LiveEvent;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<LiveEvent>> {
        self.rx.poll_recv(cx)
    }
}
