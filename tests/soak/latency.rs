//! Latencies in virtual time and the budgets that bound them: each measure
//! starts and ends where its definition says (checked on a timeline built
//! by hand, with the expected figures worked out by hand), a broken budget
//! fails with the measured value, the bound and a replay line that
//! replays it, agent files declare budgets (bad ones refused with the
//! nearest valid name), and the summary's worst seed replays to its worst
//! latency.

use std::time::Duration;

use livesim::Seed;
use livesim::session::{LiveEvent, ToolCall};
use livesim::soak::{Agent, Budget, Measure, RunRecord, Soak, TimedEvent, latency};
use serde_json::json;

use super::agent;
use super::scratch::scratch;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn text(chunk: &str, thought: bool) -> LiveEvent {
    LiveEvent::TextDelta {
        text: chunk.into(),
        thought,
    }
}

fn call(id: &str, name: &str) -> LiveEvent {
    LiveEvent::ToolCall {
        calls: vec![ToolCall {
            id: id.into(),
            name: name.into(),
            args: json!({}),
        }],
    }
}

/// A real run's record with its timeline replaced by this one:
///
/// | t (ms) | what |
/// |---|---|
/// | 1000 | the user types |
/// | 1100 | a thought (not output) |
/// | 1250 | model text: first response 250 ms |
/// | 2000 | `lookup` called (call-1) |
/// | 2600 | model text while it runs: silence 600 ms |
/// | 3000 | call-1 answered: round trip 1000 ms, the stretch ends |
/// | 4000 | `pay` called (call-2) and refused at once: no trip, no stretch |
/// | 5000 | `interrupted` |
/// | 5300 | output transcription: output went on 300 ms |
/// | 5400 | turn complete |
/// | 5500 | model text of a later turn: not the barge-in's |
/// | 6000, 6100, 6500 | `activityStart`, audio, `activityEnd` |
/// | 7000 | model audio: first response 500 ms after `activityEnd` |
fn timeline() -> RunRecord {
    let soak = Soak::agent(&agent("weather")).check_determinism_every(0);
    let mut record = soak.run_seed(Seed::new(1)).record.expect("a record");
    let at = |t: u64, event: LiveEvent| TimedEvent { at: ms(t), event };
    record.events = vec![
        at(1100, text("hmm", true)),
        at(1250, text("Sure", false)),
        at(2000, call("call-1", "lookup")),
        at(2600, text("One moment", false)),
        at(
            3000,
            LiveEvent::ToolResponse {
                id: "call-1".into(),
                name: "lookup".into(),
                response: json!({}),
            },
        ),
        at(4000, call("call-2", "pay")),
        at(
            4000,
            LiveEvent::ToolDenied {
                id: "call-2".into(),
                name: "pay".into(),
                reason: "not now".into(),
            },
        ),
        at(5000, LiveEvent::Interrupted),
        at(5300, LiveEvent::OutputTranscriptDelta { text: "so".into() }),
        at(
            5400,
            LiveEvent::TurnComplete {
                interrupted: false,
                reason: None,
            },
        ),
        at(5500, text("Anyway", false)),
        at(
            7000,
            LiveEvent::Media {
                mime_type: "audio/pcm;rate=24000".into(),
                data: "AAAA".into(),
                at: Default::default(),
                interrupted: false,
            },
        ),
    ];
    record.typed = ["Hello", "(activityStart)", "audio AAAA", "(activityEnd)"]
        .map(String::from)
        .to_vec();
    record.typed_at = vec![ms(1000), ms(6000), ms(6100), ms(6500)];
    record.virtual_time = ms(8000);
    record
}

#[test]
fn each_latency_starts_and_ends_where_its_definition_says() {
    let samples: Vec<(Measure, Duration, Duration)> = latency::measure(&timeline())
        .into_iter()
        .map(|s| (s.measure, s.from, s.took))
        .collect();
    assert_eq!(
        samples,
        [
            (Measure::FirstResponse, ms(1000), ms(250)),
            (Measure::ToolSilence, ms(2000), ms(600)),
            (Measure::ToolRoundTrip, ms(2000), ms(1000)),
            (Measure::BargeIn, ms(5000), ms(300)),
            (Measure::FirstResponse, ms(6500), ms(500)),
        ]
    );
}

