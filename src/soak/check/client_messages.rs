//! `client-messages-once`: every message the user typed reaches the
//! server once; on a connection that resumes transparently, what the
//! server had not consumed is replayed first, in order, once. Over the
//! simulated network a connection may die after part of its replay
//! arrived: the rest, written on it and lost with it, is owed by the next.
//! And a connection the session left may deliver its replay late, after
//! the next connection's setup: it is still that connection's replay. A
//! message lost with a dead connection and first got late that way, on a
//! connection left, is owed again by the next one, which resumed from
//! before it; so is a message written on the connection a move leaves
//! while the new one's setup is under way, which the server may get only
//! after that setup.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use serde_json::Value;

use crate::session::LiveEvent;
use crate::soak::check::wire_order;
use crate::soak::run::record::RunRecord;
use crate::soak::run::user::content_key;
use crate::wire::JsonPath;

/// What the server received of the session's content messages.
#[derive(Debug, Default)]
pub(crate) struct Contents {
    /// The new messages (replays left out), in order.
    pub new: Vec<String>,
    /// Where each of [`new`](Self::new) is in the messages the session sent.
    pub new_at: Vec<usize>,
    /// Where, in the messages the session sent, those it sent again on a
    /// resumed connection are (transparent resumption).
    pub replays: Vec<usize>,
}

