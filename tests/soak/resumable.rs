//! Sessions that resume, soaked: scripts that span connections (handles,
//! drops, stale handles, goAway moves), the invariants of connections
//! catching broken runs by name, and the other agents' seeds making the
//! conversations they made before resumption joined the soak.

use std::time::Duration;

use livesim::Seed;
use livesim::clock::Timestamp;
use livesim::executor::Fnv64;
use livesim::session::LiveEvent;
use livesim::soak::{FaultKind, Faults, RunRecord, Soak, TimedEvent, generate, invariants};
use livesim::state::StateMutation;
use livesim::testing::{Action, ScriptedServer};
use serde_json::{Value, json};

use super::{a_passing_run, agent, verdict};

/// The first passing run of the resumable agent, in seeds under 200, that
/// `wanted` picks.
fn resumable_run(what: &str, wanted: impl Fn(&RunRecord) -> bool) -> RunRecord {
    a_passing_run("resumable", 200, what, wanted)
}

fn resumed(record: &RunRecord) -> bool {
    record
        .delivered()
        .any(|e| matches!(e, LiveEvent::Resumed { fresh: false, .. }))
}

fn fresh(record: &RunRecord) -> bool {
    record
        .delivered()
        .any(|e| matches!(e, LiveEvent::Resumed { fresh: true, .. }))
}

fn is_content(message: &Value) -> bool {
    message.get("clientContent").is_some() || message.get("realtimeInput").is_some()
}

/// The first message a resumed connection got again that other content
/// follows on its connection (so its loss shows as a replay out of order).
fn first_replay(record: &RunRecord) -> Option<usize> {
    record.replays().into_iter().find(|&at| {
        record.sent[at + 1..]
            .iter()
            .take_while(|m| m.get("setup").is_none())
            .any(|m| is_content(m) && *m != record.sent[at])
    })
}

/// Generated scripts of a resuming session span connections as the
/// service does: every reconnect resumes the latest handle given before
/// it, or, right after a setup refused with 1008 "session not found", is
/// fresh; a goAway is followed by a move, or, when it came before any
/// handle, by the connection's end at its deadline, the script's last
/// action; handles are distinctive and never repeat; and every script is
/// a file that loads back.
#[test]
fn a_resuming_sessions_scripts_move_from_connection_to_connection() {
    let resumable = agent("resumable");
    let (mut moves, mut stale, mut go_aways, mut unheld) = (0, 0, 0, 0);
    for s in 0..60 {
        let seed = Seed::new(s);
        let faults = Faults::draw_resuming(seed).tuned(&resumable.faults);
        let script = generate("resumable", &resumable.repertoire, seed, &faults);
        let actions = script.actions();
        let mut latest: Option<String> = None;
        let mut handles = Vec::new();
        let mut going_away = false;
        for (i, action) in actions.iter().enumerate() {
            match action {
                Action::ResumptionUpdate(update) => {
                    if let Some(handle) = &update.handle {
                        assert!(update.resumable && update.transparent, "{update:?}");
                        assert!(handle.starts_with(&format!("handle-{seed}-")), "{handle}");
                        assert!(!handles.contains(handle), "{handle} given twice");
                        handles.push(handle.clone());
                        latest = Some(handle.clone());
                    }
                }
                Action::Send(message) if message.get("goAway").is_some() => {
                    assert!(!going_away, "seed {s}: two goAways on one connection");
                    going_away = true;
                    go_aways += 1;
                }
                Action::Reconnect(reconnect) => {
                    moves += 1;
                    going_away = false;
                    match &reconnect.handle {
                        Some(handle) => assert_eq!(Some(handle), latest.as_ref(), "seed {s} #{i}"),
                        None => {
                            stale += 1;
                            assert!(
                                matches!(&actions[i - 1], Action::RejectSetup(close)
                                    if close.code == 1008 && close.reason.contains("session not found")),
                                "seed {s} #{i}: a fresh session follows a stale handle"
                            );
                            latest = None;
                        }
                    }
                }
                _ => {}
            }
        }
        if going_away {
            // Before any handle: nothing to move with; the server closes
            // the connection at the notice's deadline, and that is the end.
            assert!(
                handles.is_empty(),
                "seed {s}: a goAway with no move after it"
            );
            let (notice, left_ms) = actions
                .iter()
                .enumerate()
                .rev()
                .find_map(|(i, a)| match a {
                    Action::Send(m) if m.get("goAway").is_some() => {
                        let left = m["goAway"]["timeLeft"].as_str().map_or(0, |t| {
                            livesim::wire::parse_duration(t).unwrap().as_millis() as u64
                        });
                        Some((i, left))
                    }
                    _ => None,
                })
                .expect("the notice");
            match &actions[notice + 1..] {
                [Action::PauseMs(ms), Action::Close(close)] => {
                    assert!(
                        *ms <= left_ms,
                        "seed {s}: the close comes after the deadline"
                    );
                    assert_eq!(close.code, 1000, "seed {s}");
                }
                rest => panic!("seed {s}: after a goAway before any handle: {rest:?}"),
            }
            unheld += 1;
        }
        let text = script.to_json().to_string();
        let back = ScriptedServer::from_json_str(&text, "generated").unwrap();
        assert_eq!(back.actions(), actions, "seed {s}");
    }
    assert!(
        moves > 60 && stale > 5 && go_aways > 10 && unheld > 0,
        "{moves} moves, {stale} stale, {go_aways} goAways, {unheld} before any handle"
    );
}