/// Call ids belong to their connection, and a repeated id is not run:
///
/// | t (ms) | what |
/// |---|---|
/// | 1000 | `lookup` called (call-1), and call-1 again (a repeat) |
/// | 1500 | call-1 answered: round trip 500 ms, and the stretch ends (nobody waits for the repeat) |
/// | 2000 | `pay` called (call-2) |
/// | 2400, 2500 | reconnecting, resumed: call-2's connection is over, unanswered: silence 500 ms, no trip |
/// | 3000 | `lookup` called on the new connection, numbered call-2 again |
/// | 3400 | that call-2 answered: round trip 400 ms (not 1400 from the old call-2) |
#[test]
fn a_call_is_answered_on_its_own_connection_and_a_repeated_id_keeps_nobody_waiting() {
    let mut record = timeline();
    let at = |t: u64, event: LiveEvent| TimedEvent { at: ms(t), event };
    let answer = |id: &str| LiveEvent::ToolResponse {
        id: id.into(),
        name: "lookup".into(),
        response: json!({}),
    };
    record.events = vec![
        at(1000, call("call-1", "lookup")),
        at(1000, call("call-1", "lookup")),
        at(1500, answer("call-1")),
        at(2000, call("call-2", "pay")),
        at(
            2400,
            LiveEvent::Reconnecting {
                attempt: 1,
                cause: "closed with 1011".into(),
            },
        ),
        at(
            2500,
            LiveEvent::Resumed {
                connection: 2,
                fresh: false,
            },
        ),
        at(3000, call("call-2", "lookup")),
        at(3400, answer("call-2")),
    ];
    record.typed = Vec::new();
    record.typed_at = Vec::new();
    let samples: Vec<(Measure, Duration, Duration)> = latency::measure(&record)
        .into_iter()
        .map(|s| (s.measure, s.from, s.took))
        .collect();
    assert_eq!(
        samples,
        [
            (Measure::ToolSilence, ms(1000), ms(500)),
            (Measure::ToolRoundTrip, ms(1000), ms(500)),
            (Measure::ToolSilence, ms(2000), ms(500)),
            (Measure::ToolSilence, ms(3000), ms(400)),
            (Measure::ToolRoundTrip, ms(3000), ms(400)),
        ]
    );
}

/// A barge-in's output ends with its connection: what the model says on
/// the next one is another turn's.
///
/// | t (ms) | what |
/// |---|---|
/// | 1000 | `interrupted` |
/// | 1100 | model text: output went on 100 ms |
/// | 1200, 1300 | reconnecting, resumed |
/// | 1500 | model text on the new connection: not the barge-in's |
#[test]
fn a_barge_in_ends_with_its_connection() {
    let mut record = timeline();
    let at = |t: u64, event: LiveEvent| TimedEvent { at: ms(t), event };
    record.events = vec![
        at(1000, LiveEvent::Interrupted),
        at(1100, text("and so", false)),
        at(
            1200,
            LiveEvent::Reconnecting {
                attempt: 1,
                cause: "closed with 1011".into(),
            },
        ),
        at(
            1300,
            LiveEvent::Resumed {
                connection: 2,
                fresh: false,
            },
        ),
        at(1500, text("Where were we?", false)),
    ];
    record.typed = Vec::new();
    record.typed_at = Vec::new();
    let barge_ins: Vec<(Duration, Duration)> = latency::measure(&record)
        .into_iter()
        .filter(|s| s.measure == Measure::BargeIn)
        .map(|s| (s.from, s.took))
        .collect();
    assert_eq!(barge_ins, [(ms(1000), ms(100))]);
}

#[test]
fn a_budget_holds_up_to_its_bound_and_says_what_broke_it() {
    let record = timeline();
    assert_eq!(Budget::barge_in(ms(300)).check(&record), Ok(()));
    assert_eq!(
        Budget::barge_in(ms(100)).check(&record),
        Err(
            "barge-in took 0.300s from the interruption at t=5.000s, over the budget of 0.100s"
                .to_string()
        )
    );
    assert_eq!(Budget::first_response(ms(500)).check(&record), Ok(()));
    assert_eq!(
        Budget::first_response(ms(499)).check(&record),
        Err(
            "first-response took 0.500s from the user's turn ending at t=6.500s, over the \
             budget of 0.499s"
                .to_string()
        )
    );
    assert_eq!(
        Budget::tool_round_trip_of("lookup", ms(999)).check(&record),
        Err("tool-round-trip took 1.000s from lookup (call-1), over the budget of 0.999s".into())
    );
    // The refused call ran nothing: no trip to bound.
    assert_eq!(
        Budget::tool_round_trip_of("pay", ms(0)).check(&record),
        Ok(())
    );
    assert_eq!(
        Budget::tool_silence(ms(500), ms(600)).check(&record),
        Ok(())
    );
    assert_eq!(
        Budget::tool_silence(ms(1000), ms(100)).check(&record),
        Ok(()),
        "the stretch lasted 1 s: not longer than 1 s"
    );
    assert_eq!(
        Budget::tool_silence(ms(500), ms(599)).check(&record),
        Err(
            "tools ran for 1.000s from t=2.000s (lookup (call-1)) and the model said nothing \
             for 0.600s: the budget asks for output within 0.599s when tools run longer than \
             0.500s"
                .to_string()
        )
    );
}

