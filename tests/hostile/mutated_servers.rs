//! A server that sends what no Live server would: the soak's own scripts
//! with one frame (or one tool call) changed value by value, a field of
//! the wrong type, a list emptied, a number past u64, a payload made
//! `null`. The session reads what it can of such a frame and warns about
//! the rest; it never panics, never runs a call twice or one its flow
//! refused, and never lets a secret or a broken order through; and every
//! check that models the frames reads them as the protocol does (a
//! payload it cannot read left out, a member that is `null` absent), so
//! it agrees with a session that is right.
//!
//! Three judge the script rather than the session, and are not asked:
//! `protocol` (the script expects what a session that read the frame as
//! first written would do: a turn's text made `{}`, the session moves at
//! a `goAway` with the handle it holds, not the one the script gives after
//! that turn), `liveness` (a script waiting for a move whose `goAway` it
//! made unreadable waits for ever) and the budgets (a server that never
//! sends the interruption makes barge-in slow).

use livesim::Seed;
use livesim::soak::{Agent, Soak, invariants};
use livesim::testing::ScriptedServer;
use proptest::prelude::*;

use super::json_changes::{CHANGES, cases, change_value};

/// Whether the check named `invariant` judges the script's own
/// expectations rather than the session.
fn judges_the_script(invariant: &str) -> bool {
    invariant == invariants::PROTOCOL
        || invariant == invariants::LIVENESS
        || invariant.starts_with("budget(")
}

/// The agents of `sim/`, by name.
const AGENTS: [&str; 8] = [
    "booking",
    "checkout",
    "payment",
    "pharmacy",
    "refunds",
    "resumable",
    "support",
    "weather",
];

proptest! {
    // PROPTEST_CASES (64 by default): each case is one session.
    #![proptest_config(cases(64, 1))]

    /// Whatever one frame of a script is changed to, a script livesim's
    /// reader accepts never makes the session panic or fail a check that
    /// judges the session.
    #[test]
    fn a_changed_frame_is_read_or_warned_about_never_a_panic(
        agent in any::<prop::sample::Index>(),
        seed in 0u64..1_000,
        frame in any::<prop::sample::Index>(),
        changes in prop::collection::vec((any::<u32>(), 0..CHANGES), 1..3),
    ) {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("sim")
            .join(AGENTS[agent.index(AGENTS.len())]);
        let agent = Agent::load(&dir).expect("a sim/ agent");
        let soak = Soak::agent(&agent)
            .check_determinism_every(0)
            .explore(false)
            .keep(false);
        let mut case = soak.case(Seed::new(seed));
        let mut script = case.script.to_json();
        let actions = script["actions"].as_array_mut().expect("a script's actions");
        let frames: Vec<usize> = (0..actions.len())
            .filter(|&i| {
                ["send", "call", "call_many"]
                    .iter()
                    .any(|key| actions[i].get(key).is_some())
            })
            .collect();
        prop_assume!(!frames.is_empty());
        let at = frames[frame.index(frames.len())];
        // The action's body, not its key: `{"send": <frame>}`.
        let body = actions[at]
            .as_object_mut()
            .and_then(|action| action.values_mut().next())
            .expect("an action with a body");
        change_value(body, &changes);
        let text = serde_json::to_string(&script).expect("JSON");
        // A script the reader refuses is no server livesim would play.
        let Ok(changed) = ScriptedServer::from_json_str(&text, "changed.json") else {
            return Ok(());
        };
        case.script = changed;
        let run = soak.run_case(&case);
        let found: Vec<String> = run
            .failures
            .iter()
            .filter(|f| !judges_the_script(&f.invariant))
            .map(|f| format!("{}: {}", f.invariant, f.message))
            .collect();
        prop_assert!(found.is_empty(), "{:?}\n{}", found, actions_at(&script, at));
    }
}

/// The changed action, for the failure message.
fn actions_at(script: &serde_json::Value, at: usize) -> String {
    script["actions"][at].to_string()
}
