//! Files of the wrong kind or shape, given where livesim wants another:
//! a regressions file that is a folder or not UTF-8 (and a
//! `LIVESIM_REGRESSIONS` that is no setting), a spec of the other kind, a
//! corpus that is a file, scenario files of the wrong shape, agent folders
//! holding no agent or an `agent.json` link that leads nowhere useful, a
//! torn extractor tape, recordings that start with a byte-order mark, tape
//! entries that say neither what a call returned nor how it failed, and
//! wire logs whose frames or headers break the format. Each drives an
//! error path a coverage run found no test reaching (or, where that path
//! cannot be reached, the check that stands before it), and each must be
//! an error naming the file (and the line, where there is one) and what is
//! wrong: never a panic of livesim's own, never an input used as if it
//! were fine.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use livesim::flow::{CompiledConversation, FlowSpec};
use livesim::llm::{BaseLlm, LlmError, LlmRequest};
use livesim::simulation::{Corpus, Scenario};
use livesim::soak::{Agent, import_journal, import_wire_log};
use livesim::tape::{
    FileTape, LLM_CALL, MemoryTape, TapeEntry, TapeError, TapeMode, TapedLlm, taped_resolver,
};
use livesim::transport::wire_log::{WireLog, WireLogError};
use serde_json::{Value, json};

use crate::{Scratch, arg, copy_files, livesim_in, refused, repo, temp};

// ---------------------------------------------------------------------
// Regression seeds (src/executor/regressions.rs): read by the runner of a
// `#[livesim::test]`, so shown on a real one run in a child process (this
// test binary) with `LIVESIM_REGRESSIONS_DIR` at a scratch folder: setting
// the variables here would reach every test of the process.

/// The test the regressions tests run in a child process: it passes on
/// every seed, so only its regressions file or setting can fail it.
#[livesim::test(seeds = 2)]
#[ignore = "run by the regressions tests of this file, in a child process"]
async fn child_reading_its_regressions_file() {}

/// The child's path, as `--exact` wants it.
const CHILD: &str = "strict_inputs::wrong_files::child_reading_its_regressions_file";

/// Where the child keeps its regressions under `dir`: the file of
/// `tests/strict_inputs/wrong_files.rs` (see `regressions_file`).
fn regressions_under(dir: &Path) -> PathBuf {
    dir.join("tests/livesim-regressions/strict_inputs/wrong_files.seeds")
}

