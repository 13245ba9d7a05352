//! Agent files that cannot be used get an error naming the file, the line
//! and column, the key, and what was expected there.

use std::time::Duration;

use livesim::session::Resumption;
use livesim::soak::{Agent, AgentGoal};

use super::scratch::{Scratch, scratch};

/// A fresh folder holding `agent.json` (and `files`), for one test;
/// removed when dropped.
fn folder(test: &str, agent: &str, files: &[(&str, &str)]) -> Scratch {
    let dir = scratch(&format!("agent-{test}"));
    std::fs::write(dir.join("agent.json"), agent).unwrap();
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    dir
}

/// The `setup` message the agent's session sends, for a calm seed.
fn setup_of(agent: &Agent) -> serde_json::Value {
    agent
        .builder(&livesim::soak::RunContext {
            seed: livesim::Seed::new(1),
            faults: livesim::soak::Faults::calm(),
            state: livesim::state::State::new(),
        })
        .setup_message()
}

fn error(test: &str, agent: &str, files: &[(&str, &str)]) -> String {
    let dir = folder(test, agent, files);
    let err = Agent::load(&dir)
        .expect_err("the agent file is broken")
        .to_string();
    let prefix = dir.join("agent.json").display().to_string();
    err.replace(&prefix, "agent.json")
}

const LINES: &str = r#""user": ["Hi"], "model": ["Hello"]"#;

#[test]
fn a_misspelt_key_names_the_nearest_valid_one() {
    let text = format!("{{\n  \"v\": 1,\n  {LINES},\n  \"instrucion\": \"Be brief.\"\n}}");
    assert_eq!(
        error("top-typo", &text, &[]),
        "agent.json:4:17: at instrucion: unknown key `instrucion` in an agent file; did you mean \
         `instruction`? (valid keys: v, instruction, spec, enforcement, turns, pauses_ms, \
         call_chance, user, model, tools, extractor, invariants, sometimes, budgets, final_state, \
         phases, temporal, resolvers, simulated_user, faults, resumable, manual_activity, \
         planted_bug)"
    );
    let text = format!(
        "{{\"v\": 1, {LINES},\n \"tools\": [\n  {{\"name\": \"lookup\",\n   \"latncy_ms\": [1, 2]}}]}}"
    );
    let err = error("tool-typo", &text, &[]);
    assert!(
        err.starts_with(
            "agent.json:4:17: at tools[0].latncy_ms: unknown key `latncy_ms` in a tool; did you \
             mean `latency_ms`?"
        ),
        "{err}"
    );
    let text = format!("{{\"v\": 1, {LINES},\n \"faults\": {{\"paralel-calls\": 0.5}}}}");
    let err = error("fault-typo", &text, &[]);
    assert!(
        err.contains("at faults.paralel-calls: unknown key `paralel-calls`"),
        "{err}"
    );
    assert!(err.contains("did you mean `parallel-calls`?"), "{err}");
    assert!(err.starts_with("agent.json:2:30"), "{err}");
}

