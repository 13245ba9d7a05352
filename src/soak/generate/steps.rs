//! Conversations as structured steps: what a property test generates and
//! shrinks. Each step is one thing the model side does (a call waited for
//! or not, parallel calls, a cancellation of an earlier call, a pause
//! while tools finish, text cut into frames anywhere, an interruption, a
//! goAway, a turn's end); [`script`] turns a list of them into an
//! ordinary script against an agent's tools.
//!
//! Tools are named by index into the agent's repertoire (modulo its
//! length), so a step list means the same against any agent and shrinks
//! as numbers do. A call's arguments are the tool's first example, or
//! drawn from its parameters on the seed's stream `soak/steps/args`.

use serde_json::{Value, json};

use crate::executor::{Seed, Stream};
use crate::soak::agent::repertoire::Repertoire;
use crate::soak::generate::args;
use crate::testing::{Action, Call, ScriptedServer};

/// One step of a generated conversation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// A call to tool `tool` (an index into the agent's tools, modulo
    /// their number), the script waiting for its answer or not.
    Call {
        /// Which tool.
        tool: usize,
        /// Whether the script waits for the answer before its next step.
        wait: bool,
    },
    /// Several calls in one `toolCall` message, each waited for.
    Parallel(Vec<usize>),
    /// A cancellation of the call issued `n`-th (modulo the calls so far;
    /// nothing before the first call).
    Cancel(usize),
    /// Silence for this many milliseconds, while tools run and finish.
    Pause(u64),
    /// Model text, cut into frames at these character offsets (modulo
    /// its length).
    Text {
        /// The text.
        text: String,
        /// Where it is cut.
        cuts: Vec<usize>,
    },
    /// The model's turn is interrupted.
    Interrupt,
    /// The server says it will end the connection (`goAway`, 30 s).
    GoAway,
    /// The model ends its turn.
    TurnComplete,
}

/// `steps` as Rust source: `vec![Step::Call { tool: 0, wait: false }]`,
/// what a failing property case's replay line gives to paste into a test.
pub(crate) fn as_code(steps: &[Step]) -> String {
    let list = |items: &[usize]| {
        let items: Vec<String> = items.iter().map(usize::to_string).collect();
        format!("vec![{}]", items.join(", "))
    };
    let steps: Vec<String> = steps
        .iter()
        .map(|step| match step {
            Step::Call { tool, wait } => format!("Step::Call {{ tool: {tool}, wait: {wait} }}"),
            Step::Parallel(tools) => format!("Step::Parallel({})", list(tools)),
            Step::Cancel(n) => format!("Step::Cancel({n})"),
            Step::Pause(ms) => format!("Step::Pause({ms})"),
            Step::Text { text, cuts } => format!(
                "Step::Text {{ text: {text:?}.to_string(), cuts: {} }}",
                list(cuts)
            ),
            Step::Interrupt => "Step::Interrupt".to_string(),
            Step::GoAway => "Step::GoAway".to_string(),
            Step::TurnComplete => "Step::TurnComplete".to_string(),
        })
        .collect();
    format!("vec![{}]", steps.join(", "))
}

fn send(message: Value) -> Action {
    Action::Send(message)
}

/// The script `steps` say against `repertoire`'s tools under `seed`,
/// ended by the model's turn complete.
///
/// ```
/// use livesim::Seed;
/// use livesim::soak::{Repertoire, Step, steps_script};
///
/// let script = steps_script(&[Step::Parallel(vec![0, 0]), Step::Cancel(1)], &Repertoire::default(), Seed::new(1));
/// assert_eq!(script.actions().len(), 3); // the calls, the cancellation, the turn's end
/// ```
pub fn script(steps: &[Step], repertoire: &Repertoire, seed: Seed) -> ScriptedServer {
    let mut draw = Stream::new(seed, "soak/steps/args");
    let mut script = ScriptedServer::new().named(format!("steps-{seed}"));
    let mut issued: Vec<String> = Vec::new();
    let mut call = |tool: usize, wait: bool, issued: &mut Vec<String>| {
        let id = format!("call-{}", issued.len() + 1);
        issued.push(id.clone());
        let (name, args) = match repertoire.tools.get(tool % repertoire.tools.len().max(1)) {
            Some(tool) => (
                tool.name.clone(),
                tool.examples.first().cloned().unwrap_or_else(|| {
                    args::valid(tool.parameters.as_ref(), &tool.examples, &mut draw)
                }),
            ),
            None => ("no_tools_declared".to_string(), json!({})),
        };
        Call {
            id,
            name,
            args,
            wait,
        }
    };
    for step in steps {
        let action = match step {
            Step::Call { tool, wait } => Action::Call(call(*tool, *wait, &mut issued)),
            Step::Parallel(tools) => {
                Action::CallMany(tools.iter().map(|t| call(*t, true, &mut issued)).collect())
            }
            Step::Cancel(n) if !issued.is_empty() => {
                send(json!({"toolCallCancellation": {"ids": [issued[n % issued.len()]]}}))
            }
            Step::Cancel(_) => continue,
            Step::Pause(ms) => Action::PauseMs(*ms),
            Step::Text { text, cuts } => {
                let chars: Vec<char> = text.chars().collect();
                let mut points: Vec<usize> = cuts
                    .iter()
                    .map(|c| c % chars.len().max(1))
                    .filter(|c| *c > 0)
                    .collect();
                points.sort_unstable();
                points.dedup();
                let mut from = 0;
                for point in points.into_iter().chain([chars.len()]) {
                    let chunk: String = chars[from..point].iter().collect();
                    script = script.action(send(
                        json!({"serverContent": {"modelTurn": {"parts": [{"text": chunk}]}}}),
                    ));
                    from = point;
                }
                continue;
            }
            Step::Interrupt => send(json!({"serverContent": {"interrupted": true}})),
            Step::GoAway => send(json!({"goAway": {"timeLeft": "30s"}})),
            Step::TurnComplete => send(json!({"serverContent": {"turnComplete": true}})),
        };
        script = script.action(action);
    }
    script.action(send(json!({"serverContent": {"turnComplete": true}})))
}
