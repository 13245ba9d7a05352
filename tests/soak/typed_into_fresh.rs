//! What the user types while a reconnect ends in a fresh session (its
//! handle stale, the resume refused with 1008): the session queued it for
//! the old session, and a fresh server has none of that context, so the
//! session drops it and says so. The soak's user types there now and then
//! (`typing`), where the script waits for nothing, and
//! `client-messages-once` holds the session to dropping it.

use std::time::Duration;

use livesim::Seed;
use livesim::session::LiveEvent;
use livesim::soak::{FaultKind, RunRecord, Soak};
use serde_json::json;

use super::{agent, reconnect_windows, verdict};

/// A passing in-memory run of `sim/pharmacy` (it resumes without
/// replaying, so its fresh connection owes nothing else; typing and reconnects
/// always on) where the user typed while a reconnect that ended
/// fresh: the record, the window and what was typed in it.
fn typed_into_fresh() -> (RunRecord, (Duration, Duration), Vec<String>) {
    let soak = Soak::agent(&agent("pharmacy"))
        .fault(FaultKind::Typing, 1.0)
        .fault(FaultKind::Reconnect, 1.0)
        .fault(FaultKind::Network, 0.0)
        .check_determinism_every(0);
    (0..300)
        .find_map(|s| {
            let run = soak.run_seed(Seed::new(s));
            let record = run.record?;
            assert!(run.failures.is_empty(), "seed {s}: {:?}", run.failures);
            let window = reconnect_windows(&record, true)
                .into_iter()
                .find(|(from, to)| record.typed_at.iter().any(|at| from <= at && at < to))?;
            let typed = (0..record.typed.len())
                .filter(|&i| window.0 <= record.typed_at[i] && record.typed_at[i] < window.1)
                .map(|i| record.typed[i].clone())
                .collect();
            Some((record, window, typed))
        })
        .expect("a pharmacy seed under 300 whose user typed into a fresh session")
}

/// The session drops what the user typed while its reconnect ended fresh:
/// it warns that it did not send it, the server gets no new message from
/// the fresh resume on beyond what the user typed from then on, and the
/// run passes. The same record with one of those messages delivered into
/// the fresh session (as a session that kept its queue would) fails
/// `client-messages-once`, naming when the session started fresh.
#[test]
fn what_the_user_typed_into_a_fresh_session_is_dropped() {
    let (record, (_, fresh_at), typed) = typed_into_fresh();
    assert!(!typed.is_empty());
    assert!(
        record.events.iter().any(|timed| timed.at == fresh_at
            && matches!(&timed.event, LiveEvent::Warning { message }
                if message.contains("are not sent: the server started a fresh session"))),
        "no warning at the fresh resume: {:?}",
        record.events
    );
    // The fresh session's setup: the last the server got by then.
    let setup = (0..record.sent.len())
        .rfind(|&i| record.sent[i].get("setup").is_some() && record.sent_at[i] <= fresh_at)
        .expect("the fresh session's setup");
    // What the fresh connection got (it replays nothing) is what the user
    // typed from then on, if that.
    let got = record.sent[setup + 1..]
        .iter()
        .take_while(|m| m.get("setup").is_none())
        .filter(|m| m.get("clientContent").is_some() || m.get("realtimeInput").is_some())
        .count();
    let typed_since = record.typed_at.iter().filter(|at| **at >= fresh_at).count();
    assert!(got <= typed_since, "{got} > {typed_since}");
    assert_eq!(verdict("client-messages-once", &record), Ok(()));

    let mut leaked = record.clone();
    let message = json!({ "clientContent": {
        "turns": [{ "role": "user", "parts": [{ "text": typed[0] }] }],
        "turnComplete": true
    } });
    leaked.sent.insert(setup + 1, message);
    leaked.sent_at.insert(setup + 1, fresh_at);
    let on = leaked.sent_on.get(setup).copied();
    if let Some(on) = on {
        leaked.sent_on.insert(setup + 1, on);
    }
    let err = verdict("client-messages-once", &leaked).unwrap_err();
    assert!(
        err.contains("when the session started fresh")
            && err.ends_with(
                "a message queued for the old session was sent into the fresh one, which has \
                 none of its context"
            ),
        "{err}"
    );
}
