//! Replays of generated governed sessions: seeded runtimes, generated call
//! sequences, a few specs; the journal each run writes is replayed against
//! the spec that governed it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use livesim::Seed;
use livesim::executor::Simulation;
use livesim::flow::Spec;
use livesim::prelude::*;
use livesim::simulation::{JournalFile, ReplayReport};
use livesim::state::FileJournalSink;
use livesim::testing::ScriptedServer;
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::cli::{Scratch, arg, livesim, package, scratch};

/// A spec, its file, and what each of its tools writes when it succeeds.
struct Fixture {
    spec: Spec,
    file: PathBuf,
    tools: Vec<(&'static str, Value)>,
}

/// The sim/ booking conversation, and a flow whose payment is gated.
fn fixtures(dir: &Path) -> Vec<Fixture> {
    let booking = package().join("sim/booking/booking.spec.json");
    let pay = Flow::new()
        .step("verify")
        .allow(["verify_identity"])
        .done(Guard::called_ok("verify_identity"))
        .escalate_after_tool_failures(2)
        .step("pay")
        .after("verify")
        .allow(["confirm_amount", "take_payment"])
        .gate("take_payment", Guard::is_true("amount_confirmed"))
        .done(Guard::all([
            Guard::called_ok("take_payment"),
            Guard::not(Guard::called("refund")),
        ]))
        .escalate_after_interruptions(2)
        .build()
        .unwrap();
    let pay_file = dir.join("pay.spec.json");
    pay.write(&pay_file).unwrap();
    vec![
        Fixture {
            spec: Spec::read(&booking).unwrap(),
            file: booking,
            tools: vec![
                ("set_party", json!({"party_size": 4})),
                ("confirm", json!({"confirmed": true})),
                ("book_table", json!({"booked": true})),
            ],
        },
        Fixture {
            spec: Spec::Flow(pay),
            file: pay_file,
            tools: vec![
                ("verify_identity", json!({})),
                ("confirm_amount", json!({"amount_confirmed": true})),
                ("take_payment", json!({"paid": true})),
            ],
        },
    ]
}

/// What the scripted model does next.
#[derive(Debug, Clone)]
enum Act {
    /// Calls tool `tool` (an index into the fixture's tools); the tool
    /// succeeds when `ok`; the model ends its turn after it when `ends`.
    Call { tool: usize, ok: bool, ends: bool },
    /// The model says something and the user barges in.
    Interrupt,
}

fn acts() -> impl Strategy<Value = Vec<Act>> {
    proptest::collection::vec(
        prop_oneof![
            4 => (0usize..3, proptest::bool::weighted(0.8), any::<bool>())
                .prop_map(|(tool, ok, ends)| Act::Call { tool, ok, ends }),
            1 => Just(Act::Interrupt),
        ],
        1..14,
    )
}

fn tools(state: &State, table: &[(&'static str, Value)]) -> ToolComposite {
    let mut tools = ToolComposite::new();
    for (name, _) in table {
        let state = state.clone();
        tools = tools.with(T::simple(*name, *name, move |args| {
            let state = state.clone();
            async move {
                if args["ok"] != json!(true) {
                    return Err("it failed".into());
                }
                for (key, value) in args["writes"].as_object().into_iter().flatten() {
                    state.set(key.clone(), value.clone());
                }
                Ok(json!({ "done": true }))
            }
        }));
    }
    tools
}

/// Plays `acts` governed by the fixture's spec (Enforce) on the simulated
/// runtime with `seed`, writing the journal to `journal`. Returns how many
/// calls the script made.
fn run_session(seed: u64, fixture: &Fixture, acts: &[Act], journal: &Path) -> usize {
    let mut script = ScriptedServer::new();
    let mut calls = 0;
    for act in acts {
        script = match act {
            Act::Call { tool, ok, ends } => {
                calls += 1;
                let (name, writes) = &fixture.tools[*tool];
                let script = script.calls(*name, json!({ "ok": ok, "writes": writes }));
                if *ends {
                    script.turn_complete()
                } else {
                    script
                }
            }
            Act::Interrupt => script.text("Let me").interrupts(),
        };
    }
    let sink = Arc::new(FileJournalSink::create(journal).unwrap());
    let session_sink = sink.clone();
    let spec = fixture.spec.clone();
    let table = fixture.tools.clone();
    Simulation::new(Seed::new(seed))
        .run(move || async move {
            // Made inside the run, so the state reads the virtual clock.
            let state = State::new().with_journal_sink(session_sink);
            let builder = Live::builder()
                .state(state.clone())
                .tools(tools(&state, &table));
            let builder = match &spec {
                Spec::Flow(flow) => builder.govern(flow.clone()),
                Spec::Conversation(convo) => builder.converse(convo),
            };
            let run = script.play(builder).await.expect("the script plays");
            run.disconnect().await;
        })
        .expect("the run finishes");
    sink.check().unwrap();
    calls
}

/// What `livesim flow replay` computes for a journal file: the library
/// calls it makes, in the order it makes them.
fn replay_as_the_cli_does(fixture: &Fixture, journal: &Path) -> ReplayReport {
    let file = JournalFile::read(journal).unwrap();
    let name = JournalFile::name_for(journal).unwrap();
    file.scenario(name).unwrap().replay(&fixture.spec)
}

/// How many turn boundaries the journal records.
fn boundaries(journal: &Path) -> usize {
    JournalFile::read(journal)
        .unwrap()
        .entries
        .iter()
        .filter(|entry| entry.mutation.key == "flow:active")
        .count()
}

static CASE: AtomicUsize = AtomicUsize::new(0);

/// The journal's file name in a case's folder.
const JOURNAL: &str = "run.journal.jsonl";

/// Records one case: fixture `which` plays `acts` with `seed`, its journal
/// in a scratch folder of the case's own (the two properties run at once,
/// so a counter keeps their files apart). Returns the folder, the fixture
/// and how many calls the script made.
fn record(seed: u64, which: usize, acts: &[Act]) -> (Scratch, Fixture, usize) {
    let case = CASE.fetch_add(1, Ordering::Relaxed);
    let dir = scratch(&format!("property-{case}"));
    let fixture = fixtures(&dir).swap_remove(which);
    let calls = run_session(seed, &fixture, acts, &dir.join(JOURNAL));
    (dir, fixture, calls)
}

proptest! {
    // Each case is a whole simulated session: 64 by default, more with
    // PROPTEST_CASES for nightly runs.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(64),
        ..ProptestConfig::default()
    })]

