//! The telemetry lane: usage, go-away and resumption signals, and the
//! session signals it writes to state on its timer.
//!
//! Every tick (500 ms by default) it writes, from the session's clock:
//! `session:elapsed_ms` (since setup completed), `session:silence_ms`
//! (since content last moved either way), `session:remaining_budget_ms`
//! (the configured session budget minus the elapsed time) and, after a
//! go-away, `session:go_away_remaining_ms` (until the deadline the server
//! announced; removed when the session moves to a new connection, whose
//! deadline is its own `goAway`'s). Then it asks the control lane to check
//! temporal patterns.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use super::bus::EventBus;
use super::events::LiveEvent;
use super::route::Routed;
use crate::clock::{SharedClock, Timestamp};
use crate::executor::yield_point;
use crate::state::State;

pub(crate) struct Telemetry {
    pub bus: Arc<EventBus>,
    pub state: State,
    pub clock: SharedClock,
    pub interval: Duration,
    pub budget: Duration,
    pub control: mpsc::UnboundedSender<Routed>,
}

impl Telemetry {
    pub async fn run(self, mut inbox: mpsc::UnboundedReceiver<Routed>) {
        let started = self.clock.now();
        let mut last_activity = started;
        let mut go_away_deadline: Option<Timestamp> = None;
        let mut ticks =
            tokio::time::interval_at(tokio::time::Instant::now() + self.interval, self.interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                biased;
                routed = inbox.recv() => match routed {
                    Some(Routed::Event(event, at)) => {
                        if let LiveEvent::GoAway { time_left: Some(left) } = &event {
                            go_away_deadline = Some(self.clock.now() + *left);
                        }
                        self.bus.emit(event, at);
                    }
                    Some(Routed::Activity) => last_activity = self.clock.now(),
                    // The deadline was the old connection's: the new one
                    // has none until its own `goAway`, and the key goes,
                    // so no guard reads the old countdown.
                    Some(Routed::NewConnection) => {
                        if go_away_deadline.take().is_some() {
                            self.state.remove("session:go_away_remaining_ms");
                        }
                    }
                    Some(Routed::TurnEnded(..) | Routed::Tick | Routed::Interrupted) => {}
                    Some(Routed::Ended(..)) | None => break,
                },
                _ = ticks.tick() => {
                    let now = self.clock.now();
                    let elapsed = now - started;
                    self.state.set("session:elapsed_ms", millis(elapsed));
                    self.state.set("session:silence_ms", millis(now - last_activity));
                    self.state.set(
                        "session:remaining_budget_ms",
                        millis(self.budget.saturating_sub(elapsed)),
                    );
                    if let Some(deadline) = go_away_deadline {
                        self.state.set("session:go_away_remaining_ms", millis(deadline - now));
                    }
                    let _ = self.control.send(Routed::Tick);
                    yield_point("telemetry:tick").await;
                }
            }
        }
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
