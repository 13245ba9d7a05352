//! The wire lane: the one path every frame takes. Inbound frames are
//! numbered, decoded, aggregated and routed to the lane that handles each
//! event, with the event's [`Position`] (frame number, place in the
//! frame's output): the stored log is ordered by it. Outbound messages
//! from the handle and the control lane are sent in the order they were
//! queued. When the connection ends, pending text is dropped and the other
//! lanes are told to finish.

use crate::wire::JsonPath;
use serde_json::Value;
use tokio::sync::mpsc;

use super::aggregate::Aggregator;
use super::connect::Opened;
use super::events::{Lane, LiveEvent};
use super::extractors::{Speaker, Transcript};
use super::handle::Command;
use super::inbound;
use super::position::Position;
use super::reconnect::Link;
use super::route::Routed;
use crate::clock::SharedClock;
use crate::executor::yield_point;
use crate::transport::connector::BoxedTransport;
use crate::transport::{CloseFrame, Frame, Transport, TransportError};
use crate::wire::{CloseClass, Closed};

/// Where the wire lane sends what it routes.
pub(crate) struct Lanes {
    pub fast: mpsc::UnboundedSender<Routed>,
    pub control: mpsc::UnboundedSender<Routed>,
    pub telemetry: mpsc::UnboundedSender<Routed>,
}

impl Lanes {
    pub(super) fn send(&self, lane: Lane, routed: Routed) {
        let tx = match lane {
            Lane::Fast => &self.fast,
            Lane::Control => &self.control,
            Lane::Telemetry => &self.telemetry,
        };
        // A lane that has finished no longer needs anything.
        let _ = tx.send(routed);
    }
}

pub(crate) struct WireLane {
    pub transport: BoxedTransport,
    pub commands: mpsc::UnboundedReceiver<Command>,
    pub lanes: Lanes,
    pub clock: SharedClock,
    pub transcript: Transcript,
    /// Frames that arrived with or before `setupComplete`, to handle first.
    pub early: Vec<Frame>,
    /// Inbound frames numbered so far: the session's frame counter, carried
    /// on across connections, so positions keep growing.
    pub frames: u64,
    /// What reconnecting needs and keeps.
    pub link: Link,
}

/// How a connection's loop ended.
pub(super) enum End {
    /// The session is over (the user asked, or a fatal frame).
    Final(LiveEvent),
    /// The connection ended without being asked to: `closed` says how,
    /// and the event is what ends the session if it does not reconnect.
    Lost(Closed, LiveEvent),
}

impl WireLane {
    pub async fn run(mut self) {
        let mut aggregator = Aggregator::default();
        #[cfg(feature = "planted-bug")]
        {
            aggregator.planted = self.link.config.planted;
        }
        let ended = loop {
            for frame in std::mem::take(&mut self.early) {
                // An in-band error before setup completed would have failed setup.
                let _ = self.inbound(&mut aggregator, frame);
            }
            let end = self.connection(&mut aggregator).await;
            // Pending text is dropped, not emitted: the turn never ended.
            aggregator.close();
            match end {
                End::Final(event) => break event,
                End::Lost(closed, event) => match self.reconnect(closed, event).await {
                    Ok(()) => continue,
                    Err(event) => break event,
                },
            }
        };
        // The end stands after every frame, as if it were one more.
        self.frames += 1;
        let at = Position::wire(self.frames, 0);
        self.lanes.control.send(Routed::Ended(ended, at)).ok();
        // Dropping the senders ends the fast and telemetry lanes.
    }

    /// Runs the current connection until it ends.
    async fn connection(&mut self, aggregator: &mut Aggregator) -> End {
        loop {
            let moving = self.link.switching.is_some();
            tokio::select! {
                biased;
                command = self.commands.recv() => {
                    if let Some(end) = self.command(command).await {
                        return end;
                    }
                }
                frame = self.transport.recv() => {
                    let end = match frame {
                        Some(Ok(Frame::Close(close))) => {
                            let closed = Closed::from_close(close.as_ref());
                            End::Lost(closed.clone(), disconnected(closed))
                        }
                        Some(Ok(frame)) => {
                            if let Some(fatal) = self.inbound(aggregator, frame) {
                                let _ = self.transport.close(None).await;
                                return End::Final(LiveEvent::Disconnected { code: None, reason: fatal, class: Some(CloseClass::Fatal.to_string()) });
                            }
                            yield_point("wire:route").await;
                            continue;
                        }
                        Some(Err(e)) => End::Lost(e.as_closed(), lost(&e, "transport error")),
                        None => {
                            let closed = Closed::abnormal("the connection ended without a close frame");
                            End::Lost(closed.clone(), disconnected(closed))
                        }
                    };
                    if let Some(end) = self.ended_while_moving(aggregator, end).await {
                        return end;
                    }
                }
                opened = async { match self.link.switching.as_mut() {
                    Some(opening) => opening.await,
                    None => std::future::pending().await,
                } } => {
                    self.link.switching = None;
                    match opened {
                        Ok(opened) => {
                            if let Some(end) = self.switched(aggregator, opened).await {
                                return end;
                            }
                        }
                        // The old connection is still there: what waited
                        // for the new one goes on it, and when it ends the
                        // session reconnects as for any end.
                        Err(e) => {
                            self.warn(format!("moving to a new connection after goAway failed: {e}"));
                            self.link.attempts_made += 1;
                            for message in std::mem::take(&mut self.link.queued) {
                                if is_content(&message) {
                                    self.link.sent_content(&message);
                                }
                                if let Err(e) = self.transport.send(Frame::Text(crate::wire::to_json(&message))).await {
                                    return End::Lost(e.as_closed(), lost(&e, "send failed"));
                                }
                            }
                        }
                    }
                }
                _ = sleep_until(self.link.move_by), if !moving => self.start_move(),
            }
        }
    }