/// A session that does not resume gets no handle and no second
/// connection, even when the reconnect kind is turned on by hand.
#[test]
fn a_session_that_does_not_resume_stays_on_one_connection() {
    let weather = agent("weather");
    for s in 0..40 {
        let faults = Faults::draw(Seed::new(s)).with(FaultKind::Reconnect, 0.5);
        let script = generate("weather", &weather.repertoire, Seed::new(s), &faults);
        assert!(!script.uses_resumption(), "seed {s}");
    }
}

/// The seeds of the agents that do not resume make the conversations
/// they made before resumption joined the soak (seeds recorded against
/// them must replay): a fingerprint of each seed's faults and script,
/// seeds 0..30, taken with the soak as it was before. Changing the
/// generator or the swarm on purpose changes these; say so when you do
/// (`support` left the list when it began to resume, to meet its
/// extractor with reconnects; every agent's last changed when unknown
/// messages began to carry the protocol's fields that have no event of
/// their own (grounding, URL context, an interim transcription, waiting
/// for input, a voice-activity signal); before that, when the model
/// began to give up on a turn now and then (`MALFORMED_FUNCTION_CALL`)
/// and a `goAway` to say no `timeLeft` now and then, and some unknown
/// messages became ones that say nothing (an empty `serverContent`);
/// before that, when a turn's end began to say why now and then and calls with no arguments to come
/// without `args`; before that, when the model's
/// audio began to come two chunks to a frame now and then; before that,
/// when usage began to ride on a tool call's own frame; before that, when a barge-in's last audio chunk began
/// to ride on the interruption's frame, usage on a turn's last text
/// frame, and an interruption to end its turn in the same frame; before
/// that, when the `document` fault began to send code
/// alone with an empty text in its run and text after it; before that,
/// when it began to send code parts and charts; before that, when thoughts began to carry
/// thought signatures; before that, when half the servers began to send a
/// `sessionId`; before that, when the `hang-up` fault joined; before
/// that, `checkout`'s when its basket became an object and a third
/// example joined, the others' when the `server-error` fault joined, and
/// before that, when the `document` fault joined, when faults learned to combine, audio and
/// typing at any point joined, and simulated latencies grew heavy tails:
/// CHANGELOG).
#[test]
fn the_other_agents_seeds_are_unchanged() {
    let recorded = [
        ("weather", 0xeb58_4171_bc4e_51b7_u64),
        ("payment", 0x5124_fc8a_5ddc_30ce),
        ("booking", 0x14f9_d1c9_2d49_2bb0),
        ("checkout", 0x0126_85ce_d4e7_5ef8),
    ];
    for (name, fingerprint) in recorded {
        let soak = Soak::agent(&agent(name)).check_determinism_every(0);
        let mut hash = Fnv64::new();
        for s in 0..30 {
            let record = soak.run_seed(Seed::new(s)).record.expect("a record");
            let mut script = serde_json::to_string_pretty(&record.script.to_json()).unwrap();
            script.push('\n');
            hash.write(format!("{}\n{script}", record.faults).as_bytes());
        }
        assert_eq!(
            hash.finish(),
            fingerprint,
            "the conversations {name}'s seeds 0..30 make have changed"
        );
    }
}

#[test]
fn a_tool_run_twice_for_one_call_is_caught() {
    let good = resumable_run("a resume and a tool run", |r| {
        resumed(r) && r.executions.iter().any(|e| e.call_id.is_some())
    });
    assert_eq!(verdict(invariants::TOOL_RAN_ONCE, &good), Ok(()));
    let mut twice = good.clone();
    let run = twice
        .executions
        .iter()
        .find(|e| e.call_id.is_some())
        .cloned()
        .unwrap();
    let id = run.call_id.clone().unwrap();
    twice.executions.push(livesim::soak::ToolExecution {
        started: run.started + Duration::from_secs(1),
        ..run.clone()
    });
    let err = verdict(invariants::TOOL_RAN_ONCE, &twice).unwrap_err();
    assert!(
        err.starts_with(&format!("{} ran 2 times for call {id} (from t=", run.tool)),
        "{err}"
    );
    assert!(
        err.contains("but it was issued on 1 connection(s) (#"),
        "{err}"
    );
}

#[test]
fn a_replay_lost_or_a_message_sent_twice_is_caught() {
    let good = resumable_run("a transparent replay", |r| first_replay(r).is_some());
    assert_eq!(verdict(invariants::CLIENT_MESSAGES_ONCE, &good), Ok(()));
    let replay = first_replay(&good).unwrap();
    let mut lost = good.clone();
    lost.sent.remove(replay);
    let err = verdict(invariants::CLIENT_MESSAGES_ONCE, &lost).unwrap_err();
    assert!(
        err.contains("which the server had not consumed, but got"),
        "{err}"
    );
    assert!(
        err.ends_with("a client message lost or sent twice across a reconnect"),
        "{err}"
    );

    let mut repeated = good.clone();
    repeated.sent.insert(replay, good.sent[replay].clone());
    let err = verdict(invariants::CLIENT_MESSAGES_ONCE, &repeated).unwrap_err();
    assert!(err.contains("sent twice"), "{err}");

    let mut twice = good.clone();
    let typed = twice.sent.iter().rfind(|m| is_content(m)).cloned().unwrap();
    twice.sent.push(typed);
    let err = verdict(invariants::CLIENT_MESSAGES_ONCE, &twice).unwrap_err();
    assert!(err.ends_with("a client message sent twice"), "{err}");
}

