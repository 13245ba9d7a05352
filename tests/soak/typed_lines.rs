//! What the user typed is in the transcript an extractor reads, at its
//! place: a message typed while the session reconnects, which the session
//! queues and sends on the next connection, stands where it was typed,
//! and a question whose window covers that place must hold it
//! (`extractor-input`).

use livesim::Seed;
use livesim::executor::Swarm;
use livesim::soak::{Case, FaultKind, Faults, RunRecord, Soak, invariants};
use livesim::testing::ScriptedServer;
use serde_json::{Value, json};

use super::{agent, verdict};

/// The model's one line, said before the connection ends.
const SAID: &str = "I found your order; it ships tomorrow.";

/// `sim/support` (extractor window 1) played calm through a script whose
/// second turn ends with nothing said but what the user typed while the
/// session reconnected: the connection closes 100 ms after turn 1 (the
/// frames read at the instant the user types may stand after what was
/// typed), the user types, the session resumes and sends it, and the
/// server ends the turn.
fn typed_between_connections() -> RunRecord {
    let run = Soak::agent(&agent("support")).run_case(&typed_between_connections_case(
        Seed::new(1),
        Faults::calm(),
    ));
    assert_eq!(run.verdict(), Ok(()));
    run.record.expect("a record")
}

/// The case [`typed_between_connections`] plays, under `seed` and `faults`.
fn typed_between_connections_case(seed: Seed, faults: Faults) -> Case {
    let script = ScriptedServer::from_json_str(
        &json!({"v": 1, "actions": [
            {"send": {"serverContent": {"inputTranscription": {"text": "Where is my order 7731?", "finished": true}}}},
            {"send": {"serverContent": {"modelTurn": {"parts": [{"text": SAID}]}}}},
            {"send": {"serverContent": {"turnComplete": true}}},
            {"resumption_update": {"handle": "handle-0x1-1-00c0ffee", "transparent": true}},
            {"pause_ms": 100},
            {"close": {"code": 1011, "reason": "internal error"}},
            {"reconnect": {"handle": "handle-0x1-1-00c0ffee"}},
            {"expect": "clientContent"},
            {"pause_ms": 200},
            {"send": {"serverContent": {"turnComplete": true}}}
        ]})
        .to_string(),
        "typed-between-connections.json",
    )
    .unwrap();
    Case {
        seed,
        swarm: Swarm::calm(),
        faults,
        script,
        decisions: Some(Vec::new()),
    }
}

/// The questions the extractor was asked, in order: where each is in the
/// journal and its transcript (the text of the model request noted).
fn questions(record: &RunRecord) -> Vec<(usize, String)> {
    record
        .journal
        .iter()
        .enumerate()
        .filter(|(_, m)| m.key == "soak:extractor_asked")
        .map(|(at, m)| {
            let request: Value = serde_json::from_str(m.value.as_str().unwrap()).unwrap();
            let text = request.pointer("/contents/0/parts/0/text").unwrap();
            (at, text.as_str().unwrap().to_string())
        })
        .collect()
}

/// The message typed between connections ends the transcript at turn 2:
/// a question there without it (the line said before it, as a transcript
/// that dropped it gives) fails `extractor-input`, naming the message and
/// when it was typed and sent. A message typed and never sent (here: left
/// out of what the server got) binds nothing.
#[test]
fn a_typed_line_left_out_of_the_transcript_is_caught() {
    let good = typed_between_connections();
    assert_eq!(verdict(invariants::EXTRACTOR_INPUT, &good), Ok(()));
    // The user typed one message, while the session reconnected: after
    // the close, before the second connection's setup.
    assert_eq!(good.typed.len(), 1, "{:?}", good.typed);
    let typed = good.typed[0].clone();
    let setups: Vec<usize> = (0..good.sent.len())
        .filter(|&i| good.sent[i].get("setup").is_some())
        .collect();
    assert_eq!(setups.len(), 2, "two connections");
    let sent = good
        .sent
        .iter()
        .position(|m| m.get("clientContent").is_some())
        .expect("the typed message reached the server");
    assert!(sent > setups[1], "sent on the second connection");
    assert!(
        good.typed_at[0] <= good.sent_at[setups[1]],
        "typed before it"
    );
    let asked = questions(&good);
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert_eq!(asked[1].1, format!("Transcript:\nuser: {typed}\n"));

    // The transcript left the typed line out: the question at turn 2 is
    // the line said before it.
    let mut dropped = good.clone();
    dropped.journal[asked[1].0].value = json!(asked[0].1);
    assert_eq!(asked[0].1, format!("Transcript:\nmodel: {SAID}\n"));
    let err = verdict(invariants::EXTRACTOR_INPUT, &dropped).unwrap_err();
    let expected = format!(
        "the extractor's question at turn 2 holds [(\"model\", {SAID:?})], which leaves out a \
         message the user typed and the session sent: {typed:?}, typed at t="
    );
    assert!(err.starts_with(&expected), "{err}");
    assert!(
        err.ends_with(
            "it stands in the transcript by then, and only lines of frames read since it was \
             typed may follow it (0: [])"
        ),
        "{err}"
    );

    // Had the session never sent it, the line might be gone with it.
    let mut unsent = dropped.clone();
    unsent.sent.remove(sent);
    unsent.sent_at.remove(sent);
    unsent.sent_on.remove(sent);
    assert_eq!(verdict(invariants::EXTRACTOR_INPUT, &unsent), Ok(()));
}

/// The same conversation over the simulated network (turmoil's TCP, the
/// real WebSocket transport, the network's own faults as the seed draws
/// them): the session's transport is tapped there, so the record has
/// when the session read each frame, and the typed line is held to its
/// place as in memory. The first seed whose run passes with the same two
/// connections and the typed message sent once on the second.
#[test]
fn a_typed_line_left_out_over_the_network_is_caught() {
    let soak = Soak::agent(&agent("support"));
    let network = Faults::calm().with(FaultKind::Network, 1.0);
    let good = (1..40)
        .find_map(|s| {
            let run = soak.run_case(&typed_between_connections_case(
                Seed::new(s),
                network.clone(),
            ));
            let record = run.record.filter(|_| run.failures.is_empty())?;
            let setups = record
                .sent
                .iter()
                .filter(|m| m.get("setup").is_some())
                .count();
            let typed = record
                .sent
                .iter()
                .filter(|m| m.get("clientContent").is_some())
                .count();
            (setups == 2 && typed == 1 && questions(&record).len() == 2).then_some(record)
        })
        .expect("a seed under 40 plays the conversation over the network as in memory");
    assert!(good.network.is_some(), "over the network");
    assert_eq!(verdict(invariants::EXTRACTOR_INPUT, &good), Ok(()));
    let asked = questions(&good);
    assert_eq!(
        asked[1].1,
        format!("Transcript:\nuser: {}\n", good.typed[0])
    );
    let mut dropped = good.clone();
    dropped.journal[asked[1].0].value = json!(asked[0].1);
    let err = verdict(invariants::EXTRACTOR_INPUT, &dropped).unwrap_err();
    assert!(
        err.contains("leaves out a message the user typed and the session sent"),
        "{err}"
    );
}
