//! The seeds corpus holds the real bugs found while building livesim:
//! each entry below failed (broke its invariant) on the code before its
//! fix, with the fix reverted, and must pass today. `corpus.rs` replays
//! every entry under `seeds/`; this file checks that these ones are there,
//! that each still reaches the situation its bug needed (so a change to
//! its agent cannot make it pass by no longer getting there), and that
//! `seeds/README.md` lists each with its fixing commit.

use std::path::Path;

use livesim::session::LiveEvent;
use livesim::soak::{Agent, CorpusEntry, RunRecord, Soak, corpus_files};
use livesim::testing::Action;

/// One real bug, kept as a corpus entry.
struct PastBug {
    /// The entry, under `seeds/`.
    entry: &'static str,
    /// The commit that fixed it.
    fixed_by: &'static str,
    /// The invariant it broke before the fix (the entry's `invariant`).
    invariant: &'static str,
    /// Whether a passing replay still got to where the bug was: `Err`
    /// says what it no longer does.
    reaches: fn(&RunRecord) -> Result<(), String>,
}

const PAST_BUGS: &[PastBug] = &[
    // The old connection's end while moving after goAway abandoned the
    // move, and a handle sent with the new connection's setupComplete was
    // not read: the next reconnect resumed the handle before it.
    PastBug {
        entry: "resumable/0x578e216.json",
        fixed_by: "578e216",
        invariant: "protocol",
        reaches: moved_then_reconnected,
    },
    // A fresh session went on numbering client messages from the old
    // one's count: the transparent replay after it resent a message the
    // server had consumed.
    PastBug {
        entry: "resumable/0xa.json",
        fixed_by: "f977a26",
        invariant: "client-messages-once",
        reaches: fresh_then_resumed,
    },
    // The gate admitted two calls of the committing tool take_payment in
    // one message: both ran and both charged.
    PastBug {
        entry: "payment/0x5.json",
        fixed_by: "81c3631",
        invariant: "at-most-once(take_payment)",
        reaches: second_payment_refused,
    },
    // The soak's own oracle: `wire-order` owed an answer to a call whose
    // tool never started, its connection closed with the call, before
    // the session dispatched it.
    PastBug {
        entry: "resumable/0xe3a.json",
        fixed_by: "776a9be",
        invariant: "wire-order",
        reaches: call_never_started_before_the_end,
    },
    // The soak's own oracle: `wire-order` took the session's final
    // `disconnected` as its last connection's end, so a tool finishing
    // between the connection's close and the session giving up its
    // reconnects was owed an answer it had no connection to go on.
    PastBug {
        entry: "resumable/0xf1f.json",
        fixed_by: "776a9be",
        invariant: "wire-order",
        reaches: tool_finished_while_reconnecting_in_vain,
    },
    // The soak's own test kit: a script player that started again (its
    // host restarted) left the last one's open calls unabandoned, so
    // `wire-order` owed an answer to a call whose connection the network
    // had reset.
    PastBug {
        entry: "pharmacy/0xb5e.json",
        fixed_by: "ccf8057",
        invariant: "wire-order",
        reaches: tool_finished_after_its_connection_died_on_the_network,
    },
    // The soak's own test kit: a frame the player sent on the old
    // connection as the session moved was never read, yet `wire-order`
    // expected its event and the run could not settle.
    PastBug {
        entry: "resumable/0x10.json",
        fixed_by: "3981baf",
        invariant: "wire-order",
        reaches: a_go_away_left_unread_on_the_old_connection,
    },
    // The flow kept a call the server cancelled as running: every later
    // call of its committing tool was refused for the rest of the session.
    PastBug {
        entry: "resumable/0x31.json",
        fixed_by: "c0f8aaa",
        invariant: "refused-never-runs",
        reaches: committing_call_cancelled_then_called_again,
    },
];

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The `resumed` events of the stored log: (connection, fresh).
fn resumes(run: &RunRecord) -> Vec<(u32, bool)> {
    run.session_log
        .iter()
        .filter_map(|event| match event {
            LiveEvent::Resumed { connection, fresh } => Some((*connection, *fresh)),
            _ => None,
        })
        .collect()
}

/// The session moved to connection 2 after goAway and, once that one
/// closed, resumed on connection 3.
fn moved_then_reconnected(run: &RunRecord) -> Result<(), String> {
    let moved = run
        .session_log
        .iter()
        .any(|e| matches!(e, LiveEvent::Reconnecting { cause, .. } if cause == "goAway"));
    if moved && resumes(run) == [(2, false), (3, false)] {
        Ok(())
    } else {
        Err(format!(
            "expected a move after goAway and two resumed connections, got moved={moved}, resumes {:?}",
            resumes(run)
        ))
    }
}

