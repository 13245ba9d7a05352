//! What the player waits for between actions (a release, answers, an
//! expected message, a pause, a replay the client owes, the client
//! leaving), and how it handles client frames and connections meanwhile.

use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

use super::handshake::Opened;
use super::{Conn, Flow, Player};
use crate::testing::script::Call;
use crate::transport::{Frame, Transport};

/// What the player is waiting for, besides the next client frame.
pub(super) enum Wait {
    Nothing,
    Release,
    Answers(Vec<String>),
    /// The `n`-th `expect` action's client message (0-based).
    Expected(usize),
    Until(Instant),
    /// After the last action, the transparent replay the client still
    /// owes, until this instant (it comes right after `setupComplete`).
    Replays(Instant),
    /// The client leaving: after the last action.
    Hangup,
}

/// How long the player waits, after its last action, for a transparent
/// replay the client still owes.
pub(super) const REPLAY_GRACE: Duration = Duration::from_secs(1);

/// What a call action waits for: the answers of the calls that wait.
pub(super) fn answers(calls: &[Call]) -> Wait {
    Wait::Answers(
        calls
            .iter()
            .filter(|c| c.wait)
            .map(|c| c.id.clone())
            .collect(),
    )
}

impl<T: Transport> Player<'_, T> {
    fn satisfied(&self, wait: &Wait) -> bool {
        let state = self.progress.lock();
        match wait {
            Wait::Nothing => true,
            Wait::Release => state.released,
            Wait::Answers(ids) => ids.iter().all(|id| {
                state.answered.contains(id)
                    || state.cancelled.contains(id)
                    || state.abandoned.contains(id)
            }),
            Wait::Expected(n) => self.expected_seen > *n,
            Wait::Replays(_) => self.replay.is_empty(),
            Wait::Until(_) | Wait::Hangup => false,
        }
    }

    /// Waits for what the last action needs, handling client frames and
    /// connections meanwhile.
    pub(super) async fn wait_for(&mut self, wait: &mut Wait) -> Flow {
        let progress = self.progress.clone();
        loop {
            // Registered before the check, so a release that lands in
            // between still wakes us.
            let released = progress.released.notified();
            tokio::pin!(released);
            released.as_mut().enable();
            self.publish_expects();
            if self.satisfied(wait) {
                return Flow::Go;
            }
            let deadline = match wait {
                Wait::Until(at) => Some(*at),
                Wait::Replays(at) => {
                    // Past the grace, the script ends and says what is
                    // missing.
                    if Instant::now() >= *at {
                        return Flow::Go;
                    }
                    Some(*at)
                }
                _ => None,
            };
            let releasing = matches!(wait, Wait::Release);
            let taking = self.incoming.is_some() && self.pending.is_none();
            let event = tokio::select! {
                biased;
                frame = next_frame(self.current.as_mut().map(Conn::io)) => Event::Current(frame),
                frame = next_frame(self.leaving.as_mut().map(|(_, io)| io)) => Event::Leaving(frame),
                conn = next_connection(self.incoming.as_mut()), if taking => Event::Connection(conn),
                _ = &mut released, if releasing => continue,
                _ = sleep_until(deadline) => { *wait = Wait::Nothing; continue; }
                _ = sleep_until(self.go_away_deadline) => Event::GoAwayDeadline,
            };
            match event {
                Event::Current(Some(frame)) => {
                    let on = self.connection;
                    if self.client_frame(frame, on).await.is_err() {
                        return Flow::Stop;
                    }
                }
                Event::Current(None) => {
                    self.current = None;
                    // The script moves to the next connection itself:
                    // nothing more can happen on this one.
                    if self.reconnect_next() {
                        return Flow::Go;
                    }
                    if matches!(wait, Wait::Hangup) && !self.resilient {
                        return Flow::Stop;
                    }
                    if let Some(from) = self.back_to_leaving() {
                        return Flow::From(from);
                    }
                    return self.connection_lost().await;
                }
                Event::Leaving(Some(frame)) => {
                    let on = self.leaving.as_ref().map_or(0, |(n, _)| *n);
                    if self.client_frame(frame, on).await.is_err() {
                        return Flow::Stop;
                    }
                }
                Event::Leaving(None) => {
                    self.leaving = None;
                    self.saved = None;
                }
                Event::Connection(None) => self.incoming = None,
                Event::Connection(Some(conn)) if self.resilient => {
                    // The client is moving (or gave the current connection
                    // up without the server knowing): the new one takes
                    // over once set up.
                    let number = self.connection;
                    if let Some(Conn::Owned(old)) = self.current.take() {
                        self.leaving = Some((number, old));
                        self.save(self.next);
                    }
                    match self.take_unplanned(conn).await {
                        Ok(Opened::Resumed(from)) => return Flow::From(from),
                        Ok(Opened::Accepted) => return Flow::Go,
                        // Lost on the way or refused: the client may still
                        // be on the connection it had.
                        Ok(Opened::Died | Opened::Rejected) => {
                            self.restore_leaving(false);
                        }
                        Err(()) => return Flow::Stop,
                    }
                }
                Event::Connection(Some(conn)) => self.pending = Some(conn),
                Event::GoAwayDeadline => {
                    self.go_away_deadline = None;
                    self.close_current(1000, "The goAway deadline has passed.")
                        .await;
                    if self.reconnect_next() {
                        return Flow::Go;
                    }
                    // The script, not the client, ran past its own
                    // deadline: the report says so, rather than that the
                    // client hung up.
                    if !self.resilient {
                        let closed = (self.go_away_action, self.at.clone());
                        self.progress.update(|s| s.closed_at_go_away = Some(closed));
                    }
                    return self.connection_lost().await;
                }
            }
        }
    }
}

/// What woke the player.
enum Event<T> {
    Current(Option<Frame>),
    Leaving(Option<Frame>),
    Connection(Option<T>),
    GoAwayDeadline,
}

/// The next frame on `io` (`None` once it has ended); pending forever
/// without a connection.
pub(super) async fn next_frame<T: Transport>(io: Option<&mut T>) -> Option<Frame> {
    let Some(io) = io else {
        return std::future::pending().await;
    };
    match io.recv().await {
        Some(Ok(Frame::Close(_))) | None | Some(Err(_)) => None,
        Some(Ok(frame)) => Some(frame),
    }
}

/// The next connection to arrive; pending forever without a source.
pub(super) async fn next_connection<T>(
    incoming: Option<&mut mpsc::UnboundedReceiver<T>>,
) -> Option<T> {
    match incoming {
        Some(incoming) => incoming.recv().await,
        None => std::future::pending().await,
    }
}

pub(super) async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
