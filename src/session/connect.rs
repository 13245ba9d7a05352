//! Connecting: the setup handshake, then the session task with its lanes.

use std::sync::Arc;

use tokio::sync::{mpsc, watch};

use super::bus::EventBus;
use super::config::SessionConfig;
use super::control::Control;
use super::error::SessionError;
use super::extractors::Transcript;
use super::fast;
use super::handle::LiveHandle;
use super::inbound;
use super::telemetry::Telemetry;
use super::wire_lane::{Lanes, WireLane};
use crate::executor::{self, LaneSet};
use crate::state::State;
use crate::transport::{Frame, Transport};

/// Sends `setup`, waits for `setupComplete`, then starts the session's
/// lanes on `transport`. Never reconnects.
pub(crate) async fn connect<T: Transport>(
    config: SessionConfig,
    state: State,
    mut transport: T,
) -> Result<LiveHandle, SessionError> {
    let setup = config.setup_message();
    transport
        .send(Frame::Text(setup.to_string()))
        .await
        .map_err(|e| SessionError::Transport(e.to_string()))?;
    let handshake = tokio::time::timeout(config.setup_timeout, await_setup(&mut transport));
    let (session_id, early) = match handshake.await {
        Ok(outcome) => outcome?,
        Err(_) => return Err(SessionError::SetupTimeout(config.setup_timeout)),
    };

    let config = Arc::new(config);
    let clock = state.clock();
    let bus = Arc::new(EventBus::new(config.callbacks.clone()));
    let (commands_tx, commands_rx) = mpsc::unbounded_channel();
    let (fast_tx, fast_rx) = mpsc::unbounded_channel();
    let (control_tx, control_rx) = mpsc::unbounded_channel();
    let (telemetry_tx, telemetry_rx) = mpsc::unbounded_channel();
    let (ended_tx, ended_rx) = watch::channel(false);

    let transcript = Transcript::default();
    let wire = WireLane {
        transport,
        commands: commands_rx,
        lanes: Lanes {
            fast: fast_tx,
            control: control_tx.clone(),
            telemetry: telemetry_tx,
        },
        clock: clock.clone(),
        transcript,
        early,
        frames: 0,
    };
    let control = Control {
        session_id,
        config: config.clone(),
        bus: bus.clone(),
        state: state.clone(),
        clock: clock.clone(),
        outbound: commands_tx.clone(),
    };
    let telemetry = Telemetry {
        bus: bus.clone(),
        state: state.clone(),
        clock,
        interval: config.signal_interval,
        budget: config.budget,
        control: control_tx,
    };
    let mut lanes = LaneSet::new("session");
    lanes.add("wire", wire.run());
    lanes.add("fast", fast::run(bus.clone(), fast_rx));
    lanes.add("control", control.run(control_rx));
    lanes.add("telemetry", telemetry.run(telemetry_rx));
    let session_bus = bus.clone();
    let task = executor::spawn("session", async move {
        lanes.await;
        session_bus.close();
        let _ = ended_tx.send(true);
    });
    Ok(LiveHandle::new(
        bus,
        state,
        commands_tx,
        setup,
        ended_rx,
        task,
    ))
}

/// Reads frames until `setupComplete`. Frames before it are kept, to be
/// handled first once the session runs.
async fn await_setup<T: Transport>(
    transport: &mut T,
) -> Result<(Option<String>, Vec<Frame>), SessionError> {
    let mut early = Vec::new();
    loop {
        match transport.recv().await {
            Some(Ok(Frame::Close(close))) => return Err(inbound::setup_rejected(close)),
            Some(Ok(frame)) => match inbound::decode(&frame) {
                Ok(message) => {
                    if let Some(session_id) = inbound::setup_complete(&message) {
                        return Ok((session_id, early));
                    }
                    early.push(frame);
                }
                Err(problem) => {
                    return Err(SessionError::SetupFailed(format!(
                        "the server's answer to setup is not a server message: {problem}"
                    )));
                }
            },
            Some(Err(e)) => return Err(SessionError::Transport(e.to_string())),
            None => {
                return Err(SessionError::SetupFailed(
                    "the connection ended before setupComplete".to_string(),
                ));
            }
        }
    }
}
