//! One seeded session: the agent's builder, instrumented; the script,
//! played; the liveness phase; the [`RunRecord`].
//!
//! The soak drives the script itself rather than through `play`, for four
//! reasons: it records every tool run, it plays the user (typing the
//! turns the script waits for), it settles a session whose connection
//! the script closed (`play` would wait for answers that can never come),
//! and it stamps every event with its virtual time.
//!
//! The **liveness phase** follows the fault phase (the script's last
//! action): no fault fires any more, and the session must settle (every
//! call the script issued and did not cancel answered, or the connection
//! over when the script ended it, then quiet for the settle window)
//! within its bound of virtual time ([`LIVENESS_BOUND`], or more for an
//! agent whose tools are slow: see [`liveness_bound`]; for a session that
//! resumes, at least the longest reconnect its policy allows). A script
//! that ends with the user hanging up (`hang-up`) skips the wait for
//! answers: the soak disconnects the session at once, while its tools
//! run. Once the session has ended, its tools are watched for up to the
//! bound: none may still be running.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::executor::{self, Seed, Swarm, Trace};
use crate::session::{LiveBuilder, LiveEvent};
use crate::soak::agent::RunContext;
use crate::soak::agent::tools::{ExecutionLog, recorded};
use crate::soak::check::reconnect_ends::reconnect_bound;
use crate::soak::generate::faults::Faults;
use crate::soak::generate::hang_up::{ends_in_hang_up, ends_its_connection};
use crate::soak::run::engine::Target;
use crate::soak::run::record::{Calls, Governance, RunRecord, Settling, TimedEvent, reconnecting};
use crate::soak::run::resolving::{self, ResolveLog, ResolvedSlot};
use crate::soak::run::user;
use crate::soak::run::watching::{self, WatchLog, Watched};
use crate::state::{MemoryJournalSink, State};
use crate::testing::{Action, ReplayControl, ScriptedServer};

/// How long the session may take to settle after the fault phase, at
/// least.
pub const LIVENESS_BOUND: Duration = Duration::from_secs(60);

/// The liveness bound for tools that take up to `longest`: a call still
/// running when the fault phase ends may be a latency spike (up to
/// fifteen times the longest latency), so the bound is more than that.
pub fn liveness_bound(longest: Duration) -> Duration {
    LIVENESS_BOUND.max(longest.saturating_mul(20))
}

/// How long the session must be quiet to count as settled.
pub const SETTLE_WINDOW: Duration = Duration::from_millis(200);

/// How many liveness bounds a run may go on past its script's own pauses
/// and one per call (a script waiting for an answer that never comes
/// stops there).
const RUN_CAP_BOUNDS: u32 = 10;

/// The builder, its state journaled and its tools recorded; and the flow
/// that governs it.
fn prepare(
    target: &Target,
    mut builder: LiveBuilder,
    ctx: &RunContext,
    journal: Arc<MemoryJournalSink>,
    log: &ExecutionLog,
    watching: &WatchLog,
    resolving: &ResolveLog,
) -> (
    LiveBuilder,
    Option<Governance>,
    Vec<Watched>,
    Vec<ResolvedSlot>,
) {
    let state = match builder.inner.state_ref().cloned() {
        Some(state) => state,
        None => {
            builder = builder.state(ctx.state.clone());
            ctx.state.clone()
        }
    };
    state.add_journal_sink(journal);
    builder.inner.config.tools = recorded(&builder.inner.config.tools, log);
    let (watchers, watched) = watching::recorded(&builder.inner.config.watchers, &state, watching);
    builder.inner.config.watchers = watchers;
    let mut resolved = Vec::new();
    if let Some(governance) = builder.inner.config.governance.as_mut()
        && let Some(conversation) = governance.conversation.as_mut()
    {
        let (wrapped, slots) = resolving::recorded(conversation, resolving);
        *conversation = Arc::new(wrapped);
        resolved = slots;
    }
    let governance = builder
        .inner
        .config
        .governance
        .as_ref()
        .map(|g| Governance {
            spec: target.spec.clone().unwrap_or_else(|| g.spec.clone()),
            enforcement: g.enforcement,
        });
    (builder, governance, watched, resolved)
}

