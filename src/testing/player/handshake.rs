//! A connection's opening: the client's `setup`, checked against what the
//! script expects of it (whether it asks for resumption, which handle it
//! resumes), answered with `setupComplete`, the script's rejection, or
//! `1008 session not found`.
//!
//! Handles are secrets: a problem names the action that issued a handle,
//! never the handle.

use serde_json::Value;

use super::Player;
use super::setup::{self, NotSetup};
use crate::transport::{CloseFrame, Frame, Transport};

/// What a connection's setup must resume.
pub(super) enum Expect {
    /// The session's first connection.
    First,
    /// The handle a `reconnect` names (`None`: a fresh session).
    Scripted(Option<String>),
    /// Whatever the client chooses (a resilient player's unplanned
    /// connection): a handle the server knows, or none.
    Resilient,
}

/// How a handshake ended.
pub(super) enum Opened {
    /// `setupComplete` sent; the script goes on where it is.
    Accepted,
    /// `setupComplete` sent; the script goes on from this action (the
    /// session rolled back to a handle, or started over).
    Resumed(usize),
    /// The setup was refused (the script's `reject_setup`, or a handle the
    /// server does not know) and the connection closed.
    Rejected,
    /// The connection ended before its setup came (a resilient player:
    /// the network lost it).
    Died,
}

/// The reason the service gives for a handle it does not know.
pub(crate) const SESSION_NOT_FOUND: &str = "BidiGenerateContent session not found";

