//! Inputs as users and damaged files give them: stdin, missing files, bad
//! JSON, lines that are not journal entries, specs that do not compile,
//! turns past the end. Errors name the file and line and exit 2; nothing
//! panics.

use std::path::Path;

use serde_json::{Value, json};

use crate::cli::{Run, arg, livesim, livesim_with_stdin, package, scratch, write};

const SPEC: &str = "sim/booking/booking.spec.json";

/// A journal of the booking incident, written as `FileJournalSink` writes
/// it (the first two turns of it, enough for these tests).
fn incident_lines() -> Vec<Value> {
    let entries = [
        (
            "flow:tool_call",
            json!({"tool": "set_party", "id": "call-1"}),
        ),
        ("party_size", json!(4)),
        (
            "flow:tool_result",
            json!({"tool": "set_party", "id": "call-1", "ok": true}),
        ),
        ("flow:active", json!(["book"])),
        ("flow:tool_call", json!({"tool": "confirm", "id": "call-2"})),
        ("confirmed", json!(true)),
        (
            "flow:tool_result",
            json!({"tool": "confirm", "id": "call-2", "ok": true}),
        ),
        ("flow:active", json!(["book"])),
    ];
    entries
        .into_iter()
        .enumerate()
        .map(|(i, (key, value))| {
            json!({"seq": i + 1, "key": key, "value": value, "timestamp": 1_767_225_600_000u64 + i as u64})
        })
        .collect()
}

fn jsonl(lines: &[Value]) -> String {
    lines.iter().map(|line| format!("{line}\n")).collect()
}

fn stderr_of(run: Run) -> String {
    run.expect(2).stderr
}

/// What `flow replay SPEC --journal JOURNAL` says on stderr as it exits 2.
fn replay_error(spec: &str, journal: &Path) -> String {
    stderr_of(livesim(&[
        "flow",
        "replay",
        spec,
        "--journal",
        &arg(journal),
    ]))
}

#[test]
fn every_command_has_help_with_its_exit_statuses() {
    for command in [
        &["session", "scenario"][..],
        &["flow", "replay"],
        &["flow", "why"],
        &["flow", "ci"],
    ] {
        let mut args = command.to_vec();
        args.push("--help");
        let out = livesim(&args).expect(0);
        assert!(
            out.stdout
                .contains(&format!("Usage: livesim {}", command.join(" "))),
            "{}",
            out.stdout
        );
        assert!(out.stdout.contains("Exit status: 0 when"), "{}", out.stdout);
        assert!(out.stdout.contains("bad usage"), "{}", out.stdout);
    }
    for group in ["session", "flow"] {
        let out = livesim(&[group, "--help"]).expect(0);
        assert!(
            out.stdout
                .contains(&format!("Usage: livesim {group} <COMMAND>"))
        );
    }
    let out = livesim(&["--help"]).expect(0);
    assert!(out.stdout.contains("session"), "{}", out.stdout);
    assert!(out.stdout.contains("flow"), "{}", out.stdout);
    assert!(out.stdout.contains("Exit status, for every command: 0"));
    // A command without its subcommand is bad usage.
    livesim(&["flow"]).expect(2);
}

#[test]
fn the_scenario_is_named_after_the_file_unless_named() {
    let dir = scratch("name-from-file");
    let journal = write(&dir, "user-123.journal.jsonl", jsonl(&incident_lines()));
    let out = livesim(&["session", "scenario", &arg(&journal)]).expect(0);
    let scenario: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(scenario["name"], "user-123");
    assert_eq!(scenario["steps"][0], json!({"expect_allowed": "set_party"}));
    assert_eq!(scenario["steps"][3], json!("turn"));
    let out = livesim(&["session", "scenario", &arg(&journal), "--name", "x"]).expect(0);
    assert!(out.stdout.starts_with("{\n  \"name\": \"x\",\n"));
}

