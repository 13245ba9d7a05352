//! The agent file format, version 1: `agent.json` decoded into an
//! [`Agent`]'s parts, every mistake located (see [`crate::soak::agent`] for the
//! format and `docs/formats/agent.md` for what each key means).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::flow::Enforcement;
use crate::session::Resumption;
use crate::soak::agent::repertoire::Repertoire;
use crate::soak::agent::simulated_user::{SimulatedUser, USER_CALL};
use crate::soak::agent::tools::SimTool;
use crate::soak::agent::{
    AGENT_VERSION, Agent, AgentGoal, AgentInvariant, ExtractorSpec, StandingTape,
};
use crate::soak::agent::{final_state, phases, resolvers, temporal, tool_file};
use crate::soak::check::budget::Budget;
use crate::soak::file_reader::{Decoded, Node};
use crate::soak::generate::faults::FaultKind;
use crate::tape::FileTape;

const TOP_KEYS: [&str; 23] = [
    "v",
    "instruction",
    "spec",
    "enforcement",
    "turns",
    "pauses_ms",
    "call_chance",
    "user",
    "model",
    "tools",
    "extractor",
    "invariants",
    "sometimes",
    "budgets",
    "final_state",
    "phases",
    "temporal",
    "resolvers",
    "simulated_user",
    "faults",
    "resumable",
    "manual_activity",
    "planted_bug",
];

/// A decoded agent, before the files it names are read.
pub(crate) struct Decoded2 {
    pub agent: Agent,
    pub spec_file: Option<PathBuf>,
    pub tape_file: Option<(PathBuf, ExtractorSpec)>,
}

