//! Connecting: the setup handshake, then the session task with its lanes.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use tokio::sync::{mpsc, watch};

use super::bus::EventBus;
use super::config::SessionConfig;
use super::control::Control;
use super::error::SessionError;
use super::extractors::Transcript;
use super::fast;
use super::handle::LiveHandle;
use super::inbound;
use super::reconnect::Link;
use super::redacted::Redacted;
use super::telemetry::Telemetry;
use super::wire_lane::{Lanes, WireLane};
use crate::executor::{self, LaneSet};
use crate::state::State;
use crate::transport::connector::{BoxedTransport, Connector};
use crate::transport::{Frame, Transport};
use crate::wire::Redactor;

/// What a new connection brings once set up.
pub(crate) struct Opened {
    pub transport: BoxedTransport,
    /// Frames that came before `setupComplete`, to handle first.
    pub early: Vec<Frame>,
    pub session_id: Option<String>,
}

/// Opens a connection with `connector`, sends `setup` (the message's
/// text) and waits (at most `timeout`, the whole of it) for
/// `setupComplete`.
pub(crate) async fn open(
    connector: &dyn Connector,
    setup: String,
    timeout: Duration,
    redactor: Redactor,
) -> Result<Opened, SessionError> {
    let opening = async {
        let transport = connector
            .connect()
            .await
            .map_err(|e| SessionError::Transport(e.to_string()))?;
        handshake(transport, setup, redactor).await
    };
    match tokio::time::timeout(timeout, opening).await {
        Ok(opened) => opened,
        Err(_) => Err(SessionError::SetupTimeout(timeout)),
    }
}

/// What every connection of the session is scrubbed with: the session's
/// own key and every credential the process remembered (e.g. the key of
/// the WebSocket a recording wraps).
pub(crate) fn redactor(config: &SessionConfig) -> Redactor {
    let mut redactor = config.redactor.clone();
    redactor.absorb(&crate::wire::known_secrets());
    redactor
}

/// Sends `setup` on `transport` and waits for `setupComplete`. From here
/// on, nothing the server sends holds the session's secrets.
async fn handshake(
    transport: BoxedTransport,
    setup: String,
    redactor: Redactor,
) -> Result<Opened, SessionError> {
    let mut transport: BoxedTransport = Box::new(Redacted::new(transport, redactor));
    transport
        .send(Frame::Text(setup))
        .await
        .map_err(|e| SessionError::Transport(e.to_string()))?;
    let (session_id, early) = await_setup(&mut transport).await?;
    Ok(Opened {
        transport,
        early,
        session_id,
    })
}

/// Opens the first connection with `connector`, then connects as
/// [`connect`] does; the setup timeout bounds the whole of it, the
/// connector's own opening (a peer that never finishes its upgrade
/// answer) included.
pub(crate) async fn connect_first(
    config: SessionConfig,
    state: State,
    connector: Arc<dyn Connector>,
) -> Result<LiveHandle, SessionError> {
    let deadline = crate::clock::deadline_in(config.setup_timeout);
    let first = match tokio::time::timeout_at(deadline, connector.connect()).await {
        Ok(opened) => opened.map_err(|e| SessionError::Transport(e.to_string()))?,
        Err(_) => return Err(SessionError::SetupTimeout(config.setup_timeout)),
    };
    connect_by(config, state, first, Some(connector), deadline).await
}

/// Sends `setup`, waits for `setupComplete`, then starts the session's
/// lanes on `transport`. With a `connector` (and resumption on) the
/// session moves to new connections; without one it never reconnects.
pub(crate) async fn connect(
    config: SessionConfig,
    state: State,
    transport: BoxedTransport,
    connector: Option<Arc<dyn Connector>>,
) -> Result<LiveHandle, SessionError> {
    let deadline = crate::clock::deadline_in(config.setup_timeout);
    connect_by(config, state, transport, connector, deadline).await
}

/// [`connect`], with the setup done by `deadline`.
async fn connect_by(
    config: SessionConfig,
    state: State,
    transport: BoxedTransport,
    connector: Option<Arc<dyn Connector>>,
    deadline: tokio::time::Instant,
) -> Result<LiveHandle, SessionError> {
    let setup = config.setup_text(None);
    let opened = tokio::time::timeout_at(deadline, handshake(transport, setup, redactor(&config)));
    let Opened {
        transport,
        early,
        session_id,
    } = match opened.await {
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
    // Every frame so far belongs to the first connection.
    let from = Arc::new(AtomicU64::new(0));
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
        link: Link::new(connector, config.clone(), from.clone()),
    };
    let control = Control {
        session_id,
        config: config.clone(),
        bus: bus.clone(),
        state: state.clone(),
        clock: clock.clone(),
        outbound: commands_tx.clone(),
        from,
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
        config,
        ended_rx,
        task,
    ))
}

/// Reads frames until `setupComplete`. Frames before it are kept, to be
/// handled first once the session runs.
async fn await_setup(
    transport: &mut BoxedTransport,
) -> Result<(Option<String>, Vec<Frame>), SessionError> {
    let mut early = Vec::new();
    loop {
        match transport.recv().await {
            Some(Ok(Frame::Close(close))) => return Err(inbound::setup_rejected(close)),
            Some(Ok(frame)) => match inbound::decode(&frame) {
                // (What a frame left out is named when the wire lane
                // reads it again.)
                Ok((message, _)) => {
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