/// A stale handle made the session start fresh, and after that it resumed
/// a handle the fresh session gave (transparently), with the user's
/// messages sent on both sessions.
fn fresh_then_resumed(run: &RunRecord) -> Result<(), String> {
    let resumes = resumes(run);
    let fresh = resumes.iter().position(|(_, fresh)| *fresh);
    let resumed_after = fresh.is_some_and(|at| resumes[at + 1..].iter().any(|(_, f)| !f));
    if resumed_after && run.typed.len() >= 2 {
        Ok(())
    } else {
        Err(format!(
            "expected a fresh session, then a resumed one, and two typed messages; got resumes {resumes:?}, typed {:?}",
            run.typed
        ))
    }
}

/// Two calls of take_payment came in one message: one ran, the other was
/// refused because the first one was still running.
fn second_payment_refused(run: &RunRecord) -> Result<(), String> {
    let ran = run.executions_of("take_payment").count();
    let refused: Vec<&str> = run
        .session_log
        .iter()
        .filter_map(|event| match event {
            LiveEvent::ToolDenied { name, reason, .. } if name == "take_payment" => {
                Some(reason.as_str())
            }
            _ => None,
        })
        .collect();
    let reserved = refused
        .iter()
        .any(|r| r.contains("a call of it is still running"));
    if ran == 1 && refused.len() == 1 && reserved {
        Ok(())
    } else {
        Err(format!(
            "expected one take_payment run and one refusal because the first still ran; got {ran} run(s), refusals {refused:?}"
        ))
    }
}

/// The server cancelled an unanswered call of verify_caller (which
/// commits its step), and a later call of it was admitted and ran.
fn committing_call_cancelled_then_called_again(run: &RunRecord) -> Result<(), String> {
    // A verify_caller call, cancelled before anything answered it.
    let called = |id: &str, before: usize| {
        run.events[..before].iter().any(|e| {
            matches!(&e.event, LiveEvent::ToolCall { calls }
                if calls.iter().any(|c| c.name == "verify_caller" && c.id == id))
        }) && !run.events[..before]
            .iter()
            .any(|e| matches!(&e.event, LiveEvent::ToolResponse { id: r, .. } if r == id))
    };
    let cancelled = run.events.iter().enumerate().position(|(k, e)| {
        matches!(&e.event, LiveEvent::ToolCancelled { ids } if ids.iter().any(|id| called(id, k)))
    });
    let Some(at) = cancelled else {
        return Err("no unanswered verify_caller call was cancelled".into());
    };
    let later = run.events[at..].iter().find_map(|e| match &e.event {
        LiveEvent::ToolCall { calls } => calls
            .iter()
            .find(|c| c.name == "verify_caller")
            .map(|c| c.id.clone()),
        _ => None,
    });
    match later {
        Some(id)
            if run
                .executions_of("verify_caller")
                .any(|x| x.call_id.as_deref() == Some(id.as_str())) =>
        {
            Ok(())
        }
        Some(id) => Err(format!("the later verify_caller call {id} did not run")),
        None => Err("no verify_caller call came after the cancellation".into()),
    }
}

/// A call was stored, its tool never ran, nothing answered it, and the
/// session ended.
fn call_never_started_before_the_end(run: &RunRecord) -> Result<(), String> {
    let calls: Vec<&str> = run
        .session_log
        .iter()
        .filter_map(|event| match event {
            LiveEvent::ToolCall { calls } => Some(calls.iter().map(|c| c.id.as_str())),
            _ => None,
        })
        .flatten()
        .collect();
    let unanswered = calls.iter().find(|id| {
        run.executions
            .iter()
            .all(|e| e.call_id.as_deref() != Some(**id))
            && !run.session_log.iter().any(
                |e| matches!(e, LiveEvent::ToolResponse { id: answered, .. } if answered == **id),
            )
    });
    let ended = run
        .session_log
        .iter()
        .any(|e| matches!(e, LiveEvent::Disconnected { .. }));
    match unanswered {
        Some(_) if ended => Ok(()),
        _ => Err(format!(
            "expected a call whose tool never ran, unanswered, then the session's end; got calls {calls:?}, {} tool run(s), ended={ended}",
            run.executions.len()
        )),
    }
}

/// A tool finished after its connection closed, while the session tried
/// to reconnect and never got a connection again.
fn tool_finished_while_reconnecting_in_vain(run: &RunRecord) -> Result<(), String> {
    let after_resumed = run
        .events
        .iter()
        .rposition(|e| matches!(e.event, LiveEvent::Resumed { .. }))
        .map_or(0, |n| n + 1);
    let closed = run.events[after_resumed..]
        .iter()
        .find(|e| matches!(e.event, LiveEvent::Reconnecting { .. }))
        .map(|e| e.at);
    let ended = run
        .events
        .iter()
        .find(|e| matches!(e.event, LiveEvent::Disconnected { .. }))
        .map(|e| e.at);
    let late = closed.and_then(|closed| {
        run.executions.iter().find(|e| {
            e.finished
                .is_some_and(|at| at > closed && ended.is_none_or(|end| at < end))
        })
    });
    match (late, ended) {
        (Some(_), Some(_)) => Ok(()),
        _ => Err(format!(
            "expected a tool to finish after the last connection closed ({closed:?}) and before the session gave up ({ended:?})"
        )),
    }
}

