//! `livesim sim`, run as a user runs it: from the repository (its `sim/`),
//! from a folder with no agents, on a broken agent, on an agent whose own
//! invariant fails (and the replay line it prints), and the triage of two
//! soaks' failures (new, still failing, fixed).

use std::path::{Path, PathBuf};
use std::process::Command;

// Scratch folders removed when each test ends, shared with the other test
// binaries rather than copied.
#[path = "common/scratch.rs"]
mod scratch;

use scratch::{Scratch, scratch};

/// Runs `livesim` in `dir`: success, stdout, stderr.
fn livesim_in(dir: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    livesim_with(dir, args, &[])
}

/// Runs `livesim` in `dir` with `env` set: success, stdout, stderr. A
/// step summary is written only where a test asks (not into the CI job's
/// own, when the tests run on GitHub Actions).
fn livesim_with(dir: &Path, args: &[&str], env: &[(&str, &Path)]) -> (Option<i32>, String, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_livesim"));
    command
        .current_dir(dir)
        .args(args)
        .env_remove("GITHUB_STEP_SUMMARY");
    for (name, value) in env {
        command.env(name, value);
    }
    let out = command.output().expect("the livesim binary runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A fresh folder for one test, removed when dropped.
fn temp(name: &str) -> Scratch {
    scratch(&format!("cli-{name}"))
}

/// A copy of a `sim/` agent in a fresh folder, its agent file changed;
/// the folder is removed when dropped.
fn copy_agent(name: &str, test: &str, change: impl FnOnce(&mut serde_json::Value)) -> Scratch {
    let dir = temp(test).inside(name);
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::fs::read_dir(repo().join("sim").join(name)).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, dir.join(path.file_name().unwrap())).unwrap();
    }
    let file = dir.join("agent.json");
    let mut agent: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    change(&mut agent);
    std::fs::write(&file, serde_json::to_string_pretty(&agent).unwrap()).unwrap();
    dir
}

/// `sim/weather` copied for `test` with an invariant its tools break
/// (`before(get_forecast, get_weather)`), and the corpus folder beside it
/// (both go when the agent's guard is dropped).
fn failing_weather(test: &str) -> (Scratch, PathBuf) {
    let agent = copy_agent("weather", test, |a| {
        a["invariants"] = serde_json::json!([{"before": ["get_forecast", "get_weather"]}]);
    });
    let corpus = agent.parent().unwrap().join("seeds");
    (agent, corpus)
}

/// Soaks `agent` over seeds 0..10, saving at most one failure to `corpus`.
fn soak_saving_one(agent: &Path, corpus: &Path) -> (Option<i32>, String, String) {
    livesim_in(
        &repo(),
        &[
            "sim",
            "soak",
            agent.to_str().unwrap(),
            "--seeds",
            "0..10",
            "--save",
            corpus.to_str().unwrap(),
            "--save-limit",
            "1",
        ],
    )
}

#[test]
fn sim_help_lists_only_what_exists() {
    let (code, out, _) = livesim_in(&repo(), &["sim", "--help"]);
    assert_eq!(code, Some(0));
    let commands: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(
        commands,
        [
            "soak", "run", "check", "shrink", "replay", "passk", "import", "help"
        ],
        "{out}"
    );
    for command in [
        "soak", "run", "check", "shrink", "replay", "passk", "import",
    ] {
        let (code, out, _) = livesim_in(&repo(), &["sim", command, "--help"]);
        assert_eq!(code, Some(0));
        assert!(
            out.contains(&format!("Usage: livesim sim {command}")),
            "{out}"
        );
    }
}

