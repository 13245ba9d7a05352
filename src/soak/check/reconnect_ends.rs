//! `reconnect-ends`: every reconnect ends within the bound its policy's
//! declared numbers give, each attempt waiting its backoff, and a
//! session holding a handle starts its `goAway` move in time, once the
//! turn lets it and not before.

use std::time::Duration;

use crate::executor::format_time;
use crate::session::{LiveEvent, Resumption};
use crate::soak::check::go_away;
use crate::soak::check::move_moment;
use crate::soak::run::record::RunRecord;

/// How long one reconnect may take, from the policy's declared numbers
/// (not the session's own backoff function): attempt `a` waits at most
/// `initial × 2^(a-1)`, never more than `max`, and each attempt's setup
/// may take its whole timeout.
pub(crate) fn reconnect_bound(policy: &Resumption, setup_timeout: Duration) -> Duration {
    // (Saturating: a policy may say `Duration::MAX`, meaning "never".)
    (1..=policy.max_attempts())
        .map(|attempt| backoff_step(policy, attempt).saturating_add(setup_timeout))
        .fold(Duration::ZERO, Duration::saturating_add)
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
    move_moment::began_when_ready(run)?;
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
                    if took > bound.saturating_add(grace) {
                        return Err(format!(
                            "a reconnect took from t={} to t={} ({} attempt(s)), past its bound \
                             of {}",
                            format_time(began),
                            format_time(at),
                            last,
                            format_time(bound.saturating_add(grace))
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
