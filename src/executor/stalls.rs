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
//!    named like the test's own thread that started after the run did was
//!    started by the test (or by the code it tests). Start times come
//!    from `/proc` (in ticks of 10 ms since boot), read only when a report
//!    is made: a run pays nothing for the check when it does not fail (a
//!    snapshot of the threads at every run's start cost 15 µs with one
//!    thread and 80 µs with nine, more than a whole scripted test).
//!
//! Both together make the diagnosis "a task blocked on an OS thread"
//! likely; a stalled tool task alone (`tool:<name>`) makes it the first
//! thing to check. A task sleeping past the limit on a long timer also
//! looks stalled, so a stalled task that is not a tool is named only when
//! an OS thread was seen.

use std::time::{Duration, Instant};

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
    let (now, stalled, started) = context::with(|ctx| {
        let now = ctx.now();
        (now, ctx.stalled_tasks(now, STALL), ctx.started())
    })?;
    let threads = siblings_started_since(started).unwrap_or(0);
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

/// How many other threads of this process bear the calling thread's name
/// and started after `started` (Linux; `None` elsewhere, or if `/proc`
/// cannot be read). A thread started within a tick (10 ms) before it may
/// count too: the report says "likely", not "certainly".
pub(crate) fn siblings_started_since(started: Instant) -> Option<usize> {
    // Seconds since boot now, and so when the run started, in ticks.
    let uptime: f64 = std::fs::read_to_string("/proc/uptime")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let since = (uptime - started.elapsed().as_secs_f64()).max(0.0);
    let first_tick = (since * TICKS_PER_SECOND).floor() as u64;
    let me = std::fs::read_link("/proc/thread-self").ok()?;
    let my_tid: u32 = me.file_name()?.to_str()?.parse().ok()?;
    let (my_name, _) = thread_stat(my_tid)?;
    let mut count = 0;
    for entry in std::fs::read_dir("/proc/self/task").ok()? {
        let Some(tid) = entry
            .ok()
            .and_then(|e| e.file_name().to_str().and_then(|t| t.parse::<u32>().ok()))
        else {
            continue;
        };
        if tid == my_tid {
            continue;
        }
        if let Some((name, start)) = thread_stat(tid)
            && name == my_name
            && start >= first_tick
        {
            count += 1;
        }
    }
    Some(count)
}

/// The kernel's clock ticks per second in `/proc` (`USER_HZ`, 100 on
/// Linux whatever the kernel's own rate).
const TICKS_PER_SECOND: f64 = 100.0;

/// A thread's name and start time (ticks since boot), from
/// `/proc/self/task/<tid>/stat`: `tid (name) state ppid …`, the start
/// time being the 22nd field. The name may hold spaces and parentheses,
/// so fields are counted after its last `)`.
fn thread_stat(tid: u32) -> Option<(String, u64)> {
    parse_stat(&std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).ok()?)
}

fn parse_stat(stat: &str) -> Option<(String, u64)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let name = stat.get(open + 1..close)?.to_string();
    let start = stat.get(close + 2..)?.split(' ').nth(19)?.parse().ok()?;
    Some((name, start))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_threads_name_and_start_are_read_past_odd_names() {
        let fields: Vec<String> = (3..=30).map(|n| n.to_string()).collect();
        let stat = format!("4242 (a (b) c) {}\n", fields.join(" "));
        assert_eq!(parse_stat(&stat), Some(("a (b) c".to_string(), 22)));
        assert_eq!(parse_stat("4242 (cut short) S 1 2"), None);
        assert_eq!(parse_stat("no name here"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_threads_own_stat_reads() {
        let me: u32 = std::fs::read_link("/proc/thread-self")
            .unwrap()
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        let (name, start) = thread_stat(me).expect("this thread's stat");
        let comm = std::fs::read_to_string(format!("/proc/self/task/{me}/comm")).unwrap();
        assert_eq!(name, comm.trim_end());
        assert!(start > 0);
    }
}
