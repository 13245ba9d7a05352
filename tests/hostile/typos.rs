//! Typos and files of the wrong kind: an unknown key in a script, a tape,
//! a journal or a wire-log line is an error naming the key, where it is
//! and the key that was meant; tapes and journals carry a version (files
//! from before still load); a header of another kind is refused by name;
//! a UTF-8 byte-order mark is named as such; a key given twice in a spec
//! or a script is an error. Live server messages are the exception: they
//! keep keys this version does not know, by design.

use livesim::flow::Spec;
use livesim::state::FileJournalSink;
use livesim::tape::FileTape;
use livesim::testing::ScriptedServer;
use livesim::transport::wire_log::WireLog;
use livesim::wire::{Decoded, Frame, ServerMessage, decode};

use super::Scratch;

fn script_error(text: &str) -> String {
    match ScriptedServer::from_json_str(text, "weather.json") {
        Ok(_) => panic!("accepted: {text}"),
        Err(error) => error.to_string(),
    }
}

/// A list is not read as a script by position (serde would), and deep
/// nesting is named for what it is.
#[test]
fn a_script_that_is_not_an_object_is_named() {
    for text in [
        r#"[1,"n",200,null,null,[{"pause_ms":1}]]"#,
        "[1]",
        &"[".repeat(100_000),
        "\"x\"",
        "7",
    ] {
        let error = script_error(text);
        assert!(error.contains("a script is a JSON object"), "{error:.200}");
    }
}

