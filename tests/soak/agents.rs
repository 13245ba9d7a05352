//! Every agent in `sim/` soaks clean and explores what it is for; its
//! scenario corpus and its tape agree with its files.

use std::sync::Arc;

use livesim::Seed;
use livesim::clock::SharedClock;
use livesim::flow::Enforcement;
use livesim::llm::{BaseLlm, LlmExtractor};
use livesim::session::{LiveEvent, Speaker, Transcript, TurnContext};
use livesim::simulation::Scenario;
use livesim::soak::Soak;
use livesim::state::State;
use livesim::tape::{FileTape, TapedLlm};
use livesim::testing::Action;

use super::{agent, seeds};

/// Soaks `name` and checks that it passed and reached `goals`.
fn soaks_clean(name: &str, goals: &[&str]) -> livesim::soak::Summary {
    let range = seeds(40);
    let summary = Soak::agent(&agent(name))
        .seed_range(range.clone())
        .jobs(2)
        .run();
    // The agent's kept cases in seeds/<agent>/ (run first), every fresh
    // seed, and the variants exploration added.
    assert_eq!(
        summary.sessions(),
        summary.kept_cases_run + range.end - range.start + summary.explored()
    );
    assert!(summary.passed(), "{name} failed: {summary}");
    let reached: Vec<&str> = summary.agents[0]
        .goals
        .iter()
        .filter(|(_, hits)| *hits > 0)
        .map(|(g, _)| g.as_str())
        .collect();
    for goal in goals {
        assert!(
            reached.contains(goal),
            "{name} never reached {goal}: {summary}"
        );
    }
    summary
}

#[test]
fn weather_soaks_clean() {
    let summary = soaks_clean(
        "weather",
        &[
            "forecast-given",
            "tool-failure",
            "interrupted-flush",
            "connection-closed",
            "server-gave-up",
        ],
    );
    assert_eq!(summary.agents[0].reconnects, 0, "weather does not resume");
}

#[test]
fn payment_soaks_clean_and_refuses_early_payments() {
    soaks_clean("payment", &["refusal", "verified", "paid", "cancel-race"]);
}

/// The checkout flow's steps overlap: the generator fills and empties the
/// basket before the address is known on some seeds, the shape where a
/// step must not count a guard that held before the step opened.
#[test]
fn checkout_soaks_clean_and_empties_baskets_before_the_address() {
    soaks_clean("checkout", &["refusal", "addressed", "ordered"]);
    let soak = Soak::agent(&agent("checkout")).check_determinism_every(0);
    let emptied_early = (0..40)
        .filter(|&s| {
            let record = soak.run_seed(Seed::new(s)).record.expect("a record");
            let mut filled = false;
            for entry in &record.journal {
                match entry.key.as_str() {
                    "basket" if !entry.value.is_null() => filled = true,
                    "basket" if filled => return true,
                    "address" => return false,
                    _ => {}
                }
            }
            false
        })
        .count();
    assert!(
        emptied_early > 2,
        "{emptied_early} of 40 seeds emptied a basket before the address"
    );
}

/// A flow that observes refuses nothing: every call runs, and one the
/// rules would refuse is journaled as such (`would-deny`, the goal an
/// observing agent has in place of `refusal`). Refunds run side by side.
#[test]
fn refunds_soaks_clean_in_shadow_mode_and_runs_what_it_would_refuse() {
    let summary = soaks_clean(
        "refunds",
        &["would-deny", "refunded", "parallel-call", "escalation"],
    );
    let goals: Vec<&str> = summary.agents[0]
        .goals
        .iter()
        .map(|(g, _)| g.as_str())
        .collect();
    assert!(
        !goals.contains(&"refusal"),
        "an observing flow never refuses: {goals:?}"
    );
    assert_eq!(agent("refunds").enforcement, Enforcement::Observe);
    // Every call the flow was asked about ran: no refusal reached the wire.
    let soak = Soak::agent(&agent("refunds")).check_determinism_every(0);
    for s in 0..20 {
        let record = soak.run_seed(Seed::new(s)).record.expect("a record");
        assert!(
            record.journal.iter().all(|e| e.key != "flow:tool_denied"),
            "seed {s} refused a call under Observe"
        );
    }
}

#[test]
fn booking_soaks_clean_and_escalates() {
    soaks_clean("booking", &["refusal", "escalation", "confirmed", "booked"]);
}

#[test]
fn support_soaks_clean_with_parallel_calls_cancellations_and_its_tape() {
    soaks_clean(
        "support",
        &[
            "parallel-call",
            "cancel-aborted",
            "go-away-mid-call",
            "tape-answer",
            "refunded",
            "resumed",
        ],
    );
}

