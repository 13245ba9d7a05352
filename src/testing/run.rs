//! Playing a script against a session builder, and reading the result.

use crate::wire::JsonPath;
use serde_json::Value;

use super::player::ReplayError;
use super::replay::ReplayControl;
use super::script::ScriptedServer;
use std::time::Duration;

use crate::session::{EventStream, Lane, LiveBuilder, LiveEvent, LiveHandle, SessionError};
use crate::state::State;

/// Why a scripted run failed.
#[derive(Debug, thiserror::Error)]
pub enum PlayError {
    /// The session could not connect to the script.
    #[error("script {script:?}: the session did not connect: {source}")]
    Connect {
        /// The script's name.
        script: String,
        /// Why.
        source: SessionError,
    },
    /// The session did something the script does not allow, or never
    /// sent what one of its `expect`s waits for.
    #[error("{0}")]
    Replay(ReplayError),
}

impl ScriptedServer {
    /// Connects the configured session to this script over an in-memory
    /// transport, releases every frame, and collects events until the run
    /// has settled: every scripted call that was not cancelled has been
    /// answered and no event came for the settle window (200 ms by
    /// default; see [`settle_after`](Self::settle_after)). The whole wait
    /// is capped (30 s; see [`settle_cap`](Self::settle_cap)). Under the
    /// simulated runtime all of it is virtual time. A script that spans
    /// connections is played over its [connector](Self::into_connector),
    /// so a session with resumption on moves from one to the next.
    ///
    /// # Errors
    /// [`PlayError::Replay`] when the session broke the script (a message
    /// it does not expect, an answer to a call it never made), or when
    /// the cap passed with the script still waiting at an `expect` the
    /// session never met: the run did not play the script. A run whose
    /// calls are still unanswered at the cap (a slow tool) is `Ok`, with
    /// [`settled`](ScriptedRun::settled) false.
    pub async fn play(self, builder: LiveBuilder) -> Result<ScriptedRun, PlayError> {
        let (window, cap, name) = (self.settle, self.cap, self.name.clone());
        let (connected, control) = if self.spans_connections() {
            let (connector, control) = self.into_connector();
            (builder.connect_with_connector(connector).await, control)
        } else {
            let (transport, control) = self.into_transport();
            (builder.connect_with_transport(transport).await, control)
        };
        let handle = connected.map_err(|source| PlayError::Connect {
            script: name.clone(),
            source,
        })?;
        let mut stream = handle.events();
        control.release();
        let script_done = {
            let control = control.clone();
            move || {
                let script_done = {
                    let state = control.progress().lock();
                    state.drained() || state.finished
                };
                script_done && control.unanswered_calls().is_empty()
            }
        };
        let clock = RunClock::start();
        let (mut events, mut times, settled) =
            settle(&mut stream, window, cap, script_done, &clock).await;
        if !settled {
            // A tool blocked on an OS thread is the usual reason under
            // simulation: virtual time reaches the cap while it waits.
            let cause = crate::executor::stall_report()
                .map(|why| format!("; {why}"))
                .unwrap_or_default();
            tracing::warn!(target: "livesim::testing", script = %name, unanswered = ?control.unanswered_calls(), "the run did not settle within {cap:?}{cause}");
        }
        for event in stream.drain() {
            events.push(event);
            times.push(clock.now());
        }
        if let Some(error) = control.errors().into_iter().next() {
            handle.disconnect().await;
            return Err(PlayError::Replay(error));
        }
        // A script still waiting at an `expect` the session never met did
        // not play: the run is not what the test's script says, whatever
        // the events show. (Calls left unanswered are the cap's business:
        // a slow tool is a run that did not settle, not an error.)
        let stuck = {
            let state = control.progress().lock();
            (!settled && !state.finished && state.expects_reached > state.expected_seen)
                .then(|| state.at.to_string())
        };
        if let Some(at) = stuck {
            handle.disconnect().await;
            return Err(PlayError::Replay(ReplayError {
                script: name,
                at,
                problem: format!(
                    "the session never sent what the script waits for here, within the settle \
                     cap of {}: the script did not play to its end",
                    crate::session::human_duration(cap)
                ),
            }));
        }
        Ok(ScriptedRun {
            handle,
            events,
            times,
            control,
            settled,
        })
    }
}

/// The time a run stamps its events with: the simulation's virtual time
/// under simulation (what traces and timelines show), else the time since
/// the run began on tokio's clock.
pub(crate) struct RunClock {
    began: tokio::time::Instant,
    simulated: bool,
}

impl RunClock {
    pub(crate) fn start() -> RunClock {
        RunClock {
            began: tokio::time::Instant::now(),
            simulated: crate::executor::seed().is_some(),
        }
    }

    pub(crate) fn now(&self) -> Duration {
        if self.simulated {
            crate::executor::now()
        } else {
            self.began.elapsed()
        }
    }
}

/// Collects events until `done()` holds and no event came for `window`,
/// or until `cap` passes. Returns the events, when each came (by
/// `clock`) and whether it settled.
pub(crate) async fn settle(
    stream: &mut EventStream,
    window: Duration,
    cap: Duration,
    done: impl Fn() -> bool,
    clock: &RunClock,
) -> (Vec<LiveEvent>, Vec<Duration>, bool) {
    let mut events = Vec::new();
    let mut times = Vec::new();
    // A quiet of no time at all would never let virtual time move on to
    // the script's next pause: the least window is a millisecond.
    let window = window.max(Duration::from_millis(1));
    let give_up = crate::clock::deadline_in(cap);
    let settled = loop {
        let quiet_until = crate::clock::deadline_in(window).min(give_up);
        tokio::select! {
            biased;
            event = stream.next() => match event {
                Some(event) => {
                    events.push(event);
                    times.push(clock.now());
                }
                None => break true,
            },
            _ = tokio::time::sleep_until(quiet_until) => {
                if done() {
                    break true;
                }
                if tokio::time::Instant::now() >= give_up {
                    break false;
                }
            }
        }
    };
    (events, times, settled)
}

