//! A user played by a model, on tape: recorded once (here by `MockLlm`,
//! no network), then replayed offline, exactly: each seed's user says
//! what was recorded for that seed, in order, run after run; an agent
//! file names its tape; a turn the tape lacks falls back to the
//! repertoire.

use std::sync::Arc;

use livesim::Seed;
use livesim::llm::{LlmResponse, MockLlm};
use livesim::soak::{Agent, SimulatedUser, Soak};
use livesim::tape::{FileTape, Tape};
use serde_json::json;

use super::agent;
use super::scratch::{Scratch, scratch};

/// A fresh folder for one test, removed when dropped.
fn temp(test: &str) -> Scratch {
    scratch(&format!("user-{test}"))
}

/// The user's words in a run: what it typed, audio and markers left out.
fn words(typed: &[String]) -> Vec<String> {
    typed
        .iter()
        .filter(|t| !t.starts_with("audio ") && !t.starts_with('('))
        .cloned()
        .collect()
}

/// `MockLlm` answers "Line k." to a request that already holds k of the
/// user's turns, so a seed's k-th turn is recorded as "Line k." only if
/// every earlier turn of that seed was in its request, in order. Replayed,
/// each seed's user says those lines, in order, run after run.
#[test]
fn a_recorded_user_replays_exactly_offline() {
    let weather = agent("weather");
    let user = SimulatedUser::new("Ana, in a hurry", "tomorrow's weather in Lisbon");
    let model = MockLlm::script((0..1000).map(|i| LlmResponse::from_text(format!("Line {i}."))));
    let dir = temp("exact");
    let path = dir.join("user.tape.jsonl");
    let tape = Arc::new(FileTape::create(&path).unwrap());
    let seeds = 0..6u64;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let plain = Soak::agent(&weather);
    let asked = runtime
        .block_on(user.record(&model, &*tape, &plain, seeds.clone()))
        .unwrap();
    // Each seed's lines, worked out from its script's user turns.
    let mut next = 0;
    let mut expected = Vec::new();
    for seed in seeds.clone().map(Seed::new) {
        let (script, _) = plain.script_for(seed);
        let turns = script
            .actions()
            .iter()
            .filter(|a| {
                matches!(a, livesim::testing::Action::Expect(k)
                    if !k.starts_with("realtimeInput.") || k == "realtimeInput.text")
            })
            .count();
        expected.push((0..turns).map(|i| format!("Line {i}.")).collect::<Vec<_>>());
        next += turns;
    }
    assert_eq!(asked, next as u64);
    let replayed = SimulatedUser::new("Ana, in a hurry", "tomorrow's weather in Lisbon")
        .answers_from(FileTape::open(&path).unwrap().entries());
    assert_eq!(replayed.answers(), next);
    let soak = Soak::agent(&weather)
        .simulated_user(replayed)
        .check_determinism_every(1);
    for (seed, wanted) in seeds.map(Seed::new).zip(expected) {
        let run = soak.run_seed(seed);
        assert_eq!(run.verdict(), Ok(()), "seed {seed}");
        let typed = words(&run.record.unwrap().typed);
        // A message sent twice across a reconnect, or not sent when the
        // script ended first, is the session's business: what was said
        // is the tape's, in order.
        let mut said: Vec<String> = typed.clone();
        said.dedup();
        assert!(
            said.iter().all(|t| wanted.contains(t)),
            "seed {seed}: {said:?} not from {wanted:?}"
        );
        let positions: Vec<usize> = said
            .iter()
            .map(|t| wanted.iter().position(|w| w == t).unwrap())
            .collect();
        assert!(
            positions.windows(2).all(|w| w[0] < w[1]),
            "seed {seed}: {said:?}"
        );
    }
}

/// With nothing on its tape, the user says the repertoire's lines.
#[test]
fn a_turn_the_tape_lacks_falls_back_to_the_repertoire() {
    let weather = agent("weather");
    let soak = Soak::agent(&weather).simulated_user(SimulatedUser::new("Bo", "rain?"));
    let run = soak.run_seed(Seed::new(2));
    let lines = &weather.repertoire.user_lines;
    for said in words(&run.record.unwrap().typed) {
        assert!(lines.contains(&said), "{said} is not a repertoire line");
    }
}

/// An agent file names its user's tape beside agent.json; a tape that is
/// not there is an error naming it.
#[test]
fn an_agent_file_plays_its_user_from_its_tape() {
    let dir = temp("file");
    let mut file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string("sim/weather/agent.json").unwrap()).unwrap();
    file["simulated_user"] =
        json!({"persona": "Ana", "goal": "the weather", "tape": "user.tape.jsonl"});
    std::fs::write(dir.join("agent.json"), file.to_string()).unwrap();
    let err = Agent::load(&dir).unwrap_err().to_string();
    assert!(
        err.contains("at simulated_user.tape: no tape file at "),
        "{err}"
    );
    assert!(err.contains("user.tape.jsonl"), "{err}");
    // Record one with a mock, as a real model would be recorded.
    let tape = Arc::new(FileTape::create(dir.join("user.tape.jsonl")).unwrap());
    let model = MockLlm::script((0..500).map(|i| LlmResponse::from_text(format!("Taped {i}."))));
    let user = SimulatedUser::new("Ana", "the weather");
    let plain = Soak::agent(&agent("weather"));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime
        .block_on(user.record(&model, &*tape, &plain, 0..3))
        .unwrap();
    tape.record(livesim::tape::TapeEntry::ok("llm", json!({}), json!({})))
        .unwrap();
    let loaded = Agent::load(&dir).unwrap();
    let run = Soak::agent(&loaded).run_seed(Seed::new(1));
    assert_eq!(run.verdict(), Ok(()));
    let said = words(&run.record.unwrap().typed);
    assert!(
        !said.is_empty() && said.iter().all(|t| t.starts_with("Taped ")),
        "{said:?}"
    );
    // An answer whose output holds no text (a tape edited by hand) is
    // refused where the agent names the tape: the user would say nothing.
    tape.record(livesim::tape::TapeEntry::ok(
        "simulated-user",
        json!({"contents": []}),
        json!(5),
    ))
    .unwrap();
    let err = Agent::load(&dir).unwrap_err().to_string();
    assert!(
        err.contains("(an answer of the simulated user) holds no text: its output is 5"),
        "{err}"
    );
}