    /// Moves to the connection opened after `goAway`, and handles what it
    /// sent with its `setupComplete` before anything it sends next (a
    /// handle there is the one a later reconnect resumes). `Some` when
    /// that ends the connection.
    async fn switched(&mut self, aggregator: &mut Aggregator, opened: Opened) -> Option<End> {
        if let Some(end) = self.switch_to(opened).await {
            return Some(end);
        }
        for frame in std::mem::take(&mut self.early) {
            if let Some(fatal) = self.inbound(aggregator, frame) {
                let _ = self.transport.close(None).await;
                return Some(End::Final(LiveEvent::Disconnected {
                    code: None,
                    reason: fatal,
                    class: Some(CloseClass::Fatal.to_string()),
                }));
            }
        }
        None
    }

    /// The connection ended (`end`). When the session was moving off it
    /// after `goAway`, the server ending the old connection is expected:
    /// the new one, once set up, carries on (`None`). Otherwise, or if the
    /// new one fails, `end` stands.
    async fn ended_while_moving(&mut self, aggregator: &mut Aggregator, end: End) -> Option<End> {
        let Some(opening) = self.link.switching.take() else {
            return Some(end);
        };
        let opened = match self.meanwhile(opening).await {
            Ok(opened) => opened,
            Err(event) => return Some(End::Final(event)),
        };
        match opened {
            Ok(opened) => self.switched(aggregator, opened).await,
            Err(e) => {
                self.warn(format!(
                    "moving to a new connection after goAway failed: {e}"
                ));
                self.link.attempts_made += 1;
                Some(end)
            }
        }
    }

    /// Handles one command from the handle or the control lane; `Some`
    /// when it ends the session.
    pub(super) async fn command(&mut self, command: Option<Command>) -> Option<End> {
        match command {
            Some(Command::Send(message)) => {
                if is_content(&message) {
                    self.lanes.telemetry.send(Routed::Activity).ok();
                    self.transcript.push(Speaker::User, user_text(&message));
                    if self.link.moving() {
                        // Sent on the new connection, once it is set up:
                        // on the old one it could miss the handle the new
                        // one resumes.
                        self.link.queued.push(message);
                        return None;
                    }
                    self.link.sent_content(&message);
                }
                if let Err(e) = self
                    .transport
                    .send(Frame::Text(crate::wire::to_json(&message)))
                    .await
                {
                    return Some(End::Lost(e.as_closed(), lost(&e, "send failed")));
                }
            }
            Some(Command::Answer { message, at }) => {
                #[cfg(feature = "planted-bug")]
                if let Some(id) = message
                    .at("/toolResponse/functionResponses/0/id")
                    .and_then(Value::as_str)
                {
                    self.link.planted_unanswered.remove(id);
                }
                if !self.link.is_current(at) {
                    self.warn(stale_answer(&message));
                    return None;
                }
                if let Err(e) = self
                    .transport
                    .send(Frame::Text(crate::wire::to_json(&message)))
                    .await
                {
                    return Some(End::Lost(e.as_closed(), lost(&e, "send failed")));
                }
            }
            Some(Command::Disconnect(ack)) => {
                let close = CloseFrame {
                    code: 1000,
                    reason: "client disconnect".to_string(),
                };
                let _ = self.transport.close(Some(close)).await;
                let _ = ack.send(());
                return Some(End::Final(LiveEvent::Disconnected {
                    code: Some(1000),
                    reason: "disconnected by the client".to_string(),
                    class: None,
                }));
            }
            None => {
                let _ = self.transport.close(None).await;
                return Some(End::Final(LiveEvent::Disconnected {
                    code: None,
                    reason: "every handle was dropped".to_string(),
                    class: None,
                }));
            }
        }
        None
    }

    /// Tells the user something the session handled by its policy.
    pub(super) fn warn(&self, message: String) {
        let event = LiveEvent::Warning { message };
        self.lanes
            .send(Lane::Control, Routed::Event(event, Position::OPENING));
    }

