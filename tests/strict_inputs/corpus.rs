//! Corpus entries name their agent: replayed (or played under many seeds)
//! against another, they are refused, never passed.

use crate::{livesim_in, refused, repo};

// Item 8: `sim replay ENTRY --agent` of another agent replayed the entry
// against it and said it passed; `sim passk` played it silently.
#[test]
fn an_entry_is_refused_against_another_agent() {
    let root = repo();
    // A `protocol` entry: a check every agent runs, so nothing else
    // would have stopped it.
    let entry = "seeds/resumable/0x578e216.json";
    let text = std::fs::read_to_string(root.join(entry)).unwrap();
    assert!(text.contains(r#""invariant": "protocol""#), "{text}");
    let said = [
        "0x578e216.json: the entry belongs to agent `resumable`",
        "not to `weather` (--agent sim/weather)",
    ];
    let err = refused(
        &root,
        &["sim", "replay", entry, "--agent", "sim/weather"],
        &said,
    );
    assert!(!err.contains("passes"), "{err}");
    refused(
        &root,
        &[
            "sim",
            "passk",
            entry,
            "--agent",
            "sim/weather",
            "--seeds",
            "2",
        ],
        &said,
    );
    refused(
        &root,
        &["sim", "passk", entry, "--agent", "weather", "--seeds", "2"],
        &[
            "the entry belongs to agent `resumable`",
            "not to `weather` (--agent weather)",
        ],
    );
    // Against its own agent, named or not, it is replayed.
    for args in [
        &["sim", "replay", entry, "--agent", "sim/resumable"][..],
        &["sim", "replay", entry],
    ] {
        let (code, out, err) = livesim_in(&root, args);
        assert_eq!(code, Some(0), "{args:?}\n{out}{err}");
        assert!(out.contains("resumable seed 0x578e216"), "{out}");
    }
}
