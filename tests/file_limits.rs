//! Files livesim reads and writes that are not what they should be: a
//! JSONL file (journal, tape, wire log) past its bounds or without end, a
//! JUnit report of text XML cannot hold, a corpus entry saved where a
//! symbolic link points out of the corpus, an agent whose name a corpus
//! cannot keep, and a corpus folder holding links that lead nowhere or
//! entries a level too deep. Each is an error naming the file and what is
//! wrong (exit status 2 from the CLI), never a hang, a panic or a file
//! quietly lost, made or skipped.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use livesim::jsonl::{MAX_JSONL_FILE, read_bytes_from, read_file};
use livesim::simulation::{CorpusReport, JournalFile, ScenarioOutcome, ScenarioResult};
use livesim::soak::{Agent, CorpusEntry, Soak, corpus_files};
use livesim::state::FileJournalSink;
use livesim::tape::FileTape;
use livesim::transport::wire_log::WireLog;

// Scratch folders removed when each test ends, shared with the other test
// binaries rather than copied.
#[path = "common/scratch.rs"]
mod scratch;

use scratch::{Scratch, scratch};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A fresh folder for one test, removed when dropped.
fn temp(name: &str) -> Scratch {
    scratch(&format!("limits-{name}"))
}

/// Runs `livesim` in `dir`: exit status, stdout, stderr.
fn livesim_in(dir: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_livesim"))
        .current_dir(dir)
        .args(args)
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .expect("the livesim binary runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Every JSONL reader's error for `path`, as it says it.
fn every_reader(path: &Path) -> Vec<(&'static str, String)> {
    vec![
        (
            "jsonl::read_file",
            read_file::<serde_json::Value>(path)
                .unwrap_err()
                .to_string(),
        ),
        (
            "JournalFile::read",
            JournalFile::read(path).unwrap_err().to_string(),
        ),
        (
            "FileJournalSink::read",
            FileJournalSink::read(path).unwrap_err().to_string(),
        ),
        (
            "FileJournalSink::append",
            FileJournalSink::append(path).unwrap_err().to_string(),
        ),
        (
            "WireLog::read",
            WireLog::read(path).unwrap_err().to_string(),
        ),
        (
            "FileTape::open",
            FileTape::open(path).unwrap_err().to_string(),
        ),
    ]
}

/// A file whose size is past the bound is refused before a byte of it is
/// read: the file is sparse, so only the size can refuse it in time.
#[test]
fn a_jsonl_file_past_the_bound_is_refused_unread() {
    let dir = temp("huge");
    let huge = dir.join("huge.jsonl");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(MAX_JSONL_FILE + 1)
        .unwrap();
    for (reader, error) in every_reader(&huge) {
        assert!(
            error.contains(&format!(
                "{}: it holds 1,073,741,825 bytes, past the 1 GiB livesim reads from one JSONL \
                 file (a journal, tape or wire log); is it the file you meant?",
                huge.display()
            )),
            "{reader}: {error}"
        );
    }
    // Appending would have cut or grown it: it is as it was.
    assert_eq!(std::fs::metadata(&huge).unwrap().len(), MAX_JSONL_FILE + 1);
}

/// A file that never ends (its size says nothing) is refused once a line
/// runs past the bound of one record, naming the line.
#[cfg(target_os = "linux")]
#[test]
fn a_file_without_end_is_refused_at_the_line_bound() {
    let dir = temp("endless");
    let zero = dir.join("z.jsonl");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    for (reader, error) in every_reader(&zero) {
        assert!(
            error.contains(&format!(
                "{}:1: the line holds more than 67,108,864 bytes, past the 64 MiB livesim reads \
                 as one record",
                zero.display()
            )) || error.contains(&format!(
                "{}, line 1: the line holds more than 67,108,864 bytes",
                zero.display()
            )),
            "{reader}: {error}"
        );
    }
}

/// A stream (stdin) is held to the same bounds.
#[test]
fn a_stream_without_end_is_refused_at_the_line_bound() {
    let endless = std::io::repeat(b'x');
    let error = read_bytes_from("<stdin>", endless).unwrap_err().to_string();
    assert!(
        error.starts_with("<stdin>:1: the line holds more than 67,108,864 bytes"),
        "{error}"
    );
    let records = livesim::jsonl::read_from::<u32>("<stdin>", std::io::repeat(b'\n').take(10));
    assert_eq!(records.unwrap().records, Vec::<u32>::new());
}

/// The commands that read a journal or a wire log stop at the bound and
/// say so, with the exit status of an input that cannot be used.
#[cfg(target_os = "linux")]
#[test]
fn the_cli_refuses_a_journal_without_end() {
    let dir = temp("cli-endless");
    let zero = dir.join("z.jsonl");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    let zero_arg = zero.display().to_string();
    let spec = repo().join("sim/payment/payment.spec.json");
    let agent = repo().join("sim/weather");
    let runs: [Vec<&str>; 3] = [
        vec!["session", "scenario", &zero_arg],
        vec![
            "sim",
            "import",
            "--agent",
            agent.to_str().unwrap(),
            &zero_arg,
            "--no-save",
        ],
        vec![
            "flow",
            "replay",
            spec.to_str().unwrap(),
            "--journal",
            &zero_arg,
        ],
    ];
    for args in runs {
        let (status, _, stderr) = livesim_in(&dir, &args);
        assert_eq!(status, Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "{zero_arg}:1: the line holds more than 67,108,864 bytes"
            )),
            "{args:?}: {stderr}"
        );
    }
}

