//! The network under the seed: a session and a scripted server on two
//! hosts of a [turmoil] simulated network, with faults drawn from the seed.
//!
//! The session runs on the `client` host and reaches the `server` host
//! over turmoil's TCP with the real [`WebSocketTransport`] (handshake,
//! framing, close, keepalive pings): the code that talks to the Live
//! service, not a stand-in. The server host plays a [`ScriptedServer`]
//! across every connection the session opens, resiliently (see the
//! player's docs): a connection that dies where the script does not say
//! comes back resuming a handle, and the script goes on from that
//! handle's point.
//!
//! Everything follows the seed. livesim's executor is entered on the
//! thread that steps turmoil ([`Simulation::enter`]), with turmoil's
//! simulated time as its clock, so lane sets, spawned tasks and yield
//! points in both hosts are seeded as under [`Simulation::run`].
//! turmoil's own randomness (message latency, host order) is seeded from
//! the stream `network/turmoil`; its epoch is pinned. Faults
//! ([`Faults`]) are drawn from their own streams and applied between
//! steps, each recorded in the trace. A run returns what
//! [`Simulation::run`] returns, so [`Runner::run_with`], the determinism
//! check and the replay line work unchanged.
//!
//! Limits, measured (see docs/guide/resumption.md): turmoil's cost grows with virtual
//! time, not with events (every step ticks every host), so keep network
//! scenarios to a few virtual seconds; messages land on step boundaries
//! (1 ms by default); the deadlock and livelock watchdog is off (a stuck
//! run ends at the time limit); tungstenite draws WebSocket masks and
//! handshake keys from the OS (the same lengths, so traces stay equal).
//!
//! [turmoil]: https://docs.rs/turmoil
//! [`WebSocketTransport`]: crate::transport::websocket::WebSocketTransport
//! [`Runner::run_with`]: crate::executor::Runner::run_with

mod faults;
mod hosts;
mod tap;

use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

pub use faults::{Fault, FaultKind, FaultPlan, Faults};
pub use hosts::{CLIENT, NetworkConnector, PORT, SERVER};
pub use tap::{Heard, Tap};

use crate::clock::VIRTUAL_EPOCH;
use crate::executor::{Failure, FailureKind, Outcome, Simulation, Stream};
use crate::testing::player::Progress;
use crate::testing::{ReplayControl, ScriptedServer};

/// A scripted server and a session on a simulated network.
///
/// ```
/// use std::time::Duration;
/// use livesim::Seed;
/// use livesim::executor::Simulation;
/// use livesim::network::{Faults, Network};
/// use livesim::testing::ScriptedServer;
/// use livesim::transport::connector::Connector;
/// use livesim::transport::Transport;
/// use livesim::wire::Frame;
///
/// let network = Network::new(ScriptedServer::new().says("Hello")).faults(Faults::none());
/// let outcome = network
///     .run(&Simulation::new(Seed::new(1)), |connector| async move {
///         let mut conn = connector.connect().await.unwrap();
///         conn.send(Frame::Text(r#"{"setup":{"model":"models/m"}}"#.into())).await.unwrap();
///         let first = conn.recv().await.unwrap().unwrap();
///         String::from_utf8(first.payload().unwrap().to_vec()).unwrap()
///     })
///     .unwrap();
/// assert_eq!(outcome.value, r#"{"setupComplete":{}}"#);
/// ```
#[derive(Clone, Debug)]
pub struct Network {
    script: ScriptedServer,
    faults: Faults,
    tick: Duration,
    duration: Duration,
    keepalive: (Duration, Duration),
}

impl Network {
    /// The server host plays `script`; faults are [`Faults::drawn`].
    pub fn new(script: ScriptedServer) -> Self {
        Network {
            script,
            faults: Faults::drawn(),
            tick: Duration::from_millis(1),
            duration: Duration::from_secs(30),
            keepalive: (Duration::from_millis(300), Duration::from_millis(300)),
        }
    }

    /// The faults a run may draw.
    pub fn faults(mut self, faults: Faults) -> Self {
        self.faults = faults;
        self
    }

    /// How much simulated time a step of the network takes (1 ms).
    pub fn tick(mut self, tick: Duration) -> Self {
        self.tick = tick;
        self
    }

    /// The longest a run may take in simulated time (30 s, or the
    /// simulation's own limit when that is shorter); then it fails with
    /// the time limit.
    pub fn duration(mut self, duration: Duration) -> Self {
        self.duration = duration;
        self
    }

    /// The session's keepalive over this network: a ping after `interval`
    /// without a frame, and the connection given up `timeout` after an
    /// unanswered ping (300 ms each: virtual time, and partitions are
    /// short).
    pub fn keepalive(mut self, interval: Duration, timeout: Duration) -> Self {
        self.keepalive = (interval, timeout);
        self
    }

    /// Runs `client` (given a connector to the server) on the client host
    /// until it finishes, under `simulation`'s seed, with the fault plan
    /// that seed draws.
    pub fn run<F, Fut>(
        &self,
        simulation: &Simulation,
        client: F,
    ) -> Result<Outcome<Fut::Output>, Box<Failure>>
    where
        F: FnOnce(NetworkConnector) -> Fut,
        Fut: Future + 'static,
        Fut::Output: 'static,
    {
        self.drive(simulation, None, |connector, _| client(connector))
    }