impl<T: Transport> Player<'_, T> {
    /// Reads and checks the current connection's setup. `Err` when the
    /// connection ended first or the setup broke the script (recorded).
    pub(super) async fn handshake(
        &mut self,
        expect: Expect,
        rejection: Option<(crate::testing::CloseAction, bool)>,
    ) -> Result<Opened, ()> {
        let received = loop {
            let taking = self.resilient && self.incoming.is_some();
            tokio::select! {
                biased;
                received = async { match self.current.as_mut() {
                    Some(conn) => Some(conn.io().recv().await),
                    None => None,
                } } => break received,
                // Behind a lossy network a connection can die before its
                // setup arrives: a newer one from the client replaces it.
                conn = super::next_connection(self.incoming.as_mut()), if taking => match conn {
                    Some(conn) => self.open(conn),
                    None => self.incoming = None,
                },
            }
        };
        let Some(received) = received else {
            return Err(());
        };
        let frame = match received {
            Some(Ok(Frame::Close(_))) | None | Some(Err(_)) => {
                self.current = None;
                // A connection that died before its setup: a resilient
                // player waits for the next.
                return if self.resilient {
                    Ok(Opened::Died)
                } else {
                    Err(())
                };
            }
            Some(Ok(frame)) => frame,
        };
        let bytes = frame.payload().unwrap_or_default();
        self.keep_inbound(bytes, self.connection);
        // The whole parse only when the shortcut cannot tell (and to word
        // a problem).
        let read = match setup::look(bytes) {
            Some(setup) => Ok(setup),
            None => setup::read(bytes),
        };
        let setup = match read {
            Ok(setup) => setup,
            Err(NotSetup { problem, reason }) => {
                return self
                    .fail(problem, 1007, reason)
                    .await
                    .map(|()| Opened::Rejected);
            }
        };
        if self.uses_resumption && !setup.resumption {
            let problem = "the script sends resumption updates, but the setup does not ask for them (no sessionResumption object)".to_string();
            return self
                .fail(problem, 1007, "Request contains an invalid argument.")
                .await
                .map(|()| Opened::Rejected);
        }
        let handle = setup.handle;
        let n = self.connection;
        let mut opened = Opened::Accepted;
        // The handle the script resumes here, once the setup is accepted.
        let mut resumes = None;
        match expect {
            // Nothing was issued before the session's first connection:
            // a handle there is from an earlier run or another server,
            // and the service knows no session for it. (A script cannot
            // ask for this: a `reconnect` resumes only what it issued. Its
            // own `reject_setup` answers the setup as it says.)
            Expect::First if !self.resilient && handle.is_some() && rejection.is_none() => {
                let problem = format!(
                    "connection #{n}'s setup resumes a handle, but this client session has been issued none (one kept from an earlier run, or from another server?): the service answers {SESSION_NOT_FOUND:?}; start a fresh session (a setup without a handle)"
                );
                return self
                    .fail(problem, 1008, SESSION_NOT_FOUND)
                    .await
                    .map(|()| Opened::Rejected);
            }
            Expect::First if !self.resilient => {}
            // The client resumes what the script's `reconnect` names: the
            // script goes on from there (a resilient player's network did
            // not get in the way).
            Expect::Scripted(Some(want))
                if self.resilient && handle.as_deref() == Some(want.as_str()) =>
            {
                resumes = Some(want);
            }
            // The script's own fresh session: it goes on (starting the
            // script over would play the same reconnect again, forever).
            Expect::Scripted(None) if self.resilient && handle.is_none() => {
                self.forget_consumed();
            }
            Expect::Scripted(want) if !self.resilient => {
                if let Some(problem) = self.wrong_handle(want.as_deref(), handle.as_deref()) {
                    return self
                        .fail(
                            format!("connection #{n}'s setup {problem}"),
                            1008,
                            SESSION_NOT_FOUND,
                        )
                        .await
                        .map(|()| Opened::Rejected);
                }
                resumes = want;
            }
            // A resilient player takes whatever the client resumes: the
            // network may have kept the latest handle from it.
            Expect::First | Expect::Scripted(_) | Expect::Resilient => match handle {
                Some(handle) => match self.handles.iter().position(|h| h.handle == handle) {
                    Some(at) => {
                        let mut from = self.handles[at].action + 1;
                        // The connection is the one a `reconnect` here
                        // waits for.
                        while matches!(
                            self.actions.get(from),
                            Some(crate::testing::Action::Reconnect(r)) if r.handle.as_deref() == Some(handle.as_str())
                        ) {
                            from += 1;
                        }
                        self.resume_from(&handle, true);
                        opened = Opened::Resumed(from);
                    }
                    None => {
                        self.close_setup(1008, SESSION_NOT_FOUND).await;
                        return Ok(Opened::Rejected);
                    }
                },
                // A fresh session: the script starts over.
                None if n > 1 => {
                    self.handles.clear();
                    self.forget_consumed();
                    self.expected_seen = 0;
                    self.expects_reached = 0;
                    opened = Opened::Resumed(0);
                }
                None => {}
            },
        }
        if let Some((close, last)) = rejection {
            if last {
                self.progress.update(|s| s.ended_by_script = true);
            }
            self.close_setup(close.code, &close.reason).await;
            return Ok(Opened::Rejected);
        }
        match resumes {
            Some(handle) => self.resume_from(&handle, false),
            // A scripted fresh session has consumed nothing yet, and owes
            // no replay: it counts its client messages from 1 again.
            None if n > 1 && !self.resilient => {
                self.forget_consumed();
            }
            None => {}
        }
        let complete = match &self.session_id {
            Some(id) => serde_json::json!({ "setupComplete": { "sessionId": id } }).to_string(),
            // What `json!` writes for it, without building a value to write.
            None => r#"{"setupComplete":{}}"#.to_string(),
        };
        // Binary, as the service sends every message: clients that parse
        // only binary frames (Google's live-api-web-console) would never
        // see the session start otherwise.
        self.send(Frame::Binary(complete.into_bytes())).await?;
        self.go_away_deadline = None;
        self.progress.update(|s| s.connections += 1);
        Ok(opened)
    }

    /// What is wrong with resuming `got` where the script expects `want`,
    /// in words that never quote a handle.
    fn wrong_handle(&self, want: Option<&str>, got: Option<&str>) -> Option<String> {
        let issued_by = |handle: &str| {
            self.handles
                .iter()
                .rev()
                .find(|h| h.handle == handle)
                .map(|h| format!("the handle of action #{}", h.action + 1))
        };
        // A built script is not checked as a file is: it may expect a
        // handle it never issued resumably.
        let expected = |want: &str| {
            issued_by(want)
                .unwrap_or_else(|| "a handle no earlier resumable update issued".to_string())
        };
        match (want, got) {
            (Some(want), Some(got)) if want == got => None,
            (None, None) => None,
            (Some(want), None) => Some(format!(
                "resumes no handle; the script expects it to resume {}",
                expected(want)
            )),
            (Some(want), Some(got)) => Some(format!(
                "resumes {}; the script expects {} (a session resumes with its latest handle)",
                issued_by(got).unwrap_or_else(|| "a handle the script never issued".to_string()),
                expected(want)
            )),
            (None, Some(_)) => Some(
                "resumes a handle; the script expects a fresh session (a setup without one) here"
                    .to_string(),
            ),
        }
    }

    /// A fresh session: nothing consumed, nothing reported, nothing owed.
    fn forget_consumed(&mut self) {
        self.consumed.clear();
        self.reported = 0;
        self.replay.clear();
    }

    /// Resuming `handle`: with transparent resumption, what the server
    /// received past the handle's consumed point is expected again, first;
    /// without it, that is lost, and content the script had not reached
    /// yet among it is an error. `rematch`: the replayed messages count
    /// toward `expect`s again (the script rolled back to the handle).
    fn resume_from(&mut self, handle: &str, rematch: bool) {
        let Some(issued) = self.handles.iter().rev().find(|h| h.handle == handle) else {
            return;
        };
        let (consumed, transparent) = (issued.consumed, issued.transparent);
        let action = issued.action;
        if rematch {
            self.expected_seen = issued.expected_seen;
            self.expects_reached = issued.expects_reached;
        }
        let tail: Vec<Value> = if consumed < self.consumed.len() {
            let tail = self.consumed.split_off(consumed);
            tail.into_iter().map(|c| c.message).collect()
        } else {
            Vec::new()
        };
        if transparent {
            // Replays still owed from an earlier resumption come after.
            let owed = std::mem::take(&mut self.replay);
            self.replay = tail.into_iter().chain(owed).collect();
            self.replay_rematches = rematch;
        } else if !rematch && !self.resilient {
            // Content matched to `expect`s the script has not reached yet
            // came early, and the latest of it is in the lost tail: sent
            // on the old connection while the move was pending. (Behind a
            // network that delays it, that is timing: a resilient player's
            // user says it again.)
            let early = self.expected_seen.saturating_sub(self.expects_reached);
            let lost = early.min(tail.len());
            if lost > 0 {
                self.record(format!(
                    "{lost} client content message(s) that the script expects after this reconnect reached the connection being left after the handle of action #{} was issued: this session does not resume transparently, so the resumed session never gets them (content sent while a move is pending belongs on the next connection)",
                    action + 1
                ));
            }
        }
    }

    /// Refuses the current connection's setup with a close.
    async fn close_setup(&mut self, code: u16, reason: &str) {
        if let Some(mut conn) = self.current.take() {
            let _ = conn.io().close(Some(CloseFrame::new(code, reason))).await;
        }
    }
}
