//! The invariants catch broken runs, by name: each built-in one on a real
//! run's record with one thing broken, a broken agent file's own
//! invariant, a user's invariant, and a session that is not
//! deterministic.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use livesim::Seed;
use livesim::prelude::*;
use livesim::session::{LiveEvent, ToolCall};
use livesim::soak::{ExecutionOutcome, RunRecord, Soak, TimedEvent, ToolExecution, invariants};
use livesim::testing::ReplayError;
use serde_json::json;

use super::{agent, verdict};

/// A payment run that refused a call, kept its connection, and passed.
fn refusing_run() -> RunRecord {
    let soak = Soak::agent(&agent("payment")).check_determinism_every(0);
    (0..100)
        .map(|s| soak.run_seed(Seed::new(s)))
        .find_map(|run| {
            let record = run.record?;
            let refused = record.delivered().any(|e| e.kind() == "tool_denied");
            (run.failures.is_empty() && refused && !record.settling.ended).then_some(record)
        })
        .expect("a payment seed under 100 refuses a call and passes")
}

fn refused_id(record: &RunRecord) -> (String, String) {
    record
        .delivered()
        .find_map(|e| match e {
            LiveEvent::ToolDenied { id, name, .. } => Some((id.clone(), name.clone())),
            _ => None,
        })
        .unwrap()
}

#[test]
fn a_refused_call_that_runs_or_is_answered_otherwise_is_caught() {
    let good = refusing_run();
    for name in [
        invariants::REFUSED_NEVER_RUNS,
        invariants::ANSWERED_ONCE,
        invariants::JOURNAL_REPLAYS_CLEAN,
    ] {
        assert_eq!(verdict(name, &good), Ok(()), "{name}");
    }
    let (id, tool) = refused_id(&good);
    let mut ran = good.clone();
    ran.executions.push(ToolExecution {
        call_id: Some(id.clone()),
        tool: tool.clone(),
        args: json!({}),
        started: std::time::Duration::from_millis(1500),
        finished: Some(std::time::Duration::from_millis(1600)),
        dropped: None,
        outcome: ExecutionOutcome::Ok(json!({})),
    });
    let err = verdict(invariants::REFUSED_NEVER_RUNS, &ran).unwrap_err();
    assert!(
        err.starts_with(&format!("{tool} ({id}) was refused (")),
        "{err}"
    );
    assert!(err.ends_with("but ran, from t=1.500s to t=1.600s"), "{err}");

    let mut answered = good.clone();
    for message in &mut answered.sent {
        if let Some(responses) = message.pointer_mut("/toolResponse/functionResponses") {
            for r in responses.as_array_mut().unwrap() {
                if r["id"] == json!(id) {
                    r["response"] = json!({"paid": true});
                }
            }
        }
    }
    let err = verdict(invariants::REFUSED_NEVER_RUNS, &answered).unwrap_err();
    assert!(
        err.contains("was refused, but was answered {\"paid\":true} instead of {\"error\":"),
        "{err}"
    );
}

/// A refusal because "a call of it is still running" is caught when every
/// earlier call of the tool was over (here cancelled by the server): the
/// session kept holding a call that had ended.
#[test]
fn a_refusal_for_a_call_already_cancelled_is_caught() {
    let good = refusing_run();
    let tool = "take_payment";
    let reason = format!(
        "{tool} is not allowed now: {tool} completes step pay and a call of it is still \
         running; a second call is refused until that one has answered"
    );
    let at = good.virtual_time;
    let timed = |event| TimedEvent { at, event };
    let mut held = good.clone();
    held.events.push(timed(LiveEvent::ToolCall {
        calls: vec![ToolCall {
            id: "call-90".into(),
            name: tool.into(),
            args: json!({}),
        }],
    }));
    held.events.push(timed(LiveEvent::ToolDenied {
        id: "call-91".into(),
        name: tool.into(),
        reason: reason.clone(),
    }));
    held.sent
        .push(json!({"toolResponse": {"functionResponses": [
            {"id": "call-91", "name": tool, "response": {"error": reason}}
        ]}}));
    // call-90 still runs: the refusal is true.
    assert_eq!(verdict(invariants::REFUSED_NEVER_RUNS, &held), Ok(()));

    let mut stale = held.clone();
    let refusal = stale.events.pop().unwrap();
    stale.events.push(timed(LiveEvent::ToolCancelled {
        ids: vec!["call-90".into()],
    }));
    stale.events.push(refusal);
    let err = verdict(invariants::REFUSED_NEVER_RUNS, &stale).unwrap_err();
    assert!(
        err.starts_with(&format!("{tool} (call-91) was refused at t=")),
        "{err}"
    );
    assert!(
        err.contains("every earlier call of it had ended (")
            && err.ends_with("call-90 cancelled): the flow still holds a call that is over"),
        "{err}"
    );
}

#[test]
fn answers_twice_to_strangers_or_after_a_cancellation_are_caught() {
    let good = refusing_run();
    let response = good
        .sent
        .iter()
        .find(|m| m.get("toolResponse").is_some())
        .cloned()
        .unwrap();
    let id = response
        .pointer("/toolResponse/functionResponses/0/id")
        .unwrap()
        .as_str()
        .unwrap()
        .to_string();
    let mut twice = good.clone();
    twice.sent.push(response.clone());
    assert_eq!(
        verdict(invariants::ANSWERED_ONCE, &twice),
        Err(format!("{id} was answered 2 times"))
    );

    let mut stranger = good.clone();
    let mut other = response.clone();
    other["toolResponse"]["functionResponses"][0]["id"] = json!("call-999");
    stranger.sent.push(other);
    assert_eq!(
        verdict(invariants::ANSWERED_ONCE, &stranger),
        Err("the session answered call-999, which the script never issued".to_string())
    );

    let mut late = good.clone();
    let at = late
        .events
        .iter()
        .position(|e| matches!(&e.event, LiveEvent::ToolResponse { id: r, .. } if *r == id))
        .unwrap();
    let mut cancelled = late.events[at].clone();
    cancelled.event = LiveEvent::ToolCancelled {
        ids: vec![id.clone()],
    };
    late.events.insert(at, cancelled);
    let err = verdict(invariants::ANSWERED_ONCE, &late).unwrap_err();
    assert!(
        err.contains(&format!(
            "({id}) was answered after the session handled its cancellation"
        )),
        "{err}"
    );

    let mut silent = good.clone();
    silent
        .sent
        .retain(|m| m.pointer("/toolResponse/functionResponses/0/id") != Some(&json!(id)));
    let err = verdict(invariants::ANSWERED_ONCE, &silent).unwrap_err();
    assert!(
        err.starts_with(&format!("{id} was never answered")),
        "{err}"
    );
}

