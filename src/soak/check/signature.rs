//! A failure's signature: what it *is*, whatever its seed.
//!
//! A [`Signature`] is the agent, the invariant broken and the *shape* of
//! the failure's script: the kept case's script when the soak shrank it
//! (see [`Kept`]), else the script as found. The shape is the script's
//! actions in order, with call ids renamed `call-1`, `call-2`, … in order
//! of first appearance, resumption handles `handle-1`, …, every text,
//! argument, number and time left out, pauses dropped, a run of identical
//! steps other than calls counted once (text split across frames is one
//! step, audio streamed in chunks one), and a last call's `wait` left out
//! (nothing follows it to wait). Its [`id`](Signature::id) is twelve hex
//! digits of an FNV-1a hash: the same on every machine, in every run, for
//! every livesim that writes triage files of
//! [`TRIAGE_VERSION`](crate::soak::TRIAGE_VERSION).
//!
//! A failure the soak did not shrink (beyond `--save-limit`, or a second
//! invariant broken by a seed already kept for its first) has the shape
//! of its whole generated script, which rarely matches another seed's.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::executor::Fnv64;
use crate::soak::check::report::Failure;
use crate::soak::keep::kept::Kept;
use crate::testing::{Action, Call, ScriptedServer};

/// Steps a [`Signature::shape`] shows before it counts the rest.
const SHAPE_STEPS: usize = 6;

/// What a failure is, whatever its seed: the agent, the invariant it
/// broke, and the shape of the script that broke it.
///
/// ```
/// use livesim::soak::Signature;
/// use livesim::testing::ScriptedServer;
/// use serde_json::json;
///
/// let one = ScriptedServer::new()
///     .hears("What's the weather in Paris?")
///     .calls("get_weather", json!({"city": "Paris"}))
///     .says("Sunny.");
/// let other = ScriptedServer::new()
///     .hears("And in Kraków?")
///     .calls("get_weather", json!({"city": "Kraków"}))
///     .says("Rain all week.");
/// let a = Signature::of_script("weather", "liveness", &one);
/// let b = Signature::of_script("weather", "liveness", &other);
/// assert_eq!(a.id(), b.id());
/// assert_eq!(a.id().len(), 12);
/// assert_eq!(
///     a.shape(),
///     "send serverContent.inputTranscription{finished=true,text} → call call-1 get_weather → \
///      send serverContent.modelTurn.parts[text] → send serverContent.turnComplete=true"
/// );
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signature {
    /// The agent.
    pub agent: String,
    /// The invariant it broke.
    pub invariant: String,
    /// The script's steps, normalized (see the module docs).
    pub steps: Vec<String>,
}

impl Signature {
    /// The signature of `script` breaking `invariant` of `agent`.
    pub fn of_script(agent: &str, invariant: &str, script: &ScriptedServer) -> Self {
        let actions = script.actions();
        // Whether a call waits matters only to what follows it.
        let last = actions
            .iter()
            .rposition(|a| !matches!(a, Action::PauseMs(_)));
        let mut names = Names::default();
        let mut steps: Vec<String> = Vec::new();
        for (at, action) in actions.iter().enumerate() {
            names.waits_matter = Some(at) != last;
            let Some(step) = names.step(action) else {
                continue;
            };
            // Text split across frames is one step; a call made twice
            // (a repeated id) is two.
            if !step.starts_with("call") && steps.last() == Some(&step) {
                continue;
            }
            steps.push(step);
        }
        Signature {
            agent: agent.to_string(),
            invariant: invariant.to_string(),
            steps,
        }
    }

    /// The signature of `failure`: from its kept case's script when the
    /// soak kept it for the same invariant (shrunk, usually), else from
    /// the script it ran.
    pub fn of_failure(failure: &Failure, kept: &[Kept]) -> Self {
        let script = kept_case(failure, kept).map_or(&failure.script, |k| &k.entry.case.script);
        Self::of_script(&failure.agent, &failure.invariant, script)
    }

    /// Twelve lowercase hex digits: the top 48 bits of the FNV-1a hash of
    /// the agent, the invariant and the steps.
    pub fn id(&self) -> String {
        let mut hash = Fnv64::new();
        hash.write(b"livesim-triage-1");
        for part in [&self.agent, &self.invariant]
            .into_iter()
            .chain(&self.steps)
        {
            hash.write(&[0]);
            hash.write(part.as_bytes());
        }
        format!("{:012x}", hash.finish() >> 16)
    }

    /// The steps on one line, the first few of a long script and a count
    /// of the rest.
    pub fn shape(&self) -> String {
        if self.steps.is_empty() {
            return "(no actions)".to_string();
        }
        let mut line = self.steps[..self.steps.len().min(SHAPE_STEPS)].join(" → ");
        if self.steps.len() > SHAPE_STEPS {
            line.push_str(&format!(
                " → … ({} more steps)",
                self.steps.len() - SHAPE_STEPS
            ));
        }
        line
    }
}

