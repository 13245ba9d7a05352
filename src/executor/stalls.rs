//! Why a run stopped moving: tasks that nothing in the simulation woke,
//! and OS threads the test started that are still running.
//!
//! Virtual time moves whenever every task is blocked, so a task that waits
//! on an OS thread (`std::thread::spawn`, a blocking client) waits in real
//! time while virtual time races on: the run hits its time limit, or a
//! scripted run its settle cap, in milliseconds, and the report would
//! blame timers. This module gives such a report its likely cause.
//!
//! The heuristic, in two parts:
//!
//! 1. **A task nothing woke.** Every task spawned through the facade (and
//!    the test future, `main`) records the virtual time of its last poll.
//!    tokio polls a woken task at once, so a task whose last poll is long
//!    past (at least [`STALL`]) has not been woken since: whatever it
//!    waits for, nothing in the simulation did it.
//! 2. **An OS thread of this test still running** (Linux, from
//!    `/proc/self/task`): a thread takes its creator's name, so a thread
//!    named like the test's own thread that did not exist when the run
//!    started was started by the test (or by the code it tests).
//!
//! Both together make the diagnosis "a task blocked on an OS thread"
//! likely; a stalled tool task alone (`tool:<name>`) makes it the first
//! thing to check. A task sleeping past the limit on a long timer also
//! looks stalled, so a stalled task that is not a tool is named only when
//! an OS thread was seen.

use std::collections::BTreeSet;
use std::time::Duration;

use super::context;
use super::trace::format_time;

/// How long a task must have gone without a poll to count as stalled.
pub(crate) const STALL: Duration = Duration::from_secs(1);

/// What the report adds when a run hits a cap (a time limit, a settle
/// cap) or deadlocks: the likely cause, if the run shows one. Call it
/// inside the simulation; outside one there is nothing to say.
///
/// ```
/// use std::time::Duration;
/// use livesim::Seed;
/// use livesim::executor::{Simulation, spawn, stall_report};
///
/// let report = Simulation::new(Seed::new(1)).run(|| async {
///     // A tool that waits for something no task will ever send.
///     let (_tx, rx) = tokio::sync::oneshot::channel::<()>();
///     spawn("tool:lookup", async move { let _ = rx.await; });
///     tokio::time::sleep(Duration::from_secs(5)).await;
///     stall_report()
/// }).unwrap().value.unwrap();
/// assert!(report.contains("tool:lookup"), "{report}");
/// ```
pub fn stall_report() -> Option<String> {
    let (now, stalled, before) = context::with(|ctx| {
        let now = ctx.now();
        (now, ctx.stalled_tasks(now, STALL), ctx.threads_at_start())
    })?;
    let threads = match (before, sibling_threads()) {
        (Some(before), Some(now)) => now.difference(&before).count(),
        _ => 0,
    };
    let tools: Vec<&(String, Duration)> = stalled
        .iter()
        .filter(|(label, _)| label.starts_with("tool:"))
        .collect();
    let named: Vec<&(String, Duration)> = if threads > 0 {
        stalled.iter().collect()
    } else {
        tools
    };
    if named.is_empty() {
        return None;
    }
    let list: Vec<String> = named
        .iter()
        .map(|(label, at)| format!("{label} (last polled at t={})", format_time(*at)))
        .collect();
    let waiting = format!(
        "{} {} not been woken since",
        list.join(", "),
        if named.len() == 1 { "has" } else { "have" }
    );
    let why = "virtual time does not wait for OS threads; see docs/determinism.md, \
               \"No OS threads in a session\"";
    Some(if threads > 0 {
        format!(
            "likely cause: a task blocked on an OS thread. At t={}, {threads} OS thread(s) this \
             test started during the run are still running, and {waiting}: {why}",
            format_time(now)
        )
    } else {
        format!(
            "{waiting}: if it waits on an OS thread (std::thread::spawn, spawn_blocking, a \
             blocking client), that is the likely cause: {why}"
        )
    })
}

/// The other threads of this process that bear the calling thread's name
/// (Linux; `None` elsewhere, or if `/proc` cannot be read).
pub(crate) fn sibling_threads() -> Option<BTreeSet<u32>> {
    let me = std::fs::read_link("/proc/thread-self").ok()?;
    let my_tid: u32 = me.file_name()?.to_str()?.parse().ok()?;
    let name = |tid: u32| std::fs::read_to_string(format!("/proc/self/task/{tid}/comm")).ok();
    let my_name = name(my_tid)?;
    let mut siblings = BTreeSet::new();
    for entry in std::fs::read_dir("/proc/self/task").ok()? {
        let Some(tid) = entry
            .ok()
            .and_then(|e| e.file_name().to_str().and_then(|t| t.parse::<u32>().ok()))
        else {
            continue;
        };
        if tid != my_tid && name(tid).as_deref() == Some(my_name.as_str()) {
            siblings.insert(tid);
        }
    }
    Some(siblings)
}
