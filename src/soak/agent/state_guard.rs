//! Conditions on state in an agent file (a phase's `"when"`, a temporal
//! pattern's): flow guards that read only the keys the agent's tools
//! write, decoded with errors at their position and evaluated on the
//! session's state.
//!
//! Tool outcomes (`called`, `called_ok`) are not state, and the
//! runtime's keys (`session:…`, `flow:…`) change on their own clock: a
//! condition on them would move with the telemetry timer, not the
//! conversation.

use crate::flow::Guard;
use crate::flow::guard::{Facts, Tallies};
use crate::soak::agent::final_state;
use crate::soak::file_reader::{Decoded, Node};
use crate::state::State;

/// The guard at `node`, reading only `keys` (what the tools write).
pub(crate) fn decode(node: &Node<'_>, what: &str, keys: &[&str]) -> Decoded<Guard> {
    let guard = serde_json::from_value::<Guard>(node.value.clone())
        .or_else(|e| node.fail(format!("not a guard: {e}")))?;
    state_only(node, what, &guard, keys)?;
    Ok(guard)
}

/// Whether `guard` holds on the session's `state`.
pub(crate) fn holds(guard: &Guard, state: &State) -> bool {
    guard.holds(&Facts {
        tallies: &Tallies::new(),
        state,
    })
}

/// `Ok` when `guard` reads only state keys the tools write.
fn state_only(node: &Node<'_>, what: &str, guard: &Guard, keys: &[&str]) -> Decoded<()> {
    match guard {
        Guard::Called(tool) | Guard::CalledOk(tool) => node.fail(format!(
            "{what} reads state, not tool outcomes: instead of a guard on {tool:?}, use a key \
             it writes"
        )),
        Guard::IsTrue(key) | Guard::Exists(key) | Guard::Equals { key, .. } => {
            if key.starts_with("session:") || key.starts_with("flow:") {
                return node.fail(format!(
                    "{what} reads the keys the agent's tools write, not {key:?} (the runtime \
                     writes it, on its own clock)"
                ));
            }
            final_state::known_key(node, key, keys)
        }
        Guard::All(guards) | Guard::Any(guards) => guards
            .iter()
            .try_for_each(|g| state_only(node, what, g, keys)),
        Guard::Not(inner) => state_only(node, what, inner, keys),
    }
}
