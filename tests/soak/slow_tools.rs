//! Agents whose tools take minutes: the soak judges them by bounds that
//! grow with the tools, never by limits that assume quick ones. A tool
//! may take ten minutes, and a latency spike fifteen times its slowest;
//! a session that is merely slow passes, and the scripted server still
//! keeps the protocol's own clock (a `goAway`'s deadline).

use std::time::Duration;

use livesim::Seed;
use livesim::session::LiveEvent;
use livesim::soak::{Agent, FaultKind, SeedRun, Soak};

use super::refused_move::refused_moves;
use super::scratch::{Scratch, scratch};

/// `sim/pharmacy` with every tool's `latency_ms` made `[lo, hi]`, read
/// from a scratch copy (kept alive by the guard).
fn slowed_pharmacy(lo: u64, hi: u64) -> (Scratch, Agent) {
    let dir = scratch("slow-tools").inside("pharmacy");
    std::fs::create_dir_all(&*dir).expect("the agent folder");
    let text = std::fs::read_to_string("sim/pharmacy/agent.json").expect("sim/pharmacy");
    let mut value: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let tools = value["tools"].as_array_mut().expect("pharmacy's tools");
    for tool in tools {
        tool["latency_ms"] = serde_json::json!([lo, hi]);
    }
    let text = serde_json::to_string_pretty(&value).expect("JSON");
    std::fs::write(dir.join("agent.json"), text).expect("agent.json written");
    let agent = Agent::load(&*dir).unwrap_or_else(|e| panic!("{e}"));
    (dir, agent)
}

/// The failures of `run` that are livesim's own invariants (bare names),
/// not the agent's goals (`budget(…)`, `final(…)`: a ten-minute tool may
/// well miss a budget).
fn broken_by_livesim(run: &SeedRun) -> Vec<String> {
    run.failures
        .iter()
        .filter(|f| !f.invariant.contains('('))
        .map(|f| format!("{}: {}", f.invariant, f.message))
        .collect()
}

/// A `goAway` move the server refuses while calls run lingers on the old
/// connection only until the notice's deadline, however slow the tools:
/// the session's reconnect after the old connection ends comes within the
/// time the notice gave (a second of slack for the frames). Read from the
/// events alone. Before, the script lingered up to the slowest tool's
/// latency whatever the notice said, and `reconnect-ends` failed an agent
/// with a tool of minutes.
#[test]
fn a_refused_move_ends_by_its_notices_deadline_however_slow_the_tools() {
    let slack = Duration::from_secs(1);
    for (lo, hi) in [(200, 1_200), (40, 400_000)] {
        let (_dir, agent) = slowed_pharmacy(lo, hi);
        let soak = Soak::agent(&agent)
            .fault(FaultKind::GoAway, 1.0)
            .fault(FaultKind::Network, 0.0)
            .check_determinism_every(0);
        let mut checked = 0;
        for s in super::seeds(60) {
            let run = soak.run_seed(Seed::new(s));
            let livesim_own = broken_by_livesim(&run);
            assert!(
                livesim_own.is_empty(),
                "[{lo}, {hi}] seed {s}: {livesim_own:?}"
            );
            let record = run.record.expect("the run finished");
            for refused in refused_moves(&record) {
                let notice =
                    record.events[..refused.next]
                        .iter()
                        .rev()
                        .find_map(|t| match t.event {
                            LiveEvent::GoAway { time_left } => Some((t.at, time_left)),
                            _ => None,
                        });
                let Some((at, Some(time_left))) = notice else {
                    continue;
                };
                let ended = record.events[refused.next].at;
                assert!(
                    ended <= at + time_left + slack,
                    "[{lo}, {hi}] seed {s}: the notice at {at:?} gave {time_left:?}, \
                     the old connection ended at {ended:?}"
                );
                checked += 1;
            }
        }
        assert!(checked >= 3, "[{lo}, {hi}]: only {checked} refused moves");
    }
}

/// Tools of five to ten minutes, their latency spiking to fifteen times
/// that, make sessions longer than an hour of virtual time (the
/// executor's default limit); such a session is slow,
/// not stuck: it settles and passes every invariant livesim itself
/// keeps. Before, the executor cut it at the hour and `liveness` failed
/// with a tool "not woken since".
#[test]
fn a_session_of_tools_taking_minutes_may_outlast_the_hour() {
    let (_dir, agent) = slowed_pharmacy(300_000, 600_000);
    let soak = Soak::agent(&agent)
        .fault(FaultKind::LatencySpike, 1.0)
        .fault(FaultKind::Network, 0.0)
        .check_determinism_every(0);
    let mut longest = Duration::ZERO;
    for s in super::seeds(6) {
        let run = soak.run_seed(Seed::new(s));
        let livesim_own = broken_by_livesim(&run);
        assert!(livesim_own.is_empty(), "seed {s}: {livesim_own:?}");
        let record = run.record.expect("the run finished");
        longest = longest.max(record.virtual_time);
    }
    assert!(
        longest > Duration::from_secs(3600),
        "no session outlasted the hour (longest {longest:?})"
    );
}

