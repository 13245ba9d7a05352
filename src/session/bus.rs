//! The event bus: where lanes emit events, and where subscribers, the
//! stored log, callbacks and the trace receive them.
//!
//! Emitting appends the event to the executor's trace (under the emitting
//! lane's label), runs the user's callbacks and hands a copy to every
//! subscriber, all in the order the lanes emit (the delivered order, which
//! the seed interleaves). A stored event is also kept in the session log
//! at its [`Position`], so the log reads in wire order whatever the order
//! of emission. Notices (warnings, phase changes, pattern matches) are
//! delivered and never stored. Subscribers get unbounded queues: a slow
//! reader never makes the session drop an event.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::mpsc;

use super::events::LiveEvent;
use super::position::Position;

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
    log: BTreeMap<Position, LiveEvent>,
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

    /// Emits one event that stands at `at` in the stored log (kept there
    /// if it is a stored kind).
    pub fn emit(&self, event: LiveEvent, at: Position) {
        let at = event.is_stored().then_some(at);
        self.deliver(event, at);
    }

    /// Emits a notice: delivered like any event, never stored.
    pub fn notice(&self, event: LiveEvent) {
        debug_assert!(!event.is_stored(), "a stored event needs a position");
        self.deliver(event, None);
    }

    fn deliver(&self, event: LiveEvent, stored_at: Option<Position>) {
        // An event is shown once: a run whose log keeps debug lines (a
        // soak's resuming runs keep all of them) logs the text it traced.
        if tracing::enabled!(target: "livesim::session::events", tracing::Level::DEBUG) {
            let shown = event.to_string();
            crate::executor::record(&shown);
            tracing::debug!(target: "livesim::session::events", lane = %event.lane(), "{shown}");
        } else {
            crate::record!("{event}");
        }
        for callback in &self.callbacks {
            callback(&event);
        }
        // One lock for both, so a subscriber that sees the event also
        // finds it in the log.
        let mut inner = self.inner();
        let Inner { subscribers, log } = &mut *inner;
        // Each receiver gets a copy but the last, which takes the event
        // itself: the log when it keeps the event, else the last subscriber.
        let mut left = subscribers.len();
        let mut event = Some(event);
        subscribers.retain(|subscriber| {
            left -= 1;
            let copy = if left == 0 && stored_at.is_none() {
                event.take()
            } else {
                event.clone()
            };
            copy.is_some_and(|copy| subscriber.send(copy).is_ok())
        });
        if let (Some(at), Some(event)) = (stored_at, event) {
            let earlier = log.insert(at, event);
            debug_assert!(earlier.is_none(), "two stored events at {at:?}");
        }
    }

    /// A stream of every event emitted from now on.
    pub fn subscribe(&self) -> EventStream {
        let (tx, rx) = mpsc::unbounded_channel();
        self.inner().subscribers.push(tx);
        EventStream { rx }
    }

    /// The stored events so far, in wire order.
    pub fn log(&self) -> Vec<LiveEvent> {
        self.inner().log.values().cloned().collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(text: &str) -> LiveEvent {
        LiveEvent::TextDelta {
            text: text.into(),
            thought: false,
        }
    }

    fn drain(stream: &mut EventStream) -> Vec<LiveEvent> {
        std::iter::from_fn(|| stream.try_next()).collect()
    }

    /// Every open subscription receives every event, in emission order,
    /// whether or not the log keeps it; the log keeps the stored ones, and
    /// a dropped subscription is let go without costing the others one.
    #[test]
    fn every_subscriber_and_the_log_get_every_event_they_are_owed() {
        let bus = EventBus::new(vec![]);
        let mut first = bus.subscribe();
        let dropped = bus.subscribe();
        let mut last = bus.subscribe();
        drop(dropped);
        let turn = LiveEvent::TurnComplete {
            interrupted: false,
            reason: None,
        };
        bus.emit(delta("Hel"), Position::wire(1, 0));
        bus.emit(turn.clone(), Position::wire(1, 1));
        bus.notice(LiveEvent::Warning {
            message: "late".into(),
        });
        bus.emit(delta("lo"), Position::wire(2, 0));
        let expected = vec![
            delta("Hel"),
            turn.clone(),
            LiveEvent::Warning {
                message: "late".into(),
            },
            delta("lo"),
        ];
        assert_eq!(drain(&mut first), expected);
        assert_eq!(drain(&mut last), expected);
        assert_eq!(bus.log(), vec![turn]);
        assert_eq!(bus.inner().subscribers.len(), 2);
    }

    /// With no subscriber at all, a stored event still reaches the log.
    #[test]
    fn the_log_keeps_stored_events_with_nobody_listening() {
        let bus = EventBus::new(vec![]);
        let done = LiveEvent::GenerationComplete;
        bus.emit(delta("x"), Position::wire(1, 0));
        bus.emit(done.clone(), Position::wire(1, 1));
        assert_eq!(bus.log(), vec![done]);
    }
}