/// Over the network, a call's connection died under it (the session
/// began to reconnect after the call and before its tool finished), and
/// the session later went on in a fresh session: the server that came
/// back knew nothing of it.
fn tool_finished_after_its_connection_died_on_the_network(run: &RunRecord) -> Result<(), String> {
    if run.network.is_none() {
        return Err("expected the run to go over the simulated network".to_string());
    }
    let reconnects: Vec<_> = run
        .events
        .iter()
        .filter(|e| matches!(e.event, LiveEvent::Reconnecting { .. }))
        .map(|e| e.at)
        .collect();
    let orphaned = run.executions.iter().any(|e| {
        e.finished
            .is_some_and(|done| reconnects.iter().any(|&cut| e.started <= cut && cut < done))
    });
    let fresh = run
        .events
        .iter()
        .any(|e| matches!(e.event, LiveEvent::Resumed { fresh: true, .. }));
    if orphaned && fresh {
        Ok(())
    } else {
        Err(format!(
            "expected a tool to finish after its connection died ({orphaned}) and a fresh session after ({fresh})"
        ))
    }
}

/// The script sent a `goAway` the session never read (it had moved to a
/// new connection first), and the session did move.
fn a_go_away_left_unread_on_the_old_connection(run: &RunRecord) -> Result<(), String> {
    let sent = run
        .script
        .actions()
        .iter()
        .filter(|a| matches!(a, Action::Send(m) if m.get("goAway").is_some()))
        .count();
    let read = run
        .server_frames
        .iter()
        .filter_map(|f| f.payload())
        .filter(|bytes| String::from_utf8_lossy(bytes).contains("\"goAway\""))
        .count();
    let moved = run
        .events
        .iter()
        .any(|e| matches!(e.event, LiveEvent::Resumed { .. }));
    if moved && read < sent {
        Ok(())
    } else {
        Err(format!(
            "expected a move and a goAway left unread (sent {sent}, read {read}, moved {moved})"
        ))
    }
}

/// The corpus is not empty: every past bug's entry is in it, names the
/// invariant the bug broke, and `seeds/README.md` lists it with its fix.
#[test]
fn the_corpus_holds_the_real_bugs_found_so_far() {
    let seeds = repo().join("seeds");
    let files = corpus_files(&seeds).unwrap_or_else(|e| panic!("{e}"));
    assert!(!files.is_empty(), "the seeds corpus is empty");
    let readme = std::fs::read_to_string(seeds.join("README.md")).unwrap();
    for bug in PAST_BUGS {
        let path = seeds.join(bug.entry);
        assert!(
            files.contains(&path),
            "{} is not in the corpus (it keeps the bug fixed by {})",
            path.display(),
            bug.fixed_by
        );
        let entry = CorpusEntry::load(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(entry.invariant, bug.invariant, "{}", bug.entry);
        assert_eq!(
            Some(entry.agent.as_str()),
            bug.entry.split('/').next(),
            "{}",
            bug.entry
        );
        let row = readme
            .lines()
            .find(|line| line.starts_with('|') && line.contains(bug.entry))
            .unwrap_or_else(|| panic!("seeds/README.md has no row for {}", bug.entry));
        assert!(
            row.contains(bug.fixed_by) && row.contains(bug.invariant),
            "seeds/README.md's row for {} names its fix {} and invariant {}: {row}",
            bug.entry,
            bug.fixed_by,
            bug.invariant
        );
    }
}

/// Each past bug's entry passes today (the invariant it broke holds), and
/// still gets to where its bug was.
#[test]
fn each_past_bug_replays_clean_and_still_reaches_its_bug() {
    for bug in PAST_BUGS {
        let path = repo().join("seeds").join(bug.entry);
        let entry = CorpusEntry::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let agent =
            Agent::load(repo().join("sim").join(&entry.agent)).unwrap_or_else(|e| panic!("{e}"));
        let run = Soak::agent(&agent).replay(&entry);
        assert_eq!(
            run.verdict(),
            Ok(()),
            "{} (fixed by {}) fails again\nreplay: livesim sim replay seeds/{}",
            bug.entry,
            bug.fixed_by,
            bug.entry
        );
        assert_eq!(run.verdict_of(bug.invariant), Ok(()), "{}", bug.entry);
        let record = run
            .record
            .as_ref()
            .unwrap_or_else(|| panic!("{}: the replay left no record", bug.entry));
        if let Err(why) = (bug.reaches)(record) {
            panic!(
                "{} no longer reaches the bug fixed by {}: {why}\n{}",
                bug.entry,
                bug.fixed_by,
                record.timeline()
            );
        }
    }
}