    /// Numbers, decodes, aggregates and routes one frame. Returns the
    /// reason when the frame is an in-band error that ends the session.
    fn inbound(&mut self, aggregator: &mut Aggregator, frame: Frame) -> Option<String> {
        self.frames += 1;
        let index = self.frames;
        let message = match inbound::decode(&frame) {
            Ok((message, left_out)) => {
                for problem in left_out {
                    let event = LiveEvent::Warning {
                        message: format!("server frame #{index}: {problem}; the rest was read"),
                    };
                    self.lanes.send(
                        Lane::Control,
                        Routed::Event(event, Position::wire(index, 0)),
                    );
                }
                message
            }
            Err(problem) => {
                let event = LiveEvent::Warning {
                    message: format!("server frame #{index} ignored: {problem}"),
                };
                self.lanes.send(
                    Lane::Control,
                    Routed::Event(event, Position::wire(index, 0)),
                );
                return None;
            }
        };
        if let Some(fatal) = inbound::fatal_error(&message) {
            return Some(fatal);
        }
        self.link.server_message(&message);
        let view = inbound::view(&message);
        if view.has_content() {
            self.lanes.telemetry.send(Routed::Activity).ok();
        }
        if view.interrupted {
            self.lanes.control.send(Routed::Interrupted).ok();
        }
        for (i, event) in aggregator
            .push(&view, self.clock.now())
            .into_iter()
            .enumerate()
        {
            let at = Position::wire(index, u32::try_from(i).unwrap_or(u32::MAX));
            #[cfg(feature = "planted-bug")]
            if self.planted_drops(&event) {
                continue;
            }
            match &event {
                LiveEvent::InputTranscript { text } => {
                    self.transcript.push(Speaker::User, text.as_str())
                }
                LiveEvent::TextComplete {
                    text,
                    thought: false,
                    ..
                }
                | LiveEvent::OutputTranscript { text } => {
                    self.transcript.push(Speaker::Model, text.as_str())
                }
                LiveEvent::TurnComplete { .. } => {
                    self.link.turn_ended();
                    // What the turn's extractors read: the transcript as
                    // it stands at this frame, whenever they run.
                    let transcript = self.transcript.snapshot();
                    self.lanes
                        .send(Lane::Control, Routed::TurnEnded(event, at, transcript));
                    continue;
                }
                _ => {}
            }
            self.lanes.send(event.lane(), Routed::Event(event, at));
        }
        None
    }
}

#[cfg(feature = "planted-bug")]
impl WireLane {
    /// Planted: an output transcription chunk is dropped while a call is
    /// unanswered (the calls made are noted here).
    fn planted_drops(&mut self, event: &LiveEvent) -> bool {
        if !self
            .link
            .config
            .planted(super::PlantedBug::TranscriptDroppedMidCall)
        {
            return false;
        }
        match event {
            LiveEvent::ToolCall { calls } => {
                self.link
                    .planted_unanswered
                    .extend(calls.iter().map(|c| c.id.clone()));
                false
            }
            LiveEvent::OutputTranscriptDelta { .. } => !self.link.planted_unanswered.is_empty(),
            _ => false,
        }
    }
}

/// The event for a connection the server ended: with a close frame
/// (1005 when it had no status) or without one (1006).
pub(super) fn disconnected(closed: Closed) -> LiveEvent {
    LiveEvent::Disconnected {
        code: Some(closed.code),
        reason: closed.reason,
        class: Some(closed.class.to_string()),
    }
}

/// The event for a transport that failed.
pub(super) fn lost(error: &TransportError, what: &str) -> LiveEvent {
    let closed = error.as_closed();
    LiveEvent::Disconnected {
        code: Some(closed.code),
        reason: format!("{what}: {error}"),
        class: Some(closed.class.to_string()),
    }
}

/// The text of a user turn or realtime text the session sent.
pub(super) fn user_text(message: &Value) -> String {
    if let Some(text) = message.at("/realtimeInput/text").and_then(Value::as_str) {
        return text.to_string();
    }
    message
        .at("/clientContent/turns")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|turn| turn.get("role").and_then(Value::as_str) != Some("model"))
        .flat_map(|turn| {
            turn.get("parts")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|part| part.get("text").and_then(Value::as_str).map(String::from))
        .collect()
}

/// The warning for a tool response whose connection has ended.
pub(super) fn stale_answer(message: &Value) -> String {
    let response = message.at("/toolResponse/functionResponses/0");
    let field = |key: &str| {
        response
            .and_then(|r| r.get(key))
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string()
    };
    format!(
        "the answer to tool call {} ({}) is not sent: the connection that issued the call has ended, and call ids belong to their connection",
        field("id"),
        field("name")
    )
}

/// Sleeps until `deadline`; forever without one.
async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Whether a client message carries user content (it resets silence).
pub(super) fn is_content(message: &Value) -> bool {
    message.get("clientContent").is_some() || message.get("realtimeInput").is_some()
}
