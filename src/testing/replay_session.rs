//! Replaying a recorded wire log through the real control plane.
//!
//! [`replay_session`] plays the server's side of a recorded session back to
//! a freshly configured session: every inbound frame in its recorded order,
//! and, where the recording shows the session sending something, a wait
//! for this session to send the same kind of message. Tools, flow,
//! watchers and extractors run for real.
//!
//! The replay installs its own [`ManualClock`], replacing any clock the
//! builder set: it starts at the first inbound frame's recorded time and
//! moves to each frame's recorded time as the frame is delivered, so the
//! session sees the original gaps between frames however fast the replay
//! runs.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use super::run::{RunClock, settle};
use crate::clock::{ManualClock, Timestamp};
use crate::executor;
use crate::session::{LiveBuilder, LiveEvent, LiveHandle, SessionError};
use crate::transport::memory::pair;
use crate::transport::wire_log::{Direction, FrameLine, LineType, WireLog};
use crate::transport::{Frame, Transport};

/// Longest the replay waits for the session to send a message the
/// recording shows it sending.
const OUTBOUND_WAIT: Duration = Duration::from_secs(30);

/// A session driven by a recording.
pub struct ReplaySession {
    handle: LiveHandle,
    clock: Arc<ManualClock>,
    events: Vec<LiveEvent>,
    progress: Arc<Mutex<Replayed>>,
}

#[derive(Default)]
struct Replayed {
    sent: Vec<Value>,
    divergences: Vec<String>,
    done: bool,
}

/// Replays `log` to the session `builder` configures. Returns once the
/// whole recording was delivered and the session settled (no event for
/// 200 ms, capped at 30 s; virtual time under simulation).
///
/// # Errors
/// When the session does not connect (the recording's setup answer is a
/// close, say).
pub async fn replay_session(
    log: &WireLog,
    builder: LiveBuilder,
) -> Result<ReplaySession, SessionError> {
    let inbound_t0 = log
        .frames
        .iter()
        .find(|f| f.dir == Direction::In)
        .map(|f| f.t_ms)
        .unwrap_or(0);
    let start = Timestamp::from_unix_millis(log.header.started_at_ms + inbound_t0);
    let clock = Arc::new(ManualClock::starting_at(start));
    let (client, server) = pair();
    let progress = Arc::new(Mutex::new(Replayed::default()));
    executor::spawn(
        "replay",
        drive(
            log.frames.clone(),
            inbound_t0,
            clock.clone(),
            server,
            progress.clone(),
        ),
    );
    let handle = builder
        .clock(clock.clone())
        .connect_with_transport(client)
        .await?;
    let mut stream = handle.events();
    let finished = {
        let progress = progress.clone();
        move || progress.lock().unwrap_or_else(|p| p.into_inner()).done
    };
    let (events, _, _) = settle(
        &mut stream,
        Duration::from_millis(200),
        Duration::from_secs(30),
        finished,
        &RunClock::start(),
    )
    .await;
    Ok(ReplaySession {
        handle,
        clock,
        events,
        progress,
    })
}

/// The server's side of the replay.
async fn drive<T: Transport>(
    frames: Vec<FrameLine>,
    inbound_t0: u64,
    clock: Arc<ManualClock>,
    mut server: T,
    progress: Arc<Mutex<Replayed>>,
) {
    let note = |progress: &Mutex<Replayed>, f: &dyn Fn(&mut Replayed)| {
        f(&mut progress.lock().unwrap_or_else(|p| p.into_inner()));
    };
    for (line, frame) in frames.iter().enumerate() {
        match frame.dir {
            Direction::In => {
                clock.set_elapsed(Duration::from_millis(frame.t_ms.saturating_sub(inbound_t0)));
                let Some(wire) = frame.to_frame() else {
                    continue;
                };
                let closing = wire.is_close();
                if server.send(wire).await.is_err() || closing {
                    break;
                }
            }
            Direction::Out => {
                if frame.line_type == LineType::Error {
                    continue;
                }
                let expected = top_key(frame.json.as_ref());
                let got = tokio::time::timeout(OUTBOUND_WAIT, server.recv()).await;
                let message = match got {
                    Ok(Some(Ok(Frame::Text(text)))) => serde_json::from_str::<Value>(&text).ok(),
                    Ok(Some(Ok(Frame::Binary(bytes)))) => {
                        serde_json::from_slice::<Value>(&bytes).ok()
                    }
                    Ok(Some(Ok(Frame::Close(_)))) | Ok(None) | Ok(Some(Err(_))) => {
                        note(&progress, &|p| {
                            p.divergences.push(format!(
                                "line {}: the recording shows the session sending {expected}, but it closed",
                                line + 2
                            ))
                        });
                        break;
                    }
                    Err(_) => {
                        note(&progress, &|p| {
                            p.divergences.push(format!(
                                "line {}: the recording shows the session sending {expected}; nothing came within {}s",
                                line + 2,
                                OUTBOUND_WAIT.as_secs()
                            ))
                        });
                        continue;
                    }
                };
                let actual = top_key(message.as_ref());
                note(&progress, &|p| {
                    if let Some(message) = &message {
                        p.sent.push(message.clone());
                    }
                    if actual != expected {
                        p.divergences.push(format!(
                            "line {}: the recording shows the session sending {expected}; it sent {actual}",
                            line + 2
                        ));
                    }
                });
            }
        }
    }
    note(&progress, &|p| p.done = true);
    // Keep the connection open (and its messages recorded) until the
    // session hangs up.
    while let Some(Ok(frame)) = server.recv().await {
        if let Some(message) = frame
            .payload()
            .and_then(|b| serde_json::from_slice::<Value>(b).ok())
        {
            note(&progress, &|p| p.sent.push(message.clone()));
        }
    }
}

/// A client message's top-level key, for comparing what was sent.
fn top_key(message: Option<&Value>) -> String {
    message
        .and_then(Value::as_object)
        .and_then(|o| o.keys().next().cloned())
        .unwrap_or_else(|| "(not a JSON object)".to_string())
}

impl ReplaySession {
    /// The clock the replay installed: it reads each frame's recorded time
    /// as the frame is delivered.
    pub fn clock(&self) -> Arc<ManualClock> {
        self.clock.clone()
    }

    /// The replayed session's handle.
    pub fn handle(&self) -> &LiveHandle {
        &self.handle
    }

    /// Every event the session emitted during the replay.
    pub fn events(&self) -> &[LiveEvent] {
        &self.events
    }

    /// What the session sent during the replay (after setup), as JSON.
    pub fn sent(&self) -> Vec<Value> {
        self.progress
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .sent
            .clone()
    }

    /// Where the session's messages differed from the recording's.
    pub fn divergences(&self) -> Vec<String> {
        self.progress
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .divergences
            .clone()
    }

    /// Disconnects the session.
    pub async fn disconnect(&self) {
        self.handle.disconnect().await;
    }
}
