//! The invariants of a session that changes connections (their names and
//! the table are in [`crate::soak::check::invariants`]): no tool runs twice for one
//! call, no client message is lost or sent twice, every reconnect ends
//! within its bound, nothing is stored twice, and no resumption handle
//! shows anywhere a person or a file could read it.
//!
//! Each holds trivially for a run on one connection, so every agent is
//! checked against all of them.

use crate::wire::JsonPath;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write as _;
use std::time::Duration;

use serde_json::Value;

use crate::executor::format_time;
use crate::session::{LiveEvent, Resumption};
use crate::soak::check::{calls_by_connection, go_away, wire_order};
use crate::soak::run::record::RunRecord;
use crate::soak::run::user::content_key;
use crate::testing::Action;

/// Every call id the frames that reached the session issued, with the
/// connections (numbered from 1) that issued it: worked out once per run,
/// for every check that reads it.
pub(crate) fn issues(run: &RunRecord) -> &BTreeMap<String, BTreeSet<usize>> {
    &calls_by_connection::server_calls(run).issued
}

/// How many times a call may be answered or run: once per connection
/// that issued it (a later connection's call with an old id is a new
/// call; a repeat on the same connection is not).
pub(crate) fn allowed(issues: &BTreeMap<String, BTreeSet<usize>>, id: &str) -> usize {
    issues.get(id).map_or(0, BTreeSet::len)
}

fn connections_of(issues: &BTreeMap<String, BTreeSet<usize>>, id: &str) -> String {
    let list: Vec<String> = issues
        .get(id)
        .into_iter()
        .flatten()
        .map(|n| format!("#{n}"))
        .collect();
    list.join(", ")
}

/// `tool-ran-once`.
pub(crate) fn tool_ran_once(run: &RunRecord) -> Result<(), String> {
    let issues = issues(run);
    let mut runs: BTreeMap<&str, Vec<&crate::soak::run::record::ToolExecution>> = BTreeMap::new();
    for execution in &run.executions {
        if let Some(id) = &execution.call_id {
            runs.entry(id.as_str()).or_default().push(execution);
        }
    }
    for (id, ran) in runs {
        let may = allowed(issues, id);
        if ran.len() <= may {
            continue;
        }
        let starts: Vec<String> = ran.iter().map(|e| format_time(e.started)).collect();
        let issued = match may {
            0 => "though no frame that reached the session issued it".to_string(),
            _ => format!(
                "but it was issued on {may} connection(s) ({})",
                connections_of(issues, id)
            ),
        };
        return Err(format!(
            "{} ran {} times for call {id} (from t={}), {issued}: a tool never runs twice for \
             one call",
            ran[0].tool,
            ran.len(),
            starts.join(", t=")
        ));
    }
    Ok(())
}

/// What the server received of the session's content messages.
#[derive(Debug, Default)]
pub(crate) struct Contents {
    /// The new messages (replays left out), in order.
    pub new: Vec<String>,
    /// Where, in the messages the session sent, those it sent again on a
    /// resumed connection are (transparent resumption).
    pub replays: Vec<usize>,
}

