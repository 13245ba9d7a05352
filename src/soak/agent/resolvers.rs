//! An agent file's `"resolvers"`: simulated code for the slots its
//! conversation spec says a resolver fills (`"resolve_from"`), checked by
//! `resolvers-follow-spec`.
//!
//! ```json
//! "resolvers": {
//!   "table": {"latency_ms": [20, 400], "failure_rate": 0.2,
//!             "value": "a table for {args.party_size}"}
//! }
//! ```
//!
//! A resolver takes a seeded time drawn like a simulated tool's (stream
//! `soak/resolver/<slot>`), fails at its declared rate (more often under
//! `tool-failure`), and otherwise answers with its value template, where
//! `"{args.party_size}"` stands for that input's value. Every resolved
//! slot of the spec needs one, and no tool may write a resolved slot: the
//! resolver is the slot's only writer.

use std::ops::RangeInclusive;
use std::time::Duration;

use serde_json::Value;

use crate::executor;
use crate::flow::{CompiledConversation, Resolver, Spec, resolver};
use crate::soak::agent::tool_file::latency_and_failures;
use crate::soak::agent::tools::{SimTool, TOOL_FAILURE, TOOL_LATENCY, render};
use crate::soak::file_reader::{Decoded, Node};
use crate::soak::generate::faults::{FaultKind, Faults};

const RESOLVER_KEYS: [&str; 3] = ["latency_ms", "failure_rate", "value"];

/// A simulated slot resolver, as an agent file declares it.
///
/// ```
/// use std::time::Duration;
/// use livesim::soak::SimResolver;
/// use serde_json::json;
///
/// let table = SimResolver {
///     slot: "table".into(),
///     latency: Duration::from_millis(20)..=Duration::from_millis(400),
///     failure_rate: 0.2,
///     value: json!("a table for {args.party_size}"),
/// };
/// assert_eq!(table.value_for(&json!({"party_size": 4})), json!("a table for 4"));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct SimResolver {
    /// The slot it fills.
    pub slot: String,
    /// How long a run takes, drawn per run.
    pub latency: RangeInclusive<Duration>,
    /// The chance that a run fails.
    pub failure_rate: f64,
    /// The value template, filled from the slot's inputs.
    pub value: Value,
}

impl SimResolver {
    /// The value a successful run answers with for `args` (an object of
    /// the slot's input keys and their values).
    pub fn value_for(&self, args: &Value) -> Value {
        render(&self.value, args)
    }

    /// The resolver, under the seed's `faults`.
    pub fn build(&self, faults: &Faults) -> Resolver {
        let spec = self.clone();
        let label = format!("soak/resolver/{}", self.slot);
        let extra_failures = faults.rate(FaultKind::ToolFailure);
        resolver(move |args| {
            let (spec, label) = (spec.clone(), label.clone());
            async move {
                let lo = spec.latency.start().as_millis() as u64;
                let hi = spec.latency.end().as_millis() as u64;
                let (mut ms, failed) = executor::draw(&label, |s| {
                    (
                        s.range(lo..=hi),
                        s.chance(spec.failure_rate) || s.chance(extra_failures),
                    )
                })
                .unwrap_or((lo, false));
                // Each draw is a decision a shrinker may calm, as a tool's.
                if !executor::decide(TOOL_LATENCY, ms > lo) {
                    ms = lo;
                }
                let failed = executor::decide(TOOL_FAILURE, failed);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                if failed {
                    return Err(format!("the resolver of {} failed (simulated)", spec.slot));
                }
                Ok(spec.value_for(&args))
            }
        })
    }
}

/// Attaches `resolvers`, each built under `faults`, to a copy of
/// `conversation`.
pub(crate) fn attached(
    conversation: &CompiledConversation,
    resolvers: &[SimResolver],
    faults: &Faults,
) -> CompiledConversation {
    let mut conversation = conversation.clone();
    for sim in resolvers {
        // `fit` checked every slot against the spec when the file was read.
        let _ = conversation.attach_resolver(&sim.slot, sim.build(faults));
    }
    conversation
}

/// `"resolvers"`: an object of slot → `{"latency_ms", "failure_rate",
/// "value"}`; no tool may write a resolved slot.
pub(crate) fn decode(node: &Node<'_>, tools: &[SimTool]) -> Decoded<Vec<SimResolver>> {
    let fields = node.map(
        "an object of slot → resolver, such as {\"table\": {\"value\": \"{args.party_size}\"}}",
    )?;
    let mut resolvers = Vec::new();
    for (slot, item) in fields.members() {
        if slot.trim().is_empty() {
            return item.fail("a slot name cannot be empty");
        }
        if let Some(tool) = tools
            .iter()
            .find(|t| t.writes.iter().any(|(key, _)| key == slot))
        {
            return item.fail(format!(
                "tool {} writes {slot}, but a resolved slot is written by its resolver alone: \
                 take {slot} out of the tool's `writes`",
                tool.name
            ));
        }
        let spec = item.object("a resolver", &RESOLVER_KEYS)?;
        let (latency, failure_rate) = latency_and_failures(&spec)?;
        let value = spec
            .require(
                "value",
                "the slot's value: a template such as \"{args.party_size}\"",
            )?
            .value
            .clone();
        resolvers.push(SimResolver {
            slot: slot.clone(),
            latency,
            failure_rate,
            value,
        });
    }
    Ok(resolvers)
}

/// Whether `resolvers` fit the conversation: each names a resolved slot
/// of it, and each resolved slot has one. `root` is the agent file;
/// `spec` its spec and the spec file's name, for the errors.
pub(crate) fn fit(
    root: &Node<'_>,
    resolvers: &[SimResolver],
    spec: Option<(&Spec, std::borrow::Cow<'_, str>)>,
) -> Decoded<()> {
    let (conversation, spec_name) = match &spec {
        Some((Spec::Conversation(convo), name)) => (Some(convo), name.as_ref()),
        _ => (None, ""),
    };
    let resolved: Vec<&str> = conversation
        .map(|c| {
            c.resolved_slots_by_stage()
                .map(|(_, slot)| slot.key.as_str())
                .collect()
        })
        .unwrap_or_default();
    let top = root.map("an agent file")?;
    if let Some(node) = top.get("resolvers") {
        let fields = node.map("an object of slot → resolver")?;
        for (slot, item) in fields.members() {
            if !resolved.contains(&slot.as_str()) {
                let spec = match &spec {
                    None => "the agent has no spec".to_string(),
                    Some((Spec::Flow(_), name)) => format!("{name} is a flow, with no slots"),
                    Some((Spec::Conversation(_), name)) if resolved.is_empty() => {
                        format!("{name} resolves none")
                    }
                    Some((Spec::Conversation(_), name)) => {
                        format!("{name} resolves {}", resolved.join(", "))
                    }
                };
                return item.fail(format!(
                    "{slot} is not a resolved slot of the agent's conversation spec ({spec}): \
                     a resolver fills a slot declared with \"resolve_from\""
                ));
            }
        }
    }
    if let Some(missing) = resolved
        .iter()
        .find(|slot| !resolvers.iter().any(|r| r.slot == **slot))
    {
        let at = top.get("spec").unwrap_or_else(|| root.clone());
        return at.fail(format!(
            "the conversation spec {spec_name} resolves {missing} from other keys, but the \
             agent file gives it no resolver: add \"resolvers\": {{\"{missing}\": {{\"value\": …}}}}"
        ));
    }
    Ok(())
}
