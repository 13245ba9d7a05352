//! The seeds corpus: entries written and read back, read strictly (every
//! mistake with its file, line and column), loadable as plain scripts;
//! and every entry under `seeds/` replayed: each must pass today.

use std::path::{Path, PathBuf};

use livesim::Seed;
use livesim::soak::{Agent, CorpusEntry, Soak, corpus_files};
use livesim::testing::ScriptedServer;

use super::agent;
use super::scratch::{Scratch, scratch};

/// A fresh folder for one test, removed when dropped.
fn temp(name: &str) -> Scratch {
    scratch(&format!("corpus-{name}"))
}

/// A real failure's entry: weather under an invariant it breaks, as found.
fn entry() -> CorpusEntry {
    let mut weather = agent("weather");
    weather.invariants = vec![livesim::soak::AgentInvariant::AtMostOnce(
        "get_weather".into(),
    )];
    let soak = Soak::agent(&weather).check_determinism_every(0);
    let failure = (0..200)
        .find_map(|s| soak.run_seed(Seed::new(s)).failures.into_iter().next())
        .expect("weather calls get_weather twice in some seed");
    CorpusEntry::from_failure(&failure)
}

#[test]
fn an_entry_is_saved_read_back_and_loads_as_a_script() {
    let entry = entry();
    let dir = temp("roundtrip");
    let path = entry.save(&dir).unwrap();
    assert_eq!(
        path,
        dir.join("weather")
            .join(format!("{}.json", entry.case.seed))
    );
    assert_eq!(CorpusEntry::load(&path).unwrap(), entry);
    assert_eq!(corpus_files(&dir).unwrap(), std::slice::from_ref(&path));
    // The same file is a script for ScriptedServer::load (and serve).
    let script = ScriptedServer::load(&path).unwrap();
    assert_eq!(script.actions(), entry.case.script.actions());
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("\"regression\": {"), "{text}");
    assert!(text.find("\"regression\"") < text.find("\"actions\""));
}

/// A script's session id (the soak gives some servers one, as Vertex AI
/// does) is kept by the entry, so the seed replays the server it failed
/// against.
#[test]
fn an_entry_keeps_its_script_s_session_id() {
    let mut entry = entry();
    entry.case.script = entry.case.script.clone().session_id("session-0001");
    let dir = temp("session-id");
    let path = entry.save(&dir).unwrap();
    let back = CorpusEntry::load(&path).unwrap();
    assert_eq!(back.case.script.to_json()["session_id"], "session-0001");
    assert_eq!(back, entry);
    let script = ScriptedServer::load(&path).unwrap();
    assert_eq!(script.to_json()["session_id"], "session-0001");
}

/// Each mistake names the file, line and column, and an unknown key the
/// nearest valid one.
#[test]
fn entries_are_read_strictly() {
    let entry = entry();
    let good = serde_json::to_string_pretty(&entry.to_json()).unwrap();
    // Where the misspelt key's value stands, counted from the text itself.
    let value_at = good.find("\"invariant\": ").unwrap() + "\"invariants\": ".len();
    let line = good[..value_at].matches('\n').count() + 1;
    let column = value_at - good[..value_at].rfind('\n').map_or(0, |n| n + 1) + 1;
    let misspelt = format!(
        "entry.json:{line}:{column}: at regression.invariants: unknown key `invariants` in the regression; did you mean `invariant`?"
    );
    let cases = [
        (
            good.replacen("\"invariant\"", "\"invariants\"", 1),
            misspelt.as_str(),
        ),
        (
            good.replacen("\"yield_chance\"", "\"yeild_chance\"", 1),
            "at regression.swarm.yeild_chance: unknown key `yeild_chance` in the swarm; did you mean `yield_chance`?",
        ),
        (
            good.replacen("\"weather\": \"", "\"weather\": \"x", 1),
            "at regression.faults.weather: expected \"calm\", \"mixed\" or \"storm\"",
        ),
        (
            good.replacen("\"regression\"", "\"regresion\"", 1),
            "unknown key `regresion` in a corpus entry; did you mean `regression`?",
        ),
        (
            good.replacen("\"v\": 1,\n    \"agent\"", "\"v\": 2,\n    \"agent\"", 1),
            "at regression.v: version 2 is not supported (this livesim reads version 1)",
        ),
        (
            good.replacen("\"agent\": \"weather\"", "\"agent\": \"../weather\"", 1),
            "at regression.agent: expected the agent's folder name",
        ),
        (
            good.replacen("\"seed\": \"", "\"seed\": \"zz", 1),
            "at regression.seed: `zz",
        ),
        (
            good.replacen("\"name\": \"get_weather\"", "\"nmae\": \"get_weather\"", 1),
            "unknown key `nmae`; did you mean `name`?",
        ),
    ];
    for (text, wanted) in cases {
        assert_ne!(text, good, "{wanted}");
        let err = CorpusEntry::from_json_str(&text, "entry.json")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("entry.json:"), "{err}");
        assert!(err.contains(wanted), "{err}\nwanted: {wanted}");
    }
    // A well-formed action that says something wrong is placed at its own
    // line (the error says which action, too).
    // The name of the first single call (one of several calls may be
    // nameless: the generator sends such calls on purpose).
    let mut lines: Vec<String> = good.lines().map(str::to_string).collect();
    let call = lines
        .iter()
        .position(|l| l.trim_start().starts_with("\"call\": {"))
        .expect("a single call");
    let line = (call..lines.len())
        .find(|&i| lines[i].trim_start().starts_with("\"name\": \""))
        .expect("the call's name");
    let indent = lines[line].len() - lines[line].trim_start().len();
    let comma = if lines[line].ends_with(',') { "," } else { "" };
    lines[line] = format!("{}\"name\": \"\"{comma}", " ".repeat(indent));
    let nameless = lines.join("\n");
    // The action's object opens on the last line above its name that
    // holds only `{`.
    let lines: Vec<&str> = nameless.lines().collect();
    let opening = (0..line)
        .rev()
        .find(|&i| lines[i].trim() == "{")
        .expect("the action's opening brace");
    let column = lines[opening].find('{').unwrap() + 1;
    let err = CorpusEntry::from_json_str(&nameless, "entry.json")
        .unwrap_err()
        .to_string();
    let action = err
        .split("action #")
        .nth(1)
        .and_then(|rest| rest.split(':').next())
        .expect("the action's number");
    assert!(
        err.starts_with(&format!(
            "entry.json:{}:{column}: action #{action}: a call needs an id and a name",
            opening + 1
        )),
        "{err}"
    );
    // A plain script is not an entry.
    let script = serde_json::to_string(&entry.case.script.to_json()).unwrap();
    let err = CorpusEntry::from_json_str(&script, "s.json")
        .unwrap_err()
        .to_string();
    assert!(err.contains("missing key `regression`"), "{err}");
    assert!(
        err.contains("this file is a script, not a corpus entry"),
        "{err}"
    );
    // A decision of no known kind.
    let mut value = entry.to_json();
    value["regression"]["decisions"] = serde_json::json!(["lane#2", "tool-lateny#1"]);
    let err = CorpusEntry::from_json_str(&serde_json::to_string_pretty(&value).unwrap(), "d.json")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("at regression.decisions[1]: `tool-lateny` is not a kind of decision; did you mean `tool-latency`?"),
        "{err}"
    );
}