/// Walks the messages the session sent, connection by connection: on a
/// connection that resumes a handle transparently, the messages the
/// server had not consumed when it issued the handle come first, in
/// order, once each.
pub(crate) fn contents(run: &RunRecord) -> Result<Contents, String> {
    // The consumed index each handle came with.
    let mut consumed: BTreeMap<&str, usize> = BTreeMap::new();
    let messages: Vec<Value> = run
        .server_frames
        .iter()
        .filter_map(|f| f.payload())
        .filter(|bytes| wire_order::mentions(bytes, &wire_order::RESUMPTION_UPDATE))
        .filter_map(|bytes| serde_json::from_slice(bytes).ok())
        .collect();
    for message in &messages {
        let update = message.get("sessionResumptionUpdate");
        let handle = update
            .and_then(|u| u.get("newHandle"))
            .and_then(Value::as_str);
        let index = update
            .and_then(|u| u.get("lastConsumedClientMessageIndex"))
            .and_then(|i| i.as_str().and_then(|s| s.parse().ok()).or(i.as_u64()));
        if let (Some(handle), Some(index)) = (handle, index) {
            let index = usize::try_from(index).unwrap_or(usize::MAX);
            consumed.entry(handle).or_insert(index);
        }
    }
    let transparent = run.resumption.is_transparent();
    let mut out = Contents::default();
    // This session's messages, numbered from 1 (a fresh session starts
    // over).
    let mut session: Vec<String> = Vec::new();
    let mut due: VecDeque<String> = VecDeque::new();
    let mut connection = 0;
    // Content the current connection got: none means it was refused or
    // died at once, and the next one owes what it owed.
    let mut got = 0;
    // Which connection the script played when each message came, where
    // the record has it: content that came while the script played
    // another connection than the latest setup's came on a connection
    // the session went back to (a move whose new connection never
    // completed), not on the new one.
    let on = |at: usize| (run.sent_on.len() == run.sent.len()).then(|| run.sent_on[at]);
    let mut setup_on = None;
    for (at, message) in run.sent.iter().enumerate() {
        if let Some(setup) = message.get("setup") {
            setup_on = on(at);
            connection += 1;
            if connection == 1 {
                continue;
            }
            if let Some(missing) = due.front().filter(|_| got > 0) {
                return Err(format!(
                    "connection #{} never replayed {missing:?} (and {} more) that the server \
                     had not consumed: a client message lost across a reconnect",
                    connection - 1,
                    due.len() - 1
                ));
            }
            got = 0;
            due.clear();
            let handle = setup
                .at("/sessionResumption/handle")
                .and_then(Value::as_str);
            match handle {
                None => session.clear(),
                Some(handle) if transparent => {
                    if let Some(&index) = consumed.get(handle) {
                        due = session.iter().skip(index).cloned().collect();
                    }
                }
                Some(_) => {}
            }
            continue;
        }
        let Some(text) = content_key(message) else {
            continue;
        };
        if on(at) != setup_on {
            // On the connection the session went back to: new, and
            // nothing the latest one owes.
            session.push(text.clone());
            out.new.push(text);
            continue;
        }
        got += 1;
        if let Some(next) = due.pop_front() {
            if next != text {
                return Err(format!(
                    "connection #{connection} should first replay {next:?}, which the server had \
                     not consumed, but got {text:?}: a client message lost or sent twice across \
                     a reconnect"
                ));
            }
            out.replays.push(at);
            continue;
        }
        session.push(text.clone());
        out.new.push(text);
    }
    if let Some(missing) = due.front()
        && !run.settling.ended
    {
        return Err(format!(
            "connection #{connection} never replayed {missing:?}, which the server had not \
             consumed: a client message lost across a reconnect"
        ));
    }
    Ok(out)
}

/// `client-messages-once`.
pub(crate) fn client_messages_once(run: &RunRecord) -> Result<(), String> {
    let contents = contents(run)?;
    // What the server got new is what the user typed, in order: nothing
    // twice, nothing invented.
    let mut typed = run.typed.iter();
    for (i, text) in contents.new.iter().enumerate() {
        if !typed.any(|t| t == text) {
            let times = contents.new[..=i].iter().filter(|t| *t == text).count();
            return Err(format!(
                "the server got {text:?} {times} time(s) as a new message, but the user typed it \
                 {} time(s) before: a client message sent twice",
                run.typed.iter().filter(|t| *t == text).count()
            ));
        }
    }
    let lost = run.typed.len().saturating_sub(contents.new.len());
    // A fresh session starts without what was queued for the old one: the
    // messages the user sent while a reconnect that ended fresh was under
    // way may be gone. A session that ended keeps what it queued.
    let dropped = sent_during_fresh_reconnects(run);
    // Over a network, what the session wrote on a connection that then
    // died may never have arrived (the soak's user says it again).
    let in_flight = run.network.as_ref().map_or(0, |network| {
        network
            .written
            .iter()
            .filter(|(connection, frame)| {
                network.died.contains(connection)
                    && frame.payload().is_some_and(|bytes| {
                        serde_json::from_slice::<Value>(bytes)
                            .ok()
                            .as_ref()
                            .and_then(content_key)
                            .is_some()
                    })
            })
            .count()
    });
    if lost > dropped + in_flight && !run.settling.ended {
        return Err(format!(
            "the user typed {} message(s), but the server got {} of them: {lost} lost, of which \
             {dropped} were dropped for a fresh session and {in_flight} were on connections the \
             network killed, and the session is still connected",
            run.typed.len(),
            contents.new.len()
        ));
    }
    Ok(())
}