/// A governed session journals every interruption the server sent: a
/// journal that lost them (a replay would never escalate on them) fails
/// `journal-replays-clean`, counted against the frames themselves.
#[test]
fn a_journal_missing_an_interruption_is_caught() {
    let soak = Soak::agent(&agent("payment")).check_determinism_every(0);
    let good = (0..100)
        .map(|s| soak.run_seed(Seed::new(s)))
        .find_map(|run| {
            let record = run.record?;
            let interrupted = record
                .journal
                .iter()
                .any(|m| m.key == livesim::flow::keys::INTERRUPTED);
            (run.failures.is_empty() && interrupted).then_some(record)
        })
        .expect("a payment seed under 100 is interrupted and passes");
    assert_eq!(verdict(invariants::JOURNAL_REPLAYS_CLEAN, &good), Ok(()));
    let told = good
        .journal
        .iter()
        .filter(|m| m.key == livesim::flow::keys::INTERRUPTED)
        .count();
    let mut lost = good.clone();
    lost.journal
        .retain(|m| m.key != livesim::flow::keys::INTERRUPTED);
    let err = verdict(invariants::JOURNAL_REPLAYS_CLEAN, &lost).unwrap_err();
    assert_eq!(
        err,
        format!(
            "the server interrupted the model {told} time(s), but the journal records 0 \
             `flow:interrupted` entries"
        )
    );
}

/// When the run received each content event (a text, transcript or media
/// delta: only a frame with content makes one), in order.
fn model_content(record: &RunRecord) -> Vec<Duration> {
    record
        .events
        .iter()
        .filter(|e| {
            matches!(
                e.event,
                LiveEvent::TextDelta { .. }
                    | LiveEvent::Media { .. }
                    | LiveEvent::InputTranscriptDelta { .. }
                    | LiveEvent::OutputTranscriptDelta { .. }
            )
        })
        .map(|e| e.at)
        .collect()
}

/// The clock signals agree with the events: a `silence_ms` larger than the
/// time since content last moved (plus the margins), an `elapsed_ms` that
/// does not grow, or more silence than elapsed time, fails `telemetry`.
#[test]
fn telemetry_signals_that_disagree_with_the_events_are_caught() {
    let soak = Soak::agent(&agent("weather")).check_determinism_every(0);
    let good = (0..20)
        .map(|s| soak.run_seed(Seed::new(s)))
        .find_map(|run| {
            let record = run.record?;
            let ticks = record
                .journal
                .iter()
                .filter(|m| m.key == "session:silence_ms")
                .count();
            (run.failures.is_empty() && ticks >= 8).then_some(record)
        })
        .expect("a weather seed under 20 ticks eight times and passes");
    assert_eq!(verdict(invariants::TELEMETRY, &good), Ok(()));
    let writes = |record: &RunRecord, key: &str| -> Vec<usize> {
        (0..record.journal.len())
            .filter(|&i| record.journal[i].key == key)
            .collect()
    };
    let connected = good
        .events
        .iter()
        .find(|e| e.event.kind() == "connected")
        .unwrap()
        .at;
    let silences = writes(&good, "session:silence_ms");
    let elapsed = writes(&good, "session:elapsed_ms");
    // The first tick the events owe a bound: content received at least
    // 250 ms before it. Its silence, stretched back to setup, breaks it.
    let (n, bound) = elapsed
        .iter()
        .enumerate()
        .find_map(|(n, &i)| {
            let at = connected + Duration::from_millis(good.journal[i].value.as_u64()?);
            // Content moves either way: the model's (an event with
            // content) or the user's (a message sent, in memory).
            let mut moved = model_content(&good);
            moved.extend(good.typed_at.iter().copied());
            moved.sort();
            let seen = moved
                .into_iter()
                .rfind(|&seen| seen + Duration::from_millis(250) <= at)?;
            let bound = at - seen + Duration::from_millis(250);
            (bound < at - connected).then_some((n, bound))
        })
        .expect("content moved well before some tick");
    let mut stretched = good.clone();
    let silence = good.journal[elapsed[n]].value.clone();
    stretched.journal[silences[n]].value = silence.clone();
    let err = verdict(invariants::TELEMETRY, &stretched).unwrap_err();
    assert!(
        err.starts_with(&format!(
            "tick {} (elapsed_ms {silence}, silence_ms {silence})",
            n + 1
        )),
        "{err}"
    );
    assert!(
        err.ends_with(&format!(
            "so silence_ms can be at most {} there",
            bound.as_millis()
        )),
        "{err}"
    );

    let mut stuck = good.clone();
    let first = stuck.journal[elapsed[0]].value.clone();
    stuck.journal[elapsed[1]].value = first.clone();
    let err = verdict(invariants::TELEMETRY, &stuck).unwrap_err();
    assert!(
        err.ends_with(&format!(
            "elapsed_ms did not grow from the tick before ({first})"
        )),
        "{err}"
    );

    let mut endless = good.clone();
    endless.journal[silences[0]].value = json!(first.as_u64().unwrap() + 1);
    let err = verdict(invariants::TELEMETRY, &endless).unwrap_err();
    assert!(
        err.starts_with("tick 1 ") && err.ends_with("more silence than time since setup"),
        "{err}"
    );
}

/// Content moves the user's way too: a `silence_ms` counted from the
/// model's last content, as a session deaf to the user's own messages
/// (typed or spoken, on a connection or between two) would write, fails
/// `telemetry` when the user sent something since.
#[test]
fn a_silence_deaf_to_the_user_is_caught() {
    let soak = Soak::agent(&agent("weather")).check_determinism_every(0);
    let margin = Duration::from_millis(250);
    let found = (0..40).find_map(|s| {
        let run = soak.run_seed(Seed::new(s));
        let record = run.record.filter(|_| run.failures.is_empty())?;
        let connected = record
            .events
            .iter()
            .find(|e| e.event.kind() == "connected")?
            .at;
        let model = model_content(&record);
        // A tick whose last owed movement is the user's, well after the
        // model's: a deaf session's silence there is far too long.
        let mut elapsed = None;
        for (i, entry) in record.journal.iter().enumerate() {
            match entry.key.as_str() {
                "session:elapsed_ms" => elapsed = entry.value.as_u64(),
                "session:silence_ms" => {
                    let at = connected + Duration::from_millis(elapsed.take()?);
                    let owed = |t: &&Duration| **t + margin <= at;
                    let user = record.typed_at.iter().rfind(owed).copied();
                    let spoke = model.iter().rfind(owed).copied().unwrap_or(connected);
                    if let Some(user) = user
                        && user > spoke + Duration::from_secs(1)
                    {
                        let deaf = (at - spoke).as_millis() as u64;
                        return Some((record, i, deaf, at - user + margin));
                    }
                }
                _ => {}
            }
        }
        None
    });
    let (good, i, deaf, bound) =
        found.expect("a weather seed under 40 has a tick well after the user spoke, not the model");
    assert_eq!(verdict(invariants::TELEMETRY, &good), Ok(()));
    let mut deafened = good.clone();
    deafened.journal[i].value = json!(deaf);
    let err = verdict(invariants::TELEMETRY, &deafened).unwrap_err();
    assert!(err.contains("(a message the user sent)"), "{err}");
    assert!(
        err.ends_with(&format!(
            "so silence_ms can be at most {} there",
            bound.as_millis()
        )),
        "{err}"
    );
}