/// How many tool calls `script` makes.
fn calls_in(script: &ScriptedServer) -> u32 {
    script
        .actions()
        .iter()
        .map(|a| match a {
            Action::Call(_) => 1,
            Action::CallMany(calls) => calls.len() as u32,
            _ => 0,
        })
        .sum()
}

/// The virtual time limit of a run of `script` (the executor's, past
/// which the run fails as still going): the executor's default hour, or
/// more for an agent whose pauses or slow tools need it. The run's own
/// cap (its script's pauses and a liveness bound per call and ten more)
/// and the settling after it come first, so a session that is merely
/// slow is judged by the soak's liveness bounds, not cut short by the
/// executor: a tool that may take ten minutes, spiking to fifteen times
/// that, is slow, not stuck.
///
/// At most a day of virtual time: a script whose pauses add up to more (a
/// damaged recording's timestamps) would otherwise keep the session's
/// telemetry ticking for as long as it says, in real time too.
pub(crate) fn time_limit(target: &Target, script: &ScriptedServer) -> Duration {
    const MOST: Duration = Duration::from_secs(24 * 3600);
    let cap = script_pauses(script).saturating_add(bounds(target.liveness_bound, script));
    let settle = target.liveness_bound.saturating_add(target.liveness_bound);
    crate::executor::DEFAULT_TIME_LIMIT.max(cap.saturating_add(settle).min(MOST))
}

/// `bound` for each of `script`'s calls and ten more: what a run may go on
/// past its pauses.
fn bounds(bound: Duration, script: &ScriptedServer) -> Duration {
    let n = RUN_CAP_BOUNDS.saturating_add(calls_in(script));
    bound.checked_mul(n).unwrap_or(Duration::MAX)
}

fn script_pauses(script: &ScriptedServer) -> Duration {
    script
        .actions()
        .iter()
        .map(|a| match a {
            Action::PauseMs(ms) => Duration::from_millis(*ms),
            _ => Duration::ZERO,
        })
        .fold(Duration::ZERO, Duration::saturating_add)
}

/// A session's way over a simulated network to the script's player on
/// the server host: its connector (tapped) and the script's control.
#[cfg(feature = "network")]
pub(crate) struct OverNetwork {
    pub connector: crate::network::NetworkConnector,
    pub control: ReplayControl,
    pub tap: crate::network::Tap,
}

/// Without the `network` feature, no run goes over a network.
#[cfg(not(feature = "network"))]
pub(crate) enum OverNetwork {}