pub(crate) fn decode(name: &str, dir: &Path, value: &Value) -> Decoded<Decoded2> {
    let root = Node::root(value);
    let top = root.object("an agent file", &TOP_KEYS)?;
    let version = top
        .require("v", "the format version, 1")?
        .whole("the format version", 0..=u64::MAX)?;
    if version != AGENT_VERSION {
        return top.require("v", "")?.fail(format!(
            "version {version} is not supported (this livesim reads version {AGENT_VERSION})"
        ));
    }
    let instruction = match top.get("instruction") {
        Some(node) => node.string("the system instruction")?,
        None => String::new(),
    };
    let spec_file = match top.get("spec") {
        Some(node) => Some(beside(
            dir,
            &node,
            "a spec file name, beside agent.json",
            "spec",
        )?),
        None => None,
    };
    let enforcement = match top.get("enforcement") {
        None => Enforcement::Enforce,
        Some(node) => match node.string("\"enforce\" or \"observe\"")?.as_str() {
            "enforce" => Enforcement::Enforce,
            "observe" => Enforcement::Observe,
            other => {
                return node.fail(format!(
                    "expected \"enforce\" or \"observe\", found {other:?}"
                ));
            }
        },
    };
    let defaults = Repertoire::default();
    let turns = match top.get("turns") {
        Some(node) => {
            let (lo, hi) = node.span("turns", 1..=200)?;
            lo as u32..=hi as u32
        }
        None => defaults.turns.clone(),
    };
    let pauses = match top.get("pauses_ms") {
        Some(node) => {
            let (lo, hi) = node.span("pauses_ms", 0..=3_600_000)?;
            Duration::from_millis(lo)..=Duration::from_millis(hi)
        }
        None => defaults.pauses.clone(),
    };
    let call_chance = match top.get("call_chance") {
        Some(node) => node.rate("call_chance")?,
        None => defaults.call_chance,
    };
    let user_lines = top
        .require("user", "what the user says")?
        .lines("user lines")?;
    let model_lines = top
        .require("model", "what the model says")?
        .lines("model lines")?;
    let mut tools: Vec<SimTool> = Vec::new();
    if let Some(list) = top.get("tools") {
        for node in list.list("a list of tools")? {
            let tool = tool_file::decode(&node)?;
            if tools.iter().any(|t| t.name == tool.name) {
                return node.fail(format!("a second tool named {:?}", tool.name));
            }
            tools.push(tool);
        }
    }
    let known = |node: &Node<'_>, tool: &str| -> Decoded<()> {
        if tools.iter().any(|t| t.name == tool) {
            return Ok(());
        }
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        let hint = crate::jsonl::did_you_mean(tool, &names);
        node.fail(format!(
            "no tool named {tool:?} is declared{hint} (tools: {})",
            names.join(", ")
        ))
    };
    let mut invariants = Vec::new();
    if let Some(list) = top.get("invariants") {
        for node in list.list("a list of invariants")? {
            let fields = node.object("an invariant", &["at_most_once", "before"])?;
            if fields.len() != 1 {
                return node.fail(
                    "expected an invariant: {\"at_most_once\": \"tool\"} or {\"before\": [\"tool\", \"tool\"]}",
                );
            }
            if let Some(tool) = fields.get("at_most_once") {
                let name = tool.string("a tool name")?;
                known(&tool, &name)?;
                invariants.push(AgentInvariant::AtMostOnce(name));
            }
            if let Some(pair) = fields.get("before") {
                let items = pair.list("[\"first tool\", \"then tool\"]")?;
                let [first, then] = items.as_slice() else {
                    return pair.fail("expected [\"first tool\", \"then tool\"]: two tool names");
                };
                let (a, b) = (first.string("a tool name")?, then.string("a tool name")?);
                known(first, &a)?;
                known(then, &b)?;
                // Its first call would have to start after one of its own
                // runs succeeded: every session that calls it would fail.
                if a == b {
                    return then.fail(format!(
                        "before({a}, {a}) can never hold: the first call of {a} starts before \
                         any run of {a} has succeeded, so every session that calls it fails; \
                         name two different tools (the first must succeed before the second \
                         starts)"
                    ));
                }
                invariants.push(AgentInvariant::Before(a, b));
            }
        }
    }
    // The extractor's name is a state key it writes.
    let extractor = top
        .get("extractor")
        .and_then(|e| e.value.get("name"))
        .and_then(Value::as_str);
    let resolvers = match top.get("resolvers") {
        Some(node) => resolvers::decode(&node, &tools)?,
        None => Vec::new(),
    };
    // Keys written by something other than a tool: the extractor (its
    // name) and each resolver (its slot).
    let others: Vec<&str> = extractor
        .into_iter()
        .chain(resolvers.iter().map(|r| r.slot.as_str()))
        .collect();
    let mut sometimes = Vec::new();
    if let Some(list) = top.get("sometimes") {
        let mut names = Vec::new();
        for node in list.list("a list of goals")? {
            let fields = node.object("a goal", &["name", "tool_ok", "state"])?;
            let name_node = fields.require("name", "the goal's name")?;
            let goal_name = name_node.string("a name")?;
            // The summary counts goals by name: two of one name would
            // read as one.
            if names.contains(&goal_name) {
                return name_node.fail(format!(
                    "a second goal named {goal_name:?}: names are unique"
                ));
            }
            names.push(goal_name.clone());
            match (fields.get("tool_ok"), fields.get("state")) {
                (Some(tool), None) => {
                    let tool_name = tool.string("a tool name")?;
                    known(&tool, &tool_name)?;
                    sometimes.push(AgentGoal::ToolOk {
                        name: goal_name,
                        tool: tool_name,
                    });
                }
                (None, Some(key)) => {
                    let name = key.string("a state key")?;
                    let keys = final_state::state_keys(&tools, &others);
                    final_state::known_key(&key, &name, &keys)?;
                    sometimes.push(AgentGoal::State {
                        name: goal_name,
                        key: name,
                    });
                }
                _ => {
                    return node.fail(
                        "expected a goal with a name and one of `tool_ok` (a tool) or `state` (a key)",
                    );
                }
            }
        }
    }
    let budgets = match top.get("budgets") {
        Some(node) => decode_budgets(&node, &known)?,
        None => Vec::new(),
    };
    let final_state = match top.get("final_state") {
        Some(node) => final_state::decode(&node, &tools, &others)?,
        None => Vec::new(),
    };
    let phases = match top.get("phases") {
        Some(node) => Some(phases::decode(&node, &tools, &others)?),
        None => None,
    };
    let temporal = match top.get("temporal") {
        Some(node) => temporal::decode(&node, &tools, &others)?,
        None => Vec::new(),
    };
    let simulated_user = match top.get("simulated_user") {
        Some(node) => Some(decode_simulated_user(dir, &node)?),
        None => None,
    };
    let resumption = match top.get("resumable") {
        Some(node) => decode_resumable(&node)?,
        None => Resumption::off(),
    };
    let manual_activity = match top.get("manual_activity") {
        Some(node) => node.boolean("true or false")?,
        None => false,
    };
    let mut faults = Vec::new();
    if let Some(node) = top.get("faults") {
        let names: Vec<&str> = FaultKind::ALL.iter().map(|k| k.name()).collect();
        let fields = node.object("fault tuning (fault kind → rate)", &names)?;
        for (key, rate) in fields.members() {
            let kind = match key.parse::<FaultKind>() {
                Ok(kind) => kind,
                Err(problem) => return rate.fail(problem),
            };
            if kind.needs_resumption() && !resumption.is_on() {
                return rate.fail(format!(
                    "`{kind}` needs a session that resumes on new connections: add \"resumable\": true"
                ));
            }
            faults.push((kind, rate.rate("a fault rate")?));
        }
    }
    let tape_file = match top.get("extractor") {
        Some(node) => Some(decode_extractor(dir, &node)?),
        None => None,
    };
    let planted_bug = match top.get("planted_bug") {
        Some(node) => {
            // `true` is the first planted bug; a name picks one.
            let name = match node.value {
                serde_json::Value::String(name) => Some(name.clone()),
                _ => node
                    .boolean("true, false or the name of a planted bug")?
                    .then(|| "refused-call-runs".to_string()),
            };
            if name.is_some() && !cfg!(feature = "planted-bug") {
                return node.fail(
                    "`planted_bug` turns on deliberately broken behaviour, which exists only in \
                     a livesim built with `--features planted-bug` (livesim's own test of the \
                     soak); remove the key",
                );
            }
            #[cfg(feature = "planted-bug")]
            if let Some(problem) = name
                .as_deref()
                .and_then(|n| n.parse::<crate::session::PlantedBug>().err())
            {
                return node.fail(problem);
            }
            name
        }
        None => None,
    };
    let repertoire = Repertoire {
        tools: tools.iter().map(SimTool::model).collect(),
        user_lines,
        model_lines,
        turns,
        pauses,
        call_chance,
        resumption,
        manual_activity,
    };
    Ok(Decoded2 {
        agent: Agent {
            name: name.to_string(),
            dir: dir.to_path_buf(),
            instruction,
            spec: None,
            enforcement,
            tools,
            repertoire,
            extractor: None,
            invariants,
            sometimes,
            budgets,
            final_state,
            simulated_user,
            phases,
            temporal,
            resolvers,
            faults,
            spec_as_written: None,
            planted_bug,
        },
        spec_file,
        tape_file,
    })
}