/// Whether `c` is a character XML 1.0 allows.
fn xml_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}' | '\u{10000}'..)
}

/// Text XML cannot hold is written as visible escapes: the report parses,
/// holds only characters XML allows, and keeps every other character.
#[test]
fn junit_text_xml_forbids_is_escaped_not_lost() {
    let report = CorpusReport {
        root: PathBuf::from("sim"),
        specs: 1,
        specs_without_scenarios: vec![],
        results: vec![ScenarioResult {
            scenario: PathBuf::from("p/p.bad.scenario.json"),
            spec: PathBuf::from("p/p\u{1}.spec.json"),
            label: "bad\u{ffff}".into(),
            outcome: ScenarioOutcome::Error {
                problem: "expected x\u{0}\u{1b}\u{d7ff}\u{fffe} to be allowed".into(),
            },
        }],
    };
    let xml = report.to_junit().unwrap();
    let bad: Vec<char> = xml.chars().filter(|c| !xml_char(*c)).collect();
    assert!(bad.is_empty(), "{bad:?} in {xml}");
    assert!(
        xml.contains("x\\u{0}\\u{1b}\u{d7ff}\\u{fffe} to be allowed"),
        "{xml}"
    );
    let parsed = quick_junit::Report::deserialize_from_str(&xml).unwrap();
    let suite = &parsed.test_suites[0];
    assert_eq!(suite.name.as_str(), "p/p\\u{1}.spec.json");
    assert_eq!(suite.test_cases[0].name.as_str(), "bad\\u{ffff}");
}

/// `livesim flow ci --junit` on a scenario whose tool name holds U+FFFE.
#[test]
fn flow_ci_writes_junit_that_parses() {
    let dir = temp("junit");
    let corpus = dir.join("corpus");
    std::fs::create_dir_all(&corpus).unwrap();
    std::fs::copy(
        repo().join("sim/payment/payment.spec.json"),
        corpus.join("payment.spec.json"),
    )
    .unwrap();
    let scenario =
        serde_json::json!({"name": "n", "steps": [{"expect_allowed": "x\u{fffe}\u{1b}[31m tail"}]});
    std::fs::write(
        corpus.join("payment.bad.scenario.json"),
        scenario.to_string(),
    )
    .unwrap();
    let (status, _, stderr) = livesim_in(&dir, &["flow", "ci", "corpus", "--junit", "ci.xml"]);
    assert!(matches!(status, Some(1 | 2)), "{status:?}: {stderr}");
    let xml = std::fs::read_to_string(dir.join("ci.xml")).unwrap();
    assert!(xml.chars().all(xml_char), "{xml}");
    assert!(xml.contains("x\\u{fffe}\\u{1b}[31m tail"), "{xml}");
    quick_junit::Report::deserialize_from_str(&xml).unwrap();
}

fn payment_entry() -> CorpusEntry {
    CorpusEntry::load(repo().join("seeds/payment/0x5.json")).unwrap()
}