/// The other way round: a `silence_ms` smaller than the time since
/// content could last have moved (a session counting something else as
/// content) fails `telemetry`, with a least silence that is no more than
/// the one the session wrote and within the lane's margin of it (250 ms,
/// and a few of rounding).
#[test]
fn a_silence_shorter_than_the_quiet_before_it_is_caught() {
    let soak = Soak::agent(&agent("weather")).check_determinism_every(0);
    let long = Duration::from_millis(1_000);
    let quiet = |record: &RunRecord| -> Vec<(usize, u64)> {
        record
            .journal
            .iter()
            .enumerate()
            .filter(|(_, m)| m.key == "session:silence_ms")
            .filter_map(|(i, m)| Some((i, m.value.as_u64()?)))
            .filter(|&(_, silence)| Duration::from_millis(silence) >= long)
            .collect()
    };
    let good = (0..20)
        .filter_map(|s| soak.run_seed(Seed::new(s)).record)
        .find(|r| verdict(invariants::TELEMETRY, r).is_ok() && quiet(r).len() >= 3)
        .expect("a weather seed under 20 with three quiet ticks that passes");
    let mut caught = 0;
    for (i, silence) in quiet(&good) {
        let mut hushed = good.clone();
        hushed.journal[i].value = json!(0);
        let Err(err) = verdict(invariants::TELEMETRY, &hushed) else {
            continue;
        };
        caught += 1;
        assert!(
            err.contains("silence_ms is 0, but content last moved at t="),
            "{err}"
        );
        let least: u64 = err
            .rsplit("so it is at least ")
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{err}"));
        assert!(
            least <= silence && least + 255 >= silence,
            "{silence}: {err}"
        );
    }
    assert!(caught >= 2, "only {caught} hushed quiet tick(s) caught");
}

/// A session with phases writes its time in phase on each tick: one that
/// does not grow, that counts from before the phase began, or that a tick
/// goes without, fails `telemetry`.
#[test]
fn a_time_in_phase_that_disagrees_with_the_journal_is_caught() {
    let soak = Soak::agent(&agent("booking")).check_determinism_every(0);
    let good = (0..50)
        .filter_map(|s| soak.run_seed(Seed::new(s)).record)
        .find(|r| {
            r.journal
                .iter()
                .filter(|m| m.key == "session:time_in_phase_ms")
                .count()
                >= 2
        })
        .expect("a booking run under 50 ticks twice");
    assert_eq!(verdict(invariants::TELEMETRY, &good), Ok(()));
    let written: Vec<usize> = good
        .journal
        .iter()
        .enumerate()
        .filter(|(_, m)| m.key == "session:time_in_phase_ms")
        .map(|(i, _)| i)
        .collect();
    let mut stuck = good.clone();
    stuck.journal[written[1]].value = json!(0);
    let err = verdict(invariants::TELEMETRY, &stuck).unwrap_err();
    assert!(
        err.contains("session:time_in_phase_ms is 0, but the session entered phase"),
        "{err}"
    );
    // A tick whose time in phase was never written (the next tick's was).
    let mut skipped = good.clone();
    skipped.journal.remove(written[0]);
    let err = verdict(invariants::TELEMETRY, &skipped).unwrap_err();
    assert!(
        err.contains("wrote session:time_in_phase_ms 0 time(s) before the next tick"),
        "{err}"
    );
    let mut longer = good;
    let was = longer.journal[written[0]].value.as_u64().unwrap();
    longer.journal[written[0]].value = json!(was + 500);
    let err = verdict(invariants::TELEMETRY, &longer).unwrap_err();
    assert!(
        err.ends_with(&format!("{was} ms before (journal timestamps)")),
        "{err}"
    );
}

/// What an agent's extractor is given is the conversation the run had: a
/// question with a blank line, a line nobody said, a line of no speaker,
/// or no line after the model spoke fails `extractor-input`.
#[test]
fn an_extractor_given_the_wrong_transcript_is_caught() {
    let soak = Soak::agent(&agent("support")).check_determinism_every(0);
    let asked = "soak:extractor_asked";
    let good = (0..20)
        .map(|s| soak.run_seed(Seed::new(s)))
        .find_map(|run| {
            let record = run.record?;
            let questions = record.journal.iter().filter(|m| m.key == asked).count();
            (run.failures.is_empty() && questions >= 2).then_some(record)
        })
        .expect("a support seed under 20 asks its extractor twice and passes");
    assert_eq!(verdict(invariants::EXTRACTOR_INPUT, &good), Ok(()));
    let first = good.journal.iter().position(|m| m.key == asked).unwrap();
    let forged = |question: &str| {
        let mut run = good.clone();
        run.journal[first].value = json!(question);
        verdict(invariants::EXTRACTOR_INPUT, &run)
    };
    assert_eq!(
        forged("Transcript:\nuser: \n"),
        Err("the extractor's question at turn 1 has a blank user line".to_string())
    );
    assert_eq!(
        forged("Transcript:\nmodel: I never said this.\n"),
        Err(
            "the extractor's question at turn 1 says model: \"I never said this.\", which the \
             run never made whole"
                .to_string()
        )
    );
    assert_eq!(
        forged("Transcript:\nsomeone: hello\n"),
        Err(
            "the extractor's question at turn 1 starts with a line that is neither `user: …` \
             nor `model: …`: \"someone: hello\""
                .to_string()
        )
    );
    // Whether the model had spoken by turn 1 decides whether no line is
    // wrong there: find a turn where it had, from the good run's own
    // question (it named a model line).
    let turn = good
        .journal
        .iter()
        .filter(|m| m.key == asked)
        .position(|m| m.value.as_str().unwrap_or_default().contains("model: "))
        .expect("a question names a model line");
    let mut silent = good.clone();
    let at = silent
        .journal
        .iter()
        .enumerate()
        .filter(|(_, m)| m.key == asked)
        .nth(turn)
        .unwrap()
        .0;
    silent.journal[at].value = json!("Transcript:\n");
    let err = verdict(invariants::EXTRACTOR_INPUT, &silent).unwrap_err();
    assert!(
        err.ends_with(&format!(
            "by the end of turn {}, but the extractor was given no line",
            turn + 1
        )),
        "{err}"
    );
}