/// An `expect` that no client message can match would wait forever (or
/// break on the message meant): refused at load, with the place, the
/// value and the kind that was meant.
#[test]
fn an_expect_no_client_message_can_match_is_refused_naming_the_nearest_kind() {
    let error = script_error(
        "{\"v\": 1, \"actions\": [\n  {\"pause_ms\": 1},\n  {\"expect\": \"clientcontent\"}]}",
    );
    assert!(
        error.starts_with(
            "script weather.json: action #2 at line 3, column 3: expect `clientcontent` names no client message the script can wait for; did you mean `clientContent`?"
        ),
        "{error}"
    );
    let error = script_error(r#"{"v": 1, "actions": [{"expect": "toolResponse"}]}"#);
    assert!(error.contains("what a `call` waits for"), "{error}");
    let error = script_error(r#"{"v": 1, "actions": [{"expect": "realtimeInput.audoi"}]}"#);
    assert!(
        error.contains("did you mean `realtimeInput.audio`?"),
        "{error}"
    );
    // The protocol's context update is input a script may wait for.
    ScriptedServer::from_json_str(
        r#"{"v": 1, "actions": [{"expect": "contextUpdate"}, {"expect": "context_update.system_instruction"}]}"#,
        "weather.json",
    )
    .unwrap();
}

#[test]
fn a_script_names_its_unknown_keys_and_what_was_meant() {
    let error = script_error(
        "{\"v\": 1,\n \"name\": \"weather\",\n    \"setle_ms\": 100,\n \"actions\": []}",
    );
    assert!(
        error.starts_with(
            "script weather.json: unknown key `setle_ms` at line 3, column 5; did you mean `settle_ms`?"
        ),
        "{error}"
    );
    let error = script_error(
        r#"{"v": 1, "actions": [{"call": {"id": "call-1", "name": "get_weather", "arg": {"city": "Paris"}}}]}"#,
    );
    assert!(
        error.contains("unknown key `arg` at line 1, column 71; did you mean `args`?"),
        "{error}"
    );
    let error = script_error(r#"{"v": 1, "actions": [{"sned": {"serverContent": {}}}]}"#);
    assert!(error.contains("unknown name `sned`"), "{error}");
    assert!(error.contains("did you mean `send`?"), "{error}");
    let error = script_error(r#"{"v": 1, "actions": [{"close": {"code": 1000, "reson": "bye"}}]}"#);
    assert!(error.contains("did you mean `reason`?"), "{error}");
}

#[test]
fn tapes_journals_and_wire_logs_name_their_unknown_keys() {
    let tape = Scratch::new("tape.jsonl");
    tape.write(b"{\"v\":1,\"kind\":\"tape\"}\n{\"kind\":\"llm\",\"input\":{\"q\":1},\"outptu\":\"Paris\"}\n");
    let error = FileTape::open(tape.path()).unwrap_err().to_string();
    assert!(
        error.contains("line 2: unknown key `outptu` at column 31; did you mean `output`?"),
        "{error}"
    );

    let journal = Scratch::new("journal.jsonl");
    journal.write(b"{\"seq\":1,\"key\":\"k\",\"value\":null,\"timestamp\":0,\"removd\":true}\n");
    let error = FileJournalSink::read(journal.path())
        .unwrap_err()
        .to_string();
    assert!(
        error.contains(":1: unknown key `removd` at column 47; did you mean `removed`?"),
        "{error}"
    );

    let log = b"{\"v\":1,\"kind\":\"wire_log\",\"started_at_ms\":0}\n{\"dir\":\"in\",\"t_ms\":0,\"type\":\"text\",\"jsn\":{}}\n";
    let error = WireLog::parse("w.jsonl", log).unwrap_err().to_string();
    assert!(error.starts_with("w.jsonl:2: unknown key `jsn`"), "{error}");
    assert!(error.contains("did you mean `json`?"), "{error}");
}

#[test]
fn files_have_versions_and_kinds() {
    // A tape from before headers still loads.
    let old = Scratch::new("old-tape.jsonl");
    old.write(b"{\"kind\":\"llm\",\"input\":1,\"output\":2}\n");
    assert_eq!(FileTape::open(old.path()).unwrap().entries().len(), 1);
    // A journal from before headers too.
    let old = Scratch::new("old-journal.jsonl");
    old.write(b"{\"seq\":1,\"key\":\"k\",\"value\":1,\"timestamp\":0}\n");
    assert_eq!(FileJournalSink::read(old.path()).unwrap().records.len(), 1);

    // An empty file gets a header before its first record.
    let empty = Scratch::new("empty-tape.jsonl");
    empty.write(b"");
    let tape = FileTape::open(empty.path()).unwrap();
    livesim::tape::Tape::record(
        &tape,
        livesim::tape::TapeEntry::ok("llm", 1.into(), 2.into()),
    )
    .unwrap();
    assert!(empty.read().starts_with(b"{\"v\":1,\"kind\":\"tape\"}\n"));

    // A newer version is refused, naming it.
    let newer = Scratch::new("newer.jsonl");
    newer.write(b"{\"v\":2,\"kind\":\"tape\"}\n");
    let error = FileTape::open(newer.path()).unwrap_err().to_string();
    assert!(error.contains("tape version 2 is not supported"), "{error}");

    // A file of another kind is refused by name, whichever reader gets it.
    let tape = Scratch::new("a-tape.jsonl");
    drop(FileTape::create(tape.path()).unwrap());
    let error = FileJournalSink::read(tape.path()).unwrap_err().to_string();
    assert!(
        error.contains("this is a tape file, not a journal"),
        "{error}"
    );
    let error = WireLog::read(tape.path()).unwrap_err().to_string();
    assert!(
        error.contains("this is a tape file, not a wire log"),
        "{error}"
    );
    let journal = Scratch::new("a-journal.jsonl");
    drop(FileJournalSink::create(journal.path()).unwrap());
    let error = FileTape::open(journal.path()).unwrap_err().to_string();
    assert!(
        error.contains("this is a journal file, not a tape"),
        "{error}"
    );
}

#[test]
fn a_byte_order_mark_is_named() {
    let bom = "\u{feff}";
    let error = script_error(&format!("{bom}{{\"v\": 1, \"actions\": []}}"));
    assert!(error.contains("UTF-8 byte-order mark"), "{error}");
    let error = Spec::from_json(
        &format!("{bom}{{\"v\": 1, \"kind\": \"flow\", \"steps\": []}}"),
        "a.spec.json",
    )
    .unwrap_err()
    .to_string();
    assert!(error.contains("UTF-8 byte-order mark"), "{error}");
    for (name, text) in [
        (
            "tape.jsonl",
            format!("{bom}{{\"v\":1,\"kind\":\"tape\"}}\n"),
        ),
        (
            "journal.jsonl",
            format!("{bom}{{\"seq\":1,\"key\":\"k\",\"value\":1,\"timestamp\":0}}\n"),
        ),
    ] {
        let file = Scratch::new(name);
        file.write(text.as_bytes());
        let error = if name.starts_with("tape") {
            FileTape::open(file.path()).unwrap_err().to_string()
        } else {
            FileJournalSink::read(file.path()).unwrap_err().to_string()
        };
        assert!(error.contains("UTF-8 byte-order mark"), "{name}: {error}");
    }
    let log = format!("{bom}{{\"v\":1,\"kind\":\"wire_log\",\"started_at_ms\":0}}\n");
    let error = WireLog::parse("w.jsonl", log.as_bytes())
        .unwrap_err()
        .to_string();
    assert!(error.contains("UTF-8 byte-order mark"), "{error}");
}

#[test]
fn a_key_given_twice_is_an_error() {
    let error = Spec::from_json(
        "{\"v\": 1, \"kind\": \"flow\", \"steps\": [\n  {\"id\": \"a\", \"allow\": [\"x\"], \"allow\": [\"y\"]}]}",
        "twice.spec.json",
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        error,
        "twice.spec.json: duplicate key `allow` at line 2, column 31"
    );
    let error = script_error(
        r#"{"v": 1, "actions": [{"send": {"serverContent": {"turnComplete": true, "turnComplete": false}}}]}"#,
    );
    assert!(
        error.contains("duplicate key `turnComplete` at line 1, column 72"),
        "{error}"
    );
}

/// By design: a server message keeps a key this version does not know
/// (a newer protocol's), and writes it back out.
#[test]
fn server_messages_keep_unknown_keys() {
    let frame =
        Frame::Text(r#"{"serverContent":{"turnComplete":true},"newFeature":{"x":1}}"#.into());
    let Ok(Decoded::Message(message)) = decode::<ServerMessage>(&frame) else {
        panic!("not decoded");
    };
    assert_eq!(message.extra["newFeature"]["x"], 1);
    assert!(message.to_json().contains("\"newFeature\":{\"x\":1}"));
}
