//! Tasks spawned around the facade: under simulation, a task spawned with
//! `tokio::spawn` is one the seed cannot reorder. The run notices it and
//! warns once, naming what to use instead; tasks spawned through the
//! facade raise nothing.

use std::time::Duration;

use livesim::Seed;
use livesim::executor::{LaneSet, Runner, Simulation, spawn, yield_point};

#[test]
fn a_task_spawned_with_tokio_is_noticed_once() {
    let outcome = Simulation::new(Seed::new(3))
        .run(|| async {
            let a = tokio::spawn(async { tokio::time::sleep(Duration::from_millis(5)).await });
            let b = tokio::spawn(async {});
            tokio::time::sleep(Duration::from_millis(1)).await;
            a.await.unwrap();
            b.await.unwrap();
        })
        .unwrap();
    assert_eq!(outcome.warnings.len(), 1, "{:?}", outcome.warnings);
    let warning = &outcome.warnings[0];
    assert!(
        warning.contains("outside livesim::executor::spawn")
            && warning.contains("livesim::executor::spawn(label, future)"),
        "{warning}"
    );
    let traced = outcome
        .trace
        .entries()
        .filter(|e| e.event.starts_with("warning: "))
        .count();
    assert_eq!(traced, 1, "once in the trace");
}

/// A task spawned with tokio from inside a lane (a unit polled within a
/// task) is noticed too, though it is never awaited and ends at its first
/// poll.
#[test]
fn a_task_spawned_from_a_lane_is_noticed() {
    let outcome = Simulation::new(Seed::new(3))
        .run(|| async {
            let mut lanes = LaneSet::new("session");
            lanes.add("spawner", async {
                drop(tokio::spawn(async {}));
            });
            lanes.add("other", async {
                yield_point("other").await;
            });
            spawn("holder", lanes).await.unwrap();
            tokio::time::sleep(Duration::from_millis(1)).await;
        })
        .unwrap();
    assert_eq!(outcome.warnings.len(), 1, "{:?}", outcome.warnings);
}

#[test]
fn tasks_spawned_through_the_facade_raise_nothing() {
    let outcome = Simulation::new(Seed::new(3))
        .run(|| async {
            let a = spawn("a", async {
                tokio::time::sleep(Duration::from_millis(5)).await
            });
            let b = spawn("b", async {});
            a.await.unwrap();
            b.await.unwrap();
        })
        .unwrap();
    assert!(outcome.warnings.is_empty(), "{:?}", outcome.warnings);
}

/// A failing seed's report keeps the warning in its trace, where a person
/// looking for why the seed misbehaves will read it.
#[test]
fn the_warning_reaches_a_failure_report() {
    let report = Runner::new(livesim::test_id!())
        .try_run(|_| async {
            tokio::spawn(async {}).await.unwrap();
            tokio::time::sleep(Duration::from_millis(1)).await;
            Err("stop")
        })
        .unwrap_err();
    assert_eq!(report.failure.warnings.len(), 1);
    assert!(
        report
            .to_string()
            .contains("runtime    | warning: a task spawned outside livesim::executor::spawn"),
        "{report}"
    );
}