/// Runs one session of `target` on `script`, inside a simulation of
/// `seed`: over in-memory connections, or over the simulated network when
/// `network` is given (its server host plays the same script). The trace,
/// its hash and the virtual time are filled in by the caller once the
/// simulation ends.
pub(crate) async fn play(
    target: &Target,
    seed: Seed,
    faults: Faults,
    swarm: Swarm,
    script: ScriptedServer,
    network: Option<OverNetwork>,
) -> RunRecord {
    let journal = Arc::new(MemoryJournalSink::new());
    let ctx = RunContext {
        seed,
        faults: faults.clone(),
        state: State::new(),
    };
    let log = ExecutionLog::default();
    let watching = WatchLog::default();
    let resolving = ResolveLog::default();
    let (builder, governance, watched, resolved_slots) = prepare(
        target,
        (target.builder)(&ctx),
        &ctx,
        journal.clone(),
        &log,
        &watching,
        &resolving,
    );
    // `prepare` gave the builder a state if it had none.
    let state = builder.inner.state_ref().cloned().unwrap_or_default();
    let state_before = state.whole_store();
    let resumption = builder.inner.config.resumption.clone();
    let setup_timeout = builder.inner.config.setup_timeout;
    // A reconnect in progress when the fault phase ends may take all its
    // policy allows: every attempt's backoff at its longest and its setup
    // timeout (a declared backoff of seconds is not a hang).
    let bound = if resumption.is_on() {
        target
            .liveness_bound
            .max(reconnect_bound(&resumption, setup_timeout))
    } else {
        target.liveness_bound
    };
    let mut record = RunRecord {
        agent: target.name.clone(),
        seed,
        swarm,
        faults,
        script: ScriptedServer::new(),
        connect_error: None,
        events: Vec::new(),
        session_log: Vec::new(),
        journal: Vec::new(),
        state_before,
        state_after: BTreeMap::new(),
        sent: Vec::new(),
        sent_at: Vec::new(),
        sent_on: Vec::new(),
        server_frames: Vec::new(),
        server_frames_at: Vec::new(),
        executions: Vec::new(),
        calls: Calls::default(),
        replay_errors: Vec::new(),
        governance,
        settling: Settling {
            bound,
            ..Settling::default()
        },
        resumption,
        setup_timeout,
        typed: Vec::new(),
        typed_at: Vec::new(),
        logs: Vec::new(),
        watched,
        watch_calls: Vec::new(),
        resolved_slots,
        resolutions: Vec::new(),
        trace: Trace::default(),
        trace_hash: 0,
        virtual_time: Duration::ZERO,
        network: None,
        modelled: Default::default(),
        issued: Default::default(),
        readable: Default::default(),
        samples: Default::default(),
    };
    let typing = record.faults.is_on(crate::soak::FaultKind::Typing);
    let turns = user::turns(target, seed, &script, typing);
    // Within the executor's limit, less a bound for what follows the
    // cap (the session ending, its tools finishing): a run the script
    // never finishes is judged by the soak, which says where the script
    // stood, rather than cut by the executor.
    let limit = time_limit(target, &script);
    let cap = script_pauses(&script)
        .saturating_add(bounds(bound, &script))
        .min(limit.saturating_sub(bound).max(limit / 2));
    let hangs_up = ends_in_hang_up(&record.faults, script.actions());
    let hangs_up_reconnecting = hangs_up && ends_its_connection(script.actions());
    // The caller puts its copy of the script in the record.
    let script = script.answers_may_cross_cancellations();
    let spans = script.spans_connections();
    // Over a network, connections may end anywhere.
    let over_network = network.is_some();
    let spans = spans || over_network;
    #[cfg(feature = "network")]
    let tap = network.as_ref().map(|n| n.tap.clone());
    let (connected, control) = if let Some(network) = network {
        #[cfg(feature = "network")]
        {
            (
                builder.connect_with_connector(network.connector).await,
                network.control,
            )
        }
        #[cfg(not(feature = "network"))]
        match network {}
    } else if spans {
        let (connector, control) = script.into_connector();
        (builder.connect_with_connector(connector).await, control)
    } else {
        let (transport, control) = script.into_transport();
        (builder.connect_with_transport(transport).await, control)
    };
    let handle = match connected {
        Ok(handle) => handle,
        Err(e) => {
            // Over a network, the first connection may die before its
            // `setupComplete` reaches the session: no handle yet, nothing
            // to resume, and the session rightly fails to connect.
            #[cfg(feature = "network")]
            if let Some(tap) = &tap {
                let heard = tap.heard();
                record.network = Some(crate::soak::run::record::NetworkRun {
                    lost_before_setup: matches!(
                        e,
                        crate::session::SessionError::SetupFailed(_)
                            | crate::session::SessionError::SetupTimeout(_)
                            | crate::session::SessionError::Transport(_)
                    ) && !heard.died.is_empty(),
                    written: heard.written,
                    died: heard.died,
                });
            }
            record.connect_error = Some(e.to_string());
            record.replay_errors = control.errors();
            return record;
        }
    };
    let mut stream = handle.events();
    let typed: user::Sent = Arc::new(Mutex::new(Vec::new()));
    let connections = (spans && !turns.is_empty()).then(|| handle.events());
    control.release();
    let driver = (!turns.is_empty()).then(|| {
        if over_network {
            let events = handle.events();
            // The network's user follows what the script waits for.
            let turns = turns.into_iter().filter(|t| t.expected).collect();
            let user = user::follow(
                control.clone(),
                handle.clone(),
                turns,
                typed.clone(),
                events,
            );
            return executor::spawn("soak:user", user);
        }
        let user = user::play(
            control.clone(),
            handle.clone(),
            turns,
            typed.clone(),
            connections,
        );
        executor::spawn("soak:user", user)
    });

    let give_up = tokio::time::Instant::now() + cap;
    // Over a network nothing counts deliveries (a frame may be lost on
    // the way): the script is done once it has acted, and the settle
    // window lets what is in flight land.
    let script_done = |control: &ReplayControl| {
        control.is_drained() || control.is_finished() || (over_network && control.actions_done())
    };
    // The fault phase: events until the script has played (or ended). Only
    // an event or the script's progress wakes this, so long silences cost
    // nothing here.
    let mut session_over = false;
    loop {
        tokio::select! {
            biased;
            event = stream.next() => match event {
                Some(event) => record.events.push(TimedEvent { at: executor::now(), event }),
                None => {
                    session_over = true;
                    break;
                }
            },
            _ = control.wait_until(script_done) => break,
            _ = tokio::time::sleep_until(give_up) => break,
        }
    }
    if script_done(&control) {
        record.settling.script_done_at = Some(executor::now());
        // The user hangs up while the last calls run, or, when the script
        // ended the connection, once the session says it is reconnecting
        // (if it ends instead, there is nobody to hang up on).
        // (It may have said so already.)
        let mut waiting = hangs_up_reconnecting && !reconnecting(&record.events);
        while waiting && !session_over {
            tokio::select! {
                biased;
                event = stream.next() => match event {
                    Some(event) => {
                        waiting = !matches!(event, LiveEvent::Reconnecting { .. });
                        record.events.push(TimedEvent { at: executor::now(), event });
                    }
                    None => session_over = true,
                },
                _ = tokio::time::sleep_until(give_up) => waiting = false,
            }
        }
        if hangs_up && !session_over {
            record.settling.hung_up_at = Some(executor::now());
            handle.disconnect().await;
        }
    }
    // The liveness phase: quiet for the settle window, with every call
    // answered, or the connection over when the script ended it.
    while !session_over {
        let quiet_until = (tokio::time::Instant::now() + target.settle_window).min(give_up);
        tokio::select! {
            biased;
            event = stream.next() => match event {
                Some(event) => record.events.push(TimedEvent { at: executor::now(), event }),
                None => session_over = true,
            },
            _ = tokio::time::sleep_until(quiet_until) => {
                let over = if control.ended_by_script() {
                    !handle.is_connected()
                } else {
                    control.unanswered_calls().is_empty() || !handle.is_connected()
                };
                if script_done(&control) && over {
                    record.settling.settled_at = Some(executor::now());
                    break;
                }
                if tokio::time::Instant::now() >= give_up {
                    break;
                }
            }
        }
    }
    if session_over {
        // The session ended and every event was read.
        record.settling.settled_at = Some(executor::now());
        if record.settling.script_done_at.is_none() && script_done(&control) {
            record.settling.script_done_at = Some(executor::now());
        }
    }
    record.settling.ended = !handle.is_connected();
    if !script_done(&control) {
        record.settling.script_at = Some(control.progress().lock().at.to_string());
    }
    record.settling.ended_by_script = control.ended_by_script();
    if let Some(driver) = driver {
        driver.abort();
    }
    handle.disconnect().await;
    while let Some(event) = stream.next().await {
        record.events.push(TimedEvent {
            at: executor::now(),
            event,
        });
    }
    // The session has ended: a tool it left running would finish within
    // the bound, where `liveness` sees it.
    log.ended_by(crate::clock::deadline_in(bound)).await;
    record.session_log = handle.session_log();
    record.journal = journal.take();
    record.state_after = state.whole_store();
    for (message, at, on) in control.take_sent_timed() {
        record.sent.push(message);
        record.sent_at.push(at);
        record.sent_on.push(on);
    }
    (record.server_frames, record.server_frames_at) = control.take_delivered();
    #[cfg(feature = "network")]
    if let Some(tap) = tap {
        // On a network, what reached the session is what it was told.
        let heard = tap.heard();
        record.server_frames = heard.received;
        record.server_frames_at = heard.received_at;
        record.network = Some(crate::soak::run::record::NetworkRun {
            lost_before_setup: false,
            written: heard.written,
            died: heard.died,
        });
    }
    record.executions = log.runs();
    record.watch_calls = watching.entries();
    record.resolutions = resolving.entries();
    record.calls = Calls {
        issued: control.issued_calls(),
        answered: control.answered_calls(),
        cancelled: control.cancelled_calls(),
        abandoned: control.abandoned_calls().into_iter().collect(),
        late_answers: control.late_answers(),
    };
    let typed = typed.lock().unwrap_or_else(|p| p.into_inner()).clone();
    (record.typed, record.typed_at) = typed.into_iter().unzip();
    record.replay_errors = control.errors();
    record
}