/// A `goAway` move whose new connection never completes sends the held
/// content on the connection the session went back to, after the new
/// connection's setup: `client-messages-once` reads it as the old
/// connection's (new, owing nothing), not as the new one's replay. Had the
/// script been playing the new connection when it came, it would have
/// been a replay out of order.
#[test]
fn content_on_the_connection_a_failed_move_went_back_to_is_not_a_replay() {
    // A transparent resume that replays at least two messages.
    let good = resumable_run("a resume replaying two messages", |r| {
        let replays = r.replays();
        replays.len() >= 2 && r.sent_on.len() == r.sent.len() && {
            let first = replays[0];
            let setup = (0..first)
                .rfind(|&i| r.sent[i].get("setup").is_some())
                .unwrap();
            replays
                .iter()
                .filter(|&&i| i > setup)
                .take_while(|&&i| {
                    !r.sent[setup + 1..=i]
                        .iter()
                        .any(|m| m.get("setup").is_some())
                })
                .count()
                >= 2
                && (0..setup).any(|i| is_content(&r.sent[i]))
        }
    });
    assert_eq!(verdict(invariants::CLIENT_MESSAGES_ONCE, &good), Ok(()));
    let first = good.replays()[0];
    let setup = (0..first)
        .rfind(|&i| good.sent[i].get("setup").is_some())
        .unwrap();
    let last = (0..setup).rfind(|&i| is_content(&good.sent[i])).unwrap();
    // The failed move's setup (the same handle) arrives just before the
    // last message the old connection got.
    let mut failed = good.clone();
    failed.sent.insert(last, good.sent[setup].clone());
    failed.sent_at.insert(last, good.sent_at[last]);
    failed.sent_on.insert(last, good.sent_on[setup]);
    assert_ne!(failed.sent_on[last + 1], failed.sent_on[last]);
    assert_eq!(verdict(invariants::CLIENT_MESSAGES_ONCE, &failed), Ok(()));
    // Played on the new connection, the same message is out of order.
    let mut misplaced = failed.clone();
    misplaced.sent_on[last + 1] = misplaced.sent_on[last];
    let err = verdict(invariants::CLIENT_MESSAGES_ONCE, &misplaced).unwrap_err();
    assert!(
        err.contains("which the server had not consumed, but got"),
        "{err}"
    );
}

/// A connection the session leaves may deliver its replay after the next
/// connection's setup (over the network, a `goAway` came with its
/// `setupComplete` and the move began at once): those late frames are the
/// old connection's replay, and the new connection, resuming the same
/// handle, owes the same messages again. Read as the new connection's,
/// the late copies would be messages sent twice.
#[test]
fn a_late_replay_from_a_connection_left_is_that_connections_replay() {
    // A resume whose replay is the last connection's (no setup after).
    let good = resumable_run("a last connection that replays", |r| {
        let replays = r.replays();
        r.sent_on.len() == r.sent.len()
            && replays
                .first()
                .is_some_and(|&first| !r.sent[first..].iter().any(|m| m.get("setup").is_some()))
    });
    assert_eq!(verdict(invariants::CLIENT_MESSAGES_ONCE, &good), Ok(()));
    let replays = good.replays();
    let setup = (0..replays[0])
        .rfind(|&i| good.sent[i].get("setup").is_some())
        .unwrap();
    let (old, new) = (good.sent_on[setup], good.sent_on[setup] + 1);
    // The next connection's setup (the same handle) comes right after the
    // old one's, then its own replay, then the old one's, late.
    let mut late = good.clone();
    for (i, on) in late.sent_on.iter_mut().enumerate() {
        if i > setup && !replays.contains(&i) {
            *on = new;
        }
    }
    let mut moved = Vec::new();
    for &i in replays.iter().rev() {
        moved.push((
            late.sent.remove(i),
            late.sent_at.remove(i),
            late.sent_on.remove(i),
        ));
    }
    moved.reverse();
    let mut at = setup + 1;
    late.sent.insert(at, good.sent[setup].clone());
    late.sent_at.insert(at, good.sent_at[setup]);
    late.sent_on.insert(at, new);
    for (message, when, _) in &moved {
        at += 1;
        late.sent.insert(at, message.clone());
        late.sent_at.insert(at, *when);
        late.sent_on.insert(at, new);
    }
    for (message, when, on) in moved {
        assert_eq!(on, old);
        at += 1;
        late.sent.insert(at, message);
        late.sent_at.insert(at, when);
        late.sent_on.insert(at, old);
    }
    assert_eq!(verdict(invariants::CLIENT_MESSAGES_ONCE, &late), Ok(()));
    // Counted on the connection being played, the late copies are sent
    // twice.
    let mut misread = late.clone();
    for on in &mut misread.sent_on[setup + 1..] {
        *on = new;
    }
    let err = verdict(invariants::CLIENT_MESSAGES_ONCE, &misread).unwrap_err();
    assert!(err.contains("sent twice"), "{err}");
}