/// A frame that holds an in-band error and nothing else ends the session:
/// a session that read on after it, ended without saying the end was
/// fatal, or went on, fails `wire-order` or `liveness`.
#[test]
fn a_session_that_outlives_the_servers_error_is_caught() {
    let soak = Soak::agent(&agent("weather")).check_determinism_every(0);
    let is_error = |frame: &livesim::wire::Frame| {
        let message: serde_json::Value =
            serde_json::from_slice(frame.payload().unwrap_or_default()).unwrap_or_default();
        message
            .as_object()
            .is_some_and(|m| m.len() == 1 && m.contains_key("error"))
    };
    let good = (0..100)
        .map(|s| soak.run_seed(Seed::new(s)))
        .find_map(|run| {
            let record = run.record?;
            let gave_up = record.server_frames.last().is_some_and(is_error);
            (run.failures.is_empty() && gave_up).then_some(record)
        })
        .expect("a weather seed under 100 ends with the server's error and passes");
    assert_eq!(verdict(invariants::WIRE_ORDER, &good), Ok(()));
    assert_eq!(verdict(invariants::LIVENESS, &good), Ok(()));
    assert!(good.settling.ended && !good.settling.ended_by_script);

    let mut read_on = good.clone();
    let usage = json!({ "usageMetadata": { "totalTokenCount": 3 } }).to_string();
    read_on
        .server_frames
        .push(livesim::wire::Frame::Text(usage));
    let err = verdict(invariants::WIRE_ORDER, &read_on).unwrap_err();
    let at = good.server_frames.len();
    assert_eq!(
        err,
        format!(
            "server frame #{at} (counting from the first setupComplete) holds an in-band error \
             and nothing else, which ends the session, yet the session read 1 more frame(s) \
             after it"
        )
    );

    let mut calm_end = good.clone();
    let end = calm_end
        .session_log
        .iter_mut()
        .rev()
        .find(|e| e.kind() == "disconnected")
        .expect("the log ends with disconnected");
    *end = LiveEvent::Disconnected {
        code: Some(1000),
        reason: "client hung up".into(),
        class: None,
    };
    let err = verdict(invariants::WIRE_ORDER, &calm_end).unwrap_err();
    assert!(
        err.ends_with(
            "the frames put a fatal `disconnected` (no close code: the server's error) there"
        ),
        "{err}"
    );

    let mut went_on = good.clone();
    went_on.settling.ended = false;
    assert_eq!(
        verdict(invariants::LIVENESS, &went_on).unwrap_err(),
        "the server sent an in-band error and nothing else, which ends the session, but the \
         session went on"
    );
}

#[test]
fn a_journal_that_does_not_replay_or_goes_backwards_is_caught() {
    let good = refusing_run();
    assert_eq!(verdict(invariants::JOURNAL_ORDERED, &good), Ok(()));
    // Record the refusal as an admission: the spec would not have made it.
    let mut forged = good.clone();
    let entry = forged
        .journal
        .iter_mut()
        .find(|m| m.key == "flow:tool_denied")
        .unwrap();
    entry.key = "flow:tool_call".to_string();
    let err = verdict(invariants::JOURNAL_REPLAYS_CLEAN, &forged).unwrap_err();
    assert!(err.starts_with("the journal's scenario does not replay against the spec that governed the run: scenario"), "{err}");
    assert!(
        err.contains("expected") && err.contains("to be allowed, but the flow refused it"),
        "{err}"
    );

    let mut swapped = good.clone();
    swapped.journal.swap(1, 2);
    let err = verdict(invariants::JOURNAL_ORDERED, &swapped).unwrap_err();
    assert!(err.contains("sequence numbers must increase"), "{err}");
    let mut backwards = good.clone();
    let last = backwards.journal.last_mut().unwrap();
    last.timestamp = livesim::clock::Timestamp::EPOCH;
    let (seq, key) = (last.seq, last.key.clone());
    let err = verdict(invariants::JOURNAL_ORDERED, &backwards).unwrap_err();
    assert!(
        err.starts_with(&format!(
            "journal entry {seq} ({key}) is stamped 1970-01-01T00:00:00.000Z, before entry"
        )),
        "{err}"
    );
}

#[test]
fn text_that_does_not_add_up_or_a_stored_chunk_is_caught() {
    let good = refusing_run();
    assert_eq!(verdict(invariants::AGGREGATION, &good), Ok(()));
    let mut wrong = good.clone();
    let full = wrong
        .events
        .iter_mut()
        .find(|e| matches!(e.event, LiveEvent::TextComplete { .. }))
        .unwrap();
    if let LiveEvent::TextComplete { text, .. } = &mut full.event {
        text.push_str(" (and more)");
    }
    let err = verdict(invariants::AGGREGATION, &wrong).unwrap_err();
    assert!(err.starts_with("the text chunks concatenate to"), "{err}");
    assert!(err.contains("(and more)"), "{err}");

    let mut stored = good.clone();
    stored.session_log.push(LiveEvent::TextDelta {
        text: "Hel".into(),
        thought: false,
    });
    assert_eq!(
        verdict(invariants::AGGREGATION, &stored),
        Err("a partial event was stored: text_delta \"Hel\"".to_string())
    );
}

#[test]
fn a_session_that_does_not_settle_or_end_is_caught() {
    let good = refusing_run();
    assert_eq!(verdict(invariants::LIVENESS, &good), Ok(()));
    let mut stuck = good.clone();
    stuck.settling.settled_at = None;
    let err = verdict(invariants::LIVENESS, &stuck).unwrap_err();
    assert!(err.starts_with("the session never settled"), "{err}");
    let mut slow = good.clone();
    slow.settling.settled_at = slow
        .settling
        .script_done_at
        .map(|t| t + slow.settling.bound * 2);
    assert!(
        verdict(invariants::LIVENESS, &slow)
            .unwrap_err()
            .contains("to settle after the fault phase ended")
    );
    let mut lingering = good.clone();
    lingering.settling.ended_by_script = true;
    assert_eq!(
        verdict(invariants::LIVENESS, &lingering),
        Err("the script ended the connection, but the session did not end".to_string())
    );
    let mut rude = good.clone();
    rude.replay_errors.push(ReplayError {
        script: "payment".into(),
        at: "action #3 (call verify_identity as call-1)".into(),
        problem: "the client answered call-1 a second time".into(),
    });
    assert_eq!(
        verdict(invariants::PROTOCOL, &rude),
        Err("script \"payment\", action #3 (call verify_identity as call-1): the client answered call-1 a second time".to_string())
    );
}