/// The case the soak kept for `failure`, if it kept one for the same
/// invariant.
pub(crate) fn kept_case<'k>(failure: &Failure, kept: &'k [Kept]) -> Option<&'k Kept> {
    kept.iter().find(|k| {
        k.found.agent == failure.agent
            && k.found.seed == failure.seed
            && k.found.invariant == failure.invariant
            && k.entry.invariant == failure.invariant
    })
}

/// Call ids and handles renamed in order of first appearance.
#[derive(Default)]
struct Names {
    calls: BTreeMap<String, usize>,
    handles: BTreeMap<String, usize>,
    /// Whether an action follows this one (a call's `wait` says nothing
    /// otherwise).
    waits_matter: bool,
}

impl Names {
    fn call_id(&mut self, id: &str) -> String {
        let next = self.calls.len() + 1;
        format!("call-{}", self.calls.entry(id.to_string()).or_insert(next))
    }

    fn handle(&mut self, handle: &str) -> String {
        let next = self.handles.len() + 1;
        format!(
            "handle-{}",
            self.handles.entry(handle.to_string()).or_insert(next)
        )
    }

    fn call(&mut self, call: &Call) -> String {
        let id = self.call_id(&call.id);
        let wait = if call.wait || !self.waits_matter {
            ""
        } else {
            " nowait"
        };
        format!("{id} {}{wait}", call.name)
    }

    /// One action as a step; `None` for what the shape leaves out.
    fn step(&mut self, action: &Action) -> Option<String> {
        Some(match action {
            Action::Send(message) => format!("send {}", self.message(message)),
            Action::SendText(message) => format!("send-text {}", self.message(message)),
            Action::SendRaw(_) => "send-raw".to_string(),
            Action::Call(call) => format!("call {}", self.call(call)),
            Action::CallMany(calls) => {
                let mut each = Vec::new();
                for call in calls {
                    each.push(self.call(call));
                }
                format!("calls [{}]", each.join(", "))
            }
            Action::PauseMs(_) => return None,
            Action::Expect(key) => format!("expect {key}"),
            Action::Close(close) => format!("close {}", close.code),
            Action::RejectSetup(close) => format!("reject-setup {}", close.code),
            Action::Abort => "abort".to_string(),
            Action::ResumptionUpdate(update) => {
                let mut step = "resumption-update".to_string();
                if let Some(handle) = &update.handle {
                    step.push_str(&format!(" {}", self.handle(handle)));
                }
                if !update.resumable {
                    step.push_str(" not-resumable");
                }
                if update.transparent {
                    step.push_str(" transparent");
                }
                step
            }
            Action::GoAwayMs(_) => "go-away".to_string(),
            Action::Attach(members) => {
                let keys: Vec<&str> = members.keys().map(String::as_str).collect();
                format!("attach {}", keys.join(","))
            }
            Action::Reconnect(reconnect) => match &reconnect.handle {
                Some(handle) => format!("reconnect {}", self.handle(handle)),
                None => "reconnect fresh".to_string(),
            },
        })
    }

    /// A server message's shape: its members, keys sorted, a member with
    /// one member of its own written `key.member`.
    fn message(&mut self, message: &Value) -> String {
        self.value("", message)
    }

    /// A value's shape; `key` is the member it is in (`""` at the top).
    fn value(&mut self, key: &str, value: &Value) -> String {
        match value {
            Value::String(id) if key == "ids" => self.call_id(id),
            Value::String(_) => "…".to_string(),
            Value::Number(_) => "#".to_string(),
            Value::Bool(b) => b.to_string(),
            Value::Null => "null".to_string(),
            Value::Array(items) => {
                let mut shapes: Vec<String> = Vec::new();
                for item in items {
                    let shape = self.value(key, item);
                    if shapes.last() != Some(&shape) {
                        shapes.push(shape);
                    }
                }
                format!("[{}]", shapes.join(","))
            }
            Value::Object(map) => {
                let mut members: Vec<(&String, &Value)> = map.iter().collect();
                members.sort_by(|a, b| a.0.cmp(b.0));
                let shapes: Vec<String> = members
                    .into_iter()
                    .map(|(k, v)| self.member(k, v))
                    .collect();
                match shapes.as_slice() {
                    [one] => one.clone(),
                    _ => format!("{{{}}}", shapes.join(",")),
                }
            }
        }
    }