#[test]
fn a_message_the_user_typed_and_the_server_never_got_is_caught() {
    // The last typed message sent once (not a replay of it; not audio).
    let first_send = |r: &RunRecord| {
        let replays = r.replays();
        let typed = |m: &Value| {
            m.get("clientContent").is_some() || m.pointer("/realtimeInput/text").is_some()
        };
        // On the last connection (a replay of it after a move would still
        // bring it to the server, and its loss would not show).
        (0..r.sent.len()).rev().find(|&i| {
            typed(&r.sent[i])
                && !replays.contains(&i)
                && !r.sent[i + 1..].iter().any(|m| m.get("setup").is_some())
        })
    };
    let good = resumable_run("a resume and a typed turn, no fresh session", |r| {
        resumed(r)
            && !fresh(r)
            && !r.settling.ended
            && r.network.is_none()
            && !r.typed.is_empty()
            && first_send(r).is_some()
    });
    let mut lost = good.clone();
    let at = first_send(&good).unwrap();
    lost.sent.remove(at);
    let err = verdict(invariants::CLIENT_MESSAGES_ONCE, &lost).unwrap_err();
    assert!(
        err.contains("lost, of which 0 were dropped for a fresh session"),
        "{err}"
    );
}

#[test]
fn a_reconnect_that_never_ends_or_overstays_its_bound_is_caught() {
    let good = resumable_run("a resume", resumed);
    assert_eq!(verdict(invariants::RECONNECT_ENDS, &good), Ok(()));
    let begins = good
        .events
        .iter()
        .position(|e| matches!(e.event, LiveEvent::Reconnecting { .. }))
        .unwrap();
    let ends = begins
        + good.events[begins..]
            .iter()
            .position(|e| matches!(e.event, LiveEvent::Resumed { .. }))
            .unwrap();

    let mut open = good.clone();
    open.events.truncate(ends);
    let err = verdict(invariants::RECONNECT_ENDS, &open).unwrap_err();
    assert!(
        err.ends_with("never ended: no `resumed`, no `disconnected`"),
        "{err}"
    );

    let mut slow = good.clone();
    slow.events[ends].at = good.events[begins].at + Duration::from_secs(3600);
    let err = verdict(invariants::RECONNECT_ENDS, &slow).unwrap_err();
    assert!(err.contains("past its bound of"), "{err}");

    let mut skipped = good.clone();
    skipped.events.insert(
        begins + 1,
        TimedEvent {
            at: good.events[begins].at,
            event: LiveEvent::Reconnecting {
                attempt: 3,
                cause: "test".into(),
            },
        },
    );
    let err = verdict(invariants::RECONNECT_ENDS, &skipped).unwrap_err();
    assert!(
        err.contains("follows attempt 1: attempts count up from 1"),
        "{err}"
    );
}

/// A reconnect attempt waits at most its backoff step before it connects:
/// a setup that reaches the server later than that after the attempt's
/// `reconnecting` (here, delivered a minute late) fails `reconnect-ends`.
#[test]
fn an_attempt_that_waits_past_its_backoff_is_caught() {
    let waits = |r: &RunRecord| {
        r.events.iter().position(
            |e| matches!(&e.event, LiveEvent::Reconnecting { cause, .. } if cause != "goAway"),
        )
    };
    let good = resumable_run("a reconnect that waits", |r| {
        r.network.is_none() && r.sent_at.len() == r.sent.len() && waits(r).is_some()
    });
    assert_eq!(verdict(invariants::RECONNECT_ENDS, &good), Ok(()));
    let begins = good.events[waits(&good).unwrap()].at;
    let setup = (0..good.sent.len())
        .find(|&i| good.sent[i].get("setup").is_some() && good.sent_at[i] >= begins)
        .expect("the attempt's setup");
    let mut late = good.clone();
    for at in &mut late.sent_at[setup..] {
        *at += Duration::from_secs(60);
    }
    for event in &mut late.events {
        if event.at > good.sent_at[setup] {
            event.at += Duration::from_secs(60);
        }
    }
    for read in &mut late.server_frames_at {
        if *read > good.sent_at[setup] {
            *read += Duration::from_secs(60);
        }
    }
    let err = verdict(invariants::RECONNECT_ENDS, &late).unwrap_err();
    assert!(
        err.contains("its setup reached the server at") && err.contains("before connecting"),
        "{err}"
    );
}