#[test]
fn a_stored_log_out_of_wire_order_is_caught() {
    let good = refusing_run();
    let mut emptied = good.clone();
    emptied.session_log.clear();
    let err = verdict(invariants::WIRE_ORDER, &emptied).unwrap_err();
    assert!(
        err.starts_with("the stored log ends after 0 events, but the frames put `connected"),
        "{err}"
    );
}

/// An agent file declaring an invariant its agent breaks: the soak finds
/// it, under that invariant's name, with a replay line.
#[test]
fn a_broken_agent_invariant_is_caught_by_name() {
    let mut weather = agent("weather");
    weather.invariants = vec![livesim::soak::AgentInvariant::Before(
        "get_forecast".into(),
        "get_weather".into(),
    )];
    let summary = Soak::agent(&weather)
        .seed_range(0..30)
        .jobs(2)
        .replay_line(|seed| format!("replay weather {seed}"))
        .keep(false) // it fails on purpose: keep nothing
        .try_run()
        .expect_err("weather calls get_weather before any forecast");
    let failure = summary.failures().next().unwrap();
    assert_eq!(failure.invariant, "before(get_forecast, get_weather)");
    assert!(
        failure.message.starts_with("get_weather (call-"),
        "{}",
        failure.message
    );
    assert!(
        failure
            .message
            .contains("before any get_forecast had succeeded"),
        "{}",
        failure.message
    );
    assert_eq!(failure.replay, format!("replay weather {}", failure.seed));
    assert_eq!(failure.agent, "weather");
    assert!(!failure.script.actions().is_empty());
    let text = summary.to_string();
    assert!(
        text.contains(&format!(
            "FAILED weather seed {}: before(get_forecast, get_weather)",
            failure.seed
        )),
        "{text}"
    );
}

/// A user's own invariant, broken on purpose, is reported by its name;
/// passing ones are counted.
#[test]
fn a_user_invariant_is_caught_by_name() {
    let summary = Soak::agent(&agent("payment"))
        .invariant("never-refuses", |run| {
            match run.delivered().find(|e| e.kind() == "tool_denied") {
                Some(refusal) => Err(format!("refused: {refusal}")),
                None => Ok(()),
            }
        })
        .invariant("always-holds", |_| Ok(()))
        .seed_range(0..20)
        .explore(false)
        .keep(false) // it fails on purpose: keep nothing
        .try_run()
        .expect_err("payment refuses early payments");
    assert!(summary.failures().all(|f| f.invariant == "never-refuses"));
    let payment = &summary.agents[0];
    let holds = payment
        .checks
        .iter()
        .find(|(n, ..)| n == "always-holds")
        .unwrap();
    assert_eq!((holds.1, holds.2), (20, 0));
}

/// A session whose tool answers differently each time it runs is not
/// deterministic: the sampled check says so for the seed.
#[test]
fn a_nondeterministic_agent_fails_the_determinism_check() {
    static CALLS: AtomicU64 = AtomicU64::new(0);
    let summary = Soak::new("counter", || {
        Live::builder().tools(
            T::simple("count", "Counts its calls, across sessions", |_| async {
                Ok(json!({ "n": CALLS.fetch_add(1, Ordering::Relaxed) }))
            })
            .parameters(json!({"type": "OBJECT", "properties": {}})),
        )
    })
    .seed_range(0..12)
    .check_determinism_every(1)
    .jobs(1)
    .keep(false) // it fails on purpose: keep nothing
    .try_run()
    .expect_err("the counter leaks between runs");
    let failure = summary
        .failures()
        .find(|f| f.invariant == invariants::DETERMINISM)
        .expect("a determinism failure");
    assert!(
        failure
            .message
            .starts_with("two runs of the seed differ: the two runs diverge at trace entry #"),
        "{}",
        failure.message
    );
}

/// A support run in which one message on its last connection (support
/// resumes, and a connection left behind is owed no answers) carried two
/// calls, neither cancelled, that both ran and were answered with
/// different results: both answers owed.
fn parallel_run() -> (RunRecord, String, String) {
    let soak = Soak::agent(&agent("support")).check_determinism_every(0);
    (0..200)
        .filter_map(|s| soak.run_seed(Seed::new(s)).record)
        .find_map(|record| {
            // The first such message on the last connection.
            let mut pair = None;
            for event in record.delivered() {
                match event {
                    LiveEvent::Resumed { .. } => pair = None,
                    LiveEvent::ToolCall { calls } if calls.len() >= 2 && pair.is_none() => {
                        pair = Some((calls[0].id.clone(), calls[1].id.clone()));
                    }
                    _ => {}
                }
            }
            let pair = pair?;
            let answer = |id: &str| {
                record
                    .responses()
                    .into_iter()
                    .find(|r| r["id"] == json!(id))
                    .map(|r| r["response"].clone())
            };
            let (a, b) = (answer(&pair.0)?, answer(&pair.1)?);
            // Neither cancelled, nor an id another connection used too
            // (a server may number each connection's calls from `call-1`).
            let plain = |id: &String| {
                !record.calls.cancelled.contains(id)
                    && !record.calls.abandoned.contains(id)
                    && record.calls.issued.iter().filter(|i| *i == id).count() == 1
            };
            let owed = plain(&pair.0) && plain(&pair.1);
            (owed && a != b && a.get("error").is_none() && b.get("error").is_none())
                .then_some((record, pair.0, pair.1))
        })
        .expect("a support seed under 200 answers two parallel calls differently")
}

/// Two parallel calls whose answers were swapped: each answer no longer
/// says what its own call's run gave (`answered-once` reads the runs).
#[test]
fn swapped_answers_of_parallel_calls_are_caught() {
    let (good, a, b) = parallel_run();
    assert_eq!(verdict(invariants::ANSWERED_ONCE, &good), Ok(()));
    let mut swapped = good.clone();
    let contents: Vec<(String, serde_json::Value)> = swapped
        .responses()
        .into_iter()
        .map(|r| {
            (
                r["id"].as_str().unwrap_or_default().to_string(),
                r["response"].clone(),
            )
        })
        .collect();
    let content = |id: &str| contents.iter().find(|(i, _)| i == id).unwrap().1.clone();
    let (for_a, for_b) = (content(&b), content(&a));
    for message in &mut swapped.sent {
        if let Some(responses) = message.pointer_mut("/toolResponse/functionResponses") {
            for r in responses.as_array_mut().unwrap() {
                if r["id"] == json!(a) {
                    r["response"] = for_a.clone();
                } else if r["id"] == json!(b) {
                    r["response"] = for_b.clone();
                }
            }
        }
    }
    let err = verdict(invariants::ANSWERED_ONCE, &swapped).unwrap_err();
    assert!(err.contains("but its run says otherwise"), "{err}");
}