/// Saving replaces a symbolic link at the entry's path, never writes
/// through it: not to a file it would make outside the corpus, nor into
/// one it points to.
#[cfg(unix)]
#[test]
fn saving_never_writes_through_a_link() {
    let dir = temp("save-link");
    let corpus = dir.join("save");
    std::fs::create_dir_all(corpus.join("payment")).unwrap();
    let entry = payment_entry();
    let path = entry.path_in(&corpus);
    // To nowhere: the entry would be made outside the corpus.
    std::os::unix::fs::symlink("../../outside.json", &path).unwrap();
    assert_eq!(entry.save(&corpus).unwrap(), path);
    assert!(!dir.join("outside.json").exists());
    assert!(std::fs::symlink_metadata(&path).unwrap().is_file());
    assert_eq!(CorpusEntry::load(&path).unwrap().to_json(), entry.to_json());
    // To a file out of the corpus: left as it was.
    std::fs::write(dir.join("kept.txt"), "mine").unwrap();
    std::fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink(dir.join("kept.txt"), &path).unwrap();
    entry.save(&corpus).unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.join("kept.txt")).unwrap(),
        "mine"
    );
    assert_eq!(CorpusEntry::load(&path).unwrap().to_json(), entry.to_json());
    // No file written on the way is left beside the entry.
    let names: Vec<_> = std::fs::read_dir(corpus.join("payment"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["0x5.json"]);
}

/// An agent whose name a corpus cannot keep is refused as it is read,
/// before anything runs, with the rule `sim replay` reads entries by; and
/// an entry whose agent would put it outside the corpus is not saved.
#[test]
fn an_agent_name_the_corpus_cannot_keep_is_refused_up_front() {
    let dir = temp("names");
    for name in ["my agent", ".hidden"] {
        let agent = dir.join(name);
        std::fs::create_dir_all(&agent).unwrap();
        std::fs::copy(
            repo().join("sim/payment/agent.json"),
            agent.join("agent.json"),
        )
        .unwrap();
        let error = Agent::load(&agent).unwrap_err().to_string();
        assert!(
            error.contains(&format!(
                "the folder's name is the agent's name, and {name:?} cannot be an agent's name"
            )) && error.contains("letters, digits, `-`, `_` and `.` only, not starting with `.`"),
            "{error}"
        );
        let (status, _, stderr) = livesim_in(
            &dir,
            &[
                "sim",
                "soak",
                name,
                "--seeds",
                "1",
                "--shrink-runs",
                "0",
                "--save",
                "s2",
            ],
        );
        assert_eq!(status, Some(2), "{stderr}");
        assert!(stderr.contains("cannot be an agent's name"), "{stderr}");
        assert!(!dir.join("s2").exists());
    }
    let mut entry = payment_entry();
    entry.agent = "../escaped".into();
    let error = entry.save(dir.join("corpus")).unwrap_err().to_string();
    assert!(
        error.contains("\"../escaped\" cannot be an agent's name"),
        "{error}"
    );
    assert!(!dir.join("escaped").exists());
}

/// A soak named so its corpus folder would be elsewhere says so before
/// it runs.
#[test]
fn a_soak_whose_name_the_corpus_cannot_keep_says_so_before_running() {
    // `LIVESIM_REGRESSIONS=off` keeps nothing, so there is nothing to say.
    let off = std::env::var("LIVESIM_REGRESSIONS").is_ok_and(|v| matches!(v.trim(), "off" | "0"));
    if off {
        return;
    }
    let agent = Agent::load(repo().join("sim/payment")).unwrap();
    assert!(Soak::agent(&agent).keeping().is_ok());
    let renamed = Soak::new("my payment", livesim::prelude::Live::builder);
    let error = renamed.keeping().unwrap_err();
    assert!(
        error.contains("\"my payment\" cannot be an agent's name"),
        "{error}"
    );
    assert!(renamed.keep(false).keeping().unwrap().is_none());
}