#[test]
fn stdin_is_read_for_a_dash() {
    let text = jsonl(&incident_lines());
    let out = livesim_with_stdin(
        &["session", "scenario", "-", "--name", "piped"],
        text.as_bytes(),
    )
    .expect(0);
    assert!(out.stdout.contains("\"name\": \"piped\""));
    let err = stderr_of(livesim_with_stdin(
        &["session", "scenario", "-"],
        text.as_bytes(),
    ));
    assert!(
        err.contains("give the scenario a name with --name"),
        "{err}"
    );

    let out =
        livesim_with_stdin(&["flow", "replay", SPEC, "--journal", "-"], text.as_bytes()).expect(0);
    assert!(
        out.stdout.starts_with("replay of `stdin`: "),
        "{}",
        out.stdout
    );
    let dir = scratch("stdin-spec");
    let journal = write(&dir, "j.journal.jsonl", &text);
    let spec = std::fs::read(package().join(SPEC)).unwrap();
    let out = livesim_with_stdin(
        &[
            "flow",
            "why",
            "-",
            "--journal",
            &arg(&journal),
            "--turn",
            "2",
            "--tool",
            "book_table",
        ],
        &spec,
    )
    .expect(0);
    assert_eq!(
        serde_json::from_str::<Value>(&out.stdout).unwrap()["admitted"],
        true
    );
    let err = stderr_of(livesim(&["flow", "replay", "-", "--journal", "-"]));
    assert!(err.contains("only one of the spec and the journal can come from stdin"));
}

#[test]
fn a_missing_file_is_named() {
    let err = stderr_of(livesim(&["session", "scenario", "no/such.journal.jsonl"]));
    assert!(
        err.starts_with("livesim session scenario: no/such.journal.jsonl: cannot read it: "),
        "{err}"
    );
    let dir = scratch("missing-spec");
    let journal = write(&dir, "j.jsonl", jsonl(&incident_lines()));
    let err = replay_error("no/such.spec.json", &journal);
    assert!(
        err.starts_with("livesim flow replay: no/such.spec.json: cannot read it: "),
        "{err}"
    );
}

#[test]
fn a_line_that_is_not_a_journal_entry_is_named_with_its_line() {
    let mut text = jsonl(&incident_lines()[..2]);
    text.push('\n'); // a blank line counts as a line
    text.push_str("{\"seq\": 3, \"key\": \"x\"}\n");
    let dir = scratch("bad-line");
    let journal = write(&dir, "bad.journal.jsonl", &text);
    let err = stderr_of(livesim(&["session", "scenario", &arg(&journal)]));
    assert_eq!(
        err.trim_end(),
        format!(
            "livesim session scenario: {}:4: not a journal entry (one state mutation per line: \
             {{\"seq\", \"key\", \"value\", \"timestamp\"}}): missing field `value` at column 22",
            journal.display()
        )
    );
    // Not JSON at all, and not UTF-8: the same, never a panic.
    let journal = write(&dir, "j.jsonl", "ok\n");
    let err = replay_error(SPEC, &journal);
    assert!(err.contains("j.jsonl:1: not a journal entry"), "{err}");
    let garbage = write(&dir, "g.jsonl", [0xff, 0xfe, b'{', b'\n', 0x00, 0x9f]);
    let err = stderr_of(livesim(&[
        "flow",
        "why",
        SPEC,
        "--journal",
        &arg(&garbage),
        "--turn",
        "0",
    ]));
    assert!(err.contains("g.jsonl:1: not a journal entry"), "{err}");
    // An entry's fields as an array, in order, are not an entry: serde
    // would read them by position.
    let mut text = jsonl(&incident_lines()[..2]);
    text.push_str("[3, \"flow:active\", [\"book\"], 1767225600011, false]\n");
    let journal = write(&dir, "array.journal.jsonl", &text);
    let err = stderr_of(livesim(&["session", "scenario", &arg(&journal)]));
    assert!(
        err.contains("array.journal.jsonl:3: not a journal entry")
            && err.contains("invalid type: a list, expected a journal entry, a JSON object"),
        "{err}"
    );
    // A file with nothing in it is not a journal (every journal starts
    // with its header line).
    for (name, text) in [("empty.jsonl", ""), ("blank.jsonl", "\n  \n")] {
        let journal = write(&dir, name, text);
        let err = stderr_of(livesim(&["session", "scenario", &arg(&journal)]));
        assert_eq!(
            err.trim_end(),
            format!(
                "livesim session scenario: {}: holds nothing: a state journal starts with its \
                 header line {{\"v\":1,\"kind\":\"journal\"}}",
                journal.display()
            )
        );
    }
}