/// A `goAway` move whose new connection failed may stay on the old one
/// until the server ends it, so its reconnect may take the time the
/// server said it had left on top of the policy's bound, whether the
/// `go_away` event comes before the move's first `reconnecting` or
/// after it (they come on different lanes); a moment longer is caught.
#[test]
fn a_failed_move_may_take_the_time_left_whichever_event_comes_first() {
    let good = resumable_run("a goAway move", |r| {
        r.events.iter().any(|e| {
            matches!(&e.event, LiveEvent::Reconnecting { cause, attempt: 1 } if cause == "goAway")
        })
    });
    let begins = good
        .events
        .iter()
        .position(|e| {
            matches!(&e.event, LiveEvent::Reconnecting { cause, attempt: 1 } if cause == "goAway")
        })
        .unwrap();
    // The policy's bound, from its declared numbers.
    let (initial, max) = good.resumption.backoff_bounds();
    let bound: Duration = (0..good.resumption.max_attempts())
        .map(|a| (initial * 2u32.pow(a)).min(max) + good.setup_timeout)
        .sum();
    let left = Duration::from_secs(40);
    let began = good.events[begins].at;
    // The verdict on the record with the move's one `go_away` just
    // before (0) or just after (1) its first `reconnecting`, and the move
    // ending `took` after it began.
    let moved = |go_away_at: usize, took: Duration| {
        let mut run = good.clone();
        run.events
            .retain(|e| !matches!(e.event, LiveEvent::GoAway { .. }));
        let begins = run
            .events
            .iter()
            .position(|e| e.at == began && matches!(e.event, LiveEvent::Reconnecting { .. }))
            .unwrap();
        let resumed = begins
            + run.events[begins..]
                .iter()
                .position(|e| matches!(e.event, LiveEvent::Resumed { .. }))
                .unwrap();
        run.events[resumed].at = began + took;
        run.events.insert(
            begins + go_away_at,
            TimedEvent {
                at: began,
                event: LiveEvent::GoAway {
                    time_left: Some(left),
                },
            },
        );
        verdict(invariants::RECONNECT_ENDS, &run)
    };
    for order in [0, 1] {
        assert_eq!(moved(order, bound + left), Ok(()), "go_away at {order}");
        let err = moved(order, bound + left + Duration::from_secs(1)).unwrap_err();
        assert!(
            err.contains("past its bound of"),
            "go_away at {order}: {err}"
        );
    }
}

#[test]
fn an_event_stored_twice_is_caught() {
    let good = resumable_run("a resume and an answered call", |r| {
        resumed(r) && r.session_log.iter().any(|e| e.kind() == "tool_response")
    });
    assert_eq!(verdict(invariants::STORED_ONCE, &good), Ok(()));
    let mut again = good.clone();
    let at = again
        .session_log
        .iter()
        .position(|e| matches!(e, LiveEvent::Resumed { .. }))
        .unwrap();
    let resumed = again.session_log[at].clone();
    again.session_log.insert(at + 1, resumed.clone());
    // (Delivered twice too, or the stored log is caught holding an event
    // that was not delivered.)
    let delivered = again
        .events
        .iter()
        .position(|e| e.event == resumed)
        .unwrap();
    let twice = again.events[delivered].clone();
    again.events.insert(delivered + 1, twice);
    let err = verdict(invariants::STORED_ONCE, &again).unwrap_err();
    assert!(
        err.contains("says the session resumed on connection #2, after connection #2"),
        "{err}"
    );

    let mut answered = good.clone();
    let at = answered
        .session_log
        .iter()
        .position(|e| e.kind() == "tool_response")
        .unwrap();
    let response = answered.session_log[at].clone();
    answered.session_log.insert(at + 1, response.clone());
    let delivered = answered
        .events
        .iter()
        .position(|e| e.event == response)
        .unwrap();
    let twice = answered.events[delivered].clone();
    answered.events.insert(delivered + 1, twice);
    let err = verdict(invariants::STORED_ONCE, &answered).unwrap_err();
    assert!(err.contains("answered 2 times"), "{err}");

    // An event delivered and never stored.
    let mut lost = good.clone();
    let at = lost
        .session_log
        .iter()
        .position(|e| e.kind() == "turn_complete")
        .unwrap();
    lost.session_log.remove(at);
    let err = verdict(invariants::STORED_ONCE, &lost).unwrap_err();
    assert!(
        err.contains("`turn_complete` events differ from those delivered"),
        "{err}"
    );
}

#[test]
fn a_handle_in_a_log_the_journal_or_an_event_is_caught_without_printing_it() {
    let good = resumable_run("a resume", resumed);
    assert_eq!(verdict(invariants::HANDLE_SECRET, &good), Ok(()));
    assert!(!good.logs.is_empty(), "the run's log lines were kept");
    let (action, handle) = good
        .script
        .actions()
        .iter()
        .enumerate()
        .find_map(|(i, a)| match a {
            Action::ResumptionUpdate(u) => Some((i + 1, u.handle.clone()?)),
            _ => None,
        })
        .unwrap();
    type Leak<'a> = Box<dyn Fn(&mut RunRecord) + 'a>;
    let leaks: [(&str, Leak); 5] = [
        (
            "journal entry",
            Box::new(|r: &mut RunRecord| {
                r.journal.push(StateMutation {
                    seq: 9999,
                    key: "session:resumed".into(),
                    value: json!({ "with": handle }),
                    timestamp: Timestamp::EPOCH,
                    removed: false,
                })
            }),
        ),
        (
            "log line #",
            Box::new(|r: &mut RunRecord| r.logs.push(format!("DEBUG resuming with {handle}"))),
        ),
        (
            "delivered event #",
            Box::new(|r: &mut RunRecord| {
                r.events.push(TimedEvent {
                    at: Duration::ZERO,
                    event: LiveEvent::Warning {
                        message: format!("handle {handle}"),
                    },
                })
            }),
        ),
        (
            "trace entry #",
            Box::new(|r: &mut RunRecord| r.trace.push(Duration::ZERO, "main".into(), &handle)),
        ),
        (
            // In the stored log only: a stored event is skipped only when
            // a delivered one like it was searched.
            "stored event #",
            Box::new(|r: &mut RunRecord| {
                r.session_log.push(LiveEvent::Warning {
                    message: format!("handle {handle}"),
                })
            }),
        ),
    ];
    for (place, leak) in leaks {
        let mut leaked = good.clone();
        leak(&mut leaked);
        let err = verdict(invariants::HANDLE_SECRET, &leaked).unwrap_err();
        assert!(
            err.starts_with(&format!("the handle of action #{action} is in {place}")),
            "{err}"
        );
        assert!(
            !err.contains(&handle),
            "the report quotes the handle: {err}"
        );
    }
}