/// A finished scripted run: the session (still connected), what it
/// emitted and what it sent.
pub struct ScriptedRun {
    handle: LiveHandle,
    events: Vec<LiveEvent>,
    /// When each event came, by the run's clock.
    times: Vec<Duration>,
    control: ReplayControl,
    settled: bool,
}

impl ScriptedRun {
    /// The session's handle, still connected.
    pub fn handle(&self) -> &LiveHandle {
        &self.handle
    }

    /// The session's state.
    pub fn state(&self) -> State {
        self.handle.state()
    }

    /// Every event emitted while the script played, **as delivered**:
    /// each lane's events in that lane's order, the lanes interleaved as
    /// the seed chose. Partial chunks, media and notices included.
    pub fn events(&self) -> &[LiveEvent] {
        &self.events
    }

    /// Every event as [`events`](Self::events) gives it, with the time it
    /// happened: virtual time since the simulation started (the times a
    /// trace and a timeline show) under simulation, else the time since
    /// `play` began.
    pub fn timed_events(&self) -> impl Iterator<Item = (Duration, &LiveEvent)> + '_ {
        self.times.iter().copied().zip(&self.events)
    }

    /// When the first event `which` picks happened (see
    /// [`timed_events`](Self::timed_events)). A latency budget reads this:
    /// the clock after `play` returns has also run through the settle
    /// window, 200 ms of quiet after the last event.
    ///
    /// ```
    /// use std::time::Duration;
    /// use livesim::prelude::*;
    /// use livesim::testing::ScriptedServer;
    /// use serde_json::json;
    ///
    /// livesim::executor::Simulation::new(livesim::Seed::new(7)).run(|| async {
    ///     let tool = T::simple("get_weather", "Weather", |_| async {
    ///         tokio::time::sleep(Duration::from_millis(300)).await;
    ///         Ok(json!({ "sky": "sunny" }))
    ///     });
    ///     let run = ScriptedServer::new()
    ///         .calls("get_weather", json!({ "city": "Paris" }))
    ///         .says("Sunny.")
    ///         .play(Live::builder().tools(tool))
    ///         .await
    ///         .unwrap();
    ///     let called = run.time_of(|e| matches!(e, LiveEvent::ToolCall { .. })).unwrap();
    ///     let answered = run.time_of(|e| matches!(e, LiveEvent::ToolResponse { .. })).unwrap();
    ///     assert!(answered - called >= Duration::from_millis(300)); // the tool's own time
    ///     // The clock now has also run through the settle window.
    ///     assert!(livesim::executor::now() >= answered + Duration::from_millis(200));
    ///     run.disconnect().await;
    /// }).unwrap();
    /// ```
    pub fn time_of(&self, which: impl Fn(&LiveEvent) -> bool) -> Option<Duration> {
        self.timed_events()
            .find(|(_, event)| which(event))
            .map(|(at, _)| at)
    }

    /// The session's stored log so far, **in wire order**: the same for
    /// every seed and every frame spacing (see
    /// [`LiveHandle::session_log`]).
    pub fn session_log(&self) -> Vec<LiveEvent> {
        self.handle.session_log()
    }

    /// The events one lane emitted, in order (within a lane the order is
    /// fixed; across lanes it is the seed's choice).
    pub fn lane_events(&self, lane: Lane) -> Vec<&LiveEvent> {
        self.events.iter().filter(|e| e.lane() == lane).collect()
    }

    /// The model's text: every text delta it streamed (not thoughts, not
    /// transcriptions), concatenated in the order delivered.
    ///
    /// ```
    /// use livesim::prelude::*;
    /// use livesim::testing::ScriptedServer;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build().unwrap().block_on(async {
    /// let run = ScriptedServer::new().says("Hello there.").play(Live::builder()).await.unwrap();
    /// assert_eq!(run.model_text(), "Hello there.");
    /// # run.disconnect().await;
    /// # });
    /// ```
    pub fn model_text(&self) -> String {
        self.events
            .iter()
            .filter_map(|e| match e {
                LiveEvent::TextDelta {
                    text,
                    thought: false,
                } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The model's text; an older name for [`model_text`](Self::model_text),
    /// which says what it returns (the model's text deltas, not the
    /// transcriptions).
    #[deprecated(note = "returns the model's text deltas, not transcriptions: use `model_text()`")]
    pub fn transcript_text(&self) -> String {
        self.model_text()
    }

    /// Every message the session sent, parsed as JSON, in order.
    pub fn sent(&self) -> Vec<Value> {
        self.control.sent()
    }

    /// The `setup` message the session opened with.
    pub fn setup(&self) -> Value {
        self.sent()
            .into_iter()
            .find_map(|m| m.get("setup").cloned())
            .unwrap_or(Value::Null)
    }

    /// Every function response sent (`{"id", "name", "response"}`), in
    /// order.
    pub fn tool_responses(&self) -> Vec<Value> {
        self.sent()
            .iter()
            .filter_map(|m| m.at("/toolResponse/functionResponses"))
            .filter_map(Value::as_array)
            .flatten()
            .cloned()
            .collect()
    }

    /// Whether the run settled before the cap.
    pub fn settled(&self) -> bool {
        self.settled
    }

    /// The replay control of the run's connection.
    pub fn control(&self) -> &ReplayControl {
        &self.control
    }

    /// Disconnects the session.
    pub async fn disconnect(&self) {
        self.handle.disconnect().await;
    }
}