#[test]
fn a_flow_entry_of_the_wrong_shape_is_named_with_its_line() {
    let mut lines = incident_lines();
    lines[4]["value"] = json!({"id": "call-2"});
    let dir = scratch("bad-flow");
    let journal = write(&dir, "j.jsonl", jsonl(&lines));
    let err = replay_error(SPEC, &journal);
    assert!(
        err.starts_with(&format!(
            "livesim flow replay: {}:5: entry seq 5 (flow:tool_call): ",
            journal.display()
        )),
        "{err}"
    );
}

/// A `flow:` key the flow does not write is a typo, named with its line
/// and the key it most likely meant, not a state write to skip: skipped,
/// it would lose a decision without a word.
#[test]
fn a_misspelt_flow_key_is_named_with_its_line() {
    let mut lines = incident_lines();
    lines[0]["key"] = json!("flow:tool_cal");
    let dir = scratch("misspelt-flow");
    let journal = write(&dir, "j.jsonl", jsonl(&lines));
    let err = stderr_of(livesim(&["session", "scenario", &arg(&journal)]));
    assert!(
        err.starts_with(&format!(
            "livesim session scenario: {}:1: entry seq 1 (flow:tool_cal): `flow:tool_cal` is not a flow key",
            journal.display()
        )),
        "{err}"
    );
    assert!(err.contains("did you mean `flow:tool_call`?"), "{err}");
}

/// A journal is written in order: an entry whose seq does not follow the
/// one before, or whose timestamp goes back, is refused at its line, not
/// sorted into a place that would be a guess.
#[test]
fn a_journal_out_of_order_is_named_with_the_line_that_breaks_it() {
    let dir = scratch("out-of-order");
    let mut lines = incident_lines();
    lines.swap(2, 3);
    let journal = write(&dir, "swapped.jsonl", jsonl(&lines));
    let err = replay_error(SPEC, &journal);
    assert_eq!(
        err.trim_end(),
        format!(
            "livesim flow replay: {}:4: seq 3 after seq 4 (line 3): a journal's seq strictly increases",
            journal.display()
        )
    );
    let mut lines = incident_lines();
    lines[3]["seq"] = json!(3);
    let journal = write(&dir, "twice.jsonl", jsonl(&lines));
    let err = stderr_of(livesim(&["session", "scenario", &arg(&journal)]));
    assert!(
        err.contains("twice.jsonl:4: seq 3 after seq 3 (line 3)"),
        "{err}"
    );
    let mut lines = incident_lines();
    lines[3]["timestamp"] = json!(1_767_225_599_000u64);
    let journal = write(&dir, "back.jsonl", jsonl(&lines));
    let err = stderr_of(livesim(&["session", "scenario", &arg(&journal)]));
    assert!(
        err.contains("back.jsonl:4: timestamp 1767225599000 is before the previous entry's 1767225600002 (line 3): a journal's timestamps never go back"),
        "{err}"
    );
}