#[test]
fn a_value_of_the_wrong_shape_says_what_was_expected() {
    let cases: [(&str, &str, &str); 12] = [
        (
            "latency",
            r#""tools": [{"name": "t", "latency_ms": [300, 20]}]"#,
            "at tools[0].latency_ms: latency_ms: the low end 300 is above the high end 20",
        ),
        (
            "rate",
            r#""tools": [{"name": "t", "failure_rate": 1.5}]"#,
            "at tools[0].failure_rate: expected failure_rate: a number from 0 to 1, found the number 1.5",
        ),
        (
            "turns",
            r#""turns": "many""#,
            "at turns: expected turns: [low, high], whole numbers from 1 to 200, found the string \"many\"",
        ),
        (
            "example",
            r#""tools": [{"name": "t", "parameters": {"type": "OBJECT", "properties": {"city": {"type": "STRING"}}, "required": ["city"]}, "examples": [{"town": "Oslo"}]}]"#,
            "at tools[0].examples[0]: this example does not fit the parameters: missing required argument `city`",
        ),
        (
            "tool-name",
            r#""tools": [{"name": "pay now"}]"#,
            "at tools[0].name: \"pay now\" is not a name the Live API takes for a function: it starts with a letter or `_` and holds only letters, digits, `_`, `.`, `:` and `-`, at most 64",
        ),
        (
            "goal-twice",
            r#""tools": [{"name": "t"}], "sometimes": [{"name": "ran", "tool_ok": "t"}, {"name": "ran", "tool_ok": "t"}]"#,
            "at sometimes[1].name: a second goal named \"ran\": names are unique",
        ),
        (
            "schema-type",
            r#""tools": [{"name": "t", "parameters": {"type": "OBJECT", "properties": {"n": {"type": "INTEGR"}}}}]"#,
            "at tools[0].parameters.properties.n.type: `INTEGR` is not a schema type (one of OBJECT, STRING, INTEGER, NUMBER, BOOLEAN, ARRAY, NULL); did you mean `INTEGER`?",
        ),
        (
            "schema-required",
            r#""tools": [{"name": "t", "parameters": {"type": "OBJECT", "properties": {"city": {"type": "STRING"}}, "required": ["cty"]}}]"#,
            "at tools[0].parameters.required[0]: `cty` is required but not among the properties; did you mean `city`?",
        ),
        (
            "template-name",
            r#""tools": [{"name": "t", "parameters": {"type": "OBJECT", "properties": {"amount": {"type": "NUMBER"}}}, "result": {"paid": "{args.amuont}"}}]"#,
            "at tools[0].result: `{args.amuont}` names no parameter of the tool (it declares amount); did you mean `{args.amount}`?",
        ),
        (
            "template-open",
            r#""tools": [{"name": "t", "writes": {"last": "paid {args."}}]"#,
            "at tools[0].writes: the write of `last`: `{args.` opens a placeholder and never closes it (write {args.name})",
        ),
        (
            "duplicate",
            r#""tools": [{"name": "t"}, {"name": "t"}]"#,
            "at tools[1]: a second tool named \"t\"",
        ),
        (
            "enforcement",
            r#""enforcement": "strict""#,
            "at enforcement: expected \"enforce\" or \"observe\", found \"strict\"",
        ),
    ];
    for (test, member, expected) in cases {
        let text = format!("{{\"v\": 1, {LINES},\n  {member}}}");
        let err = error(test, &text, &[]);
        assert!(err.starts_with("agent.json:2:"), "{test}: {err}");
        assert!(err.ends_with(expected), "{test}: {err}\nwanted …{expected}");
    }
}

