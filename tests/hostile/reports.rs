//! What a failure report tells the person reading it: a replay line that
//! runs the test even when it is `#[ignore]`d, a determinism report that
//! points to the project's own docs, and a run that hits its time limit or
//! settle cap because a tool waits on an OS thread saying so.

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use livesim::Seed;
use livesim::executor::{FailureKind, Runner, Simulation, record, spawn};
use livesim::prelude::*;
use livesim::testing::ScriptedServer;
use serde_json::json;

/// Set in the child process that runs the ignored tests below; without it
/// they pass, so a run with `--include-ignored` is not broken by them.
const CHILD: &str = "LIVESIM_HOSTILE_REPORT_CHILD";

#[livesim::test]
#[ignore = "run by the_replay_line_of_an_ignored_test_runs_it, in a child process"]
async fn ignored_below() {
    assert!(std::env::var(CHILD).is_err(), "failing on purpose");
}

#[ignore = "run by the_replay_line_of_an_ignored_test_runs_it, in a child process"]
#[livesim::test]
async fn ignored_above() {
    assert!(std::env::var(CHILD).is_err(), "failing on purpose");
}

/// Runs this test binary's `test` as a child, with extra arguments and
/// environment; returns its exit status and output.
fn child(test: &str, args: &[&str], env: &[(&str, &str)]) -> (bool, String) {
    let output = Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact"])
        .args(args)
        .env(CHILD, "1")
        // They fail on purpose: keep their seeds out of the repository.
        .env("LIVESIM_REGRESSIONS", "off")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

/// The replay line of an ignored test asks for `--include-ignored`, and
/// those arguments do run it (without them libtest runs nothing).
#[test]
fn the_replay_line_of_an_ignored_test_runs_it() {
    for name in ["reports::ignored_below", "reports::ignored_above"] {
        let (passed, output) = child(name, &["--ignored"], &[]);
        assert!(!passed, "{output}");
        let expected = format!(
            "replay: LIVESIM_SEED=0x0 cargo test --test hostile {name} -- --exact --include-ignored"
        );
        assert!(output.contains(&expected), "no {expected:?} in:\n{output}");
        // The replay line's arguments, as cargo passes them on.
        let (passed, output) = child(name, &["--include-ignored"], &[("LIVESIM_SEED", "0x0")]);
        assert!(!passed && output.contains("1 failed"), "{output}");
        // What the old line ran: nothing.
        let (passed, output) = child(name, &[], &[("LIVESIM_SEED", "0x0")]);
        assert!(
            passed && output.contains("0 passed; 0 failed; 1 ignored"),
            "{output}"
        );
    }
}

/// A determinism report names the project's own docs, which exist and
/// hold the rules it refers to.
#[test]
fn a_determinism_report_points_to_the_projects_docs() {
    static RUNS: AtomicU64 = AtomicU64::new(0);
    let report = Runner::new(livesim::test_id!())
        .check_determinism(true)
        .try_run(|_seed| async {
            // A counter outside the seed: the second run differs.
            record(&format!("run {}", RUNS.fetch_add(1, Ordering::Relaxed)));
        })
        .unwrap_err()
        .to_string();
    assert!(report.contains("see docs/determinism.md"), "{report}");
    assert!(!report.contains(concat!("DESIGN", ".md")), "{report}");
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/determinism.md");
    let text = std::fs::read_to_string(&docs).expect("docs/determinism.md exists");
    for rule in [
        "## Time comes from the clock",
        "## Randomness comes from the seed",
        "## No iteration order from a hash",
        "## `biased;` in every `select!`",
        "## No OS threads in a session",
        "## Spawn through livesim",
    ] {
        assert!(text.contains(rule), "docs/determinism.md has no {rule:?}");
    }
}

/// A tool's work on an OS thread, started during the run (as a tool that
/// calls a blocking client would), which holds the answer until the test
/// lets it go.
#[derive(Clone)]
struct BlockedTool {
    release: std::sync::Arc<std::sync::Mutex<Option<std::sync::mpsc::Receiver<()>>>>,
    thread: std::sync::Arc<std::sync::Mutex<Option<std::thread::JoinHandle<()>>>>,
}

impl BlockedTool {
    /// A tool not started yet, and the sender that lets it finish.
    fn new() -> (Self, std::sync::mpsc::Sender<()>) {
        let (release, released) = std::sync::mpsc::channel::<()>();
        let tool = BlockedTool {
            release: std::sync::Arc::new(std::sync::Mutex::new(Some(released))),
            thread: std::sync::Arc::default(),
        };
        (tool, release)
    }

    /// Starts the OS thread; the receiver gets its answer once released.
    fn start(&self) -> tokio::sync::oneshot::Receiver<serde_json::Value> {
        let (answer, answered) = tokio::sync::oneshot::channel();
        let released = self.release.lock().unwrap().take().expect("started once");
        // The point of the test: a tool that waits on an OS thread.
        #[allow(clippy::disallowed_methods)]
        let thread = std::thread::spawn(move || {
            let _ = released.recv();
            let _ = answer.send(json!({ "sky": "sunny" }));
        });
        *self.thread.lock().unwrap() = Some(thread);
        answered
    }

    /// Lets the thread finish and waits for it.
    fn finish(&self, release: std::sync::mpsc::Sender<()>) {
        let _ = release.send(());
        if let Some(thread) = self.thread.lock().unwrap().take() {
            thread.join().unwrap();
        }
    }
}

/// A run whose timers keep virtual time going while a tool waits on an OS
/// thread hits its time limit in an instant: the report says which task
/// and that an OS thread is the likely cause. A run that merely sleeps
/// past its limit gets no such note.
#[test]
fn a_time_limit_reached_while_a_tool_waits_on_an_os_thread_says_so() {
    let (blocked, release) = BlockedTool::new();
    let tool = blocked.clone();
    let failure = Simulation::new(Seed::new(3))
        .time_limit(Duration::from_secs(60))
        .run(|| async move {
            let answered = tool.start();
            let tool = spawn("tool:get_weather", async move { answered.await.ok() });
            let mut tick = tokio::time::interval(Duration::from_millis(500));
            loop {
                tick.tick().await;
                if tool.is_finished() {
                    break;
                }
            }
        })
        .unwrap_err();
    blocked.finish(release);
    assert!(
        matches!(failure.kind, FailureKind::TimeLimit { .. }),
        "{failure}"
    );
    let summary = failure.summary();
    for said in [
        "likely cause: a task blocked on an OS thread",
        "1 OS thread(s) this test started during the run are still running",
        "tool:get_weather (last polled at t=0.000s) has not been woken since",
        "docs/determinism.md",
    ] {
        assert!(summary.contains(said), "no {said:?} in {summary}");
    }

    let failure = Simulation::new(Seed::new(3))
        .time_limit(Duration::from_secs(60))
        .run(|| tokio::time::sleep(Duration::from_secs(3600)))
        .unwrap_err();
    assert!(
        failure.summary().ends_with("(timers kept it busy)"),
        "{failure}"
    );
}

/// A scripted run that cannot settle because its tool waits on an OS
/// thread warns that this is the likely cause.
#[test]
fn a_settle_cap_reached_while_a_tool_waits_on_an_os_thread_says_so() {
    let (blocked, release) = BlockedTool::new();
    let tool = blocked.clone();
    let logs = std::sync::Arc::new(std::sync::Mutex::new(Vec::<u8>::new()));
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || LogBuffer(writer.clone()))
        .with_ansi(false)
        .finish();
    let settled = tracing::subscriber::with_default(subscriber, || {
        Simulation::new(Seed::new(5))
            .run(|| async move {
                let run = ScriptedServer::new()
                    .calls("get_weather", json!({ "city": "Paris" }))
                    .settle_cap(Duration::from_secs(5))
                    .play(Live::builder().tools(T::simple(
                        "get_weather",
                        "Weather for a city",
                        move |_| {
                            let answered = tool.start();
                            async move { Ok(answered.await.unwrap_or_default()) }
                        },
                    )))
                    .await
                    .unwrap();
                let settled = run.settled();
                run.disconnect().await;
                settled
            })
            .unwrap()
            .value
    });
    blocked.finish(release);
    assert!(!settled);
    let logs = String::from_utf8(logs.lock().unwrap().clone()).unwrap();
    for said in [
        "the run did not settle within 5s",
        "likely cause: a task blocked on an OS thread",
        "tool:get_weather",
    ] {
        assert!(logs.contains(said), "no {said:?} in:\n{logs}");
    }
}

/// Log lines into a shared buffer.
struct LogBuffer(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for LogBuffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
