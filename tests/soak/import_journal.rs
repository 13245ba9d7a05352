//! Production sessions become seeds, from a state journal: a session's
//! journal is imported as a script of its agent that replays clean and
//! makes every recorded call again, with its id, admitted or refused as
//! recorded and ending as it did; arguments come back from what the calls
//! wrote; damage is named and every good entry kept.

use std::collections::BTreeMap;

use livesim::Seed;
use livesim::soak::{Agent, Case, RunRecord, Soak, import_journal, is_journal};
use livesim::state::StateMutation;
use livesim::testing::{Action, ScriptedServer};
use serde_json::{Value, json};

use super::{agent, seeds};

/// A journal as `FileJournalSink` writes it: the header, one entry a line.
fn journal_file(entries: &[StateMutation]) -> Vec<u8> {
    let mut bytes = b"{\"v\":1,\"kind\":\"journal\"}\n".to_vec();
    for entry in entries {
        bytes.extend(serde_json::to_vec(entry).unwrap());
        bytes.push(b'\n');
    }
    bytes
}

/// What became of each call, read straight from the journal's JSON (a
/// model of its own, not the importer's reading): id → "admitted tool
/// ok" / "admitted tool failed" / "admitted tool cancelled" / "refused
/// tool" / "admitted tool open".
fn calls(entries: &[StateMutation]) -> BTreeMap<String, String> {
    let mut calls = BTreeMap::new();
    for e in entries {
        let (id, tool) = (e.value["id"].as_str(), e.value["tool"].as_str());
        let (Some(id), Some(tool)) = (id, tool) else {
            continue;
        };
        let what = match e.key.as_str() {
            "flow:tool_call" => format!("admitted {tool} open"),
            "flow:tool_denied" => format!("refused {tool}"),
            "flow:tool_result" if e.value["ok"] == true => format!("admitted {tool} ok"),
            "flow:tool_result" => format!("admitted {tool} failed"),
            "flow:tool_cancelled" => format!("admitted {tool} cancelled"),
            _ => continue,
        };
        calls.insert(id.to_string(), what);
    }
    calls
}

// Invariant: a session's journal, imported as a script of its agent and
// played calm, passes every invariant and makes every call the journal
// records again, with the same id, admitted or refused as recorded and
// ending the same way, up to the first call that took longer than its tool
// does calm or that the import notes it cannot make as recorded.
#[test]
fn every_recorded_call_is_made_again_and_ends_as_it_did() {
    let mut compared = 0;
    for name in ["payment", "resumable", "booking", "support", "weather"] {
        let agent = agent(name);
        let soak = Soak::agent(&agent);
        for seed in seeds(10) {
            let record = soak.run_seed(Seed::new(seed)).record.unwrap();
            let bytes = journal_file(&record.journal);
            assert!(is_journal(&bytes));
            let imported = import_journal("prod.journal.jsonl", &bytes, name, &agent)
                .unwrap_or_else(|e| panic!("{name} seed {seed}: {e}"));
            assert!(imported.damaged.is_empty(), "{:?}", imported.damaged);
            let run = soak.run_case(&Case::calm(Seed::new(seed), imported.script.clone()));
            if let Some(failure) = run.failures.first() {
                panic!(
                    "{name} seed {seed}: the imported script breaks {}: {}\n{}",
                    failure.invariant,
                    failure.message,
                    imported.script.to_json()
                );
            }
            let replayed = calls(&run.record.unwrap().journal);
            let mut recorded = calls(&record.journal);
            // The agent's tools run calm in an imported case (each at its
            // shortest latency), so once a call took longer in the journal,
            // or the import notes a call it cannot make as recorded, the
            // rest of the session may go another way: compare the calls
            // journaled up to the first of them.
            let noted = |id: &str| {
                imported
                    .notes
                    .iter()
                    .any(|n| n.starts_with(&format!("{id}:")))
            };
            let shortest = |tool: &str| {
                agent
                    .tools
                    .iter()
                    .find(|t| t.name == tool)
                    .map_or(0, |t| t.latency.start().as_millis() as u64)
            };
            let at = |id: &str, key: &str| {
                record
                    .journal
                    .iter()
                    .find(|e| e.key == key && e.value["id"] == id)
                    .map(|e| e.timestamp.unix_millis())
            };
            let slower = |e: &StateMutation| {
                let (Some(id), Some(tool)) = (e.value["id"].as_str(), e.value["tool"].as_str())
                else {
                    return false;
                };
                e.key == "flow:tool_call"
                    && at(id, "flow:tool_result")
                        .is_some_and(|done| done - e.timestamp.unix_millis() > shortest(tool))
            };
            let cutoff = record
                .journal
                .iter()
                .find(|e| e.value["id"].as_str().is_some_and(noted) || slower(e))
                .map_or(u64::MAX, |e| e.seq);
            let first_seq = |id: &str| {
                record
                    .journal
                    .iter()
                    .find(|e| e.value["id"] == id)
                    .map_or(u64::MAX, |e| e.seq)
            };
            recorded.retain(|id, _| first_seq(id) <= cutoff);
            compared += recorded.len();
            for (id, what) in &recorded {
                assert_eq!(
                    replayed.get(id),
                    Some(what),
                    "{name} seed {seed}: call {id}; notes: {:?}",
                    imported.notes
                );
            }
        }
    }
    assert!(compared >= 20, "only {compared} calls compared");
}