/// The support agent's extractor takes 200 ms to 3 s to answer (its
/// `latency_ms`), so some seed ends a turn while the extraction of an
/// earlier one still runs: that turn's extraction waits in the session's
/// queue, and the run (soaked clean above) still extracts every turn.
#[test]
fn support_queues_a_turns_extraction_behind_a_running_one() {
    let soak = Soak::agent(&agent("support")).check_determinism_every(0);
    let queued = (0..40)
        .filter(|&s| {
            let record = soak.run_seed(Seed::new(s)).record.expect("a record");
            // Extractions finished or failed, against turns ended: one
            // still running when a turn ends makes that turn's wait.
            let (mut ended, mut finished) = (0, 0);
            let mut waited = false;
            for timed in &record.events {
                match &timed.event {
                    LiveEvent::TurnComplete { .. } => {
                        waited |= ended > finished;
                        ended += 1;
                    }
                    LiveEvent::Extracted { .. } => finished += 1,
                    LiveEvent::Warning { message } if message.starts_with("extractor ") => {
                        finished += 1
                    }
                    _ => {}
                }
            }
            waited
        })
        .count();
    assert!(
        queued > 0,
        "no seed of 0..40 ended a turn while an extraction ran"
    );
}

#[test]
fn resumable_soaks_clean_through_drops_stale_handles_and_moves() {
    let summary = soaks_clean(
        "resumable",
        &[
            "resumed",
            "fresh-session",
            "typed-into-fresh",
            "resume-retried",
            "go-away-move",
            "transparent-replay",
            "stale-answer",
            "reconnect-gave-up",
            "refusal",
            "transferred",
        ],
    );
    // Every session that resumed began at least one reconnect.
    let resumed = summary.agents[0].goals.iter().find(|(g, _)| g == "resumed");
    assert!(summary.agents[0].reconnects >= resumed.map_or(1, |(_, n)| *n));
    assert!(summary.to_string().contains("reconnects: "), "{summary}");
}

/// `sim/pharmacy` resumes without replaying: what it sends after the
/// handle it resumes is lost. Its user sometimes types right as a `goAway`
/// moves it at once (the script expects that message on the next
/// connection), and every session holds the message until it is there:
/// the player reports one that reached the old connection after the
/// handle.
#[test]
fn pharmacy_soaks_clean_and_holds_what_is_typed_while_a_move_is_pending() {
    soaks_clean(
        "pharmacy",
        &[
            "resumed",
            "fresh-session",
            "typed-into-fresh",
            "go-away-move",
            "refilled",
            "found",
        ],
    );
    let soak = Soak::agent(&agent("pharmacy")).check_determinism_every(0);
    let typed_while_moving = (0..40)
        .filter(|&s| {
            let record = soak.run_seed(Seed::new(s)).record.expect("a record");
            record.script.actions().windows(4).any(|w| {
                matches!(&w[0], Action::Send(v) if v.get("goAway").is_some())
                    && matches!(&w[1], Action::Reconnect(r) if r.handle.is_some())
                    && matches!(w[2], Action::PauseMs(_))
                    && matches!(w[3], Action::Expect(_))
            })
        })
        .count();
    assert!(
        typed_while_moving > 0,
        "no seed of 0..40 typed while a move was pending"
    );
}

/// Every scenario beside a spec runs clean against it.
#[test]
fn the_scenario_corpus_runs_clean_against_each_spec() {
    let mut ran = 0;
    for name in ["payment", "booking"] {
        let agent = agent(name);
        let (spec, _) = agent.spec.clone().expect("governed");
        for entry in std::fs::read_dir(&agent.dir).unwrap() {
            let path = entry.unwrap().path();
            if path.to_string_lossy().ends_with(".scenario.json") {
                let scenario = Scenario::read(&path).unwrap_or_else(|e| panic!("{e}"));
                scenario
                    .run_now(spec.as_ref(), Enforcement::Enforce)
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                ran += 1;
            }
        }
    }
    assert!(ran >= 5, "{ran} scenarios");
}

/// The support agent's tape answers its extractor (window 1) for every
/// line of its repertoire a turn may end with: the model's, and the
/// user's (said, or typed, as while the session reconnects, when nothing
/// is said after it).
#[test]
fn the_support_tape_answers_every_closing_line() {
    let support = agent("support");
    let extractor = support.extractor.clone().unwrap();
    let tape = Arc::new(FileTape::open(&extractor.tape_file).unwrap());
    let model = Arc::new(TapedLlm::replaying(extractor.model.clone(), tape));
    let reader = LlmExtractor::new(
        extractor.name.clone(),
        model.clone(),
        extractor.prompt.clone(),
        extractor.window,
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let lines = (support.repertoire.model_lines.iter())
        .map(|line| (Speaker::Model, line))
        .chain((support.repertoire.user_lines.iter()).map(|line| (Speaker::User, line)));
    for (speaker, line) in lines {
        let transcript = Transcript::default();
        transcript.push(Speaker::User, "Hello?");
        transcript.push(Speaker::Model, "Hello.");
        transcript.push(speaker, line.as_str());
        let turn = TurnContext {
            transcript,
            state: State::new(),
            clock: Arc::new(livesim::clock::SystemClock::new()) as SharedClock,
        };
        let reply = runtime
            .block_on(model.generate(reader.request(&turn)))
            .unwrap_or_else(|e| panic!("{line:?}: {e}"));
        let topic: serde_json::Value = serde_json::from_str(&reply.text()).unwrap();
        assert!(["order", "refund", "stock", "other"].contains(&topic["topic"].as_str().unwrap()));
    }
}
