//! `sim import` of a journal applies the journal reader's checks: what
//! `session scenario` refuses is refused, or named as damaged, never
//! imported as if the journal were whole.

use livesim::simulation::JournalFile;
use livesim::soak::{Agent, import_journal};

use crate::{arg, refused, repo, temp};

const HEADER: &str = r#"{"v":1,"kind":"journal"}"#;
const CALL: &str = r#"{"seq":1,"key":"flow:tool_call","value":{"tool":"verify_identity","id":"call-1"},"timestamp":1000}"#;

fn payment() -> Agent {
    Agent::load(repo().join("sim/payment")).unwrap()
}

// Item 4: the journal of the report (a version-2 header) was imported
// with exit 0, though `session scenario` refuses it.
#[test]
fn a_journal_session_scenario_refuses_is_refused_by_import() {
    let dir = temp("journal-report");
    let journal = dir.join("j.jsonl");
    let cases = [
        (
            "{\"v\":2,\"kind\":\"journal\"}\n\
             {\"seq\":1,\"key\":\"flow:tool_cal\",\"value\":{\"tool\":\"verify_identity\",\"id\":\"call-1\"},\"timestamp\":1000}\n\
             {\"seq\":1,\"key\":\"x\",\"key\":\"y\",\"value\":1,\"timestamp\":5}\n"
                .to_string(),
            "journal version 2 is not supported",
        ),
        // A header with a key no header has.
        (
            format!("{{\"v\":1,\"kind\":\"journal\",\"bogus\":1}}\n{CALL}\n"),
            "not a journal header: unknown key `bogus`",
        ),
    ];
    for (text, problem) in cases {
        std::fs::write(&journal, text).unwrap();
        refused(
            &dir,
            &["session", "scenario", arg(&journal)],
            &["j.jsonl:1: ", problem],
        );
        refused(
            &repo(),
            &[
                "sim",
                "import",
                "--agent",
                "payment",
                arg(&journal),
                "--no-save",
            ],
            &[&format!("j.jsonl:1: {problem}")],
        );
    }
}

// Item 4: each line the journal reader refuses was imported as if it were
// fine; the import keeps the good lines, so each is named as damaged.
#[test]
fn each_line_the_journal_reader_refuses_is_named_as_damaged() {
    let agent = payment();
    for (line, said) in [
        (
            r#"{"seq":1,"key":"x","value":1,"timestamp":1000}"#,
            "seq 1 after seq 1 (line 2): a journal's seq strictly increases",
        ),
        (
            r#"{"seq":2,"key":"x","value":1,"timestamp":5}"#,
            "timestamp 5 is before the previous entry's 1000 (line 2)",
        ),
        (
            r#"{"seq":2,"key":"x","key":"y","value":1,"timestamp":1000}"#,
            "duplicate key `key` at column 20",
        ),
        (
            r#"{"seq":2,"key":"x","value":{"a":1,"a":2},"timestamp":1000}"#,
            "duplicate key `a`",
        ),
        (
            r#"{"seq":2,"key":"flow:tool_cal","value":{"tool":"t","id":"c"},"timestamp":1000}"#,
            "`flow:tool_cal` is not a flow key",
        ),
        (
            "{\"seq\":2,\"key\":\"x\",\"value\":\"a\u{1}b\",\"timestamp\":1000}",
            "0xff is not UTF-8",
        ),
    ] {
        // A good entry after it: a bad last line could be a crash's torn end.
        let after = r#"{"seq":9,"key":"z","value":1,"timestamp":2000}"#;
        let mut bytes = format!("{HEADER}\n{CALL}\n{line}\n{after}\n").into_bytes();
        if let Some(at) = bytes.iter().position(|&b| b == 1) {
            bytes[at] = 0xff;
        }
        // The journal reader refuses the line (the flow key when a
        // scenario is made of it).
        let read = JournalFile::parse("j.jsonl", &bytes).and_then(|j| j.scenario("s"));
        let err = match read {
            Ok(_) => panic!("the journal reader took {line}"),
            Err(e) => e.to_string(),
        };
        assert!(err.starts_with("j.jsonl:3: "), "{line}: {err}");
        let imported = import_journal("j.jsonl", &bytes, "s", &agent).unwrap();
        assert_eq!(imported.frames, 2, "{line}");
        assert_eq!(imported.damaged.len(), 1, "{line}: {:?}", imported.damaged);
        let damage = &imported.damaged[0];
        assert!(
            damage.starts_with("j.jsonl:3: a damaged journal entry: ") && damage.contains(said),
            "{line}: {damage}"
        );
    }
}