const BUDGET_KEYS: [&str; 4] = [
    "first_response_ms",
    "tool_silence",
    "barge_in_ms",
    "tool_round_trip_ms",
];

/// `"budgets"`: `{"first_response_ms": 3000, "barge_in_ms": 200,
/// "tool_round_trip_ms": 20000 or {"tool": ms, …}, "tool_silence":
/// {"longer_than_ms": 2000, "within_ms": 1000}}`.
fn decode_budgets(
    node: &Node<'_>,
    known: &dyn Fn(&Node<'_>, &str) -> Decoded<()>,
) -> Decoded<Vec<Budget>> {
    const HOUR_MS: u64 = 3_600_000;
    let ms = |node: &Node<'_>, what: &str| -> Decoded<Duration> {
        Ok(Duration::from_millis(node.whole(what, 0..=HOUR_MS)?))
    };
    let fields = node.object("latency budgets", &BUDGET_KEYS)?;
    let mut budgets = Vec::new();
    if let Some(n) = fields.get("first_response_ms") {
        budgets.push(Budget::first_response(ms(&n, "milliseconds")?));
    }
    if let Some(n) = fields.get("tool_silence") {
        let silence = n.object("a tool-silence budget", &["longer_than_ms", "within_ms"])?;
        let longer_than =
            silence.require("longer_than_ms", "how long tools may run silently, in ms")?;
        let within =
            silence.require("within_ms", "how soon the model must say something, in ms")?;
        budgets.push(Budget::tool_silence(
            ms(&longer_than, "milliseconds")?,
            ms(&within, "milliseconds")?,
        ));
    }
    if let Some(n) = fields.get("barge_in_ms") {
        budgets.push(Budget::barge_in(ms(&n, "milliseconds")?));
    }
    if let Some(n) = fields.get("tool_round_trip_ms") {
        if let Some(map) = n.value.as_object() {
            let tools: Vec<&str> = map.keys().map(String::as_str).collect();
            for (tool, bound) in n.object("tool names and milliseconds", &tools)?.members() {
                known(&bound, tool)?;
                budgets.push(Budget::tool_round_trip_of(
                    tool,
                    ms(&bound, "milliseconds")?,
                ));
            }
        } else {
            budgets.push(Budget::tool_round_trip(ms(
                &n,
                "milliseconds, or an object of tool names and milliseconds",
            )?));
        }
    }
    Ok(budgets)
}