/// How many messages the user sent while a reconnect that ended in a
/// fresh session was under way (from its first `reconnecting` to its
/// `resumed { fresh: true }`): the session may drop those.
fn sent_during_fresh_reconnects(run: &RunRecord) -> usize {
    let mut windows = Vec::new();
    let mut began = None;
    for timed in &run.events {
        match &timed.event {
            LiveEvent::Reconnecting { .. } => {
                began.get_or_insert(timed.at);
            }
            LiveEvent::Resumed { fresh, .. } => {
                if let Some(start) = began.take()
                    && *fresh
                {
                    windows.push((start, timed.at));
                }
            }
            _ => {}
        }
    }
    run.typed_at
        .iter()
        .filter(|at| windows.iter().any(|(from, to)| from <= *at && *at <= to))
        .count()
}

/// How long one reconnect may take, from the policy's declared numbers
/// (not the session's own backoff function): attempt `a` waits at most
/// `initial × 2^(a-1)`, never more than `max`, and each attempt's setup
/// may take its whole timeout.
pub(crate) fn reconnect_bound(policy: &Resumption, setup_timeout: Duration) -> Duration {
    (1..=policy.max_attempts())
        .map(|attempt| backoff_step(policy, attempt) + setup_timeout)
        .sum()
}

/// The exponential step of the wait before attempt `attempt` (from 1),
/// from the policy's declared numbers: the initial backoff doubled per
/// attempt, at most the longest (the jitter takes up to half of it off).
fn backoff_step(policy: &Resumption, attempt: u32) -> Duration {
    let (initial, max) = policy.backoff_bounds();
    let mut step = initial;
    for _ in 1..attempt.min(30) {
        step = step.saturating_mul(2);
    }
    step.min(max)
}

/// The least time between attempt `attempt` of a reconnect and the next:
/// the session says an attempt begins, then waits its backoff step less
/// up to half of it before connecting; less a millisecond of rounding and
/// the events' delivery (one lane, so a few milliseconds).
fn least_wait(policy: &Resumption, attempt: u32) -> Duration {
    const SLACK: Duration = Duration::from_millis(50);
    (backoff_step(policy, attempt) / 2).saturating_sub(SLACK + Duration::from_millis(1))
}