#[test]
fn soak_runs_every_sim_agent_and_prints_the_summary() {
    let junit = temp("junit").inside("soak.xml");
    let (code, out, err) = livesim_in(
        &repo().join("src"),
        &[
            "sim",
            "soak",
            "--seeds",
            "0..3",
            "--jobs",
            "2",
            // The fresh seeds alone: a count the test can state.
            "--no-explore",
            "--junit",
            junit.to_str().unwrap(),
        ],
    );
    assert_eq!(code, Some(0), "{out}{err}");
    // The repository's kept cases run first, then the seeds.
    let kept = livesim::soak::corpus_files(repo().join("seeds"))
        .unwrap()
        .len();
    assert!(kept > 0);
    assert!(
        out.starts_with(&format!(
            "soak: 8 agents (booking, checkout, payment, pharmacy, refunds, resumable, support, weather), seeds 0..3 after {kept} kept cases, 2 jobs"
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!("sessions: {} in ", 24 + kept)),
        "{out}"
    );
    assert!(out.contains("invariant checks: "), "{out}");
    assert!(
        out.contains("sometimes (runs that reached each goal):"),
        "{out}"
    );
    assert!(out.trim_end().ends_with("failures: none"), "{out}");
    assert!(
        err.contains(
            "livesim sim soak: booking, checkout, payment, pharmacy, refunds, resumable, support, weather (8 agents), seeds 0..3, 2 jobs"
        ),
        "{err}"
    );
    // Not a terminal: progress as plain lines, the last one complete.
    assert!(
        err.contains(&format!(
            "livesim sim soak: {0}/{0} sessions, 0 failures",
            24 + kept
        )),
        "{err}"
    );
    let report =
        quick_junit::Report::deserialize_from_str(&std::fs::read_to_string(&junit).unwrap())
            .unwrap();
    assert_eq!(report.test_suites.len(), 8);
}

#[test]
fn soak_with_no_agents_in_reach_says_what_it_looked_for() {
    let empty = temp("empty");
    let (code, _, err) = livesim_in(&empty, &["sim", "soak"]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains(&format!(
            "no agents found: looked for sim/*/agent.json in {}",
            empty.display()
        )),
        "{err}"
    );
    assert!(err.contains("livesim sim soak path/to/agents"), "{err}");
    let (code, _, err) = livesim_in(&empty, &["sim", "soak", "nowhere"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("nowhere: no such folder"), "{err}");
}

#[test]
fn bad_usage_and_broken_agents_exit_2_with_the_place() {
    let (code, _, err) = livesim_in(&repo(), &["sim", "soak", "--shard", "3/2"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("`3/2` is not a shard"), "{err}");
    let (code, _, err) = livesim_in(&repo(), &["sim", "soak", "--seeds", "9..3"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("the range is empty"), "{err}");
    let (code, _, err) = livesim_in(&repo(), &["sim", "soak", "--duration", "soon"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("`soon` is not a duration"), "{err}");
    let (code, _, err) = livesim_in(&repo(), &["sim", "soak", "--jobs", "0"]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("0 jobs would run nothing: give at least 1"),
        "{err}"
    );
    let broken = copy_agent("weather", "broken", |a| {
        a["tools"][0]["latency_ms"] = serde_json::json!([50]);
    });
    let (code, _, err) = livesim_in(&repo(), &["sim", "soak", broken.to_str().unwrap()]);
    assert_eq!(code, Some(2));
    let file = broken.join("agent.json").display().to_string();
    assert!(err.contains(&format!("{file}:")), "{err}");
    assert!(
        err.contains("at tools[0].latency_ms: expected latency_ms: [low, high]"),
        "{err}"
    );
}

#[test]
fn run_shows_one_seed_the_same_way_every_time() {
    let script = temp("script").inside("payment-3.json");
    let args = [
        "sim",
        "run",
        "payment",
        "--seed",
        "3",
        "--save-script",
        script.to_str().unwrap(),
    ];
    let (code, first, err) = livesim_in(&repo(), &args);
    assert_eq!(code, Some(0), "{first}{err}");
    let lines: Vec<&str> = first.lines().collect();
    assert!(
        lines[0].starts_with("payment seed 0x3 | swarm: lanes="),
        "{first}"
    );
    assert!(lines[0].contains(" | faults: "), "{first}");
    assert!(
        lines[1].starts_with("script: ") && lines[1].contains("saved to"),
        "{first}"
    );
    assert!(
        lines[2].ends_with("| connected {\"session_id\":null}"),
        "{first}"
    );
    assert!(first.contains("\ninvariants:\n  protocol "), "{first}");
    assert!(
        lines.last().unwrap().starts_with("trace hash: 0x"),
        "{first}"
    );
    let (_, second, _) = livesim_in(&repo(), &args);
    assert_eq!(first, second);
    let saved = livesim::testing::ScriptedServer::load(&script).unwrap();
    assert_eq!(saved.name(), "payment-0x3");
    let (code, traced, _) = livesim_in(
        &repo(),
        &["sim", "run", "payment", "--seed", "3", "--trace"],
    );
    assert_eq!(code, Some(0));
    assert!(traced.contains("run seed=0x3 swarm:"), "{traced}");
    let (code, _, err) = livesim_in(&repo(), &["sim", "run", "paymnt", "--seed", "3"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("no agent \"paymnt\""), "{err}");
    assert!(
        err.contains(
            "(agents: booking, checkout, payment, pharmacy, refunds, resumable, support, weather)"
        ),
        "{err}"
    );
}

#[test]
fn check_reports_no_divergence_for_sim_agents() {
    let (code, out, err) = livesim_in(&repo(), &["sim", "check", "sim/weather", "--seeds", "0..4"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains("4 traces, each run twice here and once in a child process"),
        "{out}"
    );
    assert!(out.trim_end().ends_with("no divergence"), "{out}");
}

/// An agent whose own invariant breaks: exit 1, each failure with its
/// seed, swarm, faults, invariant and replay line; the replay line run as
/// printed fails the same way.
#[test]
fn a_failing_soak_prints_replay_lines_that_reproduce_it() {
    let (agent, corpus) = failing_weather("failing");
    let (code, out, err) = soak_saving_one(&agent, &corpus);
    assert_eq!(code, Some(1), "{out}{err}");
    // One failure saved, shrunk (progress on stderr), the rest counted.
    let saved = out
        .lines()
        .find(|l| l.starts_with("saved "))
        .unwrap_or_else(|| panic!("nothing saved:\n{out}"));
    assert!(
        saved.contains(": before(get_forecast, get_weather), 1 action (shrunk from "),
        "{saved}"
    );
    assert!(
        err.contains("livesim sim soak: shrink [decisions] 1 action"),
        "{err}"
    );
    assert!(
        out.contains("more weather failures not saved (--save-limit 1"),
        "{out}"
    );
    let entries = livesim::soak::corpus_files(&corpus).unwrap();
    assert_eq!(entries.len(), 1);
    // The agent is not under the nearest `sim/`: the line names its folder.
    assert!(
        saved.contains(&format!(
            "sim replay --agent {} {}",
            agent.display(),
            entries[0].display()
        )),
        "{saved}"
    );
    // The entry fails against the broken agent.
    let (code, again, _) = livesim_in(
        &repo(),
        &[
            "sim",
            "replay",
            entries[0].to_str().unwrap(),
            "--agent",
            agent.to_str().unwrap(),
        ],
    );
    assert_eq!(code, Some(1), "{again}");
    assert!(
        again.contains(": FAILS\n  before(get_forecast, get_weather): "),
        "{again}"
    );
    // The kept failure, told from its shrunk case: what broke, the case,
    // what happened, the corpus file, the line that replays the kept case
    // and the one that replays the seed as found.
    let failed = out
        .lines()
        .find(|l| l.starts_with("FAILED weather seed "))
        .expect(&out);
    assert!(
        failed.contains(": before(get_forecast, get_weather), shrunk from "),
        "{failed}"
    );
    assert!(out.contains("\n  case: seed "), "{out}");
    assert!(out.contains("\n  tool calls (virtual time):"), "{out}");
    let kept_replay = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("replay: "))
        .expect("a replay line");
    assert!(
        kept_replay.ends_with(&format!(
            "sim replay --agent {} {}",
            agent.display(),
            entries[0].display()
        )),
        "{kept_replay}"
    );
    // Run as printed, from anywhere (here: a folder with no `sim/`), it
    // replays the kept case.
    let kept_args: Vec<&str> = kept_replay
        .strip_prefix("cargo run --release -- ")
        .or_else(|| kept_replay.strip_prefix("livesim "))
        .unwrap_or_else(|| panic!("{kept_replay}"))
        .split_whitespace()
        .collect();
    let (code, again, _) = livesim_in(&std::env::temp_dir(), &kept_args);
    assert_eq!(code, Some(1), "{again}");
    assert!(again.contains(": FAILS\n"), "{again}");
    // One agent's folder of the corpus replays as the corpus does.
    let folder = corpus.join("weather");
    let (code, again, _) = livesim_in(
        &std::env::temp_dir(),
        &[
            "sim",
            "replay",
            "--agent",
            agent.to_str().unwrap(),
            folder.to_str().unwrap(),
        ],
    );
    assert_eq!(code, Some(1), "{again}");
    assert!(
        again.contains("replayed 0 passed, 1 failed, 0 unreadable"),
        "{again}"
    );
    let replay = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("the seed as found: "))
        .expect("the seed's replay line");
    // Run through cargo, the line is for cargo; the arguments are the same.
    let args = replay
        .strip_prefix("cargo run --release -- ")
        .or_else(|| replay.strip_prefix("livesim "))
        .unwrap_or_else(|| panic!("{replay}"));
    let args: Vec<&str> = args.split_whitespace().collect();
    assert_eq!(&args[..3], ["sim", "run", agent.to_str().unwrap()]);
    let (code, out, _) = livesim_in(&repo(), &args);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("before(get_forecast, get_weather)  FAILED: get_weather"),
        "{out}"
    );
    // A second soak finds the seed kept already: the entry is left as it
    // was, and the failure is still told with both replay lines.
    let before = std::fs::read(&entries[0]).unwrap();
    let (code, second, err) = soak_saving_one(&agent, &corpus);
    assert_eq!(code, Some(1), "{second}{err}");
    assert!(
        second.contains(&format!(
            "kept: {} (the corpus had this seed already)",
            entries[0].display()
        )),
        "{second}"
    );
    assert!(second.contains("\n  the seed as found: "), "{second}");
    assert_eq!(std::fs::read(&entries[0]).unwrap(), before);
    assert_eq!(livesim::soak::corpus_files(&corpus).unwrap().len(), 1);
    // "It runs first from now on": a later soak of other seeds runs the
    // kept case before them, and it fails there; with --no-save the
    // corpus is left alone, kept cases and all.
    let later = |save: &[&str]| {
        let mut args = vec![
            "sim",
            "soak",
            agent.to_str().unwrap(),
            "--seeds",
            "900..901",
        ];
        args.extend_from_slice(save);
        livesim_in(&repo(), &args)
    };
    let (code, third, err) = later(&["--save", corpus.to_str().unwrap(), "--shrink-runs", "0"]);
    assert_eq!(code, Some(1), "{third}{err}");
    assert!(third.contains("seed 0x384 after 1 kept case"), "{third}");
    assert!(third.contains("FAILED weather seed 0x0: "), "{third}");
    let (_, alone, _) = later(&["--no-save"]);
    assert!(!alone.contains("kept case"), "{alone}");
}

/// `sim replay`: an entry whose agent is gone, or that cannot be read,
/// exits 2 naming it; one that passes exits 0.
#[test]
fn replay_exits_2_for_a_missing_agent_or_a_damaged_entry() {
    let dir = temp("replay");
    // An entry made by hand: weather's seed 3 as a corpus entry.
    let script = temp("replay-script").inside("s.json");
    let (code, _, _) = livesim_in(
        &repo(),
        &[
            "sim",
            "run",
            "weather",
            "--seed",
            "3",
            "--save-script",
            script.to_str().unwrap(),
        ],
    );
    assert_eq!(code, Some(0));
    let mut entry: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&script).unwrap()).unwrap();
    entry["regression"] = serde_json::json!({
        "v": 1, "agent": "weather", "seed": "0x3", "invariant": "liveness",
        "swarm": {"lanes": "fixed", "yield_chance": 0.0, "yield_max": 0, "sleep_chance": 0.0,
                  "sleep_max_ms": 0, "task_yield_chance": 0.0, "delivery_jitter_ms": 0},
        "faults": {"weather": "calm"}
    });
    let file = dir.join("weather").join("0x3.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, serde_json::to_string_pretty(&entry).unwrap()).unwrap();
    let (code, out, err) = livesim_in(&repo(), &["sim", "replay", dir.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("weather seed 0x3 (liveness, "), "{out}");
    assert!(out.contains("): passes"), "{out}");
    // --html draws the replay: one entry, one page; a folder of entries,
    // a page per entry in the folder it names.
    let page = dir.join("one.html");
    let (code, _, err) = livesim_in(
        &repo(),
        &[
            "sim",
            "replay",
            file.to_str().unwrap(),
            "--html",
            page.to_str().unwrap(),
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("weather seed 0x3"), "{html}");
    let pages = dir.join("pages");
    let (code, _, err) = livesim_in(
        &repo(),
        &[
            "sim",
            "replay",
            dir.to_str().unwrap(),
            "--html",
            pages.to_str().unwrap(),
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(pages.join("weather-0x3.html").is_file(), "{err}");

    entry["regression"]["agent"] = serde_json::json!("retired");
    std::fs::write(&file, serde_json::to_string_pretty(&entry).unwrap()).unwrap();
    let (code, _, err) = livesim_in(&repo(), &["sim", "replay", file.to_str().unwrap()]);
    assert_eq!(code, Some(2));
    assert!(err.contains("its agent `retired` is not in "), "{err}");

    std::fs::write(&file, "{\"v\": 1,").unwrap();
    let (code, _, err) = livesim_in(&repo(), &["sim", "replay", file.to_str().unwrap()]);
    assert_eq!(code, Some(2));
    assert!(err.contains(&format!("{}:1:", file.display())), "{err}");
}

/// A copy of `sim/weather` named `name` in `dir`, with `invariants`.
/// `sim passk` plays a saved conversation under many seeds: a kept
/// failure that fails under every seed has pass^1 0 and misses
/// `--at-least` (exit 1), lists its failing seeds and a line that replays
/// one, which prints that trial's failure; a script without `--agent` is
/// refused with what to add.
#[test]
fn passk_plays_one_conversation_under_many_seeds() {
    let (agent, corpus) = failing_weather("passk");
    let (code, out, err) = soak_saving_one(&agent, &corpus);
    assert_eq!(code, Some(1), "{out}{err}");
    let entry = livesim::soak::corpus_files(&corpus).unwrap().remove(0);
    let entry = entry.to_str().unwrap();
    let dir = agent.to_str().unwrap();
    let (code, out, err) = livesim_in(
        &repo(),
        &[
            "sim",
            "passk",
            entry,
            "--agent",
            dir,
            "--seeds",
            "0..12",
            "--at-least",
            "0.5",
        ],
    );
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        out.contains("passed 0 of 12 seeds: pass^1 0.000, pass^8 0.000"),
        "{out}"
    );
    assert!(
        out.contains("failing seeds: 0x0 (before(get_forecast, get_weather)), 0x1 ("),
        "{out}"
    );
    assert!(out.contains("pass^8 0.000 is below 0.5"), "{out}");
    let replay = out
        .lines()
        .find_map(|l| l.strip_prefix("replay one: livesim "))
        .unwrap_or_else(|| panic!("no replay line:\n{out}"));
    let args: Vec<&str> = replay.split(' ').collect();
    let (code, one, _) = livesim_in(&repo(), &args);
    assert_eq!(code, Some(1), "{one}");
    assert!(
        one.contains("FAILED weather seed 0x0: before(get_forecast, get_weather)"),
        "{one}"
    );
    assert!(one.contains(&format!("replay: livesim {replay}")), "{one}");
    // An entry whose agent is gone is named with it.
    let renamed = agent.parent().unwrap().join("renamed.json");
    let text = std::fs::read_to_string(entry).unwrap();
    let text = text.replacen("\"agent\": \"weather\"", "\"agent\": \"wether\"", 1);
    assert!(text.contains("wether"), "{text}");
    std::fs::write(&renamed, text).unwrap();
    let renamed = renamed.to_str().unwrap();
    let (code, _, err) = livesim_in(&repo(), &["sim", "passk", renamed, "--seeds", "2"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.starts_with(&format!(
            "livesim sim passk: {renamed}: its agent `wether` cannot be used (no agent \"wether\""
        )) && err
            .trim_end()
            .ends_with("name the agent to replay it against with --agent"),
        "{err}"
    );
    // A script is someone's conversation: --agent says whose.
    let script = agent.parent().unwrap().join("conversation.json");
    let (code, _, err) = livesim_in(
        &repo(),
        &[
            "sim",
            "run",
            dir,
            "--seed",
            "3",
            "--save-script",
            script.to_str().unwrap(),
        ],
    );
    assert!(code.is_some(), "{err}");
    let (code, _, err) = livesim_in(&repo(), &["sim", "passk", script.to_str().unwrap()]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains(
            "is a script, not a corpus entry: say whose conversation it is with --agent NAME"
        ),
        "{err}"
    );
    let (code, out, err) = livesim_in(
        &repo(),
        &[
            "sim",
            "passk",
            script.to_str().unwrap(),
            "--agent",
            "weather",
            "--seeds",
            "8",
            "--format",
            "json",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (json["trials"].as_u64(), json["passed"].as_u64()),
        (Some(8), Some(8))
    );
}

/// `sim import` makes a recorded wire log an agent's corpus entry: the
/// damaged line is skipped and named, the entry saved, and `sim replay`
/// passes on it.
#[test]
fn import_keeps_a_recorded_session_as_a_seed() {
    let dir = temp("import");
    let log = dir.join("prod.jsonl");
    std::fs::write(
        &log,
        r#"{"v":1,"kind":"wire_log","started_at_ms":0}
{"dir":"out","t_ms":0,"type":"text","json":{"setup":{"model":"models/m"}}}
{"dir":"in","t_ms":40,"type":"binary","json":{"setupComplete":{}}}
{"dir":"in","t_ms":90,"type":"binary","json":{"serverContent":{"modelTurn":{"parts":[{"text":"Checking."}]}}}}
%%% damaged %%%
{"dir":"in","t_ms":120,"type":"binary","json":{"toolCall":{"functionCalls":[{"id":"c1","name":"get_weather","args":{"city":"Oslo"}}]}}}
{"dir":"out","t_ms":180,"type":"text","json":{"toolResponse":{"functionResponses":[{"id":"c1","name":"get_weather","response":{"sky":"snow"}}]}}}
{"dir":"in","t_ms":400,"type":"binary","json":{"serverContent":{"modelTurn":{"parts":[{"text":"Snow in Oslo."}]},"turnComplete":true}}}
"#,
    )
    .unwrap();
    let corpus = dir.join("seeds");
    let (code, out, err) = livesim_in(
        &repo(),
        &[
            "sim",
            "import",
            log.to_str().unwrap(),
            "--agent",
            "weather",
            "--save",
            corpus.to_str().unwrap(),
        ],
    );
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(err.contains("livesim sim import: skipped "), "{err}");
    assert!(err.contains("prod.jsonl:5: not a wire log line"), "{err}");
    assert!(
        out.contains("6 frames, 1 damaged line skipped, 0 resumption handles replaced"),
        "{out}"
    );
    let saved = out
        .lines()
        .find_map(|l| l.strip_prefix("saved "))
        .unwrap_or_else(|| panic!("nothing saved:\n{out}"));
    let (code, again, err) = livesim_in(&repo(), &["sim", "replay", saved]);
    assert_eq!(code, Some(0), "{again}{err}");
    assert!(again.contains("(imported, "), "{again}");
}

#[test]
fn import_reads_a_journal_as_well_as_a_wire_log() {
    let dir = temp("import-journal");
    let journal = dir.join("user-7.journal.jsonl");
    std::fs::write(
        &journal,
        r#"{"v":1,"kind":"journal"}
{"seq":1,"key":"flow:tool_call","value":{"tool":"verify_identity","id":"call-1"},"timestamp":1000}
{"seq":2,"key":"verified","value":true,"timestamp":1200}
{"seq":3,"key":"customer","value":"Ada Byron","timestamp":1200}
{"seq":4,"key":"flow:tool_result","value":{"tool":"verify_identity","id":"call-1","ok":true},"timestamp":1200}
{"seq":5,"key":"flow:active","value":["pay"],"timestamp":1300}
{"seq":6,"key":"flow:tool_call","value":{"tool":"take_pay
"#,
    )
    .unwrap();
    let script = dir.join("user-7.script.json");
    let corpus = dir.join("seeds");
    let (code, out, err) = livesim_in(
        &repo(),
        &[
            "sim",
            "import",
            journal.to_str().unwrap(),
            "--agent",
            "payment",
            "--script",
            script.to_str().unwrap(),
            "--save",
            corpus.to_str().unwrap(),
        ],
    );
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        err.contains("user-7.journal.jsonl:7: not a journal entry"),
        "{err}"
    );
    assert!(
        out.contains("5 journal entries, 1 damaged line skipped, 0 resumptions recorded"),
        "{out}"
    );
    assert!(out.contains("it passes every invariant"), "{out}");
    let written = std::fs::read_to_string(&script).unwrap();
    assert!(written.contains("Ada Byron"), "{written}");
    let saved = out
        .lines()
        .find_map(|l| l.strip_prefix("saved "))
        .unwrap_or_else(|| panic!("nothing saved:\n{out}"));
    let (code, again, err) = livesim_in(&repo(), &["sim", "replay", saved]);
    assert_eq!(code, Some(0), "{again}{err}");
}

fn weather_as(dir: &Path, name: &str, invariants: serde_json::Value) -> PathBuf {
    let agent = dir.join(name);
    std::fs::create_dir_all(&agent).unwrap();
    let file = repo().join("sim/weather/agent.json");
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    json["invariants"] = invariants;
    std::fs::write(agent.join("agent.json"), json.to_string()).unwrap();
    agent
}

/// (signature, agent) of each entry of a triage file.
fn signatures(file: &Path) -> Vec<(String, String)> {
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    assert_eq!(json["livesim_triage"], 1, "{json}");
    json["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let id = e["signature"].as_str().unwrap().to_string();
            (id, e["agent"].as_str().unwrap().to_string())
        })
        .collect()
}

/// Two nights: `alpha` breaks the same invariant both nights, `beta`
/// breaks one the first night and another the second. The second soak,
/// against the first's triage file, says alpha's signatures are still
/// failing, beta's second-night ones new and its first-night ones fixed,
/// in its text, its step summary (from `GITHUB_STEP_SUMMARY`) and its
/// JUnit report.
#[test]
fn triage_compares_a_soak_with_the_last_one() {
    let dir = temp("triage");
    let night = |n: u32, beta: serde_json::Value, env: &[(&str, &Path)]| {
        let agents = dir.join(format!("night-{n}"));
        weather_as(
            &agents,
            "alpha",
            serde_json::json!([{"before": ["get_forecast", "get_weather"]}]),
        );
        weather_as(&agents, "beta", beta);
        let triage = dir.join(format!("triage-{n}.json"));
        let junit = dir.join(format!("junit-{n}.xml"));
        let corpus = dir.join(format!("seeds-{n}"));
        let baseline = dir.join("triage-1.json");
        let mut args = vec![
            "sim",
            "soak",
            agents.to_str().unwrap(),
            "--seeds",
            "0..5",
            "--no-explore",
            "--save",
            corpus.to_str().unwrap(),
            "--save-limit",
            "0",
            "--triage",
            triage.to_str().unwrap(),
            "--junit",
            junit.to_str().unwrap(),
        ];
        if n == 2 {
            args.extend(["--baseline", baseline.to_str().unwrap()]);
        }
        let (code, out, err) = livesim_with(&repo(), &args, env);
        assert_eq!(code, Some(1), "{out}{err}");
        (triage, junit, out)
    };
    let summary_1 = dir.join("summary-1.md");
    let before = |a: &str, b: &str| serde_json::json!([{"before": [a, b]}]);
    let (triage_1, _, out_1) = night(1, before("get_forecast", "get_weather"), &[]);
    assert!(out_1.contains("\ntriage: "), "{out_1}");
    assert!(!summary_1.exists());
    let summary_2 = dir.join("summary-2.md");
    let (triage_2, junit_2, out_2) = night(
        2,
        before("get_weather", "get_forecast"),
        &[("GITHUB_STEP_SUMMARY", &summary_2)],
    );
    // What each signature must be, from the two files alone.
    let (first, second) = (signatures(&triage_1), signatures(&triage_2));
    let mut expected: Vec<(String, &str)> = Vec::new();
    for (id, agent) in &second {
        let was = first.iter().any(|(old, _)| old == id);
        assert_eq!(was, agent == "alpha", "{id} of {agent}");
        expected.push((id.clone(), if was { "still failing" } else { "new" }));
    }
    for (id, agent) in &first {
        if !second.iter().any(|(now, _)| now == id) {
            assert_eq!(agent, "beta", "{id}");
            expected.push((id.clone(), "fixed"));
        }
    }
    for status in ["new", "still failing", "fixed"] {
        assert!(
            expected.iter().any(|(_, s)| *s == status),
            "no {status}: {expected:?}"
        );
    }
    let markdown = std::fs::read_to_string(&summary_2).unwrap();
    assert!(
        markdown.starts_with("### livesim sim soak: alpha, beta (seeds 0..5)\n"),
        "{markdown}"
    );
    let report =
        quick_junit::Report::deserialize_from_str(&std::fs::read_to_string(&junit_2).unwrap())
            .unwrap();
    let properties: Vec<(String, String)> = report
        .test_suites
        .iter()
        .flat_map(|s| s.test_cases.iter().flat_map(|c| c.properties.iter()))
        .map(|p| (p.name.as_str().to_string(), p.value.as_str().to_string()))
        .collect();
    for (id, status) in &expected {
        let line = format!("\n  {status:<13}  {id}  ");
        assert!(out_2.contains(&line), "{line:?} missing:\n{out_2}");
        let table = match *status {
            "new" => "New",
            "still failing" => "Still failing",
            _ => "Fixed",
        };
        let section = markdown
            .split(&format!("\n#### {table} ("))
            .nth(1)
            .unwrap_or_else(|| panic!("no {table} table:\n{markdown}"));
        let section = section.split("\n#### ").next().unwrap();
        assert!(
            section.contains(&format!("| `{id}` |")),
            "{id} not in {table}:\n{markdown}"
        );
        // JUnit has a test case for each invariant broken now.
        assert_eq!(
            properties.contains(&(format!("triage.{id}"), status.to_string())),
            *status != "fixed",
            "{id} {status}: {properties:?}"
        );
    }
    let counts = format!(
        "**{} new**, {} still failing, {} fixed.",
        expected.iter().filter(|(_, s)| *s == "new").count(),
        expected
            .iter()
            .filter(|(_, s)| *s == "still failing")
            .count(),
        expected.iter().filter(|(_, s)| *s == "fixed").count()
    );
    assert!(markdown.contains(&counts), "{counts}\n{markdown}");
    // Shrunk, the seeds of a signature collapse: fewer entries than
    // failures; an entry's replay line replays its lowest seed.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&triage_2).unwrap()).unwrap();
    let entries = json["entries"].as_array().unwrap();
    let failures: u64 = entries.iter().map(|e| e["count"].as_u64().unwrap()).sum();
    assert!(entries.len() < failures as usize, "{json:#}");
    let replay = entries[0]["replay"].as_str().unwrap();
    assert!(replay.ends_with(&format!(
        "--seed {}",
        entries[0]["lowest_seed"].as_str().unwrap()
    )));
    let args: Vec<&str> = replay
        .split_whitespace()
        .skip_while(|w| *w != "sim")
        .collect();
    let (code, out, _) = livesim_in(&repo(), &args);
    assert_eq!(code, Some(1), "{out}");
}

/// A baseline that cannot be read stops the soak before it starts: exit
/// 2, the file and what is wrong with it.
#[test]
fn a_damaged_baseline_is_an_error_naming_the_file() {
    let dir = temp("baseline");
    for (text, said) in [
        (
            "{\"livesim_triage\": 1, \"entries\": [",
            ":1:34: not valid JSON",
        ),
        (
            "{\"livesim_triage\": 9, \"agents\": [], \"entries\": []}",
            "reads triage files of version 1, not 9",
        ),
        ("<testsuites/>", ":1:1: not valid JSON"),
    ] {
        let file = dir.join("last-night.json");
        std::fs::write(&file, text).unwrap();
        let args = [
            "sim",
            "soak",
            "sim/weather",
            "--seeds",
            "0..1",
            "--baseline",
            file.to_str().unwrap(),
        ];
        let (code, out, err) = livesim_in(&repo(), &args);
        assert_eq!(code, Some(2), "{out}{err}");
        assert!(
            err.contains(&format!("livesim sim soak: --baseline {}", file.display()))
                && err.contains(said),
            "{said}: {err}"
        );
        assert!(out.is_empty(), "the soak ran: {out}");
    }
    let missing = dir.join("none.json");
    let args = [
        "sim",
        "soak",
        "sim/weather",
        "--baseline",
        missing.to_str().unwrap(),
    ];
    let (code, _, err) = livesim_in(&repo(), &args);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("none.json: cannot read it: ")
            && err.contains("(a triage file is what `livesim sim soak --triage FILE` writes)"),
        "{err}"
    );
}

/// An entry naming a check its agent does not run (a typo, an entry moved
/// from another agent) cannot show whether its bug is back: `sim replay`
/// counts it unreadable, exits 2 and names the check it most likely
/// meant; the corpus as committed replays clean.
#[test]
fn replay_refuses_an_entry_whose_check_the_agent_does_not_run() {
    let (code, out, err) = livesim_in(&repo(), &["sim", "replay", "seeds"]);
    assert_eq!(code, Some(0), "{out}{err}");
    let entry = std::fs::read_dir(repo().join("seeds/payment"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .expect("a payment entry");
    let mut value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&entry).unwrap()).unwrap();
    let invariant = value["regression"]["invariant"]
        .as_str()
        .unwrap()
        .to_string();
    let misspelt = format!("{invariant}s");
    value["regression"]["invariant"] = misspelt.clone().into();
    let dir = temp("replay-unknown-check");
    let copy = dir.join("entry.json");
    std::fs::write(&copy, value.to_string()).unwrap();
    let (code, out, err) = livesim_in(&repo(), &["sim", "replay", copy.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(
        err.contains(&format!(
            "the entry says it broke `{misspelt}`, which agent `payment` does not check"
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!("Did you mean `{invariant}`?")),
        "{err}"
    );
    assert!(
        out.contains("replayed 0 passed, 0 failed, 1 unreadable"),
        "{out}"
    );
}

/// A recorded session imported into the corpus (it broke nothing, so its
/// entry says `imported`) replays as any entry does.
#[test]
fn an_imported_entry_replays() {
    let dir = temp("import-replay");
    let recording = repo().join("tests/fixtures/import/weather-python-sdk.jsonl");
    let (code, out, err) = livesim_in(
        &repo(),
        &[
            "sim",
            "import",
            "--agent",
            "weather",
            "--save",
            dir.to_str().unwrap(),
            recording.to_str().unwrap(),
        ],
    );
    assert_eq!(code, Some(0), "{out}{err}");
    let (code, out, err) = livesim_in(&repo(), &["sim", "replay", dir.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("(imported, "), "{out}");
    assert!(
        out.contains("replayed 1 passed, 0 failed, 0 unreadable"),
        "{out}"
    );
}