/// An answer the script and the tool runs say is owed, missing from the
/// stored log: `wire-order` expects it (it does not take the answers to
/// expect from the log it checks).
#[test]
fn an_answer_missing_from_the_stored_log_is_caught() {
    let (good, a, _) = parallel_run();
    assert_eq!(verdict(invariants::WIRE_ORDER, &good), Ok(()));
    let mut missing = good.clone();
    missing
        .session_log
        .retain(|e| !matches!(e, LiveEvent::ToolResponse { id, .. } if *id == a));
    let err = verdict(invariants::WIRE_ORDER, &missing).unwrap_err();
    assert!(err.contains(&format!("the answer to {a}")), "{err}");
}

/// A full text the session emitted that is not what the frames' chunks
/// make: the reference model of aggregation, not the session's own
/// aggregator, says what the fast lane must deliver.
#[test]
fn a_full_text_the_frames_do_not_make_is_caught_by_the_model() {
    let good = refusing_run();
    assert_eq!(verdict(invariants::AGGREGATION, &good), Ok(()));
    let mut changed = good.clone();
    let full = changed
        .events
        .iter_mut()
        .find_map(|timed| match &mut timed.event {
            LiveEvent::TextComplete { text, .. } => Some(text),
            _ => None,
        })
        .expect("a full text");
    full.push('!');
    let err = verdict(invariants::AGGREGATION, &changed).unwrap_err();
    assert!(err.contains("concatenate to"), "{err}");
}

/// A tool that panics on some calls.
fn panicky() -> Soak {
    Soak::new("panicky", || {
        Live::builder().tools(
            T::simple("divide", "Divides", |args| async move {
                let by = args["by"].as_i64().unwrap_or(0);
                if by == 0 {
                    panic!("division by zero");
                }
                Ok(json!({ "q": 100 / by }))
            })
            .parameters(json!({
                "type": "OBJECT",
                "properties": { "by": { "type": "INTEGER", "enum": [0, 2] } },
                "required": ["by"]
            })),
        )
    })
    .keep(false)
    .jobs(1)
    .seed_range(0..30)
}

/// A tool's panic is answered as an error (the session survives it) and
/// reported as `panic`, naming the tool, its call and where it panicked;
/// `allow_panic` allows it for that tool.
#[test]
fn a_tool_panic_is_reported_as_panic_with_its_place() {
    let summary = panicky().try_run().expect_err("divide panics on 0");
    let failure = summary
        .failures()
        .find(|f| f.invariant == invariants::PANIC)
        .unwrap_or_else(|| panic!("no panic failure:\n{summary}"));
    assert!(
        failure.message.starts_with("tool divide (call-"),
        "{}",
        failure.message
    );
    assert!(
        failure
            .message
            .contains(&format!("at {}:", file!().replace('\\', "/"))),
        "{}",
        failure.message
    );
    assert!(
        failure.message.contains("division by zero"),
        "{}",
        failure.message
    );
    // Every other invariant holds: the session answered it as an error.
    assert!(
        summary.failures().all(|f| f.invariant == invariants::PANIC),
        "{summary}"
    );
    let allowed = panicky().allow_panic("divide").try_run();
    assert!(allowed.is_ok(), "{}", allowed.unwrap_err());
}

/// An invariant that panics is that invariant's failure, saying where; the
/// soak goes on through every seed.
#[test]
fn an_invariant_that_panics_fails_by_name_and_the_soak_goes_on() {
    let summary = Soak::agent(&agent("weather"))
        .invariant("fragile", |run| {
            if run.seed.value() % 2 == 1 {
                panic!("index out of range in my check");
            }
            Ok(())
        })
        .seed_range(0..6)
        .explore(false)
        .jobs(1)
        .keep(false)
        .try_run()
        .expect_err("the invariant panics on odd seeds");
    assert_eq!(summary.sessions(), 6);
    let fragile: Vec<_> = summary
        .failures()
        .filter(|f| f.invariant == "fragile")
        .collect();
    assert_eq!(fragile.len(), 3, "{summary}");
    assert!(
        fragile[0]
            .message
            .contains("the invariant `fragile` itself panicked at tests/soak/invariants.rs:"),
        "{}",
        fragile[0].message
    );
    assert!(
        fragile[0]
            .message
            .contains("index out of range in my check")
    );
}

/// Every turn a governed session completes is a flow evaluation point:
/// a journal missing one turn's `flow:active` (a control lane that skips
/// the turn's end) fails `decisions-follow-spec`, naming both counts.
#[test]
fn a_turn_the_flow_did_not_evaluate_is_caught() {
    let run = refusing_run();
    assert_eq!(verdict(invariants::DECISIONS_FOLLOW_SPEC, &run), Ok(()));
    let turns = run
        .session_log
        .iter()
        .filter(|e| e.kind() == "turn_complete")
        .count();
    assert!(turns >= 1);
    let mut skipped = run.clone();
    let at = skipped
        .journal
        .iter()
        .rposition(|m| m.key == "flow:active")
        .expect("a flow:active entry");
    skipped.journal.remove(at);
    let err = verdict(invariants::DECISIONS_FOLLOW_SPEC, &skipped).unwrap_err();
    assert_eq!(
        err,
        format!(
            "the session completed {turns} turns (turn_complete in its stored log), but the flow \
             evaluated {} (flow:active entries in the journal): every turn's end is an \
             evaluation point",
            turns - 1
        )
    );
}