/// `reconnect-ends`.
pub(crate) fn reconnect_ends(run: &RunRecord) -> Result<(), String> {
    go_away::moved_in_time(run)?;
    let bound = reconnect_bound(&run.resumption, run.setup_timeout);
    let attempts = run.resumption.max_attempts();
    // When the reconnect began, and its last attempt.
    let mut open: Option<(Duration, u32)> = None;
    // A reconnect that begins with a `goAway` move may stay on the old
    // connection when the move fails, until the server ends it: at most
    // the time the server said it had left. The `go_away` event and the
    // move's first `reconnecting` come on different lanes, in either
    // order.
    let mut time_left = Duration::ZERO;
    let mut grace = Duration::ZERO;
    let mut moving = false;
    // When the reconnect's latest attempt began, and whether it was a
    // `goAway` move.
    let mut last_attempt_at: Option<(Duration, bool)> = None;
    let setups = setups_at(run);
    // The latest attempt that waits its backoff, until the next event of
    // its reconnect: when it began, its number.
    let mut waiting: Option<(Duration, u32)> = None;
    for timed in &run.events {
        let at = timed.at;
        if matches!(
            timed.event,
            LiveEvent::Reconnecting { .. }
                | LiveEvent::ResumptionFailed { .. }
                | LiveEvent::Resumed { .. }
                | LiveEvent::Disconnected { .. }
        ) && let Some(setups) = &setups
            && let Some(attempt) = waiting.take()
        {
            waited_at_most(run, setups, attempt, Some(at))?;
        }
        match &timed.event {
            LiveEvent::GoAway { time_left: left } => {
                time_left = left.unwrap_or_default();
                if moving {
                    grace = grace.max(time_left);
                }
            }
            LiveEvent::Reconnecting { attempt, cause } => {
                let last = open.map_or(0, |(_, last)| last);
                if *attempt != last + 1 {
                    return Err(format!(
                        "reconnect attempt {attempt} ({cause}) at t={} follows attempt {last}: \
                         attempts count up from 1",
                        format_time(at)
                    ));
                }
                if *attempt > attempts {
                    return Err(format!(
                        "reconnect attempt {attempt} at t={}, past the policy's {attempts}",
                        format_time(at)
                    ));
                }
                // (A `goAway` move's attempt starts at once, without a
                // wait: the one after it may follow as soon as it fails.)
                if let Some((before, false)) = last_attempt_at {
                    let least = least_wait(&run.resumption, last);
                    if at.saturating_sub(before) < least {
                        return Err(format!(
                            "reconnect attempt {attempt} at t={} came {} after attempt {last}, \
                             but the policy waits at least {} before it (half its backoff step)",
                            format_time(at),
                            format_time(at.saturating_sub(before)),
                            format_time(least)
                        ));
                    }
                }
                last_attempt_at = Some((at, cause == "goAway"));
                if cause != "goAway" {
                    waiting = Some((at, *attempt));
                }
                if cause == "goAway" && open.is_none() {
                    grace = time_left;
                    moving = true;
                }
                let began = open.map_or(at, |(began, _)| began);
                open = Some((began, *attempt));
            }
            // A fresh session is a new start, with attempts of its own.
            LiveEvent::ResumptionFailed { .. } => {
                open = Some((at, 0));
                last_attempt_at = None;
            }
            LiveEvent::Resumed { .. } | LiveEvent::Disconnected { .. } => {
                last_attempt_at = None;
                if let Some((began, last)) = open.take() {
                    let took = at.saturating_sub(began);
                    if took > bound + grace {
                        return Err(format!(
                            "a reconnect took from t={} to t={} ({} attempt(s)), past its bound \
                             of {}",
                            format_time(began),
                            format_time(at),
                            last,
                            format_time(bound + grace)
                        ));
                    }
                }
                grace = Duration::ZERO;
                time_left = Duration::ZERO;
                moving = false;
            }
            _ => {}
        }
    }
    if let (Some(setups), Some(attempt)) = (&setups, waiting) {
        waited_at_most(run, setups, attempt, None)?;
    }
    match open {
        Some((began, last)) => Err(format!(
            "a reconnect that began at t={} (attempt {last}) never ended: no `resumed`, no \
             `disconnected`",
            format_time(began)
        )),
        None => Ok(()),
    }
}

/// When the script got each setup, in order; `None` over a network (its
/// delivery takes its own time) or in a record whose times a test took
/// out.
fn setups_at(run: &RunRecord) -> Option<Vec<Duration>> {
    (run.network.is_none() && run.sent_at.len() == run.sent.len()).then(|| {
        run.sent
            .iter()
            .zip(&run.sent_at)
            .filter(|(message, _)| message.get("setup").is_some())
            .map(|(_, at)| *at)
            .collect()
    })
}

