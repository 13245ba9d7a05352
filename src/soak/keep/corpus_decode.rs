//! The `regression` member of a corpus entry, to and from JSON: the
//! swarm, the faults and the decisions as files write them, every mistake
//! located (see [`crate::soak::keep::corpus`] for the format).

use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::executor::{DELIVERY, Decision, LANE, LaneStrategy, Seed, Swarm, TASK, YIELD};
use crate::jsonl::did_you_mean;
use crate::soak::agent::tools::{LATENCY_SPIKE, TOOL_FAILURE, TOOL_LATENCY};
use crate::soak::file_reader::{Decoded, Node};
use crate::soak::generate::faults::{CloseKind, FaultKind, Faults, Weather};
use crate::soak::keep::corpus::{AGENT_NAME_RULE, CORPUS_VERSION, ShrinkNote, agent_name_problem};
use crate::transport::memory::LINK_LATENCY;

const TOP_KEYS: [&str; 6] = [
    "v",
    "name",
    "settle_ms",
    "session_id",
    "regression",
    "actions",
];

const REGRESSION_KEYS: [&str; 9] = [
    "v",
    "agent",
    "seed",
    "invariant",
    "message",
    "swarm",
    "faults",
    "decisions",
    "shrunk",
];

const SWARM_KEYS: [&str; 8] = [
    "lanes",
    "pct_depth",
    "yield_chance",
    "yield_max",
    "sleep_chance",
    "sleep_max_ms",
    "task_yield_chance",
    "delivery_jitter_ms",
];

const SHRUNK_KEYS: [&str; 4] = ["actions_before", "runs", "seconds", "finished"];

/// Every kind of seeded decision a soaked run makes.
pub(crate) const DECISION_KINDS: [&str; 8] = [
    LANE,
    YIELD,
    TASK,
    DELIVERY,
    LINK_LATENCY,
    TOOL_LATENCY,
    TOOL_FAILURE,
    LATENCY_SPIKE,
];

/// The `regression` member, decoded.
pub(crate) struct Regression {
    pub agent: String,
    pub seed: Seed,
    pub invariant: String,
    pub message: String,
    pub swarm: Swarm,
    pub faults: Faults,
    pub decisions: Option<Vec<Decision>>,
    pub shrunk: Option<ShrinkNote>,
}

/// Decodes a corpus entry's members other than the script's own (which
/// the script reader checks).
pub(crate) fn decode(value: &Value) -> Decoded<Regression> {
    let root = Node::root(value);
    let top = root.object("a corpus entry", &TOP_KEYS)?;
    let node = top.require(
        "regression",
        "which agent, seed and invariant the script failed: this file is a script, not a corpus \
         entry",
    )?;
    let fields = node.object("the regression", &REGRESSION_KEYS)?;
    let version = fields
        .require("v", "the regression format version, 1")?
        .whole("the regression format version", 0..=u64::MAX)?;
    if version != CORPUS_VERSION {
        return fields.require("v", "")?.fail(format!(
            "version {version} is not supported (this livesim reads version {CORPUS_VERSION})"
        ));
    }
    let agent_node = fields.require("agent", "the agent's name")?;
    let agent = agent_node.string("the agent's name")?;
    if agent_name_problem(&agent).is_some() {
        return agent_node.fail(format!(
            "expected the agent's folder name ({AGENT_NAME_RULE}), found {agent:?}"
        ));
    }
    let seed_node = fields.require("seed", "the seed, as hex like \"0x1f\"")?;
    let seed_text = seed_node.string("the seed, as hex like \"0x1f\"")?;
    let seed: Seed = match seed_text.parse() {
        Ok(seed) => seed,
        Err(e) => return seed_node.fail(e.to_string()),
    };
    let invariant = fields
        .require("invariant", "the invariant the case broke")?
        .string("the invariant's name")?;
    let message = match fields.get("message") {
        Some(node) => match node.value.as_str() {
            Some(text) => text.to_string(),
            None => return node.fail("expected the failure's message, a string"),
        },
        None => String::new(),
    };
    let swarm = decode_swarm(&fields.require("swarm", "the executor's swarm")?)?;
    let faults = decode_faults(&fields.require("faults", "the conversation's faults")?)?;
    let decisions = match fields.get("decisions") {
        Some(node) => Some(decode_decisions(&node)?),
        None => None,
    };
    let shrunk = match fields.get("shrunk") {
        Some(node) => Some(decode_shrunk(&node)?),
        None => None,
    };
    Ok(Regression {
        agent,
        seed,
        invariant,
        message,
        swarm,
        faults,
        decisions,
        shrunk,
    })
}

