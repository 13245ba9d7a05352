//! The documents' examples are real: every fenced block tagged with a file
//! format (```` ```json script ````, ```` ```jsonl journal ````, …) in the
//! README, `sim/README.md`, `seeds/README.md` and `docs/` is loaded by the
//! reader livesim uses for that format, so a document cannot drift from
//! the code without this test failing.
//!
//! A block's info string is its language, then its format, then any of:
//! `broken` (the reader must refuse it), `torn` (the reader must keep its
//! good records and report a damaged end), `file=NAME` (the name errors
//! give it). A `broken` or `torn` block is followed by a ```` ```text error ````
//! block: what the reader says, which must be part of its message.
//!
//! The JUnit examples are compared with what livesim writes for the same
//! input, and the invariants document must name every invariant and goal.

use std::path::{Path, PathBuf};

use livesim::Seed;
use livesim::flow::Spec;
use livesim::simulation::{Corpus, JournalFile, Scenario};
use livesim::soak::{Agent, Checks, CorpusEntry, Shard, Soak, Triage, soak_all};
use livesim::state::FileJournalSink;
use livesim::tape::FileTape;
use livesim::testing::ScriptedServer;
use livesim::transport::wire_log::WireLog;

// Scratch folders removed when each test ends, shared with the other test
// binaries rather than copied.
#[path = "common/scratch.rs"]
mod scratch;

use scratch::Scratch;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// One fenced block of a document.
#[derive(Debug)]
struct Block {
    file: String,
    line: usize,
    lang: String,
    tags: Vec<String>,
    body: String,
}

impl Block {
    fn format(&self) -> Option<&str> {
        self.tags
            .iter()
            .map(String::as_str)
            .find(|t| *t != "broken" && *t != "torn" && !t.starts_with("file="))
    }

    fn has(&self, tag: &str) -> bool {
        self.tags.iter().any(|t| t == tag)
    }

    fn origin(&self, default: &str) -> String {
        self.tags
            .iter()
            .find_map(|t| t.strip_prefix("file="))
            .unwrap_or(default)
            .to_string()
    }

    fn at(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }
}

/// Every fenced block of the markdown file at `path` (relative to the
/// crate), with the fence's indentation taken off its lines.
fn blocks(path: &str) -> Vec<Block> {
    let text = std::fs::read_to_string(Path::new(ROOT).join(path))
        .unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut out = Vec::new();
    // The block being read, its fence's indentation, and its lines.
    let mut open: Option<(Block, usize, Vec<String>)> = None;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        match open.take() {
            None => {
                if let Some(info) = trimmed.strip_prefix("```") {
                    let mut words = info.split_whitespace().map(str::to_string);
                    let block = Block {
                        file: path.to_string(),
                        line: i + 1,
                        lang: words.next().unwrap_or_default(),
                        tags: words.collect(),
                        body: String::new(),
                    };
                    open = Some((block, indent, Vec::new()));
                }
            }
            Some((mut block, fence, mut body)) => {
                if trimmed == "```" {
                    block.body = body.join("\n") + "\n";
                    out.push(block);
                } else {
                    let cut = line
                        .char_indices()
                        .take_while(|(at, c)| *at < fence && *c == ' ')
                        .count();
                    body.push(line[cut..].to_string());
                    open = Some((block, fence, body));
                }
            }
        }
    }
    assert!(open.is_none(), "{path}: a fenced block is never closed");
    out
}

/// The documents whose examples are checked.
fn documents() -> Vec<String> {
    let mut files = vec![
        "README.md".to_string(),
        "sim/README.md".to_string(),
        "seeds/README.md".to_string(),
    ];
    let mut stack = vec![PathBuf::from(ROOT).join("docs")];
    let mut found = Vec::new();
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                let relative = path.strip_prefix(ROOT).unwrap();
                found.push(relative.display().to_string().replace('\\', "/"));
            }
        }
    }
    found.sort();
    files.extend(found);
    files
}

/// A scratch folder for files a reader wants on disk, removed when
/// dropped.
fn scratch(name: &str) -> Scratch {
    scratch::scratch(&format!("docs-{name}"))
}