/// An attempt that began at `began` waits at most its backoff step before
/// it connects: the setup the script got after it, before the next event
/// of its reconnect (`until`), came no later than that step after it
/// (plus delivery). An attempt whose connection failed before its setup
/// has none to time.
fn waited_at_most(
    run: &RunRecord,
    setups: &[Duration],
    (began, attempt): (Duration, u32),
    until: Option<Duration>,
) -> Result<(), String> {
    const SLACK: Duration = Duration::from_millis(50);
    let first = setups.partition_point(|&s| s < began);
    let Some(&setup) = setups.get(first).filter(|&&s| until.is_none_or(|u| s <= u)) else {
        return Ok(());
    };
    let step = backoff_step(&run.resumption, attempt);
    if setup - began > step + SLACK {
        return Err(format!(
            "reconnect attempt {attempt} began at t={}, but its setup reached the server at \
             t={}, {} later: the policy waits at most {} (its backoff step) before connecting",
            format_time(began),
            format_time(setup),
            format_time(setup - began),
            format_time(step)
        ));
    }
    Ok(())
}

/// `stored-once`.
pub(crate) fn stored_once(run: &RunRecord) -> Result<(), String> {
    let issues = issues(run);
    let log = &run.session_log;
    // Lanes interleave differently as delivered and as stored, so each
    // kind of event (one lane's) is compared in its own order.
    let stored = by_kind(log.iter());
    let kept = by_kind(run.delivered().filter(|e| stays(e)));
    for kind in stored.keys().chain(kept.keys()) {
        let (s, k) = (stored.get(kind), kept.get(kind));
        // An answer is stored where its call stands, an extractor's
        // writes where its turn ended, and each is delivered when it is
        // done: those compare whatever their order.
        let answers = matches!(*kind, "tool_response" | "tool_denied" | "extracted");
        if s != k && !(answers && same_events(s, k)) {
            let (s, k) = (s.map_or(0, Vec::len), k.map_or(0, Vec::len));
            return Err(format!(
                "the stored log's `{kind}` events differ from those delivered ({s} stored, {k} \
                 delivered that it keeps): it keeps every event but streaming deltas, notices \
                 and live media, each kind in the order delivered"
            ));
        }
    }
    for kind in ["connected", "disconnected"] {
        let n = log.iter().filter(|e| e.kind() == kind).count();
        if n > 1 {
            return Err(format!("the stored log holds `{kind}` {n} times"));
        }
    }
    let mut connection = 1;
    let mut answers: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for (index, event) in log.iter().enumerate() {
        let (kind, id) = match event {
            LiveEvent::Resumed { connection: n, .. } => {
                if *n != connection + 1 {
                    return Err(format!(
                        "stored event #{index} says the session resumed on connection #{n}, \
                         after connection #{connection}: each connection is stored once, in order"
                    ));
                }
                connection = *n;
                continue;
            }
            LiveEvent::ToolResponse { id, .. } => ("answered", id.as_str()),
            LiveEvent::ToolDenied { id, .. } => ("refused", id.as_str()),
            _ => continue,
        };
        let n = answers.entry((kind, id)).or_default();
        *n += 1;
        let may = allowed(issues, id).max(1);
        if *n > may {
            return Err(format!(
                "the stored log holds {id} {kind} {n} times (stored event #{index}), but it was \
                 issued on {may} connection(s)"
            ));
        }
    }
    Ok(())
}

/// Whether `a` and `b` hold the same events, whatever their order.
fn same_events(a: Option<&Vec<&LiveEvent>>, b: Option<&Vec<&LiveEvent>>) -> bool {
    let (a, b) = (a.map_or(&[][..], |v| &v[..]), b.map_or(&[][..], |v| &v[..]));
    let mut unmatched: Vec<&LiveEvent> = b.to_vec();
    a.len() == b.len()
        && a.iter().all(|event| {
            let found = unmatched.iter().position(|other| other == event);
            found.map(|at| unmatched.swap_remove(at)).is_some()
        })
}

