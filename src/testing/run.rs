//! Playing a script against a session builder, and reading the result.

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
    /// The session did something the script does not allow.
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
        let (mut events, settled) = settle(&mut stream, window, cap, script_done).await;
        if !settled {
            // A tool blocked on an OS thread is the usual reason under
            // simulation: virtual time reaches the cap while it waits.
            let cause = crate::executor::stall_report()
                .map(|why| format!("; {why}"))
                .unwrap_or_default();
            tracing::warn!(target: "livesim::testing", script = %name, unanswered = ?control.unanswered_calls(), "the run did not settle within {cap:?}{cause}");
        }
        events.extend(stream.drain());
        if let Some(error) = control.errors().into_iter().next() {
            handle.disconnect().await;
            return Err(PlayError::Replay(error));
        }
        Ok(ScriptedRun {
            handle,
            events,
            control,
            settled,
        })
    }
}

/// Collects events until `done()` holds and no event came for `window`,
/// or until `cap` passes. Returns the events and whether it settled.
pub(crate) async fn settle(
    stream: &mut EventStream,
    window: Duration,
    cap: Duration,
    done: impl Fn() -> bool,
) -> (Vec<LiveEvent>, bool) {
    let mut events = Vec::new();
    let give_up = tokio::time::Instant::now() + cap;
    let settled = loop {
        let quiet_until = (tokio::time::Instant::now() + window).min(give_up);
        tokio::select! {
            biased;
            event = stream.next() => match event {
                Some(event) => events.push(event),
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
    (events, settled)
}

/// A finished scripted run: the session (still connected), what it
/// emitted and what it sent.
pub struct ScriptedRun {
    handle: LiveHandle,
    events: Vec<LiveEvent>,
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
            .filter_map(|m| m.pointer("/toolResponse/functionResponses"))
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
