//! A resumable agent: Live connections do not last (the server sends
//! `goAway` before it cuts one, closes with 1011 under load), so the
//! session keeps the latest resumption handle and moves to a new
//! connection that resumes it. The script here spans three connections:
//! a `goAway` mid-turn (the session finishes the turn, then moves:
//! make-before-break), then a 1011 close mid-turn (the session reconnects
//! with backoff; the cut turn's pending text is dropped). The `Reconnecting` and `Resumed` events say what happened.
//!
//! ```sh
//! cargo run --example resumable
//! ```
//!
//! It runs on the seeded runtime (seed 0), so the backoff's sleeps cost no
//! wall time and the output is the same every run.

use std::process::ExitCode;
use std::time::Duration;

use livesim::Seed;
use livesim::executor::Simulation;
use livesim::prelude::*;
use livesim::session::Resumption;
use livesim::testing::ScriptedServer;

/// What the server does, across three connections. Handles are secrets:
/// the session never prints them, and neither does this example.
fn script() -> ScriptedServer {
    ScriptedServer::new()
        .named("resumable")
        // Connection 1.
        .resumption_update("handle-1", true)
        .text("Hello, ")
        .go_away(Duration::from_secs(2)) // mid-turn: the turn finishes first
        .text("how can I help?")
        .turn_complete()
        .resumption_update("handle-2", true)
        // Connection 2: must resume handle-2 (the latest one).
        .reconnect_resuming("handle-2")
        .says("Still here, on a new connection.")
        .resumption_update("handle-3", true)
        .text("Let me look that")
        .pause(Duration::from_millis(100))
        .close(1011, "Internal error encountered.") // mid-turn
        // Connection 3: after the 1011, resuming handle-3.
        .reconnect_resuming("handle-3")
        .says("Back again after the server's error.")
}

async fn demo() -> Result<Vec<String>, String> {
    let session = Live::builder().text_only().resumption(
        Resumption::on() // 5 attempts, backoff 250 ms doubling to 5 s
            .attempts(5),
    );
    let run = script().play(session).await.map_err(|e| e.to_string())?;
    // The stored log: the conversation in wire order, moves included.
    let log: Vec<String> = run.session_log().iter().map(|e| e.to_string()).collect();
    let connection = run.state().get("session:connection");
    run.disconnect().await;
    if connection != Some(serde_json::json!(3)) {
        return Err(format!(
            "expected to end on connection 3, not {connection:?}"
        ));
    }
    Ok(log)
}

fn main() -> ExitCode {
    let outcome = Simulation::new(Seed::new(0))
        .run(demo)
        .map_err(|failure| failure.summary())
        .and_then(|outcome| outcome.value);
    let log = match outcome {
        Ok(log) => log,
        Err(e) => {
            eprintln!("resumable: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("the session's stored log:");
    for line in &log {
        println!("  {line}");
    }
    let count = |prefix: &str| log.iter().filter(|l| l.starts_with(prefix)).count();
    let (reconnecting, resumed) = (count("reconnecting"), count("resumed"));
    let said_all = log.iter().any(|l| l.contains("Back again"));
    if reconnecting == 2 && resumed == 2 && said_all {
        println!("resumable: ok (two moves, both resumed)");
        ExitCode::SUCCESS
    } else {
        eprintln!(
            "resumable: expected two reconnects, both resumed; got {reconnecting} reconnecting, {resumed} resumed"
        );
        ExitCode::FAILURE
    }
}
