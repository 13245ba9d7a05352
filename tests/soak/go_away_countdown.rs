//! `session:go_away_remaining_ms` counts down to the deadline of the
//! connection the session is on: a countdown left running after the
//! session moved to a new connection, a removal with no move, and a
//! value off the announced deadline each fail `telemetry`.

use std::time::Duration;

use livesim::Seed;
use livesim::session::LiveEvent;
use livesim::soak::{RunRecord, Soak, invariants};
use serde_json::json;

use super::{agent, verdict};

const KEY: &str = "session:go_away_remaining_ms";

/// A passing `resumable` run that moved after a `goAway` whose countdown
/// it had written, with no new notice in the two seconds after: the run,
/// when it heard of that move, and a countdown write at least a second
/// away from every move.
fn moved_after_a_countdown() -> (RunRecord, Duration, usize) {
    let soak = Soak::agent(&agent("resumable")).check_determinism_every(0);
    let second = Duration::from_secs(1);
    (0..100)
        .find_map(|s| {
            let run = soak.run_seed(Seed::new(s));
            let record = run.record.filter(|_| run.failures.is_empty())?;
            let moves: Vec<Duration> = record
                .events
                .iter()
                .filter(|e| matches!(e.event, LiveEvent::Resumed { .. }))
                .map(|e| e.at)
                .collect();
            let alone = record.journal.iter().position(|m| {
                let at = m.timestamp - livesim::clock::VIRTUAL_EPOCH;
                m.key == KEY && !m.removed && moves.iter().all(|&moved| moved.abs_diff(at) > second)
            })?;
            let notice = record
                .events
                .iter()
                .position(|e| matches!(e.event, LiveEvent::GoAway { time_left: Some(_) }))?;
            let moved = record.events[notice..]
                .iter()
                .find(|e| matches!(e.event, LiveEvent::Resumed { .. }))?
                .at;
            // A move in the notice's own instant (a `goAway` between
            // turns, the session moving at once) could as well have come
            // before it: only a later one says the deadline no longer
            // stands.
            if moved <= record.events[notice].at {
                return None;
            }
            // No notice on the new connection in the second after the
            // move, whose countdown the stale write would meet.
            let quiet = !record.events.iter().any(|e| {
                matches!(e.event, LiveEvent::GoAway { .. })
                    && e.at > moved
                    && e.at <= moved + 2 * second
            });
            quiet.then_some((record, moved, alone))
        })
        .expect("a resumable seed under 100 counts down a goAway, away from moves, and moves")
}

#[test]
fn a_countdown_that_outlives_its_connection_is_caught() {
    let (good, moved, _) = moved_after_a_countdown();
    assert_eq!(verdict(invariants::TELEMETRY, &good), Ok(()));
    // The old connection's countdown, written a second after the move,
    // as a session that forgot to drop the deadline would.
    let mut stale = good.clone();
    let mut write = good
        .journal
        .iter()
        .find(|m| m.key == KEY && !m.removed)
        .cloned()
        .unwrap();
    write.timestamp = livesim::clock::VIRTUAL_EPOCH + moved + Duration::from_secs(1);
    write.value = json!(0);
    write.seq = 1_000_000;
    stale.journal.push(write);
    let err = verdict(invariants::TELEMETRY, &stale).unwrap_err();
    assert!(
        err.starts_with("journal #1000000: session:go_away_remaining_ms 0"),
        "{err}"
    );
    assert!(
        err.contains("the session moved to a new connection at t=")
            && err.ends_with("so that goAway's deadline no longer stands"),
        "{err}"
    );
}

#[test]
fn a_countdown_off_its_deadline_or_removed_unmoved_is_caught() {
    let (good, _, i) = moved_after_a_countdown();
    // More time left than the goAway announced.
    let mut late = good.clone();
    late.journal[i].value = json!(10_000_000);
    let err = verdict(invariants::TELEMETRY, &late).unwrap_err();
    assert!(
        err.contains("ms, so between ") && err.ends_with(" ms remain then"),
        "{err}"
    );
    // The key removed on the connection whose goAway still stands.
    let mut dropped = good.clone();
    dropped.journal[i].value = json!(null);
    dropped.journal[i].removed = true;
    let err = verdict(invariants::TELEMETRY, &dropped).unwrap_err();
    assert!(
        err.ends_with(
            "removed, but the session did not move to a new connection after a goAway then"
        ),
        "{err}"
    );
}

/// `good` with a second `goAway` (announcing `left`) received at `at`.
fn with_notice_at(good: &RunRecord, at: Duration, left: Duration) -> RunRecord {
    let mut run = good.clone();
    let place = run.events.partition_point(|e| e.at <= at);
    run.events.insert(
        place,
        livesim::soak::TimedEvent {
            at,
            event: LiveEvent::GoAway {
                time_left: Some(left),
            },
        },
    );
    run
}

#[test]
fn a_countdown_written_in_the_instant_a_new_notice_comes_may_count_the_old_one() {
    // The telemetry lane's tick and the next notice fall in one instant:
    // the tick may come first, still counting down the notice before.
    let (good, _, _) = moved_after_a_countdown();
    // The last countdown before the session moved (the key removed
    // next): no later write would count down from the new notice.
    let countdown: Vec<_> = good.journal.iter().filter(|m| m.key == KEY).collect();
    let last = countdown
        .windows(2)
        .find(|w| !w[0].removed && w[1].removed)
        .map(|w| w[0])
        .expect("a countdown the move ended");
    let at = last.timestamp - livesim::clock::VIRTUAL_EPOCH;
    let other = Duration::from_secs(99);
    let same_instant = with_notice_at(&good, at, other);
    assert_eq!(verdict(invariants::TELEMETRY, &same_instant), Ok(()));
    // A millisecond earlier, the new notice was the one that stood.
    let before = with_notice_at(&good, at - Duration::from_millis(1), other);
    let err = verdict(invariants::TELEMETRY, &before).unwrap_err();
    assert!(err.ends_with(" ms remain then"), "{err}");
}