    /// A member's shape: a text is its key alone, a call id renamed.
    fn member(&mut self, key: &str, value: &Value) -> String {
        match value {
            Value::String(id) if key == "id" => format!("id={}", self.call_id(id)),
            Value::String(_) => key.to_string(),
            Value::Number(_) | Value::Bool(_) | Value::Null => {
                format!("{key}={}", self.value(key, value))
            }
            Value::Object(map) if map.len() == 1 => format!("{key}.{}", self.value(key, value)),
            Value::Object(_) | Value::Array(_) => format!("{key}{}", self.value(key, value)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;

    /// A parallel call whose second call is cancelled; `ids`, texts and
    /// pauses as given.
    fn cancelled(ids: [&str; 2], user: &str, pause: u64) -> ScriptedServer {
        ScriptedServer::new()
            .hears(user)
            .pause(Duration::from_millis(pause))
            .action(Action::CallMany(vec![
                Call {
                    id: ids[0].into(),
                    name: "get_weather".into(),
                    args: json!({"city": user}),
                    wait: false,
                },
                Call {
                    id: ids[1].into(),
                    name: "get_forecast".into(),
                    args: json!({"city": user, "days": pause}),
                    wait: false,
                },
            ]))
            .cancels([ids[1]])
            .resumption_update(format!("h-{user}"), true)
            .go_away(Duration::from_millis(pause))
            .reconnect_resuming(format!("h-{user}"))
            .says(format!("{user}, done"))
    }
    #[test]
    fn ids_texts_and_times_do_not_change_the_signature() {
        let a = Signature::of_script(
            "weather",
            "answered-once",
            &cancelled(["a", "b"], "Paris", 5),
        );
        let b = Signature::of_script(
            "weather",
            "answered-once",
            &cancelled(["call-7", "x9"], "Kraków, Zürich", 1200),
        );
        assert_eq!(a, b);
        assert_eq!(a.id(), b.id());
        assert_eq!(
            a.steps,
            [
                "send serverContent.inputTranscription{finished=true,text}",
                "calls [call-1 get_weather nowait, call-2 get_forecast nowait]",
                "send toolCallCancellation.ids[call-2]",
                "resumption-update handle-1",
                "go-away",
                "reconnect handle-1",
                "send serverContent.modelTurn.parts[text]",
                "send serverContent.turnComplete=true",
            ]
        );
        // The last call's wait changes nothing: nothing follows it.
        let call = |wait| {
            ScriptedServer::new().action(Action::Call(Call {
                id: "c".into(),
                name: "get_weather".into(),
                args: json!({}),
                wait,
            }))
        };
        let ended = |script: ScriptedServer| Signature::of_script("weather", "liveness", &script);
        assert_eq!(ended(call(false)), ended(call(true)));
        assert_eq!(
            ended(call(false).pause(Duration::from_millis(5))),
            ended(call(true))
        );
        assert_ne!(ended(call(false).abort()), ended(call(true).abort()));
        // Text split over frames is one step.
        let split = ScriptedServer::new()
            .text("It is ")
            .text("sunny.")
            .turn_complete();
        let whole = ScriptedServer::new().says("It is sunny.");
        assert_eq!(
            Signature::of_script("weather", "liveness", &split).id(),
            Signature::of_script("weather", "liveness", &whole).id()
        );
    }

    #[test]
    fn another_invariant_agent_or_shape_is_another_signature() {
        let script = cancelled(["a", "b"], "Paris", 5);
        let id = Signature::of_script("weather", "answered-once", &script).id();
        assert_ne!(
            id,
            Signature::of_script("weather", "liveness", &script).id()
        );
        assert_ne!(
            id,
            Signature::of_script("support", "answered-once", &script).id()
        );
        // The first call's id cancelled instead of the second's.
        let mut other = script.clone();
        std::sync::Arc::make_mut(&mut other.actions)[3] =
            Action::Send(json!({"toolCallCancellation": {"ids": ["a"]}}));
        assert_ne!(
            id,
            Signature::of_script("weather", "answered-once", &other).id()
        );
        // A repeated id is not a new one.
        let twice = ScriptedServer::new()
            .action(Action::Call(Call {
                id: "q".into(),
                name: "get_weather".into(),
                args: json!({}),
                wait: true,
            }))
            .action(Action::Call(Call {
                id: "q".into(),
                name: "get_weather".into(),
                args: json!({}),
                wait: true,
            }));
        let once_each = ScriptedServer::new()
            .calls("get_weather", json!({}))
            .calls("get_weather", json!({}));
        let once = ScriptedServer::new().calls("get_weather", json!({}));
        let [twice, once_each, once] = [twice, once_each, once]
            .map(|script| Signature::of_script("weather", "answered-once", &script).id());
        assert_ne!(twice, once_each);
        assert_ne!(twice, once);
    }

    #[test]
    fn the_id_is_fnv_1a_and_stable() {
        // FNV-1a's published test value for "a".
        let mut hash = Fnv64::new();
        hash.write(b"a");
        assert_eq!(hash.finish(), 0xaf63_dc4c_8601_ec8c);
        // Pinned: a change here changes every triage file's ids.
        let signature = Signature {
            agent: "weather".into(),
            invariant: "liveness".into(),
            steps: vec!["abort".into()],
        };
        let mut hash = Fnv64::new();
        hash.write(b"livesim-triage-1\0weather\0liveness\0abort");
        assert_eq!(signature.id(), format!("{:012x}", hash.finish() >> 16));
    }
}
