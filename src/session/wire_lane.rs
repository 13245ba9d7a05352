//! The wire lane: the one path every frame takes. Inbound frames are
//! numbered, decoded, aggregated and routed to the lane that handles each
//! event, with the event's [`Position`] (frame number, place in the
//! frame's output): the stored log is ordered by it. Outbound messages
//! from the handle and the control lane are sent in the order they were
//! queued. When the connection ends, pending text is dropped and the other
//! lanes are told to finish.

use serde_json::Value;
use tokio::sync::mpsc;

use super::aggregate::Aggregator;
use super::events::{Lane, LiveEvent};
use super::extractors::{Speaker, Transcript};
use super::handle::Command;
use super::inbound;
use super::position::Position;
use super::route::Routed;
use crate::clock::SharedClock;
use crate::executor::yield_point;
use crate::transport::{CloseFrame, Frame, Transport, TransportError};
use crate::wire::{CloseClass, Closed};

/// Where the wire lane sends what it routes.
pub(crate) struct Lanes {
    pub fast: mpsc::UnboundedSender<Routed>,
    pub control: mpsc::UnboundedSender<Routed>,
    pub telemetry: mpsc::UnboundedSender<Routed>,
}

impl Lanes {
    fn send(&self, lane: Lane, routed: Routed) {
        let tx = match lane {
            Lane::Fast => &self.fast,
            Lane::Control => &self.control,
            Lane::Telemetry => &self.telemetry,
        };
        // A lane that has finished no longer needs anything.
        let _ = tx.send(routed);
    }
}

pub(crate) struct WireLane<T: Transport> {
    pub transport: T,
    pub commands: mpsc::UnboundedReceiver<Command>,
    pub lanes: Lanes,
    pub clock: SharedClock,
    pub transcript: Transcript,
    /// Frames that arrived with or before `setupComplete`, to handle first.
    pub early: Vec<Frame>,
    /// Inbound frames numbered so far: the session's frame counter (a
    /// reconnection would carry it on, so positions keep growing).
    pub frames: u64,
}

impl<T: Transport> WireLane<T> {
    pub async fn run(mut self) {
        let mut aggregator = Aggregator::default();
        for frame in std::mem::take(&mut self.early) {
            // An in-band error before setup completed would have failed setup.
            let _ = self.inbound(&mut aggregator, frame);
        }
        let ended = loop {
            tokio::select! {
                biased;
                command = self.commands.recv() => match command {
                    Some(Command::Send(message)) => {
                        if is_content(&message) {
                            self.lanes.telemetry.send(Routed::Activity).ok();
                            self.transcript.push(Speaker::User, user_text(&message));
                        }
                        if let Err(e) = self.transport.send(Frame::Text(message.to_string())).await {
                            break lost(&e, "send failed");
                        }
                    }
                    Some(Command::Disconnect(ack)) => {
                        let close = CloseFrame { code: 1000, reason: "client disconnect".to_string() };
                        let _ = self.transport.close(Some(close)).await;
                        let _ = ack.send(());
                        break LiveEvent::Disconnected { code: Some(1000), reason: "disconnected by the client".to_string(), class: None };
                    }
                    None => {
                        let _ = self.transport.close(None).await;
                        break LiveEvent::Disconnected { code: None, reason: "every handle was dropped".to_string(), class: None };
                    }
                },
                frame = self.transport.recv() => match frame {
                    Some(Ok(Frame::Close(close))) => break closed(Closed::from_close(close.as_ref())),
                    Some(Ok(frame)) => {
                        if let Some(fatal) = self.inbound(&mut aggregator, frame) {
                            let _ = self.transport.close(None).await;
                            break LiveEvent::Disconnected { code: None, reason: fatal, class: Some(CloseClass::Fatal.to_string()) };
                        }
                        yield_point("wire:route").await;
                    }
                    Some(Err(e)) => break lost(&e, "transport error"),
                    None => break closed(Closed::abnormal("the connection ended without a close frame")),
                },
            }
        };
        // Pending text is dropped, not emitted: the turn never ended.
        aggregator.close();
        // The end stands after every frame, as if it were one more.
        self.frames += 1;
        let at = Position::wire(self.frames, 0);
        self.lanes.control.send(Routed::Ended(ended, at)).ok();
        // Dropping the senders ends the fast and telemetry lanes.
    }

    /// Numbers, decodes, aggregates and routes one frame. Returns the
    /// reason when the frame is an in-band error that ends the session.
    fn inbound(&mut self, aggregator: &mut Aggregator, frame: Frame) -> Option<String> {
        self.frames += 1;
        let index = self.frames;
        let message = match inbound::decode(&frame) {
            Ok(message) => message,
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

/// The event for a connection the server ended: with a close frame
/// (1005 when it had no status) or without one (1006).
fn closed(closed: Closed) -> LiveEvent {
    LiveEvent::Disconnected {
        code: Some(closed.code),
        reason: closed.reason,
        class: Some(closed.class.to_string()),
    }
}

/// The event for a transport that failed.
fn lost(error: &TransportError, what: &str) -> LiveEvent {
    let closed = error.as_closed();
    LiveEvent::Disconnected {
        code: Some(closed.code),
        reason: format!("{what}: {error}"),
        class: Some(closed.class.to_string()),
    }
}

/// The text of a user turn or realtime text the session sent.
fn user_text(message: &Value) -> String {
    if let Some(text) = message
        .pointer("/realtimeInput/text")
        .and_then(Value::as_str)
    {
        return text.to_string();
    }
    message
        .pointer("/clientContent/turns")
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

/// Whether a client message carries user content (it resets silence).
fn is_content(message: &Value) -> bool {
    message.get("clientContent").is_some() || message.get("realtimeInput").is_some()
}
