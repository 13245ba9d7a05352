//! Tape entries no call could replay (a kind no call has, neither an
//! output nor an error, both, a model call's output that is no model
//! response): refused where the tape is read, naming the file, the line
//! and what was wrong.

use livesim::tape::{FileTape, Tape, TapeEntry, TapeError};
use serde_json::json;

use std::path::PathBuf;

use crate::{Scratch, arg, copy_files, refused, repo, temp};

/// A copy of `sim/support` in a scratch folder named for `what`: the
/// folder, the agent's folder and its tape.
fn support_copy(what: &str) -> (Scratch, PathBuf, PathBuf) {
    let dir = temp(what);
    let agent = dir.join("support");
    copy_files(&repo().join("sim/support"), &agent);
    let tape = agent.join("support.tape.jsonl");
    (dir, agent, tape)
}

// Item 5: an entry of kind `lm` (for `llm`) was kept where no call could
// find it, and `sim run` passed with exit 0.
#[test]
fn a_misspelt_tape_kind_is_an_error_naming_the_line() {
    let (dir, agent, tape) = support_copy("tape-kind");
    let text = std::fs::read_to_string(&tape).unwrap();
    assert!(text.starts_with(r#"{"kind": "llm""#), "{text}");
    std::fs::write(
        &tape,
        text.replacen(r#""kind": "llm""#, r#""kind": "lm""#, 1),
    )
    .unwrap();
    let err = refused(
        &dir,
        &["sim", "run", arg(&agent), "--seed", "0"],
        &[
            "support.tape.jsonl:1:1: unknown kind `lm`; did you mean `llm`?",
            "(a tape holds calls of kind `llm`, `simulated-user` and `resolver:<name>`)",
        ],
    );
    assert!(!err.contains("panicked"), "{err}");
    match FileTape::open(&tape) {
        Err(TapeError::BadLine { line, message, .. }) => {
            assert_eq!(line, 1);
            assert!(
                message.starts_with("unknown kind `lm`; did you mean `llm`?"),
                "{message}"
            );
        }
        Err(other) => panic!("{other}"),
        Ok(_) => panic!("the tape opened"),
    }
    // A misspelt resolver prefix is measured against the resolver it names.
    std::fs::write(
        &tape,
        "{\"kind\":\"resolvr:balance\",\"input\":{},\"output\":1}\n",
    )
    .unwrap();
    let Err(TapeError::BadLine { message, .. }) = FileTape::open(&tape) else {
        panic!("the tape opened");
    };
    assert!(
        message.contains("did you mean `resolver:balance`?"),
        "{message}"
    );
    // And what could not be read back is not written.
    let fresh = FileTape::create(dir.join("new.tape.jsonl")).unwrap();
    let said = fresh
        .record(TapeEntry::ok("lm", json!({}), json!(1)))
        .unwrap_err()
        .to_string();
    assert!(
        said.contains("cannot record this call: unknown kind `lm`"),
        "{said}"
    );
    assert!(fresh.entries().is_empty());
}

// A fuzzed tape: an entry whose output was lost, or became a number, was
// read without a word; each session that asked for it then failed its
// extractor and the soak blamed the agent (exit 1), naming no line.
#[test]
fn an_entry_no_call_could_replay_is_an_error_naming_the_line() {
    let (dir, agent, tape) = support_copy("tape-entry");
    let text = std::fs::read_to_string(&tape).unwrap();
    let mut lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(lines.len() >= 3, "{text}");
    let good = lines[2]["output"].clone();
    // (Any tape refuses the first two; the last two only where a model
    // replays the tape, as the extractor does: a tape is a plain store.)
    let damaged = [
        (None, None, "neither an `output`", true),
        (
            Some(good.clone()),
            Some(json!("boom")),
            "both an `output` and an `error`",
            true,
        ),
        (
            Some(json!(42)),
            None,
            "the model call's `output` is not a model response (invalid type: number",
            false,
        ),
        (
            Some(json!({"content": {"role": "model", "parts": "text"}})),
            None,
            "the model call's `output` is not a model response",
            false,
        ),
    ];
    for (output, error, said, any_tape) in damaged {
        let entry = lines[2].as_object_mut().unwrap();
        entry.remove("output");
        entry.remove("error");
        if let Some(output) = output {
            entry.insert("output".into(), output);
        }
        if let Some(error) = error {
            entry.insert("error".into(), error);
        }
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(&tape, text).unwrap();
        refused(
            &dir,
            &["sim", "run", arg(&agent), "--seed", "0"],
            &["support.tape.jsonl:3:1: ", said],
        );
        match FileTape::open(&tape) {
            Err(TapeError::BadLine { line, message, .. }) if any_tape => {
                assert_eq!(line, 3, "{message}");
                assert!(message.contains(said), "{message}");
            }
            Err(other) => panic!("{other}"),
            Ok(opened) => assert!(!any_tape, "the tape opened with {said}: {opened:?}"),
        }
    }
    // And what could not be read back is not written.
    let fresh = FileTape::create(dir.join("new.tape.jsonl")).unwrap();
    let said = fresh
        .record(TapeEntry {
            kind: "resolver:balance".into(),
            input: json!({}),
            output: None,
            error: None,
        })
        .unwrap_err()
        .to_string();
    assert!(said.contains("neither an `output`"), "{said}");
    assert!(fresh.entries().is_empty());
}

// A line whose payload (a call's input, a written value) gives a key twice
// would be read with the last value, the first lost without a word (serde
// refuses a record's own keys twice, `Value` keeps the last): it is an
// error naming the line and the key, in a tape and in a journal alike.
#[test]
fn a_tape_or_journal_line_that_gives_a_key_twice_is_an_error_naming_it() {
    let dir = temp("key-twice");
    let tape = dir.join("t.jsonl");
    std::fs::write(
        &tape,
        "{\"v\":1,\"kind\":\"tape\"}\n\
         {\"kind\":\"llm\",\"input\":{},\"output\":{}}\n\
         {\"kind\":\"resolver:a\",\"input\":{\"id\":1,\"id\":2},\"output\":1}\n",
    )
    .unwrap();
    match FileTape::open(&tape) {
        Err(TapeError::BadLine { line, message, .. }) => {
            assert_eq!(line, 3);
            assert!(message.starts_with("duplicate key `id`"), "{message}");
        }
        Err(other) => panic!("{other}"),
        Ok(_) => panic!("the tape opened"),
    }
    let journal = dir.join("j.jsonl");
    std::fs::write(
        &journal,
        "{\"v\":1,\"kind\":\"journal\"}\n\
         {\"seq\":1,\"key\":\"a\",\"value\":{\"x\":1,\"x\":2},\"timestamp\":5}\n",
    )
    .unwrap();
    let err = livesim::state::FileJournalSink::read(&journal)
        .unwrap_err()
        .to_string();
    assert!(err.contains("j.jsonl:2: duplicate key `x`"), "{err}");
}
