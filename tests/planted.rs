//! The planted bug: a governance gate that runs a refused call when an
//! earlier message's call is still running (built only with the
//! `planted-bug` feature, turned on per agent). The default soak finds
//! it; the replay line it prints reproduces it; the same agent without the
//! switch passes the same seed; the soak saves it shrunk to a few actions,
//! and the saved entry fails with the bug and passes without it; a
//! three-action script triggers it.
//!
//! And the bugs that need two faults at once (`session/planted.rs`): the
//! default soak finds each over seeds 0..2000 of its agent and shrinks it
//! to at most six actions, a case that passes without the bug.
//!
//! Run with `cargo test --features planted-bug --test planted`.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use livesim::Seed;
use livesim::session::PlantedBug;
use livesim::soak::{Agent, Case, CorpusEntry, DEFAULT_BUDGET, Soak, invariants};
use livesim::testing::ScriptedServer;
use serde_json::json;

// Scratch folders removed when each test ends, shared with the other test
// binaries rather than copied.
#[path = "common/scratch.rs"]
mod scratch;

use scratch::{Scratch, scratch};

fn livesim(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_livesim"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .output()
        .expect("the livesim binary runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

/// `sim/payment` copied into a fresh folder with `"planted_bug": true`;
/// the scratch folder holding it is removed when dropped.
fn planted_payment() -> Scratch {
    // The corpus goes beside the agent (`../seeds`), in a scratch folder
    // that starts empty: no seed kept by an earlier run is found there.
    let dir = scratch("planted").inside("payment");
    std::fs::create_dir_all(&dir).unwrap();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("sim/payment");
    for entry in std::fs::read_dir(source).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, dir.join(path.file_name().unwrap())).unwrap();
    }
    let file = dir.join("agent.json");
    let mut agent: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    agent["planted_bug"] = json!(true);
    std::fs::write(&file, serde_json::to_string_pretty(&agent).unwrap()).unwrap();
    dir
}