/// Two false alarms the soak raised over seeds 2000..22000, each now a
/// pinned seed that must pass and must still meet its case.
///
/// * `0x47d3`: a transfer was refused because an earlier call of it was
///   still running. That call had gone on running past a move to a new
///   connection, where a cancellation named its id (so named another
///   call, and the session ignored it); `refused-never-runs` took the
///   cancellation for the old call's end.
/// * `0x3c07` (over the simulated network): the slot `limit` was written
///   2 ms before its resolver's recorded end, since a host's clock (the
///   journal's) may lag the network's (the soak's) by a step;
///   `resolvers-follow-spec` took the write for an earlier one.
///
/// Both were found before the `id-restart` and `handle-lag` faults joined;
/// with them off, each seed drew what it drew then, but for refused moves
/// and typing while moving, which changed `0x47d3`'s script: `0x30ec` met
/// its case then. The cases of `0x30ec` and `0x3c07` (those faults off)
/// are kept in `tests/fixtures/cases/`, as the generator made them before
/// it played `goAway`s between turns.
#[test]
fn the_false_alarms_of_seeds_0x47d3_and_0x3c07_stay_quiet() {
    let run = kept_run("resumable-0x30ec.json");
    assert!(run.failures.is_empty(), "{:?}", run.failures);
    let record = run.record.expect("a record");
    // A cancellation the session ignored because it named no call of its
    // connection, then a refusal because a call is still running.
    let ignored = record.delivered().position(|e| {
        matches!(e, LiveEvent::Warning { message } if message.contains("no call with that id was seen"))
    });
    let refused = record.delivered().position(
        |e| matches!(e, LiveEvent::ToolDenied { reason, .. } if reason.contains("still running")),
    );
    assert!(
        matches!((ignored, refused), (Some(a), Some(b)) if a < b),
        "seed 0x30ec no longer meets its case: {ignored:?} {refused:?}"
    );

    let run = kept_run("resumable-0x3c07.json");
    assert!(run.failures.is_empty(), "{:?}", run.failures);
    let record = run.record.expect("a record");
    assert!(
        record.network.is_some(),
        "seed 0x3c07 no longer runs over the network"
    );
    let ended = record
        .resolutions
        .iter()
        .filter_map(|r| r.finished)
        .next_back()
        .expect("a resolver ran");
    let written = record
        .journal
        .iter()
        .rfind(|m| m.key == "limit")
        .map(|m| m.timestamp - livesim::clock::VIRTUAL_EPOCH)
        .expect("limit was written");
    assert!(
        written < ended,
        "seed 0x3c07 no longer writes before its recorded end: {written:?} {ended:?}"
    );
}

/// A session that holds a handle moves on a `goAway` within half the time
/// it was given, and waits between reconnect attempts at least half its
/// policy's backoff step: a move delayed past that, or a second attempt
/// right after the first, fails `reconnect-ends`.
#[test]
fn a_late_go_away_move_or_a_hasty_attempt_is_caught() {
    let moved = |record: &RunRecord| {
        record.events.iter().any(|e| {
            matches!(&e.event, LiveEvent::Reconnecting { cause, attempt: 1 } if cause == "goAway")
        })
    };
    let good = resumable_run("a goAway move", moved);
    assert_eq!(verdict(invariants::RECONNECT_ENDS, &good), Ok(()));
    let notice = good
        .events
        .iter()
        .position(|e| matches!(e.event, LiveEvent::GoAway { .. }))
        .unwrap();
    let LiveEvent::GoAway { time_left } = good.events[notice].event else {
        unreachable!()
    };
    // Every move and end after the notice comes an hour later.
    let mut late = good.clone();
    let g = late.events[notice].at;
    for event in late
        .events
        .iter_mut()
        .filter(|e| e.at + Duration::from_millis(250) >= g)
    {
        if matches!(
            event.event,
            LiveEvent::Reconnecting { .. } | LiveEvent::Disconnected { .. }
        ) {
            event.at = g + time_left.unwrap_or_default() + Duration::from_secs(3600);
        }
    }
    // (Said as the deadline missed, or as the moment the turn let it go
    // by, whichever notice's check comes first.)
    let err = verdict(invariants::RECONNECT_ENDS, &late).unwrap_err();
    assert!(
        err.contains("its move was owed by") || err.contains("began its move only at"),
        "{err}"
    );

    let retried = |record: &RunRecord| {
        record.events.windows(2).any(|w| {
            matches!(&w[0].event, LiveEvent::Reconnecting { cause, attempt: 1 } if cause != "goAway")
                && matches!(w[1].event, LiveEvent::Reconnecting { attempt: 2, .. })
        })
    };
    let good = resumable_run("a second reconnect attempt", retried);
    assert_eq!(verdict(invariants::RECONNECT_ENDS, &good), Ok(()));
    let second = good
        .events
        .windows(2)
        .position(|w| {
            matches!(&w[0].event, LiveEvent::Reconnecting { cause, attempt: 1 } if cause != "goAway")
                && matches!(w[1].event, LiveEvent::Reconnecting { attempt: 2, .. })
        })
        .unwrap()
        + 1;
    let mut hasty = good.clone();
    hasty.events[second].at = hasty.events[second - 1].at + Duration::from_millis(1);
    let err = verdict(invariants::RECONNECT_ENDS, &hasty).unwrap_err();
    assert!(
        err.contains("came 0.001s after attempt 1, but the policy waits at least"),
        "{err}"
    );
}