/// `"resumable"`: `true` resumes transparently (the server says which
/// messages it consumed, and the session sends the rest again), `false`
/// not at all, and an object says `"transparent"` (false: what the
/// session sent after the handle it resumes is gone) and may change
/// `Resumption::on()`'s policy: `"attempts"` per reconnect, and
/// `"backoff_ms"`, the wait before the first attempt and the longest it
/// doubles up to.
fn decode_resumable(node: &Node<'_>) -> Decoded<Resumption> {
    const WHAT: &str = "true, false, or {\"transparent\": true or false}";
    if let Some(on) = node.value.as_bool() {
        return Ok(if on {
            Resumption::on().transparent(true)
        } else {
            Resumption::off()
        });
    }
    if !node.value.is_object() {
        // Not a flag nor an object: the reader's own words for what it is.
        node.boolean(WHAT)?;
    }
    let fields = node.object("`resumable`", &["transparent", "attempts", "backoff_ms"])?;
    let transparent = fields
        .require("transparent", "true or false")?
        .boolean("true or false")?;
    let mut policy = Resumption::on().transparent(transparent);
    if let Some(attempts) = fields.get("attempts") {
        policy = policy.attempts(attempts.whole("attempts per reconnect", 1..=20)? as u32);
    }
    if let Some(backoff) = fields.get("backoff_ms") {
        let (initial, max) = backoff.span(
            "the wait before the first attempt and the longest, in milliseconds",
            0..=600_000,
        )?;
        policy = policy.backoff(Duration::from_millis(initial), Duration::from_millis(max));
    }
    Ok(policy)
}