/// A folder holding every file the agents of `sim/` name (specs, tapes),
/// for agent file examples that name them; removed when dropped.
fn agent_folder(name: &str) -> Scratch {
    let dir = scratch(name).inside("agent");
    std::fs::create_dir_all(&dir).unwrap();
    for agent in std::fs::read_dir(Path::new(ROOT).join("sim")).unwrap() {
        let agent = agent.unwrap().path();
        if !agent.is_dir() {
            continue;
        }
        for file in std::fs::read_dir(&agent).unwrap() {
            let file = file.unwrap().path();
            let name = file.file_name().unwrap().to_string_lossy().into_owned();
            if name.ends_with(".spec.json") || name.ends_with(".tape.jsonl") {
                std::fs::copy(&file, dir.join(&name)).unwrap();
            }
        }
    }
    dir
}

/// Reads `block` as its format says: `Ok(None)` when it reads clean,
/// `Ok(Some(damage))` when it reads with a damaged end, `Err(message)`
/// when the reader refuses it.
fn load(block: &Block, index: usize) -> Result<Option<String>, String> {
    // A torn example ends where the crash cut it: no final newline.
    let text = if block.has("torn") {
        block.body.trim_end_matches('\n')
    } else {
        block.body.as_str()
    };
    match block.format().unwrap_or_default() {
        "script" => ScriptedServer::from_json_str(text, &block.origin("script.json"))
            .map(|_| None)
            .map_err(|e| e.to_string()),
        "corpus" => {
            let origin = block.origin("seeds/payment/0xf.json");
            ScriptedServer::from_json_str(text, &origin).map_err(|e| e.to_string())?;
            CorpusEntry::from_json_str(text, &origin)
                .map(|_| None)
                .map_err(|e| e.to_string())
        }
        "agent" => {
            let dir = agent_folder(&format!("agent-{index}"));
            let origin = block.origin("agent.json");
            Agent::from_json("payment", &dir, text, &origin)
                .map(|_| None)
                .map_err(|e| e.to_string())
        }
        "spec" => Spec::from_json(text, &block.origin("payment.spec.json"))
            .map(|_| None)
            .map_err(|e| e.to_string()),
        "scenario" => Scenario::from_json(text, &block.origin("booking.incident.scenario.json"))
            .map(|_| None)
            .map_err(|e| e.to_string()),
        "journal" => {
            let origin = block.origin("user-123.journal.jsonl");
            let journal =
                JournalFile::parse(&origin, text.as_bytes()).map_err(|e| e.to_string())?;
            // The state's own reader agrees.
            let path = scratch(&format!("journal-{index}")).inside(&origin);
            std::fs::write(&path, text).unwrap();
            let parsed = FileJournalSink::read(&path).map_err(|e| e.to_string())?;
            assert_eq!(
                parsed.records.len(),
                journal.entries.len(),
                "{}",
                block.at()
            );
            Ok(journal.torn.map(|t| t.to_string()))
        }
        "tape" => {
            // Opened from its folder, so messages name the file as the
            // document does.
            let dir = scratch(&format!("tape-{index}"));
            let path = dir.join(block.origin("geo.tape.jsonl"));
            std::fs::write(&path, text).unwrap();
            let local = |message: String| message.replace(&format!("{}/", dir.display()), "");
            let tape = FileTape::open(&path).map_err(|e| local(e.to_string()))?;
            let torn = tape.torn_line().map(|t| local(t.to_string()));
            Ok(torn)
        }
        "wire-log" => WireLog::parse(&block.origin("session.wire.jsonl"), text.as_bytes())
            .map(|log| log.torn.map(|t| t.to_string()))
            .map_err(|e| e.to_string()),
        "regressions" => regressions(text, &block.origin("replay.seeds")).map(|_| None),
        "triage" => Triage::from_json_str(text, &block.origin("triage.json"))
            .map(|_| None)
            .map_err(|e| e.to_string()),
        other => Err(format!("no reader for the format `{other}`")),
    }
}

/// Reads a regressions file as the runner does: `<test path> <seed>` per
/// line, `#` starting a comment.
fn regressions(text: &str, origin: &str) -> Result<Vec<(String, Seed)>, String> {
    let mut seeds = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let content = line.split('#').next().unwrap_or("").trim();
        if content.is_empty() {
            continue;
        }
        let words: Vec<&str> = content.split_whitespace().collect();
        let [test, seed] = words.as_slice() else {
            return Err(format!("{origin}:{}: not `<test path> <seed>`", i + 1));
        };
        let seed: Seed = seed
            .parse()
            .map_err(|e| format!("{origin}:{}: {e}", i + 1))?;
        seeds.push((test.to_string(), seed));
    }
    Ok(seeds)
}

const READ: [&str; 10] = [
    "script",
    "corpus",
    "agent",
    "spec",
    "scenario",
    "journal",
    "tape",
    "wire-log",
    "regressions",
    "triage",
];