/// `events` grouped by kind, each kind in its order.
fn by_kind<'a>(
    events: impl Iterator<Item = &'a LiveEvent>,
) -> BTreeMap<&'static str, Vec<&'a LiveEvent>> {
    let mut kinds: BTreeMap<&'static str, Vec<&LiveEvent>> = BTreeMap::new();
    for event in events {
        kinds.entry(event.kind()).or_default().push(event);
    }
    kinds
}

/// Whether the stored log keeps `event`, from its documented rule, apart
/// from the session's own: every event but the streaming deltas, the
/// notices (warnings, phase moves, pattern matches) and inline audio,
/// video or images.
fn stays(event: &LiveEvent) -> bool {
    let live = super::model::live_media;
    match event {
        LiveEvent::TextDelta { .. }
        | LiveEvent::InputTranscriptDelta { .. }
        | LiveEvent::OutputTranscriptDelta { .. }
        | LiveEvent::Warning { .. }
        | LiveEvent::PhaseChanged { .. }
        | LiveEvent::PatternMatched { .. } => false,
        LiveEvent::Media { mime_type, .. } => !live(mime_type),
        LiveEvent::Content { parts, .. } => !parts.iter().any(|part| {
            part.pointer("/inlineData/mimeType")
                .and_then(Value::as_str)
                .is_some_and(live)
        }),
        _ => true,
    }
}

/// `handle-secret`.
pub(crate) fn handle_secret(run: &RunRecord) -> Result<(), String> {
    // Every handle the script gave, and the action that gave it.
    let mut handles: Vec<(usize, &str)> = Vec::new();
    for (i, action) in run.script.actions().iter().enumerate() {
        let handle = match action {
            Action::ResumptionUpdate(update) => update.handle.as_deref(),
            Action::Reconnect(reconnect) => reconnect.handle.as_deref(),
            _ => None,
        };
        if let Some(handle) = handle.filter(|h| !h.is_empty())
            && !handles.iter().any(|(_, h)| *h == handle)
        {
            handles.push((i, handle));
        }
    }
    if handles.is_empty() {
        return Ok(());
    }
    // The place is named only when a handle is found there; each text
    // is written into one buffer, reused.
    let leak = |place: &dyn Fn() -> String, text: &str| -> Result<(), String> {
        match handles.iter().find(|(_, h)| text.contains(h)) {
            Some((action, _)) => Err(format!(
                "the handle of action #{} is in {}: a resumption handle is a secret",
                action + 1,
                place()
            )),
            None => Ok(()),
        }
    };
    let mut shown = String::new();
    for (i, timed) in run.events.iter().enumerate() {
        shown.clear();
        let _ = write!(shown, "{} {:?}", timed.event, timed.event);
        leak(&|| format!("delivered event #{i}"), &shown)?;
    }
    for (i, event) in run.session_log.iter().enumerate() {
        shown.clear();
        let _ = write!(shown, "{event} {event:?}");
        leak(&|| format!("stored event #{i}"), &shown)?;
    }
    for entry in &run.journal {
        shown.clear();
        let _ = write!(shown, "{} {}", entry.key, entry.value);
        leak(
            &|| format!("journal entry {} ({})", entry.seq, entry.key),
            &shown,
        )?;
    }
    for (i, entry) in run.trace.entries().enumerate() {
        shown.clear();
        let _ = write!(shown, "{} {}", entry.label, entry.event);
        leak(&|| format!("trace entry #{i}"), &shown)?;
    }
    for (i, line) in run.logs.iter().enumerate() {
        leak(&|| format!("log line #{}", i + 1), line)?;
    }
    for error in &run.replay_errors {
        leak(
            &|| "the script's error report".to_string(),
            &error.to_string(),
        )?;
    }
    if let Some(error) = &run.connect_error {
        leak(&|| "the connect error".to_string(), error)?;
    }
    for execution in &run.executions {
        shown.clear();
        let _ = write!(shown, "{:?} {:?}", execution.args, execution.outcome);
        leak(
            &|| format!("the record of a {} run", execution.tool),
            &shown,
        )?;
    }
    leak(&|| "the run's header".to_string(), &run.header())
}