/// The default soak budget finds the bug as `refused-never-runs`; the
/// first failure's replay line, run as printed, fails the same way; the
/// agent without the switch passes that seed. The soak saves the failure
/// shrunk to at most five actions; the saved entry fails while the bug
/// is planted and passes once it is removed.
#[test]
fn the_default_soak_finds_the_planted_bug_and_its_replay_reproduces_it() {
    let agent = planted_payment();
    let corpus = agent.parent().unwrap().join("seeds");
    let (code, out) = livesim(&[
        "sim",
        "soak",
        agent.to_str().unwrap(),
        "--save",
        corpus.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("seeds 0..2000"), "the default budget: {out}");
    // The first kept failure, told from its shrunk case, with the line
    // that replays the seed as found.
    let failed = out
        .lines()
        .find(|l| {
            l.starts_with("FAILED payment seed ")
                && l.contains(": refused-never-runs, shrunk from ")
        })
        .unwrap_or_else(|| panic!("no refused-never-runs failure kept:\n{out}"));
    let seed = failed
        .strip_prefix("FAILED payment seed ")
        .and_then(|rest| rest.split(':').next())
        .unwrap();
    let block: Vec<&str> = out
        .lines()
        .skip_while(|l| *l != failed)
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .collect();
    // The refused call ran: a tool's run, or an unknown tool's answer
    // that it is unknown (what running one gives) in place of the refusal.
    assert!(
        block
            .iter()
            .any(|l| l.contains("was refused (") || l.contains("was refused, but was answered")),
        "{block:?}"
    );
    let replay = block
        .iter()
        .find_map(|l| l.trim().strip_prefix("the seed as found: "))
        .unwrap_or_else(|| panic!("no replay line for the seed in {block:?}"));
    let args = replay
        .strip_prefix("cargo run --release -- ")
        .or_else(|| replay.strip_prefix("livesim "))
        .unwrap_or_else(|| panic!("{replay}"));
    let args: Vec<&str> = args.split_whitespace().collect();
    assert_eq!(
        args,
        ["sim", "run", agent.to_str().unwrap(), "--seed", seed]
    );
    let (code, again) = livesim(&args);
    assert_eq!(code, Some(1), "{again}");
    assert!(again.contains("refused-never-runs"), "{again}");
    assert!(again.contains("FAILED: "), "{again}");

    let (code, clean) = livesim(&["sim", "run", "payment", "--seed", seed]);
    assert_eq!(
        code,
        Some(0),
        "without the switch the seed passes:\n{clean}"
    );

    // Saved, shrunk: the entry of that seed has at most five actions.
    let file = corpus.join("payment").join(format!("{seed}.json"));
    assert!(
        out.contains(&format!("saved {}: refused-never-runs, ", file.display())),
        "{out}"
    );
    let entry = CorpusEntry::load(&file).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(entry.invariant, invariants::REFUSED_NEVER_RUNS);
    assert!(entry.case.actions() <= 5, "{}", entry.case);
    let note = entry.shrunk.as_ref().expect("shrunk before saving");
    assert!(note.finished && note.actions_before > entry.case.actions());
    // The bug planted: the entry still fails (exit 1); removed: it passes.
    let (code, planted) = livesim(&[
        "sim",
        "replay",
        file.to_str().unwrap(),
        "--agent",
        agent.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(1), "{planted}");
    assert!(
        planted.contains(": FAILS\n  refused-never-runs: "),
        "{planted}"
    );
    let (code, fixed) = livesim(&["sim", "replay", file.to_str().unwrap()]);
    assert_eq!(
        code,
        Some(0),
        "against sim/payment, without the bug:\n{fixed}"
    );
    assert!(fixed.contains("): passes"), "{fixed}");
}

/// Three actions trigger it: a call the script does not wait for, a short
/// pause, then a call the flow refuses.
#[test]
fn a_three_action_script_triggers_it() {
    let agent = Agent::load(Path::new(env!("CARGO_MANIFEST_DIR")).join("sim/payment")).unwrap();
    let script = || {
        ScriptedServer::new()
            .named("planted")
            .calls_without_waiting(
                "verify_identity",
                json!({"name": "Ana Silva", "dob": "1990-05-04"}),
            )
            .pause(Duration::from_millis(5))
            .calls(
                "take_payment",
                json!({"amount": 42.5, "card_last4": "4242"}),
            )
    };
    assert_eq!(script().actions().len(), 3);
    for planted in [true, false] {
        let soak = Soak::agent(&agent.clone().with_planted_bug(planted))
            .script(move |_, _| script())
            .check_determinism_every(0);
        for s in 0..5 {
            let run = soak.run_seed(Seed::new(s));
            let broken: Vec<&str> = run.failures.iter().map(|f| f.invariant.as_str()).collect();
            if planted {
                assert!(
                    broken.contains(&invariants::REFUSED_NEVER_RUNS),
                    "seed {s}: {broken:?}"
                );
            } else {
                assert_eq!(broken, Vec::<&str>::new(), "seed {s}");
            }
        }
    }
}

/// The planted bugs that need two things at once, and the agent of `sim/`
/// whose soak meets both. (Not `support` since it resumes: its failures
/// there shrink to seven actions, a reconnect the bug does not need kept
/// in, since the shrinker cuts a connection's end and the `reconnect`
/// after it only one at a time, and neither alone makes a valid script.)
const COMBINED: [(PlantedBug, &str); 12] = [
    (PlantedBug::CancelsTheFirstCall, "weather"),
    (PlantedBug::InterruptionAbortsCalls, "weather"),
    (PlantedBug::RepeatedIdRunsAgain, "weather"),
    (PlantedBug::AnswerFiledUnderLaterCall, "weather"),
    (PlantedBug::TranscriptDroppedMidCall, "weather"),
    (PlantedBug::ThoughtFlushedAsAnswer, "weather"),
    (PlantedBug::TypedWhileReconnectingDropped, "resumable"),
    (PlantedBug::ShortGoAwayIgnored, "resumable"),
    (PlantedBug::AudioNotReplayed, "resumable"),
    (PlantedBug::MediaLosesItsInterruption, "weather"),
    (PlantedBug::TurnEndingInterruptionUnmarked, "booking"),
    (PlantedBug::UsageLostOnToolCall, "weather"),
];

/// The search power of the default soak: each planted bug that needs two
/// faults at once (cancelling one of parallel calls, interrupting them,
/// a repeated id among them, answers filed under a later tool message,
/// frames while a call runs, a thought right before a call, typing while
/// the session reconnects, a short `goAway`, audio across a transparent
/// resumption, audio riding on a barge-in's frame, an interruption that
/// ends its turn in the same frame, usage riding on a tool call's frame)
/// is found over seeds 0..2000 of its
/// agent and shrunk to at most six actions; the shrunk case passes
/// without the bug.
#[test]
fn the_default_soak_finds_each_bug_that_needs_two_faults_and_shrinks_it() {
    let report: Vec<String> = COMBINED
        .into_iter()
        .map(|(bug, name)| found_and_shrunk(bug, name))
        .collect();
    eprintln!("{}", report.join("\n"));
}

/// A session that leaves its tools running when the user hangs up (a
/// payment still charged after the caller left) is found over seeds
/// 0..2000 of `sim/payment` (the `hang-up` fault, a call running) and
/// shrunk to at most six actions; the shrunk case passes without the bug.
#[test]
fn the_default_soak_finds_tools_outliving_a_hang_up() {
    let report = found_and_shrunk(PlantedBug::ToolsOutliveHangUp, "payment");
    assert!(report.contains("liveness"), "{report}");
    eprintln!("{report}");
}

/// A governed session whose flow does not count a call that finishes
/// after the session moved to a new connection (it ran; the journal never
/// says so) is found over seeds 0..2000 of `sim/resumable` (a reconnect
/// while a call runs) by an oracle that holds the journal to what ran
/// (`decisions-follow-spec`, against the tool runs, or
/// `journal-replays-clean`, replaying the journal against the spec: which
/// one breaks first depends on the seed's script), and shrunk to at most
/// six actions; the shrunk case passes without the bug.
#[test]
fn the_default_soak_finds_a_left_connections_result_uncounted() {
    let report = found_and_shrunk(PlantedBug::LeftResultUncounted, "resumable");
    assert!(
        ["decisions-follow-spec", "journal-replays-clean"]
            .iter()
            .any(|invariant| report.contains(invariant)),
        "{report}"
    );
    eprintln!("{report}");
}

/// A session that checks a new connection's call ids against the ones
/// the old connection saw (so a server numbering its calls from `call-1`
/// again gets no answer) is found over seeds 0..2000 of `sim/pharmacy`
/// (the `id-restart` fault, a reconnect) and shrunk to at most six
/// actions; the shrunk case passes without the bug.
#[test]
fn the_default_soak_finds_ids_outliving_their_connection() {
    let report = found_and_shrunk(PlantedBug::IdsOutliveTheirConnection, "pharmacy");
    // The new connection's call goes unanswered.
    assert!(
        ["wire-order", "liveness", "answered-once"]
            .iter()
            .any(|invariant| report.contains(invariant)),
        "{report}"
    );
    eprintln!("{report}");
}

/// A session that keeps its old handle counted as fresh after a fresh
/// start (the server no longer knew it) moves at once on a `goAway` that
/// comes before the new session's first handle, finds none, and stays
/// for good: found over seeds 0..2000 of `sim/resumable` (a fresh start,
/// a `goAway` before the first turn), and shrunk to at most nine actions
/// (a handle, the connection's end, the resume, its refusal, the fresh
/// start, the notice, a pause, the new handle, and the move the script
/// waits for: without the pause the handle comes before the move starts,
/// and the bug hides); the shrunk case passes without the bug.
#[test]
fn the_default_soak_finds_a_fresh_start_that_keeps_a_stale_handle() {
    let report = found_and_shrunk_to(PlantedBug::FreshStartKeepsStaleHandle, "resumable", 9);
    assert!(
        ["reconnect-ends", "liveness", "protocol"]
            .iter()
            .any(|invariant| report.contains(invariant)),
        "{report}"
    );
    eprintln!("{report}");
}

/// [`found_and_shrunk_to`] at most six actions.
fn found_and_shrunk(bug: PlantedBug, name: &str) -> String {
    found_and_shrunk_to(bug, name, 6)
}

/// Soaks `sim/<name>` with `bug` planted over seeds 0..2000 until a seed
/// fails, shrinks that failure, and checks the shrunk case: at most
/// `most` actions, and passing without the bug. Says what it found.
fn found_and_shrunk_to(bug: PlantedBug, name: &str, most: usize) -> String {
    let agent = Agent::load(Path::new(env!("CARGO_MANIFEST_DIR")).join("sim").join(name)).unwrap();
    let soak = || {
        Soak::agent(&agent.clone().with_planted(bug))
            .check_determinism_every(0)
            .keep(false)
    };
    let summary = soak()
        .seed_range(0..2000)
        .stop_at_first_failure()
        .try_run()
        .err()
        .unwrap_or_else(|| panic!("{bug}: seeds 0..2000 of {name} never find it"));
    let failure = summary
        .failures()
        .min_by_key(|f| f.seed)
        .expect("a failure")
        .clone();
    let shrunk = soak()
        .shrink(
            &Case::from(&failure),
            &failure.invariant,
            DEFAULT_BUDGET,
            &|_| {},
        )
        .unwrap_or_else(|e| panic!("{bug}: {e}"));
    assert!(
        shrunk.case.actions() <= most,
        "{bug}: shrunk to {} actions: {shrunk}\n{}",
        shrunk.case.actions(),
        serde_json::to_string_pretty(&shrunk.case.script.to_json()).unwrap()
    );
    let fixed = Soak::agent(&agent)
        .check_determinism_every(0)
        .run_case(&shrunk.case);
    assert!(
        fixed.failures.is_empty(),
        "{bug}: the shrunk case fails without the bug: {:?}",
        fixed.failures
    );
    format!(
        "{bug}: {name} seed {} ({}), shrunk to {} actions",
        failure.seed,
        failure.invariant,
        shrunk.case.actions()
    )
}