    // For every seed and generated call sequence, replaying the journal of
    // an Enforce-governed session against its own spec is CLEAN, and the
    // replay compared every call decision and every turn boundary.
    #[test]
    fn a_governed_session_replays_clean_against_its_own_spec(
        seed in any::<u64>().no_shrink(),
        which in 0usize..2,
        acts in acts(),
    ) {
        let (dir, fixture, calls) = record(seed, which, &acts);
        let journal = dir.join(JOURNAL);
        let report = replay_as_the_cli_does(&fixture, &journal);
        prop_assert!(report.clean(), "seed {seed:#x}:\n{report}");
        prop_assert_eq!(report.decisions, calls + boundaries(&journal), "{}", report);
    }
}

proptest! {
    // A handful through the binary (a process per case): 4 by default, a
    // sixteenth of PROPTEST_CASES for nightly runs.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse::<u32>().ok()).map_or(4, |n| (n / 16).max(4)),
        ..ProptestConfig::default()
    })]

    // The binary prints exactly the library's report, CLEAN, and exits 0.
    #[test]
    fn the_cli_and_the_library_agree(
        seed in any::<u64>().no_shrink(),
        which in 0usize..2,
        acts in acts(),
    ) {
        let (dir, fixture, _) = record(seed, which, &acts);
        let journal = dir.join(JOURNAL);
        let report = replay_as_the_cli_does(&fixture, &journal);
        let out = livesim(&["flow", "replay", &arg(&fixture.file), "--journal", &arg(&journal)]);
        prop_assert_eq!(out.code, Some(0), "seed {:#x}: {:#?}", seed, out);
        prop_assert_eq!(&out.stdout, &format!("{report}\n"));
        prop_assert!(out.stdout.lines().last().unwrap().starts_with("CLEAN"));
    }
}