/// Walks the messages the session sent, connection by connection: on a
/// connection that resumes a handle transparently, the messages the
/// server had not consumed when it issued the handle come first, in
/// order, once each.
pub(crate) fn contents(run: &RunRecord) -> Result<Contents, String> {
    // Each handle the server gave, with its consumed index and when the
    // session got it. A fresh session's script may give a handle the old
    // session was given too, with another index: a setup resumes the
    // latest one it had got by then.
    let given: Vec<(Duration, String, usize)> = run
        .frames_read()
        .iter()
        .zip(&run.server_frames_at)
        .filter_map(|(f, at)| Some((*at, f.payload()?)))
        .filter(|(_, bytes)| wire_order::mentions(bytes, &wire_order::RESUMPTION_UPDATE))
        .filter_map(|(at, bytes)| {
            let message: Value = serde_json::from_slice(bytes).ok()?;
            let update = message.get("sessionResumptionUpdate")?;
            let handle = update.get("newHandle")?.as_str()?.to_string();
            let index = update
                .get("lastConsumedClientMessageIndex")
                .and_then(|i| i.as_str().and_then(|s| s.parse().ok()).or(i.as_u64()))?;
            Some((at, handle, usize::try_from(index).unwrap_or(usize::MAX)))
        })
        .collect();
    let consumed = |handle: &str, setup_at: Option<&Duration>| {
        given
            .iter()
            .rev()
            .find(|(at, given, _)| given == handle && setup_at.is_none_or(|s| at <= s))
            .map(|(_, _, index)| *index)
    };
    let transparent = run.resumption.is_transparent();
    let mut out = Contents::default();
    // This session's messages, numbered from 1 (a fresh session starts
    // over).
    let mut session: Vec<String> = Vec::new();
    let mut due: VecDeque<String> = VecDeque::new();
    // What each earlier connection still owed when the next was set up,
    // by its number: its replay may come late.
    let mut owed_before: BTreeMap<u32, VecDeque<String>> = BTreeMap::new();
    let mut connection = 0;
    // Content the current connection got: none means it was refused or
    // died at once, and the next one owes what it owed.
    let mut got = 0;
    // Which connection each message came on, where the record has it:
    // content on another connection than the latest setup's came late on
    // one the session left, or on one it went back to (a move whose new
    // connection never completed), not on the new one.
    let on = |at: usize| (run.sent_on.len() == run.sent.len()).then(|| run.sent_on[at]);
    let mut setup_on = None;
    // The consumed index the latest connection resumed from, when it
    // resumed transparently.
    let mut resumed_from: Option<usize> = None;
    let lost_in_flight = written_on_dead_connections(run);
    for (at, message) in run.sent.iter().enumerate() {
        if let Some(setup) = message.get("setup") {
            let setup_on_before = setup_on;
            setup_on = on(at);
            connection += 1;
            if connection == 1 {
                continue;
            }
            // A connection that got part of what it owed and then ended
            // owes the rest to the next one, if the rest was written on a
            // connection the network killed: it may never have arrived.
            if let Some(missing) = due
                .front()
                .filter(|missing| got > 0 && !lost_in_flight.contains(missing))
            {
                return Err(format!(
                    "connection #{} never replayed {missing:?} (and {} more) that the server \
                     had not consumed: a client message lost across a reconnect",
                    connection - 1,
                    due.len() - 1
                ));
            }
            got = 0;
            let left_owing = std::mem::take(&mut due);
            if let Some(left) = setup_on_before {
                owed_before.insert(left, left_owing);
            }
            let handle = setup
                .at("/sessionResumption/handle")
                .and_then(Value::as_str);
            resumed_from = None;
            match handle {
                None => session.clear(),
                Some(handle) if transparent => {
                    if let Some(index) = consumed(handle, run.sent_at.get(at)) {
                        due = session.iter().skip(index).cloned().collect();
                        resumed_from = Some(index);
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
            // Late, on a connection the session left: its own replay, or
            // new there; or on the connection the session went back to.
            let owed = on(at).and_then(|c| owed_before.get_mut(&c));
            if let Some(owed) = owed.filter(|owed| owed.front() == Some(&text)) {
                owed.pop_front();
                out.replays.push(at);
                continue;
            }
            session.push(text.clone());
            // The latest connection resumed from before it: the session
            // had it unconsumed, so that connection replays it too. Either
            // the session wrote it on the connection it was leaving while
            // the move's setup was under way, or it wrote it before on a
            // connection the network killed and this is that message's
            // replay, got late.
            if resumed_from.is_some_and(|index| index < session.len()) {
                due.push_back(text.clone());
            }
            out.new.push(text);
            out.new_at.push(at);
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
        out.new_at.push(at);
    }
    // A replay a script that broke off never got is not lost.
    if let Some(missing) = due.front()
        && !run.settling.ended
        && !run.script_broke_off()
    {
        return Err(format!(
            "connection #{connection} never replayed {missing:?}, which the server had not \
             consumed: a client message lost across a reconnect"
        ));
    }
    Ok(out)
}

/// The content of every message the session wrote on a connection the
/// simulated network killed (none in memory): any of it may never have
/// arrived.
fn written_on_dead_connections(run: &RunRecord) -> Vec<String> {
    let Some(network) = &run.network else {
        return Vec::new();
    };
    network
        .written
        .iter()
        .filter(|(connection, _)| network.died.contains(connection))
        .filter_map(|(_, frame)| {
            let message = serde_json::from_slice::<Value>(frame.payload()?).ok()?;
            content_key(&message)
        })
        .collect()
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
    fresh_sessions_get_only_what_came_after(run, &contents)?;
    let lost = run.typed.len().saturating_sub(contents.new.len());
    // A fresh session starts without what was queued for the old one: the
    // messages the user sent while a reconnect that ended fresh was under
    // way may be gone. A session that ended keeps what it queued.
    let dropped = sent_during_fresh_reconnects(run);
    // Over a network, what the session wrote on a connection that then
    // died may never have arrived (the soak's user says it again).
    let in_flight = written_on_dead_connections(run).len();
    // What a script that broke off never got is not lost.
    if lost > dropped + in_flight && !run.settling.ended && !run.script_broke_off() {
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

/// A session that starts fresh drops what was queued for the old one (a
/// fresh server has none of its context) and says so: from the instant of
/// each `resumed { fresh: true }` on, the server gets no more new messages
/// than the user typed from that instant on. A message queued while the
/// session reconnected and sent into the fresh session breaks the count,
/// whatever the user typed later.
fn fresh_sessions_get_only_what_came_after(
    run: &RunRecord,
    contents: &Contents,
) -> Result<(), String> {
    for timed in &run.events {
        if !matches!(timed.event, LiveEvent::Resumed { fresh: true, .. }) {
            continue;
        }
        let since = timed.at;
        let got = contents
            .new_at
            .iter()
            .filter(|&&at| run.sent_at.get(at).is_some_and(|&sent| sent >= since))
            .count();
        let typed = run.typed_at.iter().filter(|&&at| at >= since).count();
        if got > typed {
            return Err(format!(
                "the server got {got} new message(s) from t={} on, when the session started \
                 fresh, but the user typed {typed} from then on: a message queued for the old \
                 session was sent into the fresh one, which has none of its context",
                crate::executor::format_time(since)
            ));
        }
    }
    Ok(())
}

/// How many messages the user sent while a reconnect that ended in a
/// fresh session was under way (from its first `reconnecting` to its
/// `resumed { fresh: true }`): the session may drop those.
pub(crate) fn sent_during_fresh_reconnects(run: &RunRecord) -> usize {
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