#[test]
fn an_entry_outside_an_agent_folder_is_an_error() {
    let dir = temp("stray");
    std::fs::write(dir.join("0x1.json"), "{}").unwrap();
    let err = corpus_files(&dir).unwrap_err().to_string();
    assert!(err.contains("belongs in its agent's folder"), "{err}");
}

/// Replay in CI: every entry under `seeds/` passes today (a fixed bug
/// stays fixed), and an entry whose agent is gone is an error, not a skip.
#[test]
fn every_corpus_entry_passes_today() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = corpus_files(repo.join("seeds")).unwrap();
    for file in &files {
        let entry = CorpusEntry::load(file).unwrap_or_else(|e| panic!("{e}"));
        let dir = repo.join("sim").join(&entry.agent);
        assert!(
            dir.join("agent.json").is_file(),
            "{}: its agent `{}` no longer exists in sim/: delete the entry with the agent",
            file.display(),
            entry.agent
        );
        let agent = Agent::load(&dir).unwrap_or_else(|e| panic!("{e}"));
        let run = Soak::agent(&agent).replay(&entry);
        let failures: Vec<String> = run
            .failures
            .iter()
            .map(|f| format!("{}: {}", f.invariant, f.message))
            .collect();
        assert!(
            failures.is_empty(),
            "{} fails again: {failures:#?}\nreplay: livesim sim replay {}",
            file.display(),
            file.display()
        );
    }
}

/// A corpus folder with a damaged entry, a file that is no entry, and an
/// entry of another agent: each is named with what is wrong, and the good
/// entry still runs (and fails again: weather still calls twice).
#[test]
fn a_damaged_corpus_names_each_bad_file_and_runs_the_good_ones() {
    let good = entry();
    let dir = temp("damaged");
    let path = good.save(&dir).unwrap();
    let folder = dir.join("weather");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(folder.join("0xdead.json"), &text[..text.len() / 2]).unwrap();
    std::fs::write(folder.join("notes.txt"), "why seed 0x3 failed").unwrap();
    std::fs::write(folder.join("README.md"), "kept cases").unwrap();
    let mut other = good.clone();
    other.agent = "payment".into();
    std::fs::write(
        folder.join("0xbeef.json"),
        serde_json::to_string_pretty(&other.to_json()).unwrap(),
    )
    .unwrap();

    // The soak the entry was found by: one checking what it broke.
    let mut weather = agent("weather");
    weather.invariants = vec![livesim::soak::AgentInvariant::AtMostOnce(
        "get_weather".into(),
    )];
    let soak = Soak::agent(&weather);
    let replay = soak.try_replay_corpus(&dir);
    let failed: Vec<&PathBuf> = replay.failed.iter().map(|(file, _)| file).collect();
    assert_eq!(failed, [&path], "{replay}");
    assert_eq!(replay.unreadable.len(), 3, "{replay}");
    let problems = replay.unreadable.join("\n");
    for needle in [
        "0xdead.json:",
        "notes.txt: not a corpus entry",
        "0xbeef.json: an entry of agent `payment`, and this soak runs `weather`",
    ] {
        assert!(problems.contains(needle), "{needle} in:\n{problems}");
    }
    assert!(!problems.contains("README"), "{problems}");
    // The one-liner fails, naming them.
    let panic =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| soak.replay_corpus_in(&dir)))
            .expect_err("it fails");
    let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        message.contains("0 passed, 1 failed, 3 unreadable"),
        "{message}"
    );
    assert!(message.contains("UNREADABLE "), "{message}");
}