/// A corpus folder's links that lead nowhere (or to themselves) are
/// listed, and reading them says what they are: not passed over.
#[cfg(unix)]
#[test]
fn links_that_lead_nowhere_are_unreadable_entries() {
    let dir = temp("links");
    let corpus = dir.join("c");
    let folder = corpus.join("payment");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::copy(
        repo().join("seeds/payment/0x5.json"),
        folder.join("0x5.json"),
    )
    .unwrap();
    std::os::unix::fs::symlink("/nonexistent", folder.join("0x6.json")).unwrap();
    std::os::unix::fs::symlink("0x7.json", folder.join("0x7.json")).unwrap();
    let files = corpus_files(&corpus).unwrap();
    assert_eq!(files.len(), 3, "{files:?}");
    let dangling = CorpusEntry::load(&files[1]).unwrap_err().to_string();
    assert!(
        dangling.starts_with(&format!(
            "{}: a symbolic link to /nonexistent, which cannot be read",
            files[1].display()
        )),
        "{dangling}"
    );
    let looping = CorpusEntry::load(&files[2]).unwrap_err().to_string();
    assert!(
        looping.starts_with(&format!(
            "{}: a symbolic link to 0x7.json, which cannot be read",
            files[2].display()
        )),
        "{looping}"
    );
    // The library's replay of the folder counts them too.
    let soak = Soak::agent(&Agent::load(repo().join("sim/payment")).unwrap());
    let replay = soak.try_replay_corpus(&corpus);
    assert_eq!(
        (replay.passed.len(), replay.unreadable.len()),
        (1, 2),
        "{replay}"
    );
    // And so does the CLI, with the status of an input that cannot be used.
    let (status, stdout, stderr) =
        livesim_in(&repo(), &["sim", "replay", corpus.to_str().unwrap()]);
    assert_eq!(status, Some(2), "{stdout}{stderr}");
    assert!(
        stdout.contains("replayed 1 passed, 0 failed, 2 unreadable"),
        "{stdout}"
    );
    assert!(
        stderr.contains("0x6.json: a symbolic link to /nonexistent"),
        "{stderr}"
    );
}

/// An entry a level below its agent's folder is where no soak saves one
/// and none replays: an error naming it and where entries go, as one
/// directly in the corpus folder is.
#[test]
fn an_entry_below_its_agents_folder_is_an_error() {
    let dir = temp("deep");
    let corpus = dir.join("c");
    std::fs::create_dir_all(corpus.join("payment")).unwrap();
    std::fs::create_dir_all(corpus.join("a/b")).unwrap();
    std::fs::copy(
        repo().join("seeds/payment/0x5.json"),
        corpus.join("payment/0x5.json"),
    )
    .unwrap();
    std::fs::copy(
        repo().join("seeds/payment/0x5.json"),
        corpus.join("a/b/0x8.json"),
    )
    .unwrap();
    let said = format!(
        "{}: a corpus entry belongs in its agent's folder itself, not in a folder inside it \
         ({}/<agent>/<seed>.json)",
        corpus.join("a/b/0x8.json").display(),
        corpus.display()
    );
    assert_eq!(corpus_files(&corpus).unwrap_err().to_string(), said);
    let (status, _, stderr) = livesim_in(&repo(), &["sim", "replay", corpus.to_str().unwrap()]);
    assert_eq!(status, Some(2), "{stderr}");
    assert!(stderr.contains(&said), "{stderr}");
    // In the agent's own folder, the library's replay names it as well.
    std::fs::create_dir_all(corpus.join("payment/old")).unwrap();
    std::fs::copy(
        repo().join("seeds/payment/0x5.json"),
        corpus.join("payment/old/0x9.json"),
    )
    .unwrap();
    let soak = Soak::agent(&Agent::load(repo().join("sim/payment")).unwrap());
    let replay = soak.try_replay_corpus(&corpus);
    assert_eq!(replay.passed.len(), 1, "{replay}");
    assert!(
        replay.unreadable.iter().any(|p| p
            .contains("payment/old/0x9.json: a corpus entry belongs in its agent's folder itself")),
        "{replay}"
    );
    // A hidden folder is the user's, passed over.
    std::fs::remove_dir_all(corpus.join("a")).unwrap();
    std::fs::rename(corpus.join("payment/old"), corpus.join("payment/.old")).unwrap();
    assert_eq!(corpus_files(&corpus).unwrap().len(), 1);
}