/// The text of a content message the session sent (`None` for anything
/// else), as a test reads it: the message's JSON.
fn content_text(message: &Value) -> Option<String> {
    is_content(message).then(|| message.to_string())
}

/// The record of kept case `file` (a corpus entry in
/// `tests/fixtures/cases/`) played against `sim/resumable`.
fn kept_case(file: &str) -> RunRecord {
    kept_run(file).record.expect("a record")
}

/// The run of the kept case `file`, its failures with it.
fn kept_run(file: &str) -> livesim::soak::SeedRun {
    let entry = livesim::soak::CorpusEntry::load(format!("tests/fixtures/cases/{file}"))
        .unwrap_or_else(|e| panic!("{e}"));
    let soak = Soak::agent(&agent("resumable")).check_determinism_every(0);
    soak.run_case(&entry.case)
}

/// A message the session wrote on a connection the network then killed
/// is lost there; the next connection (resumed, with a `goAway` in its
/// `setupComplete`'s instant, so the session moves on at once) replays it,
/// but the server gets that copy only after the connection after it was
/// set up; that connection, resuming from before the message, replays it
/// again. Both copies are replays of one message, not a message sent
/// twice. `sim/resumable` seed `0xcc43e` (found by `sim soak --seeds
/// 800000..860000`, a false alarm of `client-messages-once` then) plays
/// this; its case is kept in `tests/fixtures/cases/` (as the generator
/// made it then: seeds move with the generator, a kept case does not),
/// and the test first asserts it still plays that.
#[test]
fn a_message_lost_in_flight_and_replayed_late_is_owed_again() {
    let record = kept_case("resumable-0xcc43e.json");
    let network = record.network.as_ref().expect("a run over the network");
    let lost: Vec<String> = network
        .written
        .iter()
        .filter(|(on, _)| network.died.contains(on))
        .filter_map(|(_, frame)| serde_json::from_slice::<Value>(frame.payload()?).ok())
        .filter_map(|m| content_text(&m))
        .collect();
    let (late, again) = late_copy_then_again(&record, |_, text| lost.contains(&text.to_string()))
        .expect("seed 0xcc43e still plays a lost message replayed late");
    assert!(late < again);
    assert_eq!(verdict(invariants::CLIENT_MESSAGES_ONCE, &record), Ok(()));
    // Without the latest connection's copy, the message it owed is lost.
    let mut dropped = record.clone();
    dropped.sent.remove(again);
    dropped.sent_at.remove(again);
    dropped.sent_on.remove(again);
    assert!(verdict(invariants::CLIENT_MESSAGES_ONCE, &dropped).is_err());
}

/// During a `goAway` move the session may still write on the connection
/// it is leaving while the new one's setup is under way; the new
/// connection resumes a handle from before that message, so it replays
/// it, and the server may get the old connection's copy only after the
/// new connection's setup. The old connection's copy is the message, the
/// new connection's its replay: not a message sent twice. `sim/resumable`
/// seed `0x2000000103781` (an explored variant, found by `sim soak --seeds
/// 1040000..1100000`, a false alarm of `client-messages-once` then) plays
/// this; its case is kept in `tests/fixtures/cases/`, and the test first
/// asserts it still plays that.
#[test]
fn a_message_written_on_the_connection_a_move_leaves_is_replayed_on_the_next() {
    let record = kept_case("resumable-0x2000000103781.json");
    let network = record.network.as_ref().expect("a run over the network");
    // Its late copy came on a connection that did not die.
    let (late, again) = late_copy_then_again(&record, |on, _| !network.died.contains(&on))
        .expect("seed 0x2000000103781 still plays a message written on a connection left");
    assert!(late < again);
    assert_eq!(verdict(invariants::CLIENT_MESSAGES_ONCE, &record), Ok(()));
    // Sent once more on the new connection, it is a message sent twice.
    let mut twice = record.clone();
    twice.sent.insert(again + 1, record.sent[again].clone());
    twice.sent_at.insert(again + 1, record.sent_at[again]);
    twice.sent_on.insert(again + 1, record.sent_on[again]);
    assert!(verdict(invariants::CLIENT_MESSAGES_ONCE, &twice).is_err());
}