#[test]
fn every_example_of_a_format_reads_as_the_document_says() {
    let mut problems = Vec::new();
    let mut checked = 0;
    for file in documents() {
        let blocks = blocks(&file);
        for (index, block) in blocks.iter().enumerate() {
            let Some(format) = block.format() else {
                continue;
            };
            if !READ.contains(&format) {
                continue;
            }
            checked += 1;
            let said = blocks
                .get(index + 1)
                .filter(|next| next.lang == "text" && next.has("error"))
                .map(|next| next.body.trim().to_string());
            let outcome = load(block, checked);
            // `--nocapture` shows what each damaged example gives.
            if let Err(m) | Ok(Some(m)) = &outcome {
                eprintln!("{}: {m}", block.at());
            }
            let damaged = block.has("broken") || block.has("torn");
            match (outcome, block.has("broken"), block.has("torn")) {
                (Ok(None), false, false) => {}
                (Err(message), true, _) | (Ok(Some(message)), _, true) => match &said {
                    Some(said) if message.contains(said.as_str()) => {}
                    Some(said) => problems.push(format!(
                        "{}: the document says the reader reports\n    {said}\n  but it reports\n    {message}",
                        block.at()
                    )),
                    None => problems.push(format!(
                        "{}: follow it with a ```text error block; the reader reports\n    {message}",
                        block.at()
                    )),
                },
                (outcome, _, _) => problems.push(format!(
                    "{}: a {format} example{} gives {outcome:?}",
                    block.at(),
                    if damaged { " marked damaged" } else { "" }
                )),
            }
        }
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
    assert!(checked >= 20, "only {checked} examples found");
}

#[test]
fn every_json_example_in_the_documents_names_its_format() {
    let mut untagged = Vec::new();
    for file in documents() {
        for block in blocks(&file) {
            if (block.lang == "json" || block.lang == "jsonl") && block.format().is_none() {
                untagged.push(block.at());
            }
            if block.lang.is_empty() {
                untagged.push(format!("{} (no language)", block.at()));
            }
        }
    }
    assert!(untagged.is_empty(), "blocks without a format: {untagged:?}");
}

/// `text` with the attributes that change from run to run taken out.
fn steady(xml: &str) -> String {
    let mut out = String::new();
    let mut rest = xml.trim();
    while let Some(at) = ["time=\"", "timestamp=\""]
        .iter()
        .filter_map(|attr| rest.find(attr).map(|i| (i, attr.len())))
        .min()
    {
        let (at, len) = at;
        out.push_str(rest[..at].trim_end_matches(' '));
        let after = &rest[at + len..];
        let end = after.find('"').map_or(after.len(), |e| e + 1);
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

fn example(file: &str, format: &str) -> Block {
    blocks(file)
        .into_iter()
        .find(|b| b.format() == Some(format))
        .unwrap_or_else(|| panic!("{file} has no {format} example"))
}

#[test]
fn the_flow_ci_junit_example_is_what_flow_ci_writes() {
    let block = example("docs/formats/junit.md", "junit-flow-ci");
    let report = Corpus::discover(Path::new(ROOT).join("sim")).unwrap().run();
    let written = report.to_junit().unwrap();
    assert_eq!(
        steady(&block.body),
        steady(&written),
        "{}; livesim writes:\n{written}",
        block.at()
    );
}

#[test]
fn the_failing_flow_ci_junit_example_is_what_flow_ci_writes() {
    let block = example("docs/formats/junit.md", "junit-flow-ci-strict");
    let report = Corpus::discover(Path::new(ROOT).join("tests/fixtures/flow-ci/strict"))
        .unwrap()
        .run();
    let written = report.to_junit().unwrap();
    assert_eq!(
        steady(&block.body),
        steady(&written),
        "{}; livesim writes:\n{written}",
        block.at()
    );
}

#[test]
fn the_soak_junit_example_is_what_sim_soak_writes() {
    let block = example("docs/formats/junit.md", "junit-soak");
    let weather = Agent::load(Path::new(ROOT).join("sim/weather")).unwrap();
    let summary = soak_all(
        &[Soak::agent(&weather)],
        0..2,
        Shard::WHOLE,
        1,
        None,
        Checks::default(),
        &|_| {},
    );
    let written = summary.junit().to_string().unwrap();
    assert_eq!(
        steady(&block.body),
        steady(&written),
        "{}; livesim writes:\n{written}",
        block.at()
    );
}

#[test]
fn the_regressions_example_runs_first() {
    let block = example("docs/formats/regressions.md", "regressions");
    let recorded = regressions(&block.body, "replay.seeds").unwrap();
    assert!(!recorded.is_empty(), "{}", block.at());
    // The runner reads the same file: give this test the example's seeds.
    let name = livesim::test_id!().name;
    let text: String = recorded
        .iter()
        .map(|(_, seed)| format!("{name} {seed}  # from {}\n", block.at()))
        .collect();
    let file = scratch("regressions").inside("docs.seeds");
    std::fs::write(&file, format!("{}{text}", block.body)).unwrap();
    let ran = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = ran.clone();
    livesim::executor::Runner::new(livesim::test_id!())
        .regressions(&file)
        .seeds(2)
        .try_run(move |seed| {
            seen.lock().unwrap().push(seed);
            async {}
        })
        .unwrap();
    let ran = ran.lock().unwrap();
    if std::env::var_os("LIVESIM_SEED").is_none()
        && std::env::var("LIVESIM_REGRESSIONS").as_deref() != Ok("off")
    {
        assert_eq!(ran.first(), recorded.first().map(|(_, s)| s), "ran {ran:?}");
    }
}

#[test]
fn the_invariants_document_names_every_invariant_and_goal() {
    let doc = std::fs::read_to_string(Path::new(ROOT).join("docs/invariants.md")).unwrap();
    let payment = Agent::load(Path::new(ROOT).join("sim/payment")).unwrap();
    let run = Soak::agent(&payment).run_seed(Seed::new(0));
    let mut names: Vec<String> = run.verdicts.iter().map(|(name, _)| name.clone()).collect();
    names.extend(["determinism", "panic", "setup"].map(String::from));
    let mut missing: Vec<String> = names
        .into_iter()
        .filter(|name| {
            let agent_own = name.contains('(');
            !(doc.contains(&format!("### `{name}`")) || agent_own && doc.contains(name.as_str()))
        })
        .collect();
    // The built-in goals, as the source lists them.
    let source =
        std::fs::read_to_string(Path::new(ROOT).join("src/soak/check/sometimes.rs")).unwrap();
    for row in source.lines().filter_map(|l| l.strip_prefix("//! | `")) {
        let goal = row.split('`').next().unwrap_or_default();
        if !doc.contains(&format!("| `{goal}` |")) {
            missing.push(format!("goal {goal}"));
        }
    }
    assert!(missing.is_empty(), "docs/invariants.md lacks {missing:?}");
}

#[test]
fn every_document_with_rust_blocks_is_compiled_by_cargo_test_doc() {
    let lib = std::fs::read_to_string(Path::new(ROOT).join("src/lib.rs")).unwrap();
    let missing: Vec<String> = documents()
        .into_iter()
        .filter(|f| blocks(f).iter().any(|b| b.lang == "rust"))
        .filter(|f| !lib.contains(&format!("include_str!(\"../{f}\")")))
        .collect();
    assert!(
        missing.is_empty(),
        "src/lib.rs does not include these as doctests: {missing:?}"
    );
}

#[test]
fn the_docs_index_lists_every_document() {
    let index = std::fs::read_to_string(Path::new(ROOT).join("docs/README.md")).unwrap();
    let missing: Vec<String> = documents()
        .into_iter()
        .filter_map(|f| f.strip_prefix("docs/").map(str::to_string))
        .filter(|f| f != "README.md" && !index.contains(&format!("]({f})")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/README.md does not link {missing:?}"
    );
}

#[test]
fn nothing_points_outside_the_repository() {
    // Spelled in pieces, so this file does not match itself.
    let banned = [
        concat!("DESIGN", ".md"),
        concat!("AGGREGATION", ".md"),
        concat!("LIVE_", "PROTOCOL"),
        concat!("../", "shared"),
        concat!("seed ", "document"),
    ];
    let mut found = Vec::new();
    let mut stack: Vec<PathBuf> = [
        "README.md",
        "src",
        "sim",
        "docs",
        "examples",
        "tests",
        "macros",
    ]
    .iter()
    .map(|p| Path::new(ROOT).join(p))
    .collect();
    while let Some(path) = stack.pop() {
        if path.is_dir() {
            for entry in std::fs::read_dir(&path).unwrap() {
                stack.push(entry.unwrap().path());
            }
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        for word in banned {
            if text.contains(word) {
                found.push(format!("{}: {word}", path.display()));
            }
        }
    }
    assert!(found.is_empty(), "{found:?}");
}
