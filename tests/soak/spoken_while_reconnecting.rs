//! The microphone streams on while the connection is down: with `typing`
//! on, one message in four the soak's user sends while a resuming session
//! reconnects is a chunk of audio, which the session must queue and send
//! on the next connection as it does a typed line.

use livesim::Seed;
use livesim::soak::{FaultKind, Soak};
use livesim::testing::Action;

use super::{agent, reconnect_windows};

/// The base64 data of a `realtimeInput` audio chunk the server got.
fn audio_data(message: &serde_json::Value) -> Option<&str> {
    message.pointer("/realtimeInput/audio/data")?.as_str()
}

/// `sim/resumable`'s scripts (typing and reconnects always on) wait for
/// audio right after a connection ends and the next resumes; in a passing
/// in-memory run, a chunk the user sent while the session reconnected
/// reached the server once, after the next connection's setup.
#[test]
fn audio_sent_while_reconnecting_reaches_the_next_connection() {
    let soak = Soak::agent(&agent("resumable"))
        .fault(FaultKind::Typing, 1.0)
        .fault(FaultKind::Reconnect, 1.0)
        .fault(FaultKind::Network, 0.0)
        .check_determinism_every(0);
    let after_reconnect = (0..40)
        .filter(|&s| {
            let case = soak.case(Seed::new(s));
            let actions = case.script.actions();
            (2..actions.len()).any(|i| {
                matches!(&actions[i], Action::Expect(key) if key == "realtimeInput.audio")
                    && matches!(actions[i - 1], Action::Reconnect(_))
                    && matches!(actions[i - 2], Action::Close(_) | Action::Abort)
            })
        })
        .count();
    assert!(after_reconnect >= 5, "{after_reconnect} of 40 scripts");

    let found = (0..200).find_map(|s| {
        let run = soak.run_seed(Seed::new(s));
        let record = run.record?;
        assert!(run.failures.is_empty(), "seed {s}: {:?}", run.failures);
        let windows = reconnect_windows(&record, false);
        let spoken = (0..record.typed.len()).find(|&i| {
            record.typed[i].starts_with("audio ")
                && windows
                    .iter()
                    .any(|(from, to)| *from <= record.typed_at[i] && record.typed_at[i] < *to)
        })?;
        Some((s, record, spoken))
    });
    let (seed, record, spoken) = found.expect("a run whose user spoke while it reconnected");
    let data = record.typed[spoken].trim_start_matches("audio ");
    // Sent once; a transparent resumption may send it again later, as a
    // replay of what the server had not consumed (a `goAway` move after it).
    let replays = record.replays();
    let got: Vec<usize> = (0..record.sent.len())
        .filter(|&i| audio_data(&record.sent[i]) == Some(data) && !replays.contains(&i))
        .collect();
    assert_eq!(got.len(), 1, "seed {seed}: the chunk arrived {got:?}");
    let setup_before = (0..got[0]).rfind(|&i| record.sent[i].get("setup").is_some());
    let typed_at = record.typed_at[spoken];
    assert!(
        setup_before.is_some_and(|i| i > 0 && record.sent_at[i] >= typed_at),
        "seed {seed}: the chunk came before the next connection's setup"
    );
}
