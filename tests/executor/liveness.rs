//! Virtual time, quiescence, and runs that cannot finish.

use std::time::Duration;

use livesim::Seed;
use livesim::executor::{FailureKind, Simulation, settle, spawn};

/// A 30-second sleep ends at exactly 30 s of virtual time. (Its wall-clock
/// cost is measured in `benches/executor.rs`, not here.)
#[test]
fn thirty_seconds_of_virtual_time_are_exact() {
    let out = Simulation::new(Seed::new(1))
        .run(|| async {
            tokio::time::sleep(Duration::from_secs(30)).await;
            livesim::executor::now()
        })
        .unwrap();
    assert_eq!(out.value, Duration::from_secs(30));
    assert_eq!(out.elapsed, Duration::from_secs(30));
}

/// A test waiting on a channel nobody will ever send to is a deadlock,
/// reported with the virtual time at which everything stopped and the seed.
#[test]
fn a_deadlock_is_reported_not_hung() {
    let failure = Simulation::new(Seed::new(0x2a))
        .run(|| async {
            tokio::time::sleep(Duration::from_millis(1500)).await;
            let (_tx, rx) = tokio::sync::oneshot::channel::<()>();
            rx.await.unwrap();
        })
        .unwrap_err();
    assert_eq!(failure.kind, FailureKind::Deadlock);
    assert_eq!(failure.at, Duration::from_millis(1500));
    assert!(
        failure
            .summary()
            .starts_with("deadlock at t=1.500s, seed 0x2a"),
        "{failure}"
    );
}

/// A deadlock among spawned tasks is found the same way.
#[test]
fn tasks_waiting_on_each_other_deadlock() {
    let failure = Simulation::new(Seed::new(3))
        .run(|| async {
            let (a_tx, a_rx) = tokio::sync::oneshot::channel::<()>();
            let (b_tx, b_rx) = tokio::sync::oneshot::channel::<()>();
            let a = spawn("a", async move {
                b_rx.await.ok();
                a_tx.send(()).ok();
            });
            let b = spawn("b", async move {
                a_rx.await.ok();
                b_tx.send(()).ok();
            });
            a.await.unwrap();
            b.await.unwrap();
        })
        .unwrap_err();
    assert_eq!(failure.kind, FailureKind::Deadlock);
    assert_eq!(failure.at, Duration::ZERO);
}

/// A run whose timers keep it busy past the limit fails as a time limit,
/// not as a deadlock, and says which seed.
#[test]
fn a_run_past_its_time_limit_fails_with_the_seed() {
    let failure = Simulation::new(Seed::new(7))
        .time_limit(Duration::from_secs(10))
        .run(|| async {
            let mut tick = tokio::time::interval(Duration::from_millis(500));
            loop {
                tick.tick().await;
            }
        })
        .unwrap_err();
    assert_eq!(
        failure.kind,
        FailureKind::TimeLimit {
            limit: Duration::from_secs(10)
        }
    );
    assert!(failure.summary().contains("seed 0x7"), "{failure}");
}

/// One long sleep past the limit is a time limit too: a timer was pending.
#[test]
fn a_single_long_sleep_is_not_a_deadlock() {
    let failure = Simulation::new(Seed::new(8))
        .time_limit(Duration::from_secs(60))
        .run(|| tokio::time::sleep(Duration::from_secs(3600)))
        .unwrap_err();
    assert!(
        matches!(failure.kind, FailureKind::TimeLimit { .. }),
        "{failure}"
    );
}

/// A task that never waits on anything is a livelock, caught by the poll
/// limit rather than hanging the test.
#[test]
fn a_busy_loop_is_a_livelock() {
    let failure = Simulation::new(Seed::new(9))
        .poll_limit(10_000)
        .run(|| async {
            spawn("spinner", async {
                loop {
                    tokio::task::yield_now().await;
                }
            });
            std::future::pending::<()>().await;
        })
        .unwrap_err();
    assert!(
        matches!(failure.kind, FailureKind::Livelock { .. }),
        "{failure}"
    );
    assert!(
        failure
            .summary()
            .starts_with("livelock at t=0.000s, seed 0x9")
    );
}

/// A panic in the test future fails the run with its message and location,
/// and the trace ends with it.
#[test]
fn a_panic_is_a_failure_with_its_message() {
    let failure = Simulation::new(Seed::new(4))
        .run(|| async {
            tokio::time::sleep(Duration::from_millis(250)).await;
            panic!("the model said something odd");
        })
        .unwrap_err();
    let FailureKind::Panic { message } = &failure.kind else {
        panic!("{failure}")
    };
    assert!(
        message.contains("the model said something odd"),
        "{message}"
    );
    assert!(message.contains("tests/executor/liveness.rs"), "{message}");
    let last = failure.trace.last().unwrap();
    assert!(last.event.starts_with("panic: 'main' panicked"), "{last}");
    assert_eq!(failure.at, Duration::from_millis(250));
}

/// A panic inside a spawned task reaches its JoinHandle, as in tokio, and
/// is recorded in the trace under the task's label.
#[test]
fn a_task_panic_reaches_its_join_handle() {
    let out = Simulation::new(Seed::new(5))
        .run(|| async {
            let handle = spawn("tool:flaky", async { panic!("tool blew up") });
            handle.await.unwrap_err().is_panic()
        })
        .unwrap();
    assert!(out.value);
    assert!(
        out.trace
            .entries()
            .any(|e| e.label == "tool:flaky" && e.event.contains("tool blew up"))
    );
}

/// `settle` waits for every runnable lane and task without moving time,
/// and sees timers as parked.
#[test]
fn settle_waits_for_quiescence_without_moving_time() {
    let out = Simulation::new(Seed::new(6))
        .run(|| async {
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
            for i in 0..5u32 {
                let tx = tx.clone();
                spawn(format!("worker{i}"), async move {
                    for step in 0..3 {
                        tx.send((i, step)).unwrap();
                        tokio::task::yield_now().await;
                    }
                    // Parked on a timer from here on.
                    tokio::time::sleep(Duration::from_secs(60)).await;
                    tx.send((i, 99)).unwrap();
                });
            }
            settle().await;
            let mut got = 0;
            while rx.try_recv().is_ok() {
                got += 1;
            }
            (got, livesim::executor::now())
        })
        .unwrap();
    assert_eq!(out.value, (15, Duration::ZERO));
}

/// Outside a simulation nothing is seeded and nothing is recorded.
#[tokio::test]
async fn outside_simulation_everything_is_plain_tokio() {
    assert_eq!(livesim::executor::seed(), None);
    assert_eq!(livesim::executor::now(), Duration::ZERO);
    livesim::executor::record("ignored");
    assert_eq!(livesim::executor::trace_len(), 0);
    assert_eq!(spawn("plain", async { 5 }).await.unwrap(), 5);
    settle().await;
}