/// A budget a run breaks fails that run like an invariant: by its name,
/// with the measured value and the bound, and the seed it names replays
/// to the same failure.
#[test]
fn a_broken_budget_fails_with_its_seed_and_replays() {
    let budget = Budget::tool_round_trip(ms(50));
    let soak = || {
        Soak::agent(&agent("weather"))
            .budget(budget.clone())
            .check_determinism_every(0)
            .keep(false)
    };
    let summary = soak().seeds(20).jobs(1).try_run().expect_err("over 50 ms");
    let failure = summary.failures().next().unwrap();
    assert_eq!(failure.invariant, "budget(tool-round-trip <= 0.050s)");
    assert!(
        failure.message.starts_with("tool-round-trip took ")
            && failure.message.ends_with("over the budget of 0.050s"),
        "{}",
        failure.message
    );
    assert!(
        failure.replay.contains(&failure.seed.to_string()),
        "{}",
        failure.replay
    );
    let again = soak().run_seed(failure.seed);
    assert_eq!(
        again.verdict_of(&budget.name()),
        Err(failure.message.clone())
    );
}

/// The summary's worst seed for a latency is the run that took it: run
/// again, its longest sample is the distribution's maximum.
#[test]
fn the_worst_seed_replays_to_the_worst_latency() {
    let soak = || Soak::agent(&agent("payment")).check_determinism_every(0);
    let summary = soak().seeds(40).jobs(2).keep(false).run();
    let agent = &summary.agents[0];
    for measure in [Measure::FirstResponse, Measure::ToolRoundTrip] {
        let d = agent.latency(measure).unwrap();
        assert!(d.p50() <= d.p90() && d.p90() <= d.p99() && d.p99() <= d.max());
        let run = soak().run_seed(d.worst_seed().unwrap());
        let longest = latency::measure(run.record.as_ref().unwrap())
            .into_iter()
            .filter(|s| s.measure == measure)
            .map(|s| s.took)
            .max();
        assert_eq!(longest, Some(d.max()), "{measure}");
    }
}

/// An agent file declares budgets; one naming a tool the agent does not
/// have, or a misspelt kind, is refused with the nearest valid name.
#[test]
fn agent_files_declare_budgets_and_refuse_bad_ones() {
    let base: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string("sim/weather/agent.json").unwrap()).unwrap();
    let with = |test: &str, budgets: serde_json::Value| -> Result<Agent, String> {
        let dir = scratch(&format!("budgets-{test}"));
        let mut agent = base.clone();
        agent["budgets"] = budgets;
        std::fs::write(dir.join("agent.json"), agent.to_string()).unwrap();
        Agent::load(&dir).map_err(|e| e.to_string())
    };
    let agent = with(
        "good",
        json!({
            "first_response_ms": 1500,
            "barge_in_ms": 200,
            "tool_round_trip_ms": {"get_weather": 5000},
            "tool_silence": {"longer_than_ms": 2000, "within_ms": 1000}
        }),
    )
    .unwrap();
    assert_eq!(
        agent.budgets,
        [
            Budget::first_response(ms(1500)),
            Budget::tool_silence(ms(2000), ms(1000)),
            Budget::barge_in(ms(200)),
            Budget::tool_round_trip_of("get_weather", ms(5000)),
        ]
    );
    let err = with("tool", json!({"tool_round_trip_ms": {"get_wether": 5000}})).unwrap_err();
    assert!(err.contains("did you mean `get_weather`?"), "{err}");
    assert!(
        err.contains("at budgets.tool_round_trip_ms.get_wether"),
        "{err}"
    );
    let err = with("kind", json!({"first_reponse_ms": 1500})).unwrap_err();
    assert!(err.contains("did you mean `first_response_ms`?"), "{err}");
    let err = with("value", json!({"barge_in_ms": "fast"})).unwrap_err();
    assert!(err.contains("at budgets.barge_in_ms"), "{err}");
}