/// Runs the child with its regressions under `dir` and
/// `LIVESIM_REGRESSIONS` set to `setting` (unset for `None`): whether it
/// passed, and all it printed.
fn run_child(dir: &Path, setting: Option<&str>) -> (bool, String) {
    let mut command = Command::new(std::env::current_exe().expect("the test binary"));
    command
        .args([CHILD, "--exact", "--ignored"])
        .env("LIVESIM_REGRESSIONS_DIR", dir)
        .env_remove("LIVESIM_REGRESSIONS")
        .env_remove("LIVESIM_SEED")
        .env_remove("LIVESIM_SEEDS")
        .env_remove("LIVESIM_HANG");
    if let Some(setting) = setting {
        command.env("LIVESIM_REGRESSIONS", setting);
    }
    let out = command.output().expect("the test binary runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// A `LIVESIM_REGRESSIONS` that is none of its settings fails the test,
/// naming the variable, the value and the settings there are.
#[test]
fn an_unknown_regressions_setting_fails_the_test_naming_the_variable_and_the_settings() {
    let dir = temp("regressions-setting");
    let (passed, out) = run_child(&dir, Some("sometimes"));
    assert!(!passed, "{out}");
    assert!(
        out.contains(
            "livesim: LIVESIM_REGRESSIONS: `sometimes` is not a setting: write on (read and \
             write the regressions file), read (read only; for CI) or off"
        ),
        "{out}"
    );
    // The same child passes under a setting there is.
    let (passed, out) = run_child(&dir, Some("read"));
    assert!(passed, "{out}");
    assert!(out.contains("1 passed"), "{out}");
}

/// A regressions file that is a folder fails the test, naming the file
/// and saying it cannot be read, and why.
#[test]
fn a_regressions_file_that_is_a_folder_fails_the_test_naming_it() {
    let dir = temp("regressions-folder");
    let file = regressions_under(&dir);
    std::fs::create_dir_all(&file).expect("a folder where the regressions file goes");
    let (passed, out) = run_child(&dir, None);
    assert!(!passed, "{out}");
    assert!(
        out.contains(&format!(
            "livesim: regressions file {}: cannot read it: Is a directory",
            file.display()
        )),
        "{out}"
    );
}

/// A regressions file saved in Latin-1 fails the test, naming the file,
/// the line, the column and the byte that is not UTF-8.
#[test]
fn a_regressions_file_that_is_not_utf8_fails_the_test_naming_its_line() {
    let dir = temp("regressions-latin1");
    let file = regressions_under(&dir);
    std::fs::create_dir_all(file.parent().expect("a parent")).expect("the folders");
    std::fs::write(
        &file,
        b"# seeds that once failed\nwrong_files::caf\xe9 0x2a  # panic\n",
    )
    .expect("the file written");
    let (passed, out) = run_child(&dir, None);
    assert!(!passed, "{out}");
    assert!(
        out.contains(&format!(
            "livesim: regressions file {}: line 2, column 17 (byte 41): 0xe9 is not UTF-8; \
             save the file as UTF-8",
            file.display()
        )),
        "{out}"
    );
    // And the file is left as it was, not rewritten.
    assert_eq!(
        std::fs::read(&file).expect("the file"),
        b"# seeds that once failed\nwrong_files::caf\xe9 0x2a  # panic\n"
    );
}

/// A regressions file that is a link to nowhere fails the test naming the
/// link and where it points, as an `agent.json` or a corpus folder that is
/// one does: the seeds it stood for would otherwise never run.
#[test]
fn a_regressions_file_that_links_to_nothing_fails_the_test_naming_the_link() {
    let dir = temp("regressions-dangling");
    let file = regressions_under(&dir);
    std::fs::create_dir_all(file.parent().expect("a parent")).expect("the folders");
    let target = dir.join("shared/moved.seeds");
    symlink(&target, &file).expect("the link");
    let (passed, out) = run_child(&dir, None);
    assert!(
        !passed,
        "the recorded seeds were skipped without a word:\n{out}"
    );
    assert!(
        out.contains(&format!("regressions file {}: ", file.display())),
        "{out}"
    );
    assert!(
        out.contains(&format!("symbolic link to {}", target.display())),
        "{out}"
    );
    assert!(out.contains("does not exist"), "{out}");
}

// ---------------------------------------------------------------------
// Spec files of the other kind (src/flow/spec_file.rs).

/// A conversation spec where a flow is wanted, or a flow spec where a
/// conversation is wanted, is refused naming the file, the line and column
/// of its `kind`, and both kinds.
#[test]
fn a_spec_of_one_kind_where_the_other_is_wanted_is_refused_naming_the_file_and_both_kinds() {
    let booking = repo().join("sim/booking/booking.spec.json");
    let payment = repo().join("sim/payment/payment.spec.json");
    let text = |path: &Path| std::fs::read_to_string(path).expect("a spec of sim/");
    // Each is a good spec of its own kind.
    assert!(CompiledConversation::read(&booking).is_ok());
    assert!(FlowSpec::from_json(&text(&payment), "payment.spec.json").is_ok());

    let err = FlowSpec::from_json(&text(&booking), "booking.spec.json").expect_err("a flow");
    assert_eq!(
        err.to_string(),
        "booking.spec.json:3:11: at kind: this is a conversation spec, and a flow spec was expected"
    );
    assert_eq!(err.file, "booking.spec.json");
    assert_eq!(err.position, Some((3, 11)));
    let err = CompiledConversation::from_json(&text(&payment), "payment.spec.json")
        .expect_err("a conversation");
    assert_eq!(
        err.to_string(),
        "payment.spec.json:3:11: at kind: this is a flow spec, and a conversation spec was expected"
    );
    let err = CompiledConversation::read(&payment).expect_err("a conversation");
    assert_eq!(
        err.to_string(),
        format!(
            "{}:3:11: at kind: this is a flow spec, and a conversation spec was expected",
            payment.display()
        )
    );
}

// ---------------------------------------------------------------------
// Headers of versioned JSONL files (src/jsonl/header.rs).

/// A tape or journal header that gives a key twice is refused, naming the
/// file, line 1, the key and the column where its second copy starts.
#[test]
fn a_header_that_gives_a_key_twice_is_refused_naming_the_line_and_the_key() {
    let dir = temp("header-twice");
    let tape = dir.join("t.jsonl");
    std::fs::write(
        &tape,
        "{\"v\":1,\"kind\":\"tape\",\"v\":1}\n{\"kind\":\"llm\",\"input\":{},\"output\":1}\n",
    )
    .expect("the tape written");
    match FileTape::open(&tape) {
        Err(TapeError::BadLine {
            path,
            line,
            message,
        }) => {
            assert_eq!((path, line), (tape.display().to_string(), 1));
            assert!(
                message.starts_with("not a tape header: duplicate key `v` at column 22"),
                "{message}"
            );
        }
        Err(other) => panic!("{other}"),
        Ok(_) => panic!("the tape opened"),
    }
    let journal = "{\"v\":1,\"kind\":\"journal\",\"kind\":\"journal\"}\n\
                   {\"seq\":1,\"key\":\"a\",\"value\":1,\"timestamp\":5}\n";
    let file = dir.join("j.jsonl");
    std::fs::write(&file, journal).expect("the journal written");
    let said = format!(
        "{}:1: not a journal header: duplicate key `kind` at column 25",
        file.display()
    );
    let err = livesim::state::FileJournalSink::read(&file)
        .expect_err("a journal")
        .to_string();
    assert!(err.starts_with(&said), "{err}");
    // The import refuses it as the reader does.
    let payment = Agent::load(repo().join("sim/payment")).expect("the payment agent");
    let err = import_journal("j.jsonl", journal.as_bytes(), "s", &payment).expect_err("a header");
    assert!(
        err.starts_with("j.jsonl:1: not a journal header: duplicate key `kind` at column 25"),
        "{err}"
    );
}

// ---------------------------------------------------------------------
// Scenario corpora and scenario files (src/simulation/).

/// A copy of the payment spec in a fresh folder named for `what`, with a
/// scenario file `payment.wrong.scenario.json` holding `text`: the folder
/// and the scenario's path.
fn scenario_folder(what: &str, text: &str) -> (Scratch, PathBuf) {
    let dir = temp(what);
    let corpus = dir.join("c");
    std::fs::create_dir_all(&corpus).expect("the corpus folder");
    std::fs::copy(
        repo().join("sim/payment/payment.spec.json"),
        corpus.join("payment.spec.json"),
    )
    .expect("the spec copied");
    let scenario = corpus.join("payment.wrong.scenario.json");
    std::fs::write(&scenario, text).expect("the scenario written");
    (dir, scenario)
}

/// Asserts the scenario `text` is refused with `said` (after the file's
/// path) by `Scenario::read` and by `livesim flow ci`, which reports it
/// as an ERROR and exits 2.
fn scenario_refused(what: &str, text: &str, said: &str) {
    let (dir, scenario) = scenario_folder(what, text);
    let expected = format!("{}{said}", scenario.display());
    let err = Scenario::read(&scenario).expect_err("a scenario");
    assert_eq!(err.to_string(), expected);
    let (code, out, err) = livesim_in(&dir, &["flow", "ci", "c"]);
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(
        out.contains(&format!(
            "ERROR payment.wrong.scenario.json against payment.spec.json: c/payment.wrong.scenario.json{said}"
        )),
        "{out}{err}"
    );
    assert!(!out.contains("PASS"), "{out}");
    assert!(!format!("{out}{err}").contains("panicked"), "{out}{err}");
}

/// A corpus named by a file instead of its folder is refused, naming the
/// file and saying to give the folder.
#[test]
fn a_corpus_given_as_a_file_is_refused_naming_it() {
    let (dir, scenario) = scenario_folder("corpus-file", r#"{"name": "s", "steps": []}"#);
    let said = "not a folder; give the folder that holds the spec and scenario files";
    let err = Corpus::discover(&scenario).expect_err("a folder");
    assert_eq!(err.path, scenario.display().to_string());
    assert_eq!(err.problem, said);
    refused(
        &dir,
        &["flow", "ci", arg(&scenario)],
        &[&format!("{}: {said}", scenario.display())],
    );
    // Its folder is a corpus.
    let corpus = Corpus::discover(dir.join("c")).expect("the folder is a corpus");
    assert_eq!(corpus.scenarios, [scenario]);
}

/// A scenario file whose top level is a list, not an object, is refused
/// with its file, line and column.
#[test]
fn a_scenario_that_is_not_an_object_is_refused_with_its_file() {
    scenario_refused(
        "scenario-list",
        "\n  [{\"name\": \"s\", \"steps\": []}]\n",
        ":2:3: expected a scenario: {\"name\": \"...\", \"steps\": [...]}",
    );
}

/// A scenario whose `name` is a number is refused at the line of the name.
#[test]
fn a_scenario_whose_name_is_not_a_string_is_refused_with_its_line() {
    scenario_refused(
        "scenario-name-number",
        "{\n  \"name\": 5,\n  \"steps\": []\n}\n",
        ":2:11: at name: expected a string",
    );
}

/// A scenario without a `name` is refused with its file, saying the name
/// is missing.
#[test]
fn a_scenario_without_a_name_is_refused_with_its_file() {
    scenario_refused(
        "scenario-no-name",
        "{\"steps\": [\"turn\"]}\n",
        ":1:1: missing field `name`; expected a scenario: {\"name\": \"...\", \"steps\": [...]}",
    );
}

/// A scenario whose `steps` is an object, not a list, is refused at the
/// line of the steps.
#[test]
fn a_scenario_whose_steps_are_not_a_list_is_refused_with_its_line() {
    scenario_refused(
        "scenario-steps-object",
        "{\"name\": \"s\",\n \"steps\": {\"turn\": 1}}\n",
        ":2:11: at steps: expected `steps`: a list of steps",
    );
}

// ---------------------------------------------------------------------
// Agent folders (src/soak/agent/).

/// A folder none of whose subfolders holds an `agent.json` is refused by
/// `Agent::load_all`, naming the folder.
#[test]
fn a_folder_holding_no_agent_is_refused_naming_it() {
    let dir = temp("no-agents");
    let agents = dir.join("agents");
    std::fs::create_dir_all(agents.join("notes")).expect("a subfolder");
    std::fs::write(agents.join("agent.json.bak"), "{}").expect("a stray file");
    let err = Agent::load_all(&agents).expect_err("no agents");
    assert_eq!(
        err.to_string(),
        format!(
            "{}: no agents here: no subfolder holds an agent.json",
            agents.display()
        )
    );
    // With an agent in it, it loads.
    copy_files(&repo().join("sim/weather"), &agents.join("weather"));
    let loaded = Agent::load_all(&agents).expect("one agent");
    assert_eq!(loaded.len(), 1);
}

/// An agent folder named `name` in `dir` whose `agent.json` is a link to
/// `target`: the folder and its agent file.
fn linked_agent(dir: &Path, name: &str, target: &str) -> (PathBuf, PathBuf) {
    let agent = dir.join("agents").join(name);
    std::fs::create_dir_all(&agent).expect("the agent folder");
    let file = agent.join("agent.json");
    symlink(target, &file).expect("the link");
    (agent, file)
}

/// The fix every link message ends with.
const LINK_FIX: &str = "point the link at the agent file or put the file here";

/// An `agent.json` that is a link to a folder (the agent's own, say) is
/// refused naming the link, its target and what is there.
#[test]
fn an_agent_file_that_links_to_a_folder_is_refused_naming_the_link_and_its_target() {
    let dir = temp("agent-link-folder");
    let real = dir.join("real");
    copy_files(&repo().join("sim/weather"), &real);
    let (agent, file) = linked_agent(&dir, "linked", arg(&real));
    let said = format!(
        "{}: it is a symbolic link to {}, which is a folder, not a file; {LINK_FIX}",
        file.display(),
        real.display()
    );
    assert_eq!(
        Agent::load(&agent).expect_err("no agent file").to_string(),
        said
    );
    // Found among the agents of its folder, it is not passed over.
    let err = Agent::load_all(dir.join("agents")).expect_err("a broken agent");
    assert_eq!(err.to_string(), said);
    refused(&dir, &["sim", "run", arg(&agent), "--seed", "0"], &[&said]);
}

/// An `agent.json` that is a link to nothing is refused naming the link
/// and where it points.
#[test]
fn an_agent_file_that_links_to_nothing_is_refused_naming_the_link_and_its_target() {
    let dir = temp("agent-link-nowhere");
    let (agent, file) = linked_agent(&dir, "dangling", "moved-away.json");
    let said = format!(
        "{}: it is a symbolic link to moved-away.json, which does not exist; {LINK_FIX}",
        file.display()
    );
    assert_eq!(
        Agent::load(&agent).expect_err("no agent file").to_string(),
        said
    );
    let err = Agent::load_all(dir.join("agents")).expect_err("a broken agent");
    assert_eq!(err.to_string(), said);
}

/// An `agent.json` in a loop of links is refused naming the link, where
/// it points and that it cannot be followed.
#[test]
fn an_agent_file_link_that_cannot_be_followed_is_refused_naming_it() {
    let dir = temp("agent-link-loop");
    let (agent, file) = linked_agent(&dir, "looped", "other.json");
    symlink("agent.json", agent.join("other.json")).expect("the link back");
    let err = Agent::load(&agent).expect_err("no agent file").to_string();
    let start = format!(
        "{}: it is a symbolic link to other.json that cannot be followed (",
        file.display()
    );
    assert!(err.starts_with(&start), "{err}");
    assert!(err.ends_with(&format!("); {LINK_FIX}")), "{err}");
    let err = Agent::load_all(dir.join("agents"))
        .expect_err("a broken agent")
        .to_string();
    assert!(err.starts_with(&start), "{err}");
}

/// An extractor tape whose last line was torn mid-write is refused when
/// the agent is read, naming the tape and the torn line, though a plain
/// tape reader replays the lines before it.
#[test]
fn an_extractor_tape_whose_last_line_is_torn_is_refused_naming_the_file_and_line() {
    let dir = temp("torn-extractor-tape");
    let agent = dir.join("support");
    copy_files(&repo().join("sim/support"), &agent);
    let tape = agent.join("support.tape.jsonl");
    let mut text = std::fs::read_to_string(&tape).expect("the support tape");
    assert!(text.ends_with('\n'), "whole lines");
    let lines = text.lines().count();
    text.push_str("{\"kind\": \"llm\", \"input\": {\"system_instr");
    std::fs::write(&tape, &text).expect("the torn tape");
    let torn = lines + 1;
    let start = format!("{}: line {torn} is torn (", tape.display());
    let err = Agent::load(&agent).expect_err("a torn tape").to_string();
    assert!(err.starts_with(&start), "{err}");
    assert!(err.ends_with("): record the tape again"), "{err}");
    refused(
        &dir,
        &["sim", "run", arg(&agent), "--seed", "0"],
        &[&start, "record the tape again"],
    );
    // A plain tape keeps the whole lines and names the torn one.
    let opened = FileTape::open(&tape).expect("a tape with a torn end");
    assert_eq!(opened.entries().len(), lines);
    assert_eq!(opened.torn_line().map(|t| t.line), Some(torn as u64));
}

// ---------------------------------------------------------------------
// `sim import` (src/soak/keep/import_lines.rs).

const BOM: &str = "\u{feff}";
const NAMED_BOM: &str = "the file starts with a UTF-8 byte-order mark (bytes EF BB BF), which \
                         JSON does not allow; save it as UTF-8 without a BOM";

/// The recorded session of Google's Python SDK.
fn recorded() -> String {
    std::fs::read_to_string(repo().join("tests/fixtures/import/weather-python-sdk.jsonl"))
        .expect("the recorded session")
}

/// A wire log or a journal that starts with a byte-order mark is refused
/// by the import, naming the file, its first line and the mark.
#[test]
fn a_recording_that_starts_with_a_byte_order_mark_is_refused_by_import_naming_line_1() {
    let said = format!("prod.jsonl:1: {NAMED_BOM}");
    let log = format!("{BOM}{}", recorded());
    let err = import_wire_log("prod.jsonl", log.as_bytes(), "w").expect_err("a BOM");
    assert_eq!(err, said);
    let journal = format!(
        "{BOM}{{\"v\":1,\"kind\":\"journal\"}}\n\
         {{\"seq\":1,\"key\":\"flow:tool_call\",\"value\":{{\"tool\":\"verify_identity\",\"id\":\"call-1\"}},\"timestamp\":1000}}\n"
    );
    let payment = Agent::load(repo().join("sim/payment")).expect("the payment agent");
    let err = import_journal("j.jsonl", journal.as_bytes(), "s", &payment).expect_err("a BOM");
    assert_eq!(err, format!("j.jsonl:1: {NAMED_BOM}"));
    // And the CLI, for either.
    let dir = temp("import-bom");
    for (name, text) in [("prod.jsonl", &log), ("journal.jsonl", &journal)] {
        let file = dir.join(name);
        std::fs::write(&file, text).expect("the recording written");
        refused(
            &repo(),
            &[
                "sim",
                "import",
                arg(&file),
                "--agent",
                "payment",
                "--no-save",
            ],
            &[&format!("{}:1: {NAMED_BOM}", file.display())],
        );
    }
    // Without the mark, the log imports.
    assert!(import_wire_log("prod.jsonl", recorded().as_bytes(), "w").is_ok());
}

// ---------------------------------------------------------------------
// Tape entries that say neither what a call returned nor how it failed
// (src/tape/resolver.rs, src/tape/taped_llm.rs). A tape file holding one
// is refused when it is opened, and one is never recorded into a file
// (tests/strict_inputs/tapes.rs): only a tape that is not a file, such as
// a `MemoryTape` of entries made elsewhere, can hand one to a replay.

/// An entry with neither an output nor an error.
fn empty_entry(kind: &str, input: Value) -> TapeEntry {
    TapeEntry {
        kind: kind.to_string(),
        input,
        output: None,
        error: None,
    }
}

/// A resolver replaying an entry that holds no output fails the call,
/// naming the resolver, rather than answering `null`.
#[test]
fn a_resolver_entry_without_an_output_fails_the_call_naming_the_resolver() {
    let args = json!({"account_id": "a1"});
    let tape = Arc::new(MemoryTape::from_entries([empty_entry(
        "resolver:balance",
        args.clone(),
    )]));
    let resolve = taped_resolver(tape, TapeMode::Replay, "balance", |_: Value| async {
        Err::<Value, String>("the real fetch is never called in replay".to_string())
    });
    let answer = futures::executor::block_on(resolve(args.clone()));
    assert_eq!(
        answer,
        Err("resolver:balance: a tape entry has no output".to_string())
    );
    // The same entry in a file is refused where the file is read.
    let dir = temp("resolver-no-output");
    let file = dir.join("t.jsonl");
    std::fs::write(
        &file,
        format!(
            "{{\"v\":1,\"kind\":\"tape\"}}\n{}\n",
            json!({"kind": "resolver:balance", "input": args})
        ),
    )
    .expect("the tape written");
    match FileTape::open(&file) {
        Err(TapeError::BadLine { line, message, .. }) => {
            assert_eq!(line, 2);
            assert!(message.contains("neither an `output`"), "{message}");
        }
        Err(other) => panic!("{other}"),
        Ok(_) => panic!("the tape opened"),
    }
}

/// A model replaying an entry with neither an output nor an error fails
/// the call with a configuration error saying so and naming the request.
#[test]
fn a_model_entry_with_neither_output_nor_error_fails_the_call() {
    let request = LlmRequest::from_text("Capital of France?");
    let input = serde_json::to_value(&request).expect("a request is JSON");
    let tape = Arc::new(MemoryTape::from_entries([empty_entry(LLM_CALL, input)]));
    let model = TapedLlm::replaying("gemini-2.5-flash", tape);
    let answer = futures::executor::block_on(model.generate(request));
    match answer {
        Err(LlmError::Config(message)) => {
            assert!(
                message.starts_with(
                    "the tape's entry for this request has neither an output nor an error: "
                ),
                "{message}"
            );
            assert!(message.contains("Capital of France?"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

// ---------------------------------------------------------------------
// Wire logs (src/transport/wire_log.rs). `check_header`'s own "this is a
// {kind} file, not a wire log" is said first by the import's line reader,
// the only caller, which compares the same `kind` before calling it.

/// The recorded session with line `at` (1-based) replaced by `line`, or
/// with `line` put before it when `insert`.
fn edited(at: usize, line: &str, insert: bool) -> String {
    let mut lines: Vec<String> = recorded().lines().map(str::to_string).collect();
    if insert {
        lines.insert(at - 1, line.to_string());
    } else {
        lines[at - 1] = line.to_string();
    }
    lines.iter().map(|l| format!("{l}\n")).collect()
}

/// Asserts the strict reader refuses `text` at `line` with `problem`, and
/// the import keeps the other frames, naming that line as damaged.
fn damaged_frame(what: &str, text: &str, line: usize, problem: &str) {
    let dir = temp(what);
    let log = dir.join("prod.jsonl");
    std::fs::write(&log, text).expect("the log written");
    let err = WireLog::read(&log).expect_err("a damaged log").to_string();
    assert_eq!(
        err,
        format!("{}:{line}: a damaged frame: {problem}", log.display())
    );
    let whole = import_wire_log("prod.jsonl", recorded().as_bytes(), "w").expect("the log");
    let imported = import_wire_log("prod.jsonl", text.as_bytes(), "w").expect("the rest");
    assert_eq!(
        imported.damaged,
        [format!(
            "prod.jsonl:{line}: a damaged wire log line: {problem}"
        )]
    );
    assert_eq!(imported.frames, whole.frames - 1);
}

/// A text or binary frame with no payload is refused by the reader and
/// named as damaged by the import, with its line.
#[test]
fn a_frame_without_its_payload_is_refused_naming_the_line() {
    for (line_type, at) in [("text", 3), ("binary", 5)] {
        damaged_frame(
            "frame-no-payload",
            &edited(
                at,
                &format!(r#"{{"dir":"in","t_ms":17,"type":"{line_type}"}}"#),
                false,
            ),
            at,
            &format!(
                "a {line_type} frame without its payload: one of `json`, `raw` and \
                 `raw_base64` records it"
            ),
        );
    }
}

/// A close or error line that also carries a payload (or the other's
/// key) is refused by the reader and named as damaged by the import.
#[test]
fn a_close_or_error_line_that_carries_a_payload_is_refused_naming_the_line() {
    for (line, problem) in [
        (
            r#"{"dir":"out","t_ms":66,"type":"close","close":{"code":1000},"json":{"bye":1}}"#,
            "`json` on a close line, which records no payload",
        ),
        (
            r#"{"dir":"out","t_ms":66,"type":"close","close":{"code":1000},"error":"reset"}"#,
            "`error` on a close line, which records no payload",
        ),
        (
            r#"{"dir":"in","t_ms":66,"type":"error","error":"reset","raw":"x","close":{"code":1000}}"#,
            "`raw` and `close` on an error line, which records no payload",
        ),
    ] {
        damaged_frame("close-payload", &edited(9, line, false), 9, problem);
    }
}

/// A second header line in a wire log is refused by the reader, naming
/// the file and its line, and skipped by the import with its line.
#[test]
fn a_second_header_line_is_refused_naming_its_line() {
    let dir = temp("second-header");
    let text = edited(4, r#"{"v":1,"kind":"wire_log","started_at_ms":5}"#, true);
    let log = dir.join("prod.jsonl");
    std::fs::write(&log, &text).expect("the log written");
    let err = WireLog::read(&log).expect_err("two headers");
    assert_eq!(
        err,
        WireLogError::ExtraHeader {
            file: log.display().to_string(),
            line: 4
        }
    );
    assert_eq!(
        err.to_string(),
        format!("{}:4: a second header line", log.display())
    );
    let imported = import_wire_log("prod.jsonl", text.as_bytes(), "w").expect("the frames");
    assert_eq!(
        imported.damaged,
        ["prod.jsonl:4: a second header line, skipped"]
    );
}

/// A tape or a journal given to the wire log import is refused at its
/// header, naming the file, the line and what the file is.
#[test]
fn a_file_of_another_kind_is_refused_by_the_wire_log_import_naming_it() {
    let dir = temp("import-other-kind");
    let tape = "{\"v\":1,\"kind\":\"tape\"}\n{\"kind\":\"llm\",\"input\":{},\"output\":{}}\n";
    let journal = "{\"v\":1,\"kind\":\"journal\"}\n\
                   {\"seq\":1,\"key\":\"a\",\"value\":1,\"timestamp\":5}\n";
    for (kind, text) in [("tape", tape), ("journal", journal)] {
        let err = import_wire_log("prod.jsonl", text.as_bytes(), "w").expect_err("a wire log");
        assert_eq!(
            err,
            format!("prod.jsonl:1: this is a {kind} file, not a wire log")
        );
    }
    // The CLI takes a journal for one (it imports journals too), and
    // refuses a tape the same way.
    let file = dir.join("calls.tape.jsonl");
    std::fs::write(&file, tape).expect("the tape written");
    refused(
        &repo(),
        &[
            "sim",
            "import",
            arg(&file),
            "--agent",
            "weather",
            "--no-save",
        ],
        &[&format!(
            "{}:1: this is a tape file, not a wire log",
            file.display()
        )],
    );
}