/// A script that waits for what never comes, in a session whose policy
/// allows long reconnects (ten attempts, a minute's backoff each): the
/// soak's own cap ends the run before the executor's time limit, so the
/// failure is `liveness` saying where the script stood, not the
/// executor's "time limit passed". (The cap, a reconnect's bound per call
/// and ten more, came to more than the hour.)
#[test]
fn a_stuck_script_is_judged_by_the_soak_before_the_executors_limit() {
    use livesim::prelude::*;
    use livesim::session::Resumption;
    use livesim::testing::ScriptedServer;
    let soak = Soak::new("stuck", || {
        Live::builder()
            .resumption(
                Resumption::on()
                    .attempts(10)
                    .backoff(Duration::from_secs(60), Duration::from_secs(60)),
            )
            .setup_timeout(Duration::from_secs(30))
    })
    .script(|_, _| {
        ScriptedServer::new()
            .resumption_update("h-1", true)
            .says("Hello.")
            .expects("toolResponse")
            // What the soak's user types is no concern of this script.
            .lenient()
    })
    .fault(FaultKind::Network, 0.0)
    .explore(false)
    .keep(false)
    .check_determinism_every(0);
    let run = soak.run_seed(Seed::new(1));
    let liveness: Vec<&str> = run
        .failures
        .iter()
        .filter(|f| f.invariant == "liveness")
        .map(|f| f.message.as_str())
        .collect();
    assert_eq!(liveness.len(), 1, "{:?}", run.failures);
    assert!(
        liveness[0].starts_with("the session never settled")
            && liveness[0].contains("the script was still at action #4"),
        "{}",
        liveness[0]
    );
}

/// A script whose pauses add up past what a `Duration` holds (a damaged
/// recording's timestamps, imported) is judged, never a panic: the run
/// stops at a day of virtual time at most, and `liveness` says the
/// script was still pausing. (Adding the pauses up overflowed.)
#[test]
fn pauses_past_any_duration_end_in_liveness_not_a_panic() {
    use livesim::soak::Case;
    use livesim::testing::ScriptedServer;
    let weather = super::agent("weather");
    let script = ScriptedServer::new()
        .says("One moment.")
        .pause(Duration::from_millis(u64::MAX))
        .pause(Duration::from_millis(u64::MAX))
        .says("Back.");
    let case = Case::calm(Seed::new(1), script);
    let run = Soak::agent(&weather).run_case(&case);
    let failures: Vec<(&str, &str)> = run
        .failures
        .iter()
        .map(|f| (f.invariant.as_str(), f.message.as_str()))
        .collect();
    assert!(
        failures.iter().all(|(invariant, _)| *invariant != "panic"),
        "{failures:?}"
    );
    let liveness = failures
        .iter()
        .find(|(invariant, _)| *invariant == "liveness")
        .unwrap_or_else(|| panic!("{failures:?}"));
    assert!(
        liveness
            .1
            .contains("the script was still at action #3 (pause"),
        "{}",
        liveness.1
    );
}

/// A user's agent that says `Duration::MAX` for its setup timeout and its
/// longest backoff (meaning "never time out", "wait as long as it
/// takes") soaks like any other: no panic, no overflow in the bounds the
/// checks work out from its policy. (Summing the policy's waits
/// overflowed.)
#[test]
fn a_policy_of_durations_as_long_as_they_go_soaks_without_a_panic() {
    use livesim::prelude::*;
    use livesim::session::Resumption;
    use livesim::testing::ScriptedServer;
    let soak = Soak::new("never", || {
        Live::builder()
            .text_only()
            .setup_timeout(Duration::MAX)
            .resumption(
                Resumption::on()
                    .attempts(3)
                    .backoff(Duration::from_millis(1), Duration::MAX),
            )
    })
    .script(|_, _| {
        ScriptedServer::new()
            .resumption_update("h-1", true)
            .says("First.")
            .close(1011, "Internal error encountered.")
            .reconnect_resuming("h-1")
            .says("Second.")
            .lenient()
    })
    .fault(FaultKind::Network, 0.0)
    .explore(false)
    .keep(false)
    .check_determinism_every(0);
    for s in 0..4 {
        let run = soak.run_seed(Seed::new(s));
        let broken = broken_by_livesim(&run);
        assert!(broken.is_empty(), "seed {s}: {broken:?}");
    }
}
