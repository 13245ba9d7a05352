//! The player's connections: a `reconnect` that lets the current one end
//! (or the client move on first), the next connection's arrival, a
//! resilient player's return to the connection a client never finished
//! leaving, and the handles whose points a session resumes from.

use serde_json::{Value, json};

use super::handshake::{Expect, Opened};
use super::{
    At, Conn, Flow, Issued, Player, Saved, Wait, next_connection, next_frame, sleep_until,
};
use crate::testing::script::ResumptionUpdate;
use crate::transport::{CloseFrame, Transport};

impl<T: Transport> Player<'_, T> {
    /// The current connection ended where the script does not say so.
    /// A resilient player waits for the client to come back; others stop.
    pub(super) async fn connection_lost(&mut self) -> Flow {
        if !self.resilient {
            return Flow::Stop;
        }
        loop {
            let Some(conn) = self.next_incoming().await else {
                return Flow::Stop;
            };
            match self.take_unplanned(conn).await {
                Ok(Opened::Resumed(from)) => return Flow::From(from),
                Ok(Opened::Accepted) => return Flow::Go,
                Ok(Opened::Rejected | Opened::Died) => continue,
                Err(()) => return Flow::Stop,
            }
        }
    }

    /// The next connection: one already opened, or the next to arrive,
    /// reading the connection being left meanwhile.
    pub(super) async fn next_incoming(&mut self) -> Option<T> {
        if let Some(conn) = self.pending.take() {
            return Some(conn);
        }
        loop {
            self.incoming.as_ref()?;
            tokio::select! {
                biased;
                frame = next_frame(self.leaving.as_mut().map(|(_, io)| io)) => match frame {
                    Some(frame) => {
                        let on = self.leaving.as_ref().map_or(0, |(n, _)| *n);
                        if self.client_frame(frame, on).await.is_err() {
                            return None;
                        }
                    }
                    None => self.leaving = None,
                },
                conn = next_connection(self.incoming.as_mut()) => match conn {
                    Some(conn) => return Some(conn),
                    None => self.incoming = None,
                },
            }
        }
    }

    /// Remembers where the session stands before the current connection
    /// is set aside; the script would go on from action `next`.
    pub(super) fn save(&mut self, next: usize) {
        self.saved = Some(Saved {
            next,
            expected_seen: self.expected_seen,
            expects_reached: self.expects_reached,
            consumed: self.consumed.clone(),
            replay: self.replay.clone(),
            replay_rematches: self.replay_rematches,
            go_away_deadline: self.go_away_deadline,
        });
    }

    /// Goes back to the connection the client was leaving, if it is still
    /// there (its move never completed: a new connection's setup or
    /// `setupComplete` was lost, or the server refused it). With `rewind`, the script and its checks
    /// go back to where they stood on it: the action to go on from.
    pub(super) fn restore_leaving(&mut self, rewind: bool) -> Option<usize> {
        // Only a connection set aside with the script's place saved can be
        // gone back to (one the server closed itself has none); without
        // one, nothing changes.
        self.saved.as_ref()?;
        let (number, old) = self.leaving.take()?;
        let saved = self.saved.take()?;
        self.current = Some(Conn::Owned(old));
        self.connection = number;
        // Its calls can be answered again: opening the next connection
        // had set them down as abandoned.
        self.progress.update(|s| {
            let live: Vec<String> = s
                .issued_on
                .iter()
                .filter(|(id, on)| **on == number && s.abandoned.contains(*id))
                .map(|(id, _)| id.clone())
                .collect();
            for id in live {
                s.abandoned.remove(&id);
            }
        });
        // The connection still ends when the server said it would.
        self.go_away_deadline = saved.go_away_deadline;
        if !rewind {
            return Some(self.next);
        }
        self.expected_seen = saved.expected_seen;
        self.expects_reached = saved.expects_reached;
        self.consumed = saved.consumed;
        self.replay = saved.replay;
        self.replay_rematches = saved.replay_rematches;
        Some(saved.next)
    }

    /// The client left the connection it was moving to while the one it
    /// was leaving is still open: its move never completed (the new one's
    /// `setupComplete` was lost on the way), so it is still there. A
    /// resilient player goes back to that connection and to where the
    /// script stood on it, its `goAway` deadline with it: the action to go
    /// on from.
    pub(super) fn back_to_leaving(&mut self) -> Option<usize> {
        if !self.resilient {
            return None;
        }
        self.restore_leaving(true)
    }

    /// Opens `conn`, a connection the script does not plan, and takes its
    /// setup as a resilient player does.
    pub(super) async fn take_unplanned(&mut self, conn: T) -> Result<Opened, ()> {
        self.open(conn);
        self.move_to(At::Told(format!(
            "connection #{}'s handshake",
            self.connection
        )));
        self.handshake(Expect::Resilient, None).await
    }

    /// Makes `conn` the current connection: calls of earlier connections
    /// can no longer be answered (until [`Self::restore_leaving`] goes
    /// back to the one they were issued on).
    pub(super) fn open(&mut self, conn: T) {
        self.current = Some(Conn::Owned(conn));
        self.connection += 1;
        let connection = self.connection;
        self.progress.update(|s| {
            let stale: Vec<String> = s
                .issued_on
                .iter()
                .filter(|(id, on)| **on < connection && !s.answered.contains(*id))
                .map(|(id, _)| id.clone())
                .collect();
            s.abandoned.extend(stale);
        });
    }

    pub(super) async fn close_current(&mut self, code: u16, reason: &str) {
        if let Some(mut conn) = self.current.take() {
            let _ = conn.io().close(Some(CloseFrame::new(code, reason))).await;
            // Read to the client's answering close: an owned connection
            // is dropped after it; a borrowed one is the caller's.
            if let Conn::Owned(io) = conn {
                self.leaving = Some((self.connection, io));
            }
        }
    }

    /// A `reconnect`: lets the current connection end (or the client move
    /// on to the next), then opens the next with a setup resuming
    /// `handle`.
    pub(super) async fn reconnect(
        &mut self,
        index: usize,
        handle: Option<String>,
    ) -> Result<Wait, Flow> {
        loop {
            let moving = self.leave_current().await?;
            if self.leaving.is_some() {
                self.save(index);
            }
            let Some(conn) = self.next_incoming().await else {
                return Err(Flow::Stop);
            };
            self.open(conn);
            self.move_to(At::Told(format!(
                "action #{} (reconnect): connection #{}'s handshake",
                index + 1,
                self.connection
            )));
            // A refused move ends nothing: the client stays where it was.
            let rejection = self
                .rejection_at(index + 1)
                .map(|(close, last)| (close, last && !moving));
            match self
                .handshake(Expect::Scripted(handle.clone()), rejection)
                .await
            {
                Ok(Opened::Accepted) => return Ok(Wait::Nothing),
                Ok(Opened::Resumed(from)) => return Err(Flow::From(from)),
                // The client moved first and the server refused the new
                // connection: play goes on on the one it was moving from.
                Ok(Opened::Rejected) if moving && self.restore_leaving(false).is_some() => {
                    return Ok(Wait::Nothing);
                }
                Ok(Opened::Rejected) if self.reconnect_at(index + 2) => return Ok(Wait::Nothing),
                // The new connection died on the way: the client may still
                // be on the one it was leaving.
                Ok(Opened::Died) if self.restore_leaving(false).is_some() => {}
                Ok(Opened::Rejected | Opened::Died) if self.resilient => {
                    return match self.connection_lost().await {
                        Flow::Go => Ok(Wait::Nothing),
                        other => Err(other),
                    };
                }
                _ => return Err(Flow::Stop),
            }
        }
    }

    /// Lets the current connection end (or the client open the next one
    /// first: the current is then left, read until it closes). `true`
    /// when the client opened the next one while the current was still
    /// open: it is moving, and could still go back.
    pub(super) async fn leave_current(&mut self) -> Result<bool, Flow> {
        while self.current.is_some() && self.pending.is_none() {
            let taking = self.incoming.is_some();
            tokio::select! {
                biased;
                frame = next_frame(self.current.as_mut().map(Conn::io)) => match frame {
                    Some(frame) => {
                        let on = self.connection;
                        if self.client_frame(frame, on).await.is_err() {
                            return Err(Flow::Stop);
                        }
                    }
                    None => {
                        self.current = None;
                        if let Some(from) = self.back_to_leaving() {
                            return Err(Flow::From(from));
                        }
                    }
                },
                frame = next_frame(self.leaving.as_mut().map(|(_, io)| io)) => match frame {
                    Some(frame) => {
                        let on = self.leaving.as_ref().map_or(0, |(n, _)| *n);
                        if self.client_frame(frame, on).await.is_err() {
                            return Err(Flow::Stop);
                        }
                    }
                    None => self.leaving = None,
                },
                conn = next_connection(self.incoming.as_mut()), if taking => match conn {
                    Some(conn) => self.pending = Some(conn),
                    None => self.incoming = None,
                },
                _ = sleep_until(self.go_away_deadline) => {
                    self.go_away_deadline = None;
                    self.close_current(1000, "The goAway deadline has passed.").await;
                }
            }
        }
        // Make-before-break: the client opened the next connection first
        // and will close this one itself.
        if let Some(Conn::Owned(old)) = self.current.take() {
            self.leaving = Some((self.connection, old));
            return Ok(true);
        }
        Ok(false)
    }

    pub(super) async fn resumption_update(
        &mut self,
        index: usize,
        update: &ResumptionUpdate,
    ) -> Result<(), ()> {
        let mut body = serde_json::Map::new();
        if let Some(handle) = &update.handle {
            body.insert("newHandle".into(), Value::String(handle.clone()));
        }
        body.insert("resumable".into(), Value::Bool(update.resumable));
        // The handle covers what the server had processed: all it received
        // but the latest `behind` messages, and never less than an index it
        // reported before.
        let received = self.consumed.len();
        let consumed = received
            .saturating_sub(update.behind)
            .max(self.reported.min(received));
        if update.transparent {
            self.reported = consumed;
            // An int64, which the wire carries as a string.
            body.insert(
                "lastConsumedClientMessageIndex".into(),
                Value::String(consumed.to_string()),
            );
        }
        self.send_message(&json!({ "sessionResumptionUpdate": body }), true)
            .await?;
        if let (Some(handle), true) = (&update.handle, update.resumable) {
            self.handles.push(Issued {
                handle: handle.clone(),
                action: index,
                expected_seen: self
                    .consumed
                    .get(consumed)
                    .map_or(self.expected_seen, |c| c.expected_before),
                expects_reached: self.expects_reached,
                consumed,
                transparent: update.transparent,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::super::{Conn, Player, Progress};
    use crate::testing::ScriptedServer;
    use crate::transport::memory::{MemoryTransport, pair};

    fn player() -> Player<'static, MemoryTransport> {
        let (server, _client) = pair();
        let progress = Arc::new(Progress::default());
        Player::new(
            ScriptedServer::new(),
            Conn::Owned(server),
            None,
            progress,
            true,
        )
    }

    /// A connection the server closed itself (set aside with no place of
    /// the script saved) is never gone back to, and trying changes
    /// nothing; one the client was moving from, with its place saved, is.
    #[test]
    fn only_a_connection_left_by_a_move_is_gone_back_to() {
        let mut player = player();
        let (closed, _peer) = pair();
        player.connection = 2;
        player.current = None;
        player.leaving = Some((1, closed));
        assert_eq!(player.back_to_leaving(), None);
        assert!(player.current.is_none(), "a closed connection came back");
        assert_eq!(player.connection, 2);
        assert!(player.leaving.is_some());

        player.next = 7;
        player.save(4);
        assert_eq!(player.back_to_leaving(), Some(4));
        assert!(player.current.is_some() && player.leaving.is_none());
        assert_eq!(player.connection, 1);
        assert!(player.saved.is_none());
    }
}