/// `"simulated_user"`: `{"persona", "goal", "tape", "model"?}`, the tape a
/// file beside `agent.json` that [`SimulatedUser::record`] wrote.
fn decode_simulated_user(dir: &Path, node: &Node<'_>) -> Decoded<SimulatedUser> {
    let fields = node.object("a simulated user", &["persona", "goal", "tape", "model"])?;
    let persona = fields
        .require("persona", "who the user is")?
        .string("a persona")?;
    let goal = fields
        .require("goal", "what the user wants")?
        .string("a goal")?;
    let tape_node = fields.require("tape", "the tape of its answers, beside agent.json")?;
    let file = beside(dir, &tape_node, "a tape file name", "tape")?;
    let tape = match FileTape::open(&file) {
        Ok(tape) => tape,
        Err(e) => return tape_node.fail(format!("cannot read the tape {}: {e}", file.display())),
    };
    if let Some(torn) = tape.torn_line() {
        return tape_node.fail(format!(
            "{}: line {} is torn ({}): record the tape again",
            file.display(),
            torn.line,
            torn.problem
        ));
    }
    let entries = tape.entries();
    // An answer without its text would have the user say nothing, or be
    // dropped, without a word.
    let unspoken = entries.iter().enumerate().find(|(_, e)| {
        e.kind == USER_CALL
            && e.output
                .as_ref()
                .is_some_and(|o| o.get("text").and_then(Value::as_str).is_none())
    });
    if let Some((i, entry)) = unspoken {
        return tape_node.fail(format!(
            "{}: entry {} (an answer of the simulated user) holds no text: its output is {}, where {{\"text\": \"…\"}} is one; record the tape again",
            file.display(),
            i + 1,
            entry.output.as_ref().map(Value::to_string).unwrap_or_default()
        ));
    }
    let mut user = SimulatedUser::new(persona, goal);
    if let Some(model) = fields.get("model") {
        user = user.model(model.string("a model id")?);
    }
    Ok(user.answers_from(entries))
}

/// The file `node` names in `dir`, which must be a regular file: a
/// folder or a device (`/dev/zero`) is not a `kind` file however it is
/// named.
fn beside(dir: &Path, node: &Node<'_>, what: &str, kind: &str) -> Decoded<PathBuf> {
    let name = node.string(what)?;
    // The folder is the agent: `sim replay --agent`, a copied folder and
    // a corpus entry all find its files there, and only there.
    let plain = {
        let mut parts = Path::new(&name).components();
        matches!(
            (parts.next(), parts.next()),
            (Some(std::path::Component::Normal(_)), None)
        )
    };
    if !plain {
        return node.fail(format!(
            "`{name}` is not a file name: a {kind} file goes beside agent.json, in the agent's \
             own folder (copy it there and name it without a folder)"
        ));
    }
    let file = dir.join(name);
    if file.is_file() {
        return Ok(file);
    }
    if file.exists() {
        return node.fail(format!(
            "{} is not a regular file: a {kind} file is one",
            file.display()
        ));
    }
    node.fail(format!("no {kind} file at {}", file.display()))
}

fn decode_extractor(dir: &Path, node: &Node<'_>) -> Decoded<(PathBuf, ExtractorSpec)> {
    let fields = node.object(
        "an extractor",
        &["name", "tape", "prompt", "window", "model", "latency_ms"],
    )?;
    let name = fields
        .require("name", "the state key it writes")?
        .string("a name")?;
    let tape = fields.require("tape", "the tape file it answers from")?;
    let file = beside(dir, &tape, "a tape file name, beside agent.json", "tape")?;
    let prompt = fields
        .require("prompt", "the extractor's instruction")?
        .string("a prompt")?;
    let window = match fields.get("window") {
        Some(n) => n.whole("window", 0..=1000)? as usize,
        None => 1,
    };
    let model = match fields.get("model") {
        Some(n) => n.string("a model id")?,
        None => "gemini-2.5-flash".to_string(),
    };
    // A model takes its time to answer; without it, every extraction is
    // over before the next turn ends and none ever waits in the queue.
    let latency = tool_file::latency(&fields)?;
    Ok((
        file.clone(),
        ExtractorSpec {
            name,
            prompt,
            window,
            model,
            latency,
            tape_file: file,
            tape: Arc::new(StandingTape::default()),
        },
    ))
}