/// Every tool run of a governed session was admitted by the flow, has its
/// outcome in the journal as the run says it, and no success is journaled
/// without a run that succeeded: an admission taken out, a result taken
/// out (for a run that returned at the session's last instant too), one
/// whose `ok` is flipped, one replaced by the call's cancellation (too
/// late to undo a tool that had returned) and one made up each fail
/// `decisions-follow-spec`, naming the tool and the call.
#[test]
fn a_tool_run_the_journal_does_not_count_is_caught() {
    let run = refusing_run();
    assert_eq!(verdict(invariants::DECISIONS_FOLLOW_SPEC, &run), Ok(()));
    let (tool, id, ok) = run
        .executions
        .iter()
        .find_map(|e| {
            let ok = matches!(e.outcome, ExecutionOutcome::Ok(_));
            Some((e.tool.clone(), e.call_id.clone()?, ok)).filter(|_| e.finished.is_some())
        })
        .expect("a tool of the run finished");
    let result_of = |record: &RunRecord| {
        record
            .journal
            .iter()
            .position(|m| {
                m.key == "flow:tool_result" && m.value["id"] == id && m.value["tool"] == tool
            })
            .expect("the run's journal has the call's result")
    };
    let missing = format!(
        "tool {tool} ran for call {id} and finished with {}, but the journal has no \
         flow:tool_result with \"ok\": {ok} for it: the flow did not count a call that ran",
        if ok { "a result" } else { "an error" }
    );

    let mut ungated = run.clone();
    ungated
        .journal
        .retain(|m| !(m.key == "flow:tool_call" && m.value["id"] == id && m.value["tool"] == tool));
    assert_eq!(
        verdict(invariants::DECISIONS_FOLLOW_SPEC, &ungated),
        Err(format!(
            "tool {tool} ran for call {id}, but the journal has no flow:tool_call admitting it: \
             the call ran past the flow's gate"
        ))
    );

    let mut dropped = run.clone();
    let at = result_of(&dropped);
    dropped.journal.remove(at);
    assert_eq!(
        verdict(invariants::DECISIONS_FOLLOW_SPEC, &dropped),
        Err(missing.clone())
    );

    // A run that returned at the very instant the session ended owes its
    // result too (the session counts it before it stops).
    let mut at_the_end = dropped.clone();
    let end = at_the_end
        .events
        .iter()
        .rev()
        .find(|e| matches!(e.event, LiveEvent::Disconnected { .. }))
        .expect("the run disconnected")
        .at;
    let run_of = at_the_end
        .executions
        .iter()
        .position(|e| e.tool == tool && e.call_id.as_deref() == Some(id.as_str()))
        .unwrap();
    at_the_end.executions[run_of].finished = Some(end);
    assert_eq!(
        verdict(invariants::DECISIONS_FOLLOW_SPEC, &at_the_end),
        Err(missing.clone())
    );

    let mut flipped = run.clone();
    let at = result_of(&flipped);
    flipped.journal[at].value["ok"] = json!(!ok);
    assert_eq!(
        verdict(invariants::DECISIONS_FOLLOW_SPEC, &flipped),
        Err(missing.clone())
    );

    let mut cancelled = run.clone();
    let at = result_of(&cancelled);
    cancelled.journal[at].key = "flow:tool_cancelled".into();
    cancelled.journal[at].value = json!({ "tool": tool, "id": id });
    assert_eq!(
        verdict(invariants::DECISIONS_FOLLOW_SPEC, &cancelled),
        Err(format!(
            "{missing} (it has a flow:tool_cancelled, but the tool had returned: a cancellation \
             that comes too late to stop a tool does not undo what it did)"
        ))
    );

    let mut made_up = run.clone();
    let mut extra = made_up.journal[result_of(&made_up)].clone();
    extra.value = json!({ "tool": tool, "id": "call-999", "ok": true });
    made_up.journal.push(extra);
    assert_eq!(
        verdict(invariants::DECISIONS_FOLLOW_SPEC, &made_up),
        Err(format!(
            "the journal says call call-999 of {tool} succeeded (1 flow:tool_result with \"ok\": \
             true left over), but no run of {tool} for that call finished with a result"
        ))
    );
}

/// The journal tells the state's whole story: a real run's journal,
/// applied to the state it began with, gives the state it ended with; a
/// write taken out of the journal, a value the store holds that the
/// journal does not say, and a key the store lost without a removal each
/// fail `journal-rebuilds-state`, naming the key.
#[test]
fn a_state_the_journal_does_not_tell_is_caught() {
    let run = refusing_run();
    let check = |run: &RunRecord| verdict(invariants::JOURNAL_REBUILDS_STATE, run);
    assert_eq!(check(&run), Ok(()));
    // A key the run wrote once, as the journal and the store both say.
    let once = run
        .journal
        .iter()
        .find(|m| !m.removed && run.journal.iter().filter(|n| n.key == m.key).count() == 1)
        .expect("the run wrote some key once")
        .clone();
    let (key, value) = (once.key.clone(), once.value.clone());
    assert_eq!(run.state_after.get(&key), Some(&value));

    let mut unwritten = run.clone();
    unwritten.journal.retain(|m| m.key != key);
    assert_eq!(
        check(&unwritten),
        Err(format!(
            "the state holds {key} = {value}, but the journal never wrote it, or removed it \
             last: a write the journal does not tell"
        ))
    );

    let mut changed = run.clone();
    changed
        .state_after
        .insert(key.clone(), json!("something else"));
    assert_eq!(
        check(&changed),
        Err(format!(
            "the state holds {key} = \"something else\", but the journal's last word on it \
             (entry {}) is {value}: a write the journal does not tell",
            once.seq
        ))
    );

    let mut lost = run.clone();
    lost.state_after.remove(&key);
    assert_eq!(
        check(&lost),
        Err(format!(
            "the journal leaves {key} = {value} (entry {}), but the state no longer holds it: \
             a removal the journal does not tell",
            once.seq
        ))
    );

    // What the builder wrote before the journal began counts as written.
    let mut before = run.clone();
    before.journal.retain(|m| m.key != key);
    before.state_before.insert(key.clone(), value.clone());
    assert_eq!(check(&before), Ok(()));
}

/// An agent file's extractor is asked once per turn the session completes
/// and each answer is announced as extracted: a settled support run
/// passes, and the same record with a question or an `extracted` event
/// taken out fails `extractor-every-turn`, naming the counts.
#[test]
fn an_extraction_skipped_or_dropped_is_caught() {
    let soak = Soak::agent(&agent("support")).check_determinism_every(0);
    let check = soak
        .invariants()
        .iter()
        .find(|i| i.name() == "extractor-every-turn")
        .expect("an agent file's extractor is checked")
        .clone();
    let run = (0..100)
        .find_map(|s| {
            let run = soak.run_seed(Seed::new(s));
            let record = run.record?;
            let extracted = record.delivered().any(|e| e.kind() == "extracted");
            (run.failures.is_empty()
                && extracted
                && record.settling.settled_at.is_some()
                && !record.settling.ended)
                .then_some(record)
        })
        .expect("a support seed under 100 extracts and settles");
    assert_eq!(check.check(&run), Ok(()));
    let turns = run
        .session_log
        .iter()
        .filter(|e| e.kind() == "turn_complete")
        .count();

    let mut unasked = run.clone();
    let at = unasked
        .journal
        .iter()
        .rposition(|m| m.key == "soak:extractor_asked")
        .unwrap();
    unasked.journal.remove(at);
    let err = check.check(&unasked).unwrap_err();
    assert!(
        err.starts_with(&format!(
            "the session completed {turns} turns, but its extractor was asked {} times by the \
             time the run settled",
            turns - 1
        )),
        "{err}"
    );

    let mut unannounced = run.clone();
    let at = unannounced
        .events
        .iter()
        .rposition(|e| e.event.kind() == "extracted")
        .unwrap();
    unannounced.events.remove(at);
    let err = check.check(&unannounced).unwrap_err();
    assert!(err.contains("each answer is written to state"), "{err}");
}

