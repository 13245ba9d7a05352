//! Tape entries of a kind no call has: refused where the tape is read,
//! naming the file, the line and the kinds there are.

use livesim::tape::{FileTape, Tape, TapeEntry, TapeError};
use serde_json::json;

use crate::{arg, copy_files, refused, repo, temp};

// Item 5: an entry of kind `lm` (for `llm`) was kept where no call could
// find it, and `sim run` passed with exit 0.
#[test]
fn a_misspelt_tape_kind_is_an_error_naming_the_line() {
    let dir = temp("tape-kind");
    let agent = dir.join("support");
    copy_files(&repo().join("sim/support"), &agent);
    let tape = agent.join("support.tape.jsonl");
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