#[test]
fn arguments_come_back_from_what_the_call_wrote_and_a_failure_fails_again() {
    let payment = agent("payment");
    let journal = br#"{"v":1,"kind":"journal"}
{"seq":1,"key":"flow:tool_call","value":{"tool":"verify_identity","id":"call-1"},"timestamp":1000}
{"seq":2,"key":"verified","value":true,"timestamp":1200}
{"seq":3,"key":"customer","value":"Ada Byron","timestamp":1200}
{"seq":4,"key":"flow:tool_result","value":{"tool":"verify_identity","id":"call-1","ok":true},"timestamp":1200}
{"seq":5,"key":"flow:active","value":["pay"],"timestamp":1300}
{"seq":6,"key":"flow:tool_call","value":{"tool":"take_payment","id":"call-2"},"timestamp":4300}
{"seq":7,"key":"flow:tool_result","value":{"tool":"take_payment","id":"call-2","ok":false},"timestamp":4500}
{"seq":8,"key":"flow:tool_call","value":{"tool":"take_payment","id":"call-3"},"timestamp":5000}
{"seq":9,"key":"paid","value":17.25,"timestamp":5400}
{"seq":10,"key":"flow:tool_result","value":{"tool":"take_payment","id":"call-3","ok":true},"timestamp":5400}
{"seq":11,"key":"flow:active","value":[],"timestamp":5450}
"#;
    let imported = import_journal("j.jsonl", journal, "payment-j", &payment).unwrap();
    assert_eq!(imported.frames, 11);
    assert!(imported.notes.is_empty(), "{:?}", imported.notes);
    let actions = imported.script.actions();
    let calls: Vec<_> = actions
        .iter()
        .filter_map(|a| match a {
            Action::Call(call) => Some(call),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 3);
    assert_eq!(
        (calls[0].id.as_str(), calls[0].name.as_str()),
        ("call-1", "verify_identity")
    );
    assert_eq!(calls[0].args["name"], "Ada Byron");
    // The failed payment is missing an argument it requires...
    assert!(calls[1].args.get("amount").is_none(), "{}", calls[1].args);
    // ...and the one that went through paid what the journal says.
    assert_eq!(calls[2].args["amount"], json!(17.25));
    assert!(calls.iter().all(|c| c.wait));
    // Each turn waits for the user first; the pauses are the journal's.
    assert_eq!(actions[0], Action::Expect("clientContent".into()));
    assert!(actions.contains(&Action::PauseMs(3000)), "{actions:?}");
    assert!(actions.contains(&Action::PauseMs(100)), "{actions:?}");
    let turn_ends = actions
        .iter()
        .filter(|a| matches!(a, Action::Send(m) if m.pointer("/serverContent/turnComplete") == Some(&Value::Bool(true))))
        .count();
    assert_eq!(turn_ends, 2);

    let replayed = calls_of(&played_clean(&payment, 1, imported.script).journal);
    assert_eq!(replayed, ["call-1 ok", "call-2 failed", "call-3 ok"],);
}

/// What `agent`'s session did when `script` was played calm under `seed`;
/// it must pass every invariant.
fn played_clean(agent: &Agent, seed: u64, script: ScriptedServer) -> RunRecord {
    let run = Soak::agent(agent).run_case(&Case::calm(Seed::new(seed), script));
    if let Some(failure) = run.failures.first() {
        panic!("it breaks {}: {}", failure.invariant, failure.message);
    }
    run.record.expect("a run's record")
}

/// `id ok|failed` for each result, in order.
fn calls_of(entries: &[StateMutation]) -> Vec<String> {
    entries
        .iter()
        .filter(|e| e.key == "flow:tool_result")
        .map(|e| {
            let outcome = if e.value["ok"] == true {
                "ok"
            } else {
                "failed"
            };
            format!("{} {outcome}", e.value["id"].as_str().unwrap_or("?"))
        })
        .collect()
}

#[test]
fn a_damaged_journal_keeps_every_good_entry_and_names_each_bad_line() {
    let weather = agent("weather");
    let journal = br#"{"v":1,"kind":"journal"}
{"seq":1,"key":"flow:tool_call","value":{"tool":"get_weather","id":"call-1"},"timestamp":1000}
%%% not json %%%
{"seq":2,"key":"flow:tool_result","value":{"tool":"get_weather","id":"call-1","ok":true},"timestamp":1100,"removd":false}
{"seq":3,"key":"flow:tool_result","value":{"tool":"get_weather","id":"call-1","ok":true},"timestamp":1100}
{"seq":4,"key":"flow:active","value":[],"timestamp":1200}
{"seq":5,"key":"flow:act"#;
    let imported = import_journal("prod.jsonl", journal, "w", &weather).unwrap();
    assert_eq!(imported.frames, 3);
    assert_eq!(imported.damaged.len(), 3, "{:?}", imported.damaged);
    assert!(imported.damaged[0].starts_with("prod.jsonl:3: not a journal entry"));
    assert!(imported.damaged[1].starts_with("prod.jsonl:4: not a journal entry"));
    assert!(
        imported.damaged[1].contains("removd"),
        "{}",
        imported.damaged[1]
    );
    assert!(imported.damaged[2].starts_with("prod.jsonl:7: a torn last line"));
    played_clean(&weather, 2, imported.script);

    let err =
        import_journal("x.jsonl", b"{\"v\":1,\"kind\":\"tape\"}\n", "w", &weather).unwrap_err();
    assert_eq!(err, "x.jsonl:1: this is a tape file, not a journal");
    let err = import_journal("x.jsonl", b"garbage\n", "w", &weather).unwrap_err();
    assert!(
        err.starts_with("x.jsonl: no journal entry could be read (first problem: x.jsonl:1:"),
        "{err}"
    );
}