/// The swarm as a corpus entry writes it.
pub(crate) fn swarm_json(swarm: &Swarm) -> Value {
    let mut out = Map::new();
    let lanes = match swarm.lanes {
        LaneStrategy::Fixed => "fixed",
        LaneStrategy::Random => "random",
        LaneStrategy::Pct { .. } => "pct",
    };
    out.insert("lanes".into(), json!(lanes));
    if let LaneStrategy::Pct { depth } = swarm.lanes {
        out.insert("pct_depth".into(), json!(depth));
    }
    out.insert("yield_chance".into(), json!(swarm.yield_chance));
    out.insert("yield_max".into(), json!(swarm.yield_max));
    out.insert("sleep_chance".into(), json!(swarm.sleep_chance));
    out.insert(
        "sleep_max_ms".into(),
        json!(swarm.sleep_max.as_millis() as u64),
    );
    out.insert("task_yield_chance".into(), json!(swarm.task_yield_chance));
    out.insert(
        "delivery_jitter_ms".into(),
        json!(swarm.delivery_jitter.as_millis() as u64),
    );
    Value::Object(out)
}

fn decode_swarm(node: &Node<'_>) -> Decoded<Swarm> {
    let fields = node.object("the swarm", &SWARM_KEYS)?;
    let lanes_node = fields.require("lanes", "\"fixed\", \"random\" or \"pct\"")?;
    let lanes = match lanes_node
        .string("\"fixed\", \"random\" or \"pct\"")?
        .as_str()
    {
        "fixed" => LaneStrategy::Fixed,
        "random" => LaneStrategy::Random,
        "pct" => LaneStrategy::Pct {
            depth: fields
                .require("pct_depth", "how many priority changes PCT makes")?
                .whole("the PCT depth", 1..=64)? as u32,
        },
        other => {
            return lanes_node.fail(format!(
                "expected \"fixed\", \"random\" or \"pct\", found {other:?}"
            ));
        }
    };
    if !matches!(lanes, LaneStrategy::Pct { .. })
        && let Some(depth) = fields.get("pct_depth")
    {
        return depth.fail("`pct_depth` goes with \"lanes\": \"pct\" only");
    }
    let ms = |key: &str, what: &str| -> Decoded<Duration> {
        Ok(Duration::from_millis(
            fields.require(key, what)?.whole(what, 0..=3_600_000)?,
        ))
    };
    Ok(Swarm {
        lanes,
        yield_chance: fields
            .require("yield_chance", "a yield point's chance to yield")?
            .rate("yield_chance")?,
        yield_max: fields
            .require("yield_max", "the most yields in a row")?
            .whole("yield_max", 0..=1000)? as u32,
        sleep_chance: fields
            .require("sleep_chance", "a yield point's chance to sleep")?
            .rate("sleep_chance")?,
        sleep_max: ms("sleep_max_ms", "the longest sleep, in ms")?,
        task_yield_chance: fields
            .require("task_yield_chance", "a task's chance to step aside")?
            .rate("task_yield_chance")?,
        delivery_jitter: ms("delivery_jitter_ms", "the most delivery jitter, in ms")?,
    })
}