/// A session that ends stops its tools: a record in which a tool run
/// finishes after the `disconnected` event fails `liveness`, naming the
/// tool and both times.
#[test]
fn a_tool_that_outlives_its_session_is_caught() {
    let soak = Soak::agent(&agent("weather")).check_determinism_every(0);
    let run = (0..100)
        .find_map(|s| {
            let run = soak.run_seed(Seed::new(s));
            let record = run.record?;
            let ended = record.delivered().any(|e| e.kind() == "disconnected");
            (run.failures.is_empty() && ended && !record.executions.is_empty()).then_some(record)
        })
        .expect("a weather seed under 100 runs a tool and ends");
    assert_eq!(verdict(invariants::LIVENESS, &run), Ok(()));
    let ended = run
        .events
        .iter()
        .find(|e| e.event.kind() == "disconnected")
        .unwrap()
        .at;
    let mut late = run.clone();
    late.executions[0].finished = Some(ended + std::time::Duration::from_millis(40));
    let err = verdict(invariants::LIVENESS, &late).unwrap_err();
    assert!(
        err.contains("was still running when the session ended")
            && err.ends_with("a session that ends stops its tools"),
        "{err}"
    );
}

/// An extractor is given the end of the conversation as it stood, in
/// order: a question that repeats an earlier turn's line in place of the
/// line said last fails `extractor-input`, though every line in it was
/// said.
#[test]
fn an_extractor_given_a_stale_line_is_caught() {
    let soak = Soak::agent(&agent("support")).check_determinism_every(0);
    let asked = "soak:extractor_asked";
    let questions = |record: &RunRecord| -> Vec<(usize, String)> {
        record
            .journal
            .iter()
            .enumerate()
            .filter(|(_, m)| m.key == asked)
            .map(|(i, m)| (i, m.value.as_str().unwrap_or_default().to_string()))
            .collect()
    };
    // A passing run where a later question differs from an earlier one,
    // and the user typed nothing between them (a line typed in between
    // would be missing from the stale question: another rule's failure).
    let (good, (stale, at)) = (0..40)
        .map(|s| soak.run_seed(Seed::new(s)))
        .find_map(|run| {
            let record = run.record.filter(|_| run.failures.is_empty())?;
            let asked = questions(&record);
            let when = |i: usize| record.journal[i].timestamp - livesim::clock::VIRTUAL_EPOCH;
            let typed_between = |from: usize, to: usize| {
                record
                    .typed_at
                    .iter()
                    .any(|&t| when(from) <= t && t <= when(to))
            };
            let pair = asked.iter().enumerate().skip(1).find_map(|(n, (at, q))| {
                asked[..n]
                    .iter()
                    .find(|(from, earlier)| {
                        earlier != q && earlier.contains(": ") && !typed_between(*from, *at)
                    })
                    .map(|(_, earlier)| (earlier.clone(), *at))
            })?;
            Some((record, pair))
        })
        .expect("a support seed under 40 asks two different questions and passes");
    assert_eq!(verdict(invariants::EXTRACTOR_INPUT, &good), Ok(()));
    let mut forged = good.clone();
    forged.journal[at].value = json!(stale);
    let err = verdict(invariants::EXTRACTOR_INPUT, &forged).unwrap_err();
    assert!(
        err.contains("which is not the last of the lines said by then, in order"),
        "{err}"
    );
}

/// What the server said in its own words reaches the stored log as it
/// said it: token counts, a goAway's time left, a resumption update's
/// flag, the ids a cancellation names, and as many content parts as the
/// frame's run of them. A log whose event says otherwise (the counts of
/// another frame, a time read in the wrong unit, a flag flipped, an id
/// or a part too many) fails `wire-order`, which reads them from the
/// frames itself.
#[test]
fn what_the_server_said_is_what_the_events_say() {
    type Forge = fn(&mut LiveEvent) -> bool;
    let forgeries: [(&str, &str, Forge, &str); 5] = [
        (
            "weather",
            "usage",
            |e| match e {
                LiveEvent::Usage { usage } => {
                    let total = usage["totalTokenCount"].as_i64().unwrap_or(0);
                    usage["totalTokenCount"] = json!(total + 1);
                    true
                }
                _ => false,
            },
            "but the frames put usage (",
        ),
        (
            "resumable",
            "go_away",
            |e| match e {
                LiveEvent::GoAway {
                    time_left: Some(left),
                } => {
                    *left *= 1000;
                    true
                }
                _ => false,
            },
            "but the frames put a goAway with ",
        ),
        (
            "resumable",
            "resumption_update",
            |e| match e {
                LiveEvent::ResumptionUpdate { resumable } => {
                    *resumable = !*resumable;
                    true
                }
                _ => false,
            },
            "but the frames put a resumption update (resumable: ",
        ),
        (
            "weather",
            "content",
            |e| match e {
                LiveEvent::Content { parts, .. } => {
                    parts.push(json!({"executableCode": {"code": "2 + 2"}}));
                    true
                }
                _ => false,
            },
            " content part(s) there",
        ),
        (
            "support",
            "tool_cancelled",
            |e| match e {
                LiveEvent::ToolCancelled { ids } => {
                    ids.push("call-never-made".into());
                    true
                }
                _ => false,
            },
            "but the frames put the cancellation of ",
        ),
    ];
    for (name, kind, forge, said) in forgeries {
        let soak = Soak::agent(&agent(name)).check_determinism_every(0);
        let good = (0..200)
            .filter_map(|s| soak.run_seed(Seed::new(s)).record)
            .find(|r| {
                verdict(invariants::WIRE_ORDER, r).is_ok()
                    && r.session_log.iter().any(|e| e.kind() == kind)
            })
            .unwrap_or_else(|| panic!("a {name} seed under 200 stores a `{kind}` and passes"));
        let mut forged = good.clone();
        let at = forged
            .session_log
            .iter_mut()
            .position(forge)
            .unwrap_or_else(|| panic!("{name}: no `{kind}` to forge"));
        let err = verdict(invariants::WIRE_ORDER, &forged).unwrap_err();
        assert!(
            err.starts_with(&format!("stored event #{at} is `")) && err.contains(said),
            "{kind}: {err}"
        );
    }
}
