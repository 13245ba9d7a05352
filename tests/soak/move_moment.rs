//! The moment of a `goAway` move: once the model's turn is over and a
//! handle has come since it began, or at half the time left, whichever is
//! first. A move made sooner (mid-turn) or later than that fails
//! `reconnect-ends`.

use std::time::Duration;

use livesim::Seed;
use livesim::session::LiveEvent;
use livesim::soak::{RunRecord, Soak, invariants};

use super::{agent, verdict};

/// A `goAway` the session moved for: when it came, how long it gave, the
/// move's index among the events and its time, and whether a turn ended
/// in between.
struct Move {
    notice: Duration,
    left: Duration,
    index: usize,
    at: Duration,
    turn_ended: bool,
}

/// The `goAway` moves of a run.
fn moves(record: &RunRecord) -> Vec<Move> {
    let events = &record.events;
    let mut found = Vec::new();
    for notice in events {
        let LiveEvent::GoAway {
            time_left: Some(left),
        } = notice.event
        else {
            continue;
        };
        let g = notice.at;
        let Some(index) = events.iter().position(|e| {
            e.at >= g
                && matches!(
                    e.event,
                    LiveEvent::Reconnecting { .. } | LiveEvent::Disconnected { .. }
                )
        }) else {
            continue;
        };
        let at = events[index].at;
        if !matches!(&events[index].event, LiveEvent::Reconnecting { cause, .. } if cause == "goAway")
        {
            continue;
        }
        let turn_ended = events
            .iter()
            .any(|e| e.at >= g && e.at <= at && matches!(e.event, LiveEvent::TurnComplete { .. }));
        found.push(Move {
            notice: g,
            left,
            index,
            at,
            turn_ended,
        });
    }
    found
}

/// The first passing run of the resumable agent, in memory or over the
/// simulated network as `network` says, with a move that `wanted` picks.
fn a_run_with(network: bool, what: &str, wanted: impl Fn(&Move) -> bool) -> (RunRecord, Move) {
    let soak = Soak::agent(&agent("resumable")).check_determinism_every(0);
    (0..400)
        .find_map(|s| {
            let run = soak.run_seed(Seed::new(s));
            let record = run.record.filter(|_| run.failures.is_empty())?;
            if record.network.is_some() != network {
                return None;
            }
            let found = moves(&record).into_iter().find(|m| wanted(m))?;
            Some((record, found))
        })
        .unwrap_or_else(|| panic!("no passing resumable seed under 400 has {what}"))
}

/// A move made at half the time left, the turn never having ended.
fn waited_for_half(m: &Move) -> bool {
    !m.turn_ended
        && m.left >= Duration::from_secs(4)
        && m.at + Duration::from_millis(50) >= m.notice + m.left / 2
}

/// `good` passes, and the same run with `waited` made right at its
/// notice, mid-turn, fails.
fn moved_at_once_fails(good: RunRecord, waited: &Move) {
    assert_eq!(verdict(invariants::RECONNECT_ENDS, &good), Ok(()));
    let mut hasty = good;
    hasty.events[waited.index].at = waited.notice + Duration::from_millis(1);
    let err = verdict(invariants::RECONNECT_ENDS, &hasty).unwrap_err();
    assert!(err.contains("before the model's turn was over"), "{err}");
}

#[test]
fn a_move_made_mid_turn_fails_reconnect_ends() {
    // A notice that came mid-call: the session waited for half the time
    // left, since the turn never ended before.
    let (good, waited) = a_run_with(false, "a move made at half the time left", waited_for_half);
    moved_at_once_fails(good, &waited);
}

#[test]
fn a_move_made_mid_turn_over_the_network_fails_reconnect_ends() {
    // Over the network the session's end of each connection is tapped:
    // every frame it read, with when it read it.
    let (good, waited) = a_run_with(
        true,
        "a move over the network made at half the time left",
        waited_for_half,
    );
    assert_eq!(good.server_frames_at.len(), good.server_frames.len());
    assert!(good.server_frames_at.iter().any(|at| *at > Duration::ZERO));
    moved_at_once_fails(good, &waited);
}

#[test]
fn a_move_made_long_after_the_turn_let_it_fails_reconnect_ends() {
    // A notice near a turn's end: the session moved once the turn was
    // over and its handle came, long before half the time left.
    let (good, prompt) = a_run_with(false, "a move made when the turn ended", |m| {
        m.turn_ended && m.at + Duration::from_secs(3) < m.notice + m.left / 2
    });
    assert_eq!(verdict(invariants::RECONNECT_ENDS, &good), Ok(()));
    let mut idle = good;
    idle.events[prompt.index].at = prompt.at + Duration::from_secs(1);
    let err = verdict(invariants::RECONNECT_ENDS, &idle).unwrap_err();
    assert!(
        err.contains("but the session began its move only at"),
        "{err}"
    );
}
