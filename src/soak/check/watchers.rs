//! `watchers-follow-journal`: every state watcher of a run was called once
//! for each write of its key, in order, and told what the key held, as
//! the run's state journal (not the session's watch code) says.
//!
//! The session calls a key's watchers on its control lane, for each
//! change the state announces, with the value it last told them (the
//! value in the state it was given, the first time) and the key's value
//! as the lane reads it then: the value of that write or of a later one,
//! since writes may land before the lane gets to the change. So, for
//! each watcher, with its key's writes `w1 … wn` in journal order and its
//! calls `c1 … cm`:
//!
//! - `c1.old` is the key's value in the state the session was given, and
//!   each later `old` is the call before's `new`;
//! - `ci.new` is the value some write `wj` left, with `j ≥ i`, no earlier
//!   than the write the call before read, and written by the call's time
//!   (`null` for a removal);
//! - there are no more calls than writes, and once the run has settled
//!   with its session running, as many (then the last call read the last
//!   write).

use std::time::Duration;

use serde_json::Value;

use crate::clock::VIRTUAL_EPOCH;
use crate::executor::format_time;
use crate::soak::run::record::RunRecord;
use crate::soak::run::watching::{WatchCall, Watched};

/// The check: `Ok` when each watcher's calls are its key's writes.
pub(crate) fn check(run: &RunRecord) -> Result<(), String> {
    for (index, watched) in run.watched.iter().enumerate() {
        let key = &watched.key;
        let writes: Vec<(Duration, Value)> = run
            .journal
            .iter()
            .filter(|m| m.key == *key)
            .map(|m| {
                let value = if m.removed {
                    Value::Null
                } else {
                    m.value.clone()
                };
                (m.timestamp - VIRTUAL_EPOCH, value)
            })
            .collect();
        let calls: Vec<_> = run
            .watch_calls
            .iter()
            .filter(|c| c.watcher == index)
            .collect();
        let settled = run.settling.settled_at.is_some() && !run.settling.ended;
        judge(watched, &writes, &calls, settled)?;
    }
    Ok(())
}

/// One watcher's calls against its key's writes (time, value left);
/// `settled`: the run settled with its session running.
fn judge(
    watched: &Watched,
    writes: &[(Duration, Value)],
    calls: &[&WatchCall],
    settled: bool,
) -> Result<(), String> {
    let key = &watched.key;
    if calls.len() > writes.len() {
        return Err(format!(
            "the watcher of {key} was called {} times, but {key} was written {} times",
            calls.len(),
            writes.len()
        ));
    }
    let mut told = watched.initial.clone();
    let mut read = 0;
    for (i, call) in calls.iter().enumerate() {
        if call.old != told {
            return Err(format!(
                "call #{} of the watcher of {key} (t={}) was told the value before was {}, \
                 but {}",
                i + 1,
                format_time(call.at),
                shown(call.old.as_ref()),
                match i {
                    0 => format!("{key} held {} when the session began", shown(told.as_ref())),
                    _ => format!("the call before told it {}", shown(told.as_ref())),
                }
            ));
        }
        let Some(j) = (read.max(i)..writes.len())
            .take_while(|&j| writes[j].0 <= call.at)
            .find(|&j| writes[j].1 == call.new)
        else {
            return Err(format!(
                "call #{} of the watcher of {key} (t={}) was told {key} is {}, but no write \
                 of {key} from its #{} up to then left that value ({})",
                i + 1,
                format_time(call.at),
                call.new,
                read.max(i) + 1,
                listed(&writes[read.max(i)..])
            ));
        };
        read = j;
        told = Some(call.new.clone());
    }
    if settled && calls.len() < writes.len() {
        return Err(format!(
            "{key} was written {} times, but its watcher was called {} times by the time the \
             run settled",
            writes.len(),
            calls.len()
        ));
    }
    Ok(())
}

fn shown(value: Option<&Value>) -> String {
    value.map_or_else(|| "nothing".to_string(), Value::to_string)
}

fn listed(writes: &[(Duration, Value)]) -> String {
    if writes.is_empty() {
        return "none".to_string();
    }
    writes
        .iter()
        .map(|(at, value)| format!("{value} at t={}", format_time(*at)))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    proptest! {
        /// For every sequence of writes and every delay with which the
        /// control lane gets to each change (in order, at or after it),
        /// the calls of a watcher that reads the key when it gets there
        /// and remembers what it told pass the model; and if the lane got
        /// to every change, so does the count.
        #[test]
        fn a_correct_lane_passes_whatever_its_delays(
            writes in proptest::collection::vec((0u64..500, prop_oneof![
                Just(None), (0u8..3).prop_map(Some),
            ]), 0..15),
            delays in proptest::collection::vec(0u64..2_000, 15),
            initial in prop_oneof![Just(None), (0u8..3).prop_map(Some)],
            seen_all in any::<bool>(),
        ) {
            // Writes at increasing times; `None` removes the key.
            let mut at = 0;
            let writes: Vec<(Duration, Value)> = writes
                .into_iter()
                .map(|(gap, v)| {
                    at += gap;
                    (ms(at), v.map_or(Value::Null, |v| json!(v)))
                })
                .collect();
            let value_at = |t: Duration| -> Value {
                writes
                    .iter()
                    .rev()
                    .find(|(w, _)| *w <= t)
                    .map_or_else(
                        || initial.map_or(Value::Null, |v| json!(v)),
                        |(_, v)| v.clone(),
                    )
            };
            // The lane gets to the i-th change at or after it, in order.
            let mut last = Duration::ZERO;
            let mut told = initial.map(|v| json!(v));
            let mut calls = Vec::new();
            let handled = if seen_all { writes.len() } else { writes.len() / 2 };
            for (i, (w, _)) in writes.iter().take(handled).enumerate() {
                let t = (*w + ms(delays[i])).max(last);
                last = t;
                let new = value_at(t);
                calls.push(WatchCall { watcher: 0, at: t, old: told.clone(), new: new.clone() });
                told = Some(new);
            }
            let watched = Watched { key: "k".into(), initial: initial.map(|v| json!(v)) };
            let calls: Vec<&WatchCall> = calls.iter().collect();
            prop_assert_eq!(judge(&watched, &writes, &calls, false), Ok(()));
            if seen_all {
                prop_assert_eq!(judge(&watched, &writes, &calls, true), Ok(()));
            }
        }
    }
}