/// The faults as a corpus entry writes them: the weather, each kind that
/// is on with its rate, the close by its name.
pub(crate) fn faults_json(faults: &Faults) -> Value {
    let mut out = Map::new();
    out.insert("weather".into(), json!(faults.weather.name()));
    for (kind, rate) in faults.on() {
        match (kind, faults.close()) {
            (FaultKind::Close, Some(close)) => {
                out.insert(kind.name().into(), json!(close.to_string()));
            }
            _ => {
                out.insert(kind.name().into(), json!(rate));
            }
        }
    }
    Value::Object(out)
}

fn decode_faults(node: &Node<'_>) -> Decoded<Faults> {
    let mut keys = vec!["weather"];
    keys.extend(FaultKind::ALL.iter().map(|k| k.name()));
    let fields = node.object("the faults", &keys)?;
    let weather_node = fields.require("weather", "\"calm\", \"mixed\" or \"storm\"")?;
    let weather = match weather_node
        .string("\"calm\", \"mixed\" or \"storm\"")?
        .as_str()
    {
        "calm" => Weather::Calm,
        "mixed" => Weather::Mixed,
        "storm" => Weather::Storm,
        other => {
            return weather_node.fail(format!(
                "expected \"calm\", \"mixed\" or \"storm\", found {other:?}"
            ));
        }
    };
    let mut faults = Faults::calm();
    for kind in FaultKind::ALL {
        let Some(node) = fields.get(kind.name()) else {
            continue;
        };
        if kind == FaultKind::Close {
            let names: Vec<String> = CloseKind::ALL.iter().map(ToString::to_string).collect();
            let what = format!("the close: one of {}", names.join(", "));
            let name = node.string(&what)?;
            match CloseKind::ALL.iter().find(|c| c.to_string() == name) {
                Some(close) => faults = faults.closing(*close),
                None => return node.fail(format!("expected {what}, found {name:?}")),
            }
        } else {
            faults = faults.with(kind, node.rate(kind.name())?);
        }
    }
    faults.weather = weather;
    Ok(faults)
}

fn decode_decisions(node: &Node<'_>) -> Decoded<Vec<Decision>> {
    let items = node.list("a list of decisions such as \"lane#3\"")?;
    let mut out = Vec::new();
    for item in items {
        let text = item.string("a decision such as \"lane#3\"")?;
        let decision: Decision = match text.parse() {
            Ok(decision) => decision,
            Err(e) => return item.fail(e),
        };
        if !DECISION_KINDS.contains(&decision.kind.as_str()) {
            let mut problem = format!("`{}` is not a kind of decision", decision.kind);
            problem.push_str(&did_you_mean(&decision.kind, &DECISION_KINDS));
            problem.push_str(&format!(" (kinds: {})", DECISION_KINDS.join(", ")));
            return item.fail(problem);
        }
        out.push(decision);
    }
    Ok(out)
}

fn decode_shrunk(node: &Node<'_>) -> Decoded<ShrinkNote> {
    let fields = node.object("how the case was shrunk", &SHRUNK_KEYS)?;
    // Files before 0.2 said how long shrinking took; it is no longer
    // written (it depends on the machine).
    let seconds = match fields.get("seconds") {
        None => 0.0,
        Some(node) => match node.value.as_f64() {
            Some(s) if s >= 0.0 && s.is_finite() => s,
            _ => return node.fail("expected the time shrinking took, in seconds"),
        },
    };
    Ok(ShrinkNote {
        actions_before: fields
            .require("actions_before", "the actions before shrinking")?
            .whole("actions_before", 0..=u64::from(u32::MAX))? as usize,
        runs: fields
            .require("runs", "the candidate runs made")?
            .whole("runs", 0..=u64::MAX)?,
        seconds,
        finished: fields
            .require("finished", "whether shrinking finished")?
            .boolean("whether shrinking finished, true or false")?,
    })
}