#[test]
fn a_spec_that_does_not_compile_is_named_with_line_and_column() {
    let dir = scratch("bad-spec");
    let journal = write(&dir, "j.jsonl", jsonl(&incident_lines()));
    let spec = write(
        &dir,
        "pay.spec.json",
        "{\"v\": 1, \"kind\": \"flow\",\n \"steps\": [{\"id\": \"pay\", \"after\": [\"verify\"]}]}",
    );
    let err = replay_error(&arg(&spec), &journal);
    assert!(
        err.starts_with(&format!(
            "livesim flow replay: {}:2:35: at steps[0].after: step `pay` comes after `verify`",
            spec.display()
        )),
        "{err}"
    );
    std::fs::write(&spec, "{\"v\": 1,").unwrap();
    let err = stderr_of(livesim(&[
        "flow",
        "why",
        &arg(&spec),
        "--journal",
        &arg(&journal),
        "--turn",
        "1",
    ]));
    assert!(err.contains("pay.spec.json:1:8: not valid JSON"), "{err}");
}

#[test]
fn a_torn_last_line_is_reported_and_the_entries_before_it_are_used() {
    let mut text = jsonl(&incident_lines()[..3]);
    text.push_str("{\"seq\":4,\"key\":\"flow:act");
    let dir = scratch("torn");
    let journal = write(&dir, "j.jsonl", &text);
    let out = livesim(&["session", "scenario", &arg(&journal)]).expect(0);
    assert!(
        out.stderr.contains(&format!(
            "livesim: warning: {}:4: torn last line",
            journal.display()
        )),
        "{}",
        out.stderr
    );
    let scenario: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(scenario["steps"].as_array().unwrap().len(), 3);
}

#[test]
fn a_turn_beyond_the_journal_says_how_many_turns_it_has() {
    let dir = scratch("beyond");
    let journal = write(&dir, "user-123.journal.jsonl", jsonl(&incident_lines()));
    let err = stderr_of(livesim(&[
        "flow",
        "why",
        SPEC,
        "--journal",
        &arg(&journal),
        "--turn",
        "3",
    ]));
    assert_eq!(
        err.trim_end(),
        format!(
            "livesim flow why: {}: turn 3 is beyond the recording: `user-123` has 2 turns (ask \
             for 0 to 2; 0 is before the first turn)",
            journal.display()
        )
    );
    // Turn 0 is the start: the party stage, nothing called.
    let out = livesim(&[
        "flow",
        "why",
        SPEC,
        "--journal",
        &arg(&journal),
        "--turn",
        "0",
    ])
    .expect(0);
    let why: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(why["turns"], 0);
    assert_eq!(why["active"][0]["id"], "party");
    // And as text.
    let out = livesim(&[
        "flow",
        "why",
        SPEC,
        "--journal",
        &arg(&journal),
        "--turn",
        "2",
        "--format",
        "text",
    ])
    .expect(0);
    assert!(
        out.stdout.starts_with("flow (enforce), after 2 turns\n"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("gate book_table when is_true(confirmed): open")
    );
}

#[test]
fn a_journal_with_no_flow_decisions_is_not_called_clean() {
    let dir = scratch("ungoverned");
    let journal = write(
        &dir,
        "j.jsonl",
        jsonl(&[json!({"seq": 1, "key": "party_size", "value": 4, "timestamp": 0})]),
    );
    let err = replay_error(SPEC, &journal);
    assert!(
        err.contains("the journal records no flow decisions"),
        "{err}"
    );
    // Governed, but nothing decided yet (the user barged in at once): a
    // replay with nothing to compare, not an error.
    let journal = write(
        &dir,
        "j.jsonl",
        jsonl(&[json!({"seq": 1, "key": "flow:interrupted", "value": {}, "timestamp": 0})]),
    );
    let out = livesim(&["flow", "replay", SPEC, "--journal", &arg(&journal)]).expect(0);
    assert!(
        out.stdout
            .ends_with("\nCLEAN: no recorded decisions to compare\n"),
        "{}",
        out.stdout
    );
}