#[test]
fn a_missing_key_or_version_is_named() {
    let err = error("no-user", r#"{"v": 1, "model": ["Hello"]}"#, &[]);
    assert_eq!(
        err,
        "agent.json:1:1: missing key `user` (what the user says)"
    );
    let err = error("version", &format!("{{\"v\": 2, {LINES}}}"), &[]);
    assert_eq!(
        err,
        "agent.json:1:7: at v: version 2 is not supported (this livesim reads version 1)"
    );
    let err = error(
        "empty-lines",
        r#"{"v": 1, "user": [], "model": ["Hello"]}"#,
        &[],
    );
    assert!(
        err.ends_with("at user: expected at least one of user lines, found an empty list"),
        "{err}"
    );
}

#[test]
fn an_invariant_or_goal_naming_no_declared_tool_is_an_error() {
    let text = format!(
        "{{\"v\": 1, {LINES}, \"tools\": [{{\"name\": \"take_payment\"}}],\n \"invariants\": [{{\"at_most_once\": \"take_paymnt\"}}]}}"
    );
    assert_eq!(
        error("invariant-tool", &text, &[]),
        "agent.json:2:34: at invariants[0].at_most_once: no tool named \"take_paymnt\" is declared; \
         did you mean `take_payment`? (tools: take_payment)"
    );
    let text = format!("{{\"v\": 1, {LINES},\n \"invariants\": [{{\"before\": [\"a\"]}}]}}");
    assert!(
        error("before-shape", &text, &[])
            .ends_with("expected [\"first tool\", \"then tool\"]: two tool names")
    );
}

#[test]
fn not_json_is_located() {
    let err = error("syntax", "{\"v\": 1,\n  \"user\": [\"Hi\",]\n}", &[]);
    assert!(
        err.starts_with("agent.json:2:17: not valid JSON: "),
        "{err}"
    );
}

#[test]
fn files_the_agent_names_must_exist_and_be_valid() {
    let text = format!("{{\"v\": 1, {LINES}, \"spec\": \"gone.spec.json\"}}");
    let err = error("no-spec", &text, &[]);
    assert!(err.starts_with("agent.json:1:"), "{err}");
    assert!(err.contains("at spec: no spec file at "), "{err}");
    // A folder is not a spec file, whatever it is named.
    let text = format!("{{\"v\": 1, {LINES}, \"spec\": \"dir.spec.json\"}}");
    let dir = folder("spec-dir", &text, &[]);
    std::fs::create_dir_all(dir.join("dir.spec.json")).unwrap();
    let err = Agent::load(&dir).unwrap_err().to_string();
    assert!(
        err.contains("dir.spec.json is not a regular file: a spec file is one"),
        "{err}"
    );
    // A path that leaves the folder, or goes into another, is refused:
    // the folder holds the agent's files.
    for path in [
        "../common.spec.json",
        "/etc/hosts",
        "specs/pay.spec.json",
        ".",
    ] {
        let text = format!("{{\"v\": 1, {LINES}, \"spec\": \"{path}\"}}");
        let err = error("spec-outside", &text, &[]);
        assert!(
            err.contains(&format!(
                "at spec: `{path}` is not a file name: a spec file goes beside agent.json"
            )),
            "{err}"
        );
    }
    // The spec's own error names the spec file and its line.
    let text = format!("{{\"v\": 1, {LINES}, \"spec\": \"bad.spec.json\"}}");
    let spec = "{\"v\": 1, \"kind\": \"flow\",\n \"steps\": [{\"id\": \"a\", \"alow\": []}]}";
    let dir = folder("bad-spec", &text, &[("bad.spec.json", spec)]);
    let err = Agent::load(&dir).unwrap_err().to_string();
    assert!(
        err.starts_with(&format!("{}:2:", dir.join("bad.spec.json").display())),
        "{err}"
    );
    assert!(err.contains("unknown field `alow`"), "{err}");
    // A tape with a bad line in the middle names the tape and the line.
    let text = format!(
        "{{\"v\": 1, {LINES}, \"extractor\": {{\"name\": \"topic\", \"tape\": \"t.jsonl\", \"prompt\": \"p\"}}}}"
    );
    let dir = folder(
        "bad-tape",
        &text,
        &[(
            "t.jsonl",
            "{\"kind\": \"llm\", \"input\": 1, \"output\": {\"content\": {\"role\": \"model\", \"parts\": []}}}\nnot json\n{}\n",
        )],
    );
    let err = Agent::load(&dir).unwrap_err().to_string();
    assert!(
        err.starts_with(&dir.join("t.jsonl").display().to_string()),
        "{err}"
    );
    assert!(err.contains(":2:"), "{err}");
    // A tape with no model call on it (empty, or only a resolver's
    // answers) leaves the extractor nothing to answer: refused.
    for (test, tape) in [
        ("empty-tape", ""),
        (
            "resolver-tape",
            "{\"kind\": \"resolver:balance\", \"input\": 1, \"output\": 2}\n",
        ),
    ] {
        let dir = folder(test, &text, &[("t.jsonl", tape)]);
        let err = Agent::load(&dir).unwrap_err().to_string();
        assert_eq!(
            err,
            format!(
                "{}: the tape holds no model calls (entries of kind `llm`), so the extractor \
                 could answer nothing: record it with TapedLlm::recording",
                dir.join("t.jsonl").display()
            )
        );
    }
}

#[test]
fn a_folder_without_an_agent_file_says_so() {
    let dir = scratch("agent-none");
    let err = Agent::load(&dir).unwrap_err().to_string();
    assert!(
        err.starts_with(&dir.join("agent.json").display().to_string()),
        "{err}"
    );
    assert!(err.contains("cannot read it"), "{err}");
}

/// A file saved in another encoding (or damaged) is refused at the first
/// byte that is not UTF-8, by line, column and offset: the agent file, and
/// the spec it names.
#[test]
fn a_file_that_is_not_utf8_is_refused_where_it_stops_being_utf8() {
    let dir = scratch("agent-latin1");
    // "é" in Latin-1 on the second line.
    let mut latin1 = format!("{{\"v\": 1, {LINES},\n \"instruction\": \"caf\"}}").into_bytes();
    let at = latin1.iter().rposition(|&b| b == b'f').unwrap() + 1;
    latin1.insert(at, 0xe9);
    std::fs::write(dir.join("agent.json"), &latin1).unwrap();
    let err = Agent::load(&dir).unwrap_err().to_string();
    let file = dir.join("agent.json").display().to_string();
    assert_eq!(
        err,
        format!("{file}: line 2, column 21 (byte {at}): 0xe9 is not UTF-8; save the file as UTF-8")
    );
    let text = format!("{{\"v\": 1, {LINES}, \"spec\": \"s.spec.json\"}}");
    std::fs::write(dir.join("agent.json"), text).unwrap();
    std::fs::write(dir.join("s.spec.json"), b"{\xff}").unwrap();
    let err = Agent::load(&dir).unwrap_err().to_string();
    assert!(
        err.ends_with(
            "s.spec.json: line 1, column 2 (byte 1): 0xff is not UTF-8; save the file as UTF-8"
        ),
        "{err}"
    );
}

/// A normal build refuses the planted bug's switch, saying why.
#[cfg(not(feature = "planted-bug"))]
#[test]
fn the_planted_bug_needs_its_feature() {
    let text = format!("{{\"v\": 1, {LINES},\n \"planted_bug\": true}}");
    let err = error("planted", &text, &[]);
    assert!(
        err.starts_with(
            "agent.json:2:17: at planted_bug: `planted_bug` turns on deliberately broken behaviour"
        ),
        "{err}"
    );
    assert!(err.contains("--features planted-bug"), "{err}");
}

/// `resumable` turns transparent resumption on; the reconnect fault needs
/// it, and says so.
#[test]
fn resumption_is_a_switch_and_its_fault_needs_it() {
    let dir = folder(
        "resumable",
        &format!("{{\"v\": 1, {LINES}, \"resumable\": true}}"),
        &[],
    );
    let agent = Agent::load(&dir).unwrap();
    assert!(agent.resumable());
    assert!(agent.repertoire.resumption.is_transparent());
    let setup = setup_of(&agent);
    assert_eq!(
        setup["setup"]["sessionResumption"],
        serde_json::json!({ "transparent": true })
    );

    let text = format!("{{\"v\": 1, {LINES},\n \"faults\": {{\"reconnect\": 0.3}}}}");
    assert_eq!(
        error("reconnect-alone", &text, &[]),
        "agent.json:2:26: at faults.reconnect: `reconnect` needs a session that resumes on new \
         connections: add \"resumable\": true"
    );
    let text = format!("{{\"v\": 1, {LINES},\n \"resumable\": \"yes\"}}");
    let err = error("resumable-string", &text, &[]);
    assert!(
        err.starts_with(
            "agent.json:2:15: at resumable: expected true, false, or {\"transparent\": true or \
             false}, found the string \"yes\""
        ),
        "{err}"
    );
}

/// `{"transparent": false}` resumes without replaying (the setup asks for
/// resumption and nothing more); a misspelt or mistyped member is named.
#[test]
fn resumption_without_replay_is_an_object_whose_member_is_checked() {
    let dir = folder(
        "resumable-opaque",
        &format!("{{\"v\": 1, {LINES}, \"resumable\": {{\"transparent\": false}}}}"),
        &[],
    );
    let agent = Agent::load(&dir).unwrap();
    assert!(agent.resumable());
    assert!(!agent.repertoire.resumption.is_transparent());
    let setup = setup_of(&agent);
    assert_eq!(setup["setup"]["sessionResumption"], serde_json::json!({}));

    let text = format!("{{\"v\": 1, {LINES},\n \"resumable\": {{\"transparnt\": false}}}}");
    let err = error("resumable-misspelt", &text, &[]);
    assert!(
        err.starts_with(
            "agent.json:2:30: at resumable.transparnt: unknown key `transparnt` in `resumable`"
        ),
        "{err}"
    );
    assert!(err.contains("did you mean `transparent`?"), "{err}");
    let text = format!("{{\"v\": 1, {LINES},\n \"resumable\": {{\"transparent\": \"no\"}}}}");
    let err = error("resumable-mistyped", &text, &[]);
    assert!(
        err.starts_with(
            "agent.json:2:31: at resumable.transparent: expected true or false, found the string \"no\""
        ),
        "{err}"
    );
    let text = format!("{{\"v\": 1, {LINES},\n \"resumable\": {{}}}}");
    let err = error("resumable-empty", &text, &[]);
    assert!(
        err.contains("at resumable: missing key `transparent`"),
        "{err}"
    );
}

/// The object form may declare the reconnect policy; bad numbers are
/// errors at their position.
#[test]
fn resumption_declares_its_attempts_and_backoff() {
    let text = format!(
        "{{\"v\": 1, {LINES}, \"resumable\": {{\"transparent\": true, \"attempts\": 2, \"backoff_ms\": [100, 900]}}}}"
    );
    let agent = Agent::load(folder("resumable-policy", &text, &[])).unwrap();
    let policy = &agent.repertoire.resumption;
    assert!(policy.is_transparent());
    assert_eq!(policy.max_attempts(), 2);
    assert_eq!(
        policy.backoff_bounds(),
        (Duration::from_millis(100), Duration::from_millis(900))
    );
    // Left out, a number keeps `Resumption::on()`'s.
    let text = format!(
        "{{\"v\": 1, {LINES}, \"resumable\": {{\"transparent\": false, \"attempts\": 3}}}}"
    );
    let agent = Agent::load(folder("resumable-attempts", &text, &[])).unwrap();
    let default = Resumption::on();
    assert_eq!(agent.repertoire.resumption.max_attempts(), 3);
    assert_eq!(
        agent.repertoire.resumption.backoff_bounds(),
        default.backoff_bounds()
    );

    let text = format!(
        "{{\"v\": 1, {LINES},\n \"resumable\": {{\"transparent\": true, \"attempts\": 0}}}}"
    );
    let err = error("resumable-no-attempts", &text, &[]);
    assert!(
        err.starts_with("agent.json:2:49: at resumable.attempts: expected attempts per reconnect: a whole number from 1 to 20, found the number 0"),
        "{err}"
    );
    let text = format!(
        "{{\"v\": 1, {LINES},\n \"resumable\": {{\"transparent\": true, \"backoff_ms\": [3000, 400]}}}}"
    );
    let err = error("resumable-backoff-reversed", &text, &[]);
    assert!(
        err.contains("at resumable.backoff_ms: the wait before the first attempt and the longest, in milliseconds: the low end 3000 is above the high end 400"),
        "{err}"
    );
    let text = format!(
        "{{\"v\": 1, {LINES},\n \"resumable\": {{\"transparent\": true, \"backof_ms\": [1, 2]}}}}"
    );
    let err = error("resumable-backoff-misspelt", &text, &[]);
    assert!(err.contains("did you mean `backoff_ms`?"), "{err}");
}

#[test]
fn every_sim_agent_loads() {
    for name in [
        "weather",
        "payment",
        "booking",
        "support",
        "resumable",
        "checkout",
        "pharmacy",
    ] {
        let agent = super::agent(name);
        assert_eq!(agent.name, name);
        assert!(!agent.planted_bug());
        assert_eq!(
            agent.resumable(),
            ["resumable", "pharmacy", "support"].contains(&name)
        );
    }
}

/// A goal on a state key no tool writes would never be reached: it is
/// refused, naming the nearest key a tool writes.
#[test]
fn a_goal_on_a_state_key_no_tool_writes_names_the_nearest() {
    let text = format!(
        "{{\"v\": 1, {LINES},\n \"tools\": [{{\"name\": \"verify\", \"writes\": {{\"verified\": true}}}}],\n \"sometimes\": [{{\"name\": \"ok\", \"state\": \"verifed\"}}]}}"
    );
    let err = error("goal-key", &text, &[]);
    assert!(
        err.contains(
            "at sometimes[0].state: no tool, extractor or resolver writes the state key \"verifed\"; did you mean \
             `verified`? (keys written: verified)"
        ),
        "{err}"
    );
}

/// A resolver writes its slot, so a goal may wait for it (`sim/resumable`'s
/// `receipted`), and a misspelt one is measured against it too.
#[test]
fn a_goal_may_name_a_resolvers_slot() {
    let text = format!(
        "{{\"v\": 1, {LINES},\n \"tools\": [{{\"name\": \"verify\", \"writes\": {{\"verified\": true}}}}],\n \"resolvers\": {{\"table\": {{\"value\": 1}}}},\n \"sometimes\": [{{\"name\": \"seated\", \"state\": \"tabel\"}}]}}"
    );
    let err = error("goal-resolver-key", &text, &[]);
    assert!(
        err.contains(
            "at sometimes[0].state: no tool, extractor or resolver writes the state key \"tabel\"; \
             did you mean `table`? (keys written: table, verified)"
        ),
        "{err}"
    );
    let bank = super::agent("resumable");
    assert!(
        bank.sometimes
            .iter()
            .any(|goal| matches!(goal, AgentGoal::State { key, .. } if key == "receipt")),
        "{:?}",
        bank.sometimes
    );
}

/// A `"phases"` plan that could never run as written is refused: a
/// condition on tool outcomes or on the runtime's keys, a key no tool
/// writes, a transition out of a phase nothing enters, no transitions.
#[test]
fn phases_read_the_tools_keys_and_every_phase_is_entered() {
    let with = |phases: &str| {
        format!(
            "{{\"v\": 1, {LINES},\n \"tools\": [{{\"name\": \"verify\", \"writes\": {{\"verified\": true}}}}],\n \"phases\": {phases}}}"
        )
    };
    let cases = [
        (
            "outcome",
            r#"{"initial": "a", "transitions": [{"from": "a", "to": "b", "when": {"called_ok": "verify"}}]}"#,
            "at phases.transitions[0].when: a phase's condition reads state, not tool outcomes: \
             instead of a guard on \"verify\", use a key it writes",
        ),
        (
            "session-key",
            r#"{"initial": "a", "transitions": [{"from": "a", "to": "b", "when": {"exists": "session:turn_count"}}]}"#,
            "at phases.transitions[0].when: a phase's condition reads the keys the agent's tools \
             write, not \"session:turn_count\"",
        ),
        (
            "unknown-key",
            r#"{"initial": "a", "transitions": [{"from": "a", "to": "b", "when": {"not": {"is_true": "verifed"}}}]}"#,
            "at phases.transitions[0].when: no tool, extractor or resolver writes the state key \"verifed\"; did you \
             mean `verified`?",
        ),
        (
            "unreachable",
            r#"{"initial": "start", "transitions": [{"from": "start", "to": "checked", "when": {"is_true": "verified"}}, {"from": "chekced", "to": "done", "when": {"is_true": "verified"}}]}"#,
            "at phases.transitions[1]: no transition enters the phase \"chekced\" and it is not \
             the initial one; did you mean `checked`?",
        ),
        (
            "empty",
            r#"{"initial": "a", "transitions": []}"#,
            "at phases.transitions: expected at least one transition, found an empty list",
        ),
        (
            "not-a-guard",
            r#"{"initial": "a", "transitions": [{"from": "a", "to": "b", "when": {"maybe": "verified"}}]}"#,
            "at phases.transitions[0].when: not a guard:",
        ),
    ];
    for (test, phases, expected) in cases {
        let err = error(&format!("phases-{test}"), &with(phases), &[]);
        assert!(err.contains(expected), "{test}: {err}");
        assert!(err.starts_with("agent.json:"), "{test}: {err}");
    }
}

/// `"temporal"` patterns are named once each, last at most an hour and
/// read the keys the tools write, as phases do.
#[test]
fn temporal_patterns_are_named_once_and_read_the_tools_keys() {
    let with = |temporal: &str| {
        format!(
            "{{\"v\": 1, {LINES},\n \"tools\": [{{\"name\": \"verify\", \"writes\": {{\"verified\": true}}}}],\n \"temporal\": {temporal}}}"
        )
    };
    let ok = r#"{"name": "unverified", "for_ms": 5000, "when": {"not": {"is_true": "verified"}}}"#;
    let dir = folder("temporal-ok", &with(&format!("[{ok}]")), &[]);
    let loaded = Agent::load(&dir).unwrap();
    assert_eq!(loaded.temporal.len(), 1);
    assert_eq!(loaded.temporal[0].lasting, Duration::from_secs(5));
    let cases = [
        (
            "twice",
            format!("[{ok}, {ok}]"),
            "at temporal[1].name: a second pattern named \"unverified\": names are unique",
        ),
        (
            "too-long",
            r#"[{"name": "x", "for_ms": 3600001, "when": {"is_true": "verified"}}]"#.to_string(),
            "at temporal[0].for_ms:",
        ),
        (
            "outcome",
            r#"[{"name": "x", "for_ms": 10, "when": {"called": "verify"}}]"#.to_string(),
            "at temporal[0].when: a temporal pattern's condition reads state, not tool outcomes",
        ),
        (
            "unknown-key",
            r#"[{"name": "x", "for_ms": 10, "when": {"exists": "verifyed"}}]"#.to_string(),
            "at temporal[0].when: no tool, extractor or resolver writes the state key \"verifyed\"; did you mean \
             `verified`?",
        ),
        (
            "empty-name",
            r#"[{"name": " ", "for_ms": 10, "when": {"exists": "verified"}}]"#.to_string(),
            "at temporal[0].name: expected a pattern name, found an empty string",
        ),
    ];
    for (test, temporal, expected) in cases {
        let err = error(&format!("temporal-{test}"), &with(&temporal), &[]);
        assert!(err.contains(expected), "{test}: {err}");
    }
}

/// `"resolvers"` fill the resolved slots of the agent's conversation spec:
/// each names one, each resolved slot has one, no tool writes one, and a
/// resolver's keys and value are checked.
#[test]
fn resolvers_fill_exactly_the_specs_resolved_slots() {
    let spec = r#"{"v": 1, "kind": "conversation", "stages": [
        {"id": "party", "allow": ["set_party"], "slots": [{"key": "party_size"}]},
        {"id": "book", "after": ["party"], "slots": [{"key": "table", "resolve_from": ["party_size"]}]}
    ]}"#;
    let with = |tool_writes: &str, resolvers: &str| {
        format!(
            "{{\"v\": 1, {LINES}, \"spec\": \"s.spec.json\",\n \"tools\": [{{\"name\": \"set_party\", \"writes\": {tool_writes}}}],\n \"resolvers\": {resolvers}}}"
        )
    };
    let ok = r#"{"table": {"latency_ms": [5, 50], "failure_rate": 0.5, "value": "for {args.party_size}"}}"#;
    let dir = folder(
        "resolvers-ok",
        &with(r#"{"party_size": 4}"#, ok),
        &[("s.spec.json", spec)],
    );
    let loaded = Agent::load(&dir).unwrap();
    assert_eq!(loaded.resolvers.len(), 1);
    assert_eq!(loaded.resolvers[0].slot, "table");
    assert_eq!(
        loaded.resolvers[0].value_for(&serde_json::json!({"party_size": 4})),
        serde_json::json!("for 4")
    );
    let cases = [
        (
            "unknown-slot",
            r#"{"party_size": 4}"#,
            r#"{"tabel": {"value": 1}, "table": {"value": 1}}"#,
            "at resolvers.tabel: tabel is not a resolved slot of the agent's conversation spec \
             (s.spec.json resolves table)",
        ),
        (
            "missing",
            r#"{"party_size": 4}"#,
            "{}",
            "at spec: the conversation spec s.spec.json resolves table from other keys, but the \
             agent file gives it no resolver",
        ),
        (
            "tool-writes-it",
            r#"{"party_size": 4, "table": 1}"#,
            ok,
            "at resolvers.table: tool set_party writes table, but a resolved slot is written by \
             its resolver alone",
        ),
        (
            "no-value",
            r#"{"party_size": 4}"#,
            r#"{"table": {"latency_ms": [5, 50]}}"#,
            "at resolvers.table: missing key `value`",
        ),
        (
            "bad-rate",
            r#"{"party_size": 4}"#,
            r#"{"table": {"failure_rate": 2, "value": 1}}"#,
            "at resolvers.table.failure_rate: expected failure_rate: a number from 0 to 1",
        ),
        (
            "typo",
            r#"{"party_size": 4}"#,
            r#"{"table": {"valu": 1}}"#,
            "at resolvers.table.valu: unknown key `valu` in a resolver; did you mean `value`?",
        ),
        (
            "not-an-object",
            r#"{"party_size": 4}"#,
            "[]",
            "at resolvers: expected an object of slot → resolver",
        ),
    ];
    for (test, writes, resolvers, expected) in cases {
        let err = error(
            &format!("resolvers-{test}"),
            &with(writes, resolvers),
            &[("s.spec.json", spec)],
        );
        assert!(err.contains(expected), "{test}: {err}");
    }
    // A flow spec resolves nothing, so a resolver has no slot to fill.
    let flow = r#"{"v": 1, "kind": "flow", "steps": [{"id": "a", "allow": ["set_party"]}]}"#;
    let err = error(
        "resolvers-flow",
        &with(r#"{"party_size": 4}"#, ok),
        &[("s.spec.json", flow)],
    );
    assert!(
        err.contains("(s.spec.json is a flow, with no slots)"),
        "{err}"
    );
    // Nor does an agent with no spec at all.
    let no_spec = format!(
        "{{\"v\": 1, {LINES}, \"tools\": [{{\"name\": \"set_party\"}}],\n \"resolvers\": {{\"table\": {{\"value\": 1}}}}}}"
    );
    let err = error("resolvers-no-spec", &no_spec, &[]);
    assert!(err.contains("(the agent has no spec)"), "{err}");
}

/// A key given twice in one object, anywhere in the file (a tool's
/// `result`, its `parameters`), is refused at the second one: read as
/// JSON, the file would keep the last and drop the first without a word.
#[test]
fn a_key_given_twice_is_named_where_it_repeats() {
    let text = format!(
        "{{\"v\": 1, {LINES},\n \"tools\": [{{\"name\": \"t\",\n   \"result\": {{\"ok\": true, \"ok\": false}}}}]}}"
    );
    assert_eq!(
        error("duplicate-result", &text, &[]),
        "agent.json:3:27: the key `ok` is given twice in one object; give it once"
    );
    let text = format!(
        "{{\"v\": 1, {LINES},\n \"tools\": [{{\"name\": \"t\", \"parameters\": {{\"type\": \"OBJECT\",\n   \"properties\": {{\"a\": {{}}, \"a\": {{\"type\": \"STRING\"}}}}}}}}]}}"
    );
    assert_eq!(
        error("duplicate-parameter", &text, &[]),
        "agent.json:3:28: the key `a` is given twice in one object; give it once"
    );
}