    /// Like [`run`](Self::run), for a client that also follows the
    /// script's progress (the soak's session and user): the connector's
    /// connections are tapped (see [`Tap`]), and `client` gets the
    /// script's control.
    pub(crate) fn run_scripted<F, Fut>(
        &self,
        simulation: &Simulation,
        tap: Tap,
        client: F,
    ) -> Result<Outcome<Fut::Output>, Box<Failure>>
    where
        F: FnOnce(NetworkConnector, ReplayControl) -> Fut,
        Fut: Future + 'static,
        Fut::Output: 'static,
    {
        let name = self.script.name().to_string();
        self.drive(simulation, Some(tap), move |connector, progress| {
            client(connector, ReplayControl::following(progress, name))
        })
    }

    fn drive<F, Fut>(
        &self,
        simulation: &Simulation,
        tap: Option<Tap>,
        client: F,
    ) -> Result<Outcome<Fut::Output>, Box<Failure>>
    where
        F: FnOnce(NetworkConnector, Arc<Progress>) -> Fut,
        Fut: Future + 'static,
        Fut::Output: 'static,
    {
        // Inside a step, a host's own clock; between steps (where faults
        // begin and end) the network's, which turmoil's host clock may not
        // be then.
        let between = Rc::new(std::cell::Cell::new(Some(Duration::ZERO)));
        let outside = between.clone();
        let entered = simulation.enter(move || outside.get().or_else(turmoil::sim_elapsed));
        let seed = simulation.seed();
        let plan = self.faults.plan(seed);
        entered.record("network", &format!("plan: {plan}"));
        let limit = simulation.limit().min(self.duration);
        let mut builder = turmoil::Builder::new();
        builder
            .rng_seed(Stream::new(seed, "network/turmoil").next_u64())
            .epoch(VIRTUAL_EPOCH.into())
            .enable_random_order()
            .tick_duration(self.tick)
            .simulation_duration(limit)
            .min_message_latency(*plan.latency().start())
            .max_message_latency(*plan.latency().end());
        let mut net = builder.build();

        let progress = Arc::new(Progress::default());
        progress.update(|s| s.released = true);
        let (script, server_progress) = (self.script.clone(), progress.clone());
        net.host(SERVER, move || {
            hosts::serve(script.clone(), server_progress.clone())
        });
        let value = Rc::new(RefCell::new(None));
        let slot = value.clone();
        let session = client(NetworkConnector::new(self.keepalive, tap), progress.clone());
        net.client(CLIENT, async move {
            *slot.borrow_mut() = Some(session.await);
            Ok(())
        });

        let mut pending = plan.faults().iter().copied().peekable();
        let mut open: Option<(Fault, Duration)> = None;
        // A due fault that waits for the next connection: the connections
        // the server had accepted when it fell due.
        let mut waiting: Option<(Fault, u32)> = None;
        let mut started: Option<Duration> = None;
        let ended = loop {
            // Faults count from the first session's setup: a fault before
            // it tests nothing about reconnecting.
            if started.is_none() && progress.lock().connections > 0 {
                started = Some(net.elapsed());
            }
            if let Some(start) = started {
                let since = net.elapsed().saturating_sub(start);
                if let Some((fault, ends)) = open
                    && since >= ends
                {
                    end(&mut net, fault.kind);
                    entered.record("network", &format!("{} ends", fault.kind.name()));
                    open = None;
                }
                if open.is_none()
                    && waiting.is_none()
                    && let Some(fault) = pending.next_if(|f| since >= f.at)
                {
                    if fault.kind.waits_for_a_connection() {
                        waiting = Some((fault, progress.lock().accepted));
                        entered.record("network", &format!("{fault} waits for a connection"));
                    } else {
                        begin(&mut net, fault.kind);
                        entered.record("network", &format!("{fault} begins"));
                        open = Some((fault, fault.at + fault.lasts));
                    }
                }
                if let Some((fault, accepted)) = waiting
                    && progress.lock().accepted > accepted
                {
                    begin(&mut net, fault.kind);
                    entered.record("network", &format!("{fault} begins"));
                    open = Some((fault, since + fault.lasts));
                    waiting = None;
                }
            }
            between.set(None);
            let stepped = net.step();
            between.set(Some(net.elapsed()));
            match stepped {
                Ok(true) => break Ok(()),
                Ok(false) => {}
                Err(e) if e.to_string().starts_with("Ran for duration") => {
                    break Err(FailureKind::TimeLimit { limit });
                }
                Err(e) => break Err(FailureKind::Error(format!("the simulated network: {e}"))),
            }
        };
        // The hosts' tasks are dropped while the context is still entered.
        drop(net);
        let result = ended.and_then(|()| {
            value.borrow_mut().take().ok_or_else(|| {
                FailureKind::Error("the session's host ended without a result".to_string())
            })
        });
        entered.finish(result)
    }
}

/// Starts a fault.
fn begin(net: &mut turmoil::Sim<'_>, kind: FaultKind) {
    match kind {
        FaultKind::Hold | FaultKind::Move => net.hold(CLIENT, SERVER),
        FaultKind::Partition | FaultKind::Handshake => net.partition(CLIENT, SERVER),
        FaultKind::LinkDown => net.partition_oneway(SERVER, CLIENT),
        FaultKind::Restart => net.crash(SERVER),
    }
}

/// Ends a fault.
fn end(net: &mut turmoil::Sim<'_>, kind: FaultKind) {
    match kind {
        FaultKind::Hold | FaultKind::Move => net.release(CLIENT, SERVER),
        FaultKind::Partition | FaultKind::Handshake => net.repair(CLIENT, SERVER),
        FaultKind::LinkDown => net.repair_oneway(SERVER, CLIENT),
        FaultKind::Restart => net.bounce(SERVER),
    }
}