/// A fresh session's script may give the handles the old session was
/// given, by name, with other consumed indices: a setup resumes the
/// latest issue of its handle it had got, so the replay owed is counted
/// from that issue's index. `sim/resumable` seed `0x137db4` (found by `sim
/// soak --seeds 1260000..1300000`, a false alarm of `client-messages-once`
/// then: the check took the old session's index) plays this; its case is
/// kept in `tests/fixtures/cases/`, and the test first asserts it still
/// does.
#[test]
fn a_handle_a_fresh_session_is_given_again_resumes_from_its_latest_index() {
    let record = kept_case("resumable-0x137db4.json");
    // Each handle given, with its consumed index and when, read apart from
    // the check.
    let given: Vec<(Duration, String, String)> = record
        .server_frames
        .iter()
        .zip(&record.server_frames_at)
        .filter_map(|(frame, at)| {
            let message: Value = serde_json::from_slice(frame.payload()?).ok()?;
            let update = message.get("sessionResumptionUpdate")?;
            Some((
                *at,
                update["newHandle"].as_str()?.to_string(),
                update["lastConsumedClientMessageIndex"].to_string(),
            ))
        })
        .collect();
    // The setup resuming a handle given twice, with two indices, before it.
    let setups =
        record.sent.iter().enumerate().filter_map(|(i, m)| {
            Some((i, m.pointer("/setup/sessionResumption/handle")?.as_str()?))
        });
    let (setup, _) = setups
        .into_iter()
        .find(|(i, handle)| {
            let issues: Vec<&String> = given
                .iter()
                .filter(|(at, h, _)| h == handle && *at <= record.sent_at[*i])
                .map(|(_, _, index)| index)
                .collect();
            issues.len() == 2 && issues[0] != issues[1]
        })
        .expect("seed 0x137db4 still resumes a handle given twice with two indices");
    assert!(
        record
            .events
            .iter()
            .any(|e| matches!(e.event, LiveEvent::Resumed { fresh: true, .. })),
        "the second issue comes from a fresh session"
    );
    assert_eq!(verdict(invariants::CLIENT_MESSAGES_ONCE, &record), Ok(()));
    // Its connection's first content is the replay the latest index owes:
    // anything else there is caught as such.
    let first = (setup + 1..record.sent.len())
        .find(|&i| is_content(&record.sent[i]))
        .expect("content after the setup");
    let mut other = record.clone();
    other.sent[first] = json!({ "realtimeInput": { "text": "something else" } });
    let err = verdict(invariants::CLIENT_MESSAGES_ONCE, &other).unwrap_err();
    assert!(err.contains("should first replay"), "{err}");
}

/// Where, in what the server got, a message first came late (on a
/// connection older than the latest setup's, `late(connection, text)`
/// picking which), and where the latest connection got it again.
fn late_copy_then_again(
    record: &RunRecord,
    late: impl Fn(u32, &str) -> bool,
) -> Option<(usize, usize)> {
    let mut latest = 0;
    for (i, message) in record.sent.iter().enumerate() {
        if message.get("setup").is_some() {
            latest = record.sent_on[i];
            continue;
        }
        let Some(text) = content_text(message) else {
            continue;
        };
        let on = record.sent_on[i];
        if on < latest && late(on, &text) {
            let again = (i + 1..record.sent.len()).find(|&j| {
                record.sent_on[j] == latest && content_text(&record.sent[j]) == Some(text.clone())
            });
            if let Some(j) = again {
                return Some((i, j));
            }
        }
    }
    None
}

/// A partition can drop a segment the session wrote, and the simulated TCP
/// never sends it again: nothing the session writes after it reaches the
/// server, though the server's frames still come. The session must notice
/// (the pong to its ping never comes) and resume on a new connection,
/// rather than go on answering into a connection that no longer hears it.
/// `sim/resumable` seed `0x18f21c` (found by `sim soak --seeds
/// 1620000..1660000`: a refusal's answer never reached the server,
/// `refused-never-runs`) plays this, shrunk to five actions; its case is
/// kept in `tests/fixtures/cases/`, and the test first asserts it still
/// plays that.
#[test]
fn a_connection_that_stopped_hearing_the_session_is_given_up() {
    let run = kept_run("resumable-0x18f21c.json");
    assert!(run.failures.is_empty(), "{:?}", run.failures);
    let record = run.record.expect("a record");
    let network = record.network.as_ref().expect("a run over the network");
    // The refusal's answer was written on the first connection, and the
    // server never got it.
    let answer = |m: &Value| m.get("toolResponse").is_some();
    let written = network.written.iter().find(|(_, frame)| {
        frame
            .payload()
            .and_then(|p| serde_json::from_slice::<Value>(p).ok())
            .is_some_and(|m| answer(&m))
    });
    let (on, _) = written.expect("seed 0x18f21c still answers a refusal");
    assert_eq!(*on, 1, "the answer went out on the first connection");
    assert!(
        !record.sent.iter().any(answer),
        "seed 0x18f21c no longer loses the answer on the way"
    );
    // The session gave that connection up for its unanswered ping (with
    // no handle yet, it ends there), so the network, not the session,
    // lost the answer.
    let gave_up = record.delivered().any(|e| match e {
        LiveEvent::Disconnected { reason, .. } => reason.contains("no answer to a ping"),
        LiveEvent::Reconnecting { cause, .. } => cause.contains("no answer to a ping"),
        _ => false,
    });
    assert!(
        gave_up,
        "the session gives up a connection that does not hear it"
    );
    assert_eq!(network.died, [1]);
}
