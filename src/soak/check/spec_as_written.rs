//! `spec-as-written`: the flow a session enforces is the one its agent's
//! spec file says, as read here from the file's JSON apart from
//! livesim's spec reader (`flow/spec_decode.rs`) and its compiler of
//! conversations. Every other governance check (`decisions-follow-spec`,
//! `journal-replays-clean`) takes the spec as that reader made it, so a
//! reader that swapped `all` for `any` would go unseen by them.
//!
//! The file's rules, as the spec format documents them: a flow's
//! `steps[]` each have an `id` and, optionally, `after` (step ids),
//! `allow` (tools), `gates` (tool → guard), `done` (a guard) and
//! `escalate` (`tool_failures`, `interruptions`). A conversation's
//! `stages[]` have the same keys but `gates`, plus `slots` and `commits`
//! (tool → guard): a stage is a step that also allows its commit tools,
//! is gated on each by its guard, and is done once each slot exists,
//! each commit tool completed ok, and its own `done` holds. A guard is an
//! object of one key: `called_ok`, `called`, `is_true`, `exists` (a
//! name), `equals` (`{"key", "value"}`), `all`, `any` (lists of guards)
//! or `not` (a guard).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use crate::flow::{FlowSpec, Guard};

/// A step as the file writes it.
#[derive(Debug, Clone, PartialEq)]
struct WrittenStep {
    id: String,
    after: BTreeSet<String>,
    allow: BTreeSet<String>,
    gates: BTreeMap<String, Guard>,
    /// The conditions that make it done, all of which must hold.
    done: Vec<Guard>,
    escalate: (Option<u64>, Option<u64>),
}

/// A spec file's steps, read from its JSON.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct WrittenSpec {
    steps: Vec<WrittenStep>,
}

impl WrittenSpec {
    /// Reads spec file text (one livesim's reader accepted).
    pub(crate) fn read(text: &str) -> Result<WrittenSpec, String> {
        let value: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let top = value.as_object().ok_or("not an object")?;
        let (list, stages) = match top.get("kind").and_then(Value::as_str) {
            Some("flow") => (top.get("steps"), false),
            Some("conversation") => (top.get("stages"), true),
            other => return Err(format!("no spec kind I know: {other:?}")),
        };
        let items = list.and_then(Value::as_array).ok_or("no list of steps")?;
        let steps = items
            .iter()
            .map(|item| step(item, stages))
            .collect::<Result<_, _>>()?;
        Ok(WrittenSpec { steps })
    }

    /// `Ok` when `spec` has the file's steps, or the first difference.
    pub(crate) fn check(&self, spec: &FlowSpec) -> Result<(), String> {
        let ids: Vec<&str> = self.steps.iter().map(|s| s.id.as_str()).collect();
        let theirs: Vec<&str> = spec.steps().iter().map(|s| s.id.as_str()).collect();
        if ids != theirs {
            return Err(format!(
                "the spec file declares the steps {ids:?}, but the session enforces {theirs:?}"
            ));
        }
        for (written, enforced) in self.steps.iter().zip(spec.steps()) {
            let differs = |what: &str, file: String, session: String| {
                Err(format!(
                    "step {}'s {what}: the spec file says {file}, but the session enforces {session}",
                    written.id
                ))
            };
            if written.after != enforced.after {
                return differs(
                    "after",
                    format!("{:?}", written.after),
                    format!("{:?}", enforced.after),
                );
            }
            if written.allow != enforced.allow {
                return differs(
                    "allowed tools",
                    format!("{:?}", written.allow),
                    format!("{:?}", enforced.allow),
                );
            }
            if written.gates != enforced.gates {
                return differs("gates", gates(&written.gates), gates(&enforced.gates));
            }
            let escalate = (
                enforced.escalate.tool_failures.map(u64::from),
                enforced.escalate.interruptions.map(u64::from),
            );
            if written.escalate != escalate {
                return differs(
                    "escalation (tool failures, interruptions)",
                    format!("{:?}", written.escalate),
                    format!("{escalate:?}"),
                );
            }
            if !same_conditions(&written.done, enforced.done.as_ref()) {
                let file = match written.done.as_slice() {
                    [] => "never".to_string(),
                    parts => parts
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(" and "),
                };
                let session = enforced
                    .done
                    .as_ref()
                    .map_or("never".to_string(), ToString::to_string);
                return differs("done condition", file, session);
            }
        }
        Ok(())
    }
}

/// Whether `enforced` is the conjunction of `parts`: none, the one part,
/// or an `all` of exactly those parts in any order.
fn same_conditions(parts: &[Guard], enforced: Option<&Guard>) -> bool {
    match (parts, enforced) {
        ([], None) => true,
        ([one], Some(guard)) => one == guard,
        (parts, Some(Guard::All(theirs))) if parts.len() > 1 => {
            let key = |g: &Guard| format!("{g:?}");
            let mut mine: Vec<String> = parts.iter().map(key).collect();
            let mut theirs: Vec<String> = theirs.iter().map(key).collect();
            mine.sort();
            theirs.sort();
            mine == theirs
        }
        _ => false,
    }
}

fn gates(gates: &BTreeMap<String, Guard>) -> String {
    let listed: Vec<String> = gates
        .iter()
        .map(|(tool, guard)| format!("{tool} when {guard}"))
        .collect();
    if listed.is_empty() {
        "none".to_string()
    } else {
        listed.join(", ")
    }
}

fn step(item: &Value, stage: bool) -> Result<WrittenStep, String> {
    let map = item.as_object().ok_or("a step that is not an object")?;
    let id = text(map.get("id")).ok_or("a step without an id")?;
    let names = |key: &str| -> Result<BTreeSet<String>, String> {
        match map.get(key) {
            None => Ok(BTreeSet::new()),
            Some(list) => list
                .as_array()
                .ok_or(format!("{id}.{key} is not a list"))?
                .iter()
                .map(|v| text(Some(v)).ok_or(format!("{id}.{key} holds a non-name")))
                .collect(),
        }
    };
    let guards = |key: &str| -> Result<BTreeMap<String, Guard>, String> {
        match map.get(key) {
            None => Ok(BTreeMap::new()),
            Some(object) => object
                .as_object()
                .ok_or(format!("{id}.{key} is not an object"))?
                .iter()
                .map(|(tool, g)| Ok((tool.clone(), guard(g)?)))
                .collect(),
        }
    };
    let after = names("after")?;
    let mut allow = names("allow")?;
    let mut done = Vec::new();
    let gates = if stage {
        if let Some(slots) = map.get("slots") {
            for slot in slots
                .as_array()
                .ok_or(format!("{id}.slots is not a list"))?
            {
                let key = text(slot.get("key")).ok_or(format!("{id} has a slot without a key"))?;
                done.push(Guard::Exists(key));
            }
        }
        let commits = guards("commits")?;
        for tool in commits.keys() {
            allow.insert(tool.clone());
            done.push(Guard::CalledOk(tool.clone()));
        }
        commits
    } else {
        guards("gates")?
    };
    if let Some(own) = map.get("done") {
        done.push(guard(own)?);
    }
    let escalate = match map.get("escalate").and_then(Value::as_object) {
        Some(e) => (
            e.get("tool_failures").and_then(Value::as_u64),
            e.get("interruptions").and_then(Value::as_u64),
        ),
        None => (None, None),
    };
    Ok(WrittenStep {
        id,
        after,
        allow,
        gates,
        done,
        escalate,
    })
}

fn text(value: Option<&Value>) -> Option<String> {
    value.and_then(Value::as_str).map(str::to_string)
}

fn guard(value: &Value) -> Result<Guard, String> {
    let map: &Map<String, Value> = value.as_object().ok_or("a guard that is not an object")?;
    let [(kind, inner)] = map.iter().collect::<Vec<_>>()[..] else {
        return Err(format!("a guard of {} keys", map.len()));
    };
    let name = || text(Some(inner)).ok_or(format!("`{kind}` without a name"));
    let list = || -> Result<Vec<Guard>, String> {
        inner
            .as_array()
            .ok_or(format!("`{kind}` without a list"))?
            .iter()
            .map(guard)
            .collect()
    };
    Ok(match kind.as_str() {
        "called_ok" => Guard::CalledOk(name()?),
        "called" => Guard::Called(name()?),
        "is_true" => Guard::IsTrue(name()?),
        "exists" => Guard::Exists(name()?),
        "equals" => Guard::Equals {
            key: text(inner.get("key")).ok_or("`equals` without a key")?,
            value: inner
                .get("value")
                .cloned()
                .ok_or("`equals` without a value")?,
        },
        "all" => Guard::All(list()?),
        "any" => Guard::Any(list()?),
        "not" => Guard::Not(Box::new(guard(inner)?)),
        other => return Err(format!("a guard I do not know: `{other}`")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::Spec;
    use proptest::prelude::*;
    use serde_json::json;

    const CHECKOUT: &str = r#"{"v": 1, "kind": "flow", "steps": [
        {"id": "address", "allow": ["set_address"], "done": {"called_ok": "set_address"}},
        {"id": "order", "after": ["address"], "allow": ["place_order"],
         "gates": {"place_order": {"all": [{"exists": "basket"}, {"not": {"is_true": "ordered"}}]}},
         "escalate": {"tool_failures": 2}}
    ]}"#;

    const BOOKING: &str = r#"{"v": 1, "kind": "conversation", "stages": [
        {"id": "party", "allow": ["set_party"], "slots": [{"key": "party_size"}]},
        {"id": "book", "after": ["party"], "allow": ["confirm"],
         "slots": [{"key": "table", "resolve_from": ["party_size"]}],
         "commits": {"book_table": {"is_true": "confirmed"}}, "done": {"exists": "paid"},
         "escalate": {"tool_failures": 2, "interruptions": 3}}
    ]}"#;

    fn flow_of(text: &str) -> FlowSpec {
        match Spec::from_json(text, "test").unwrap() {
            Spec::Flow(flow) => flow,
            Spec::Conversation(convo) => convo.flow().clone(),
        }
    }

    #[test]
    fn livesims_reading_of_a_flow_and_a_conversation_is_the_files() {
        for text in [CHECKOUT, BOOKING] {
            let written = WrittenSpec::read(text).unwrap();
            assert_eq!(written.check(&flow_of(text)), Ok(()));
        }
    }

    #[test]
    fn a_spec_read_otherwise_is_named() {
        let written = WrittenSpec::read(CHECKOUT).unwrap();
        let swapped = flow_of(&CHECKOUT.replace("\"all\"", "\"any\""));
        let err = written.check(&swapped).unwrap_err();
        assert!(
            err.starts_with("step order's gates: the spec file says place_order when all("),
            "{err}"
        );
        let later = flow_of(&CHECKOUT.replace("\"tool_failures\": 2", "\"tool_failures\": 3"));
        assert!(written.check(&later).unwrap_err().contains("escalation"));
        let written = WrittenSpec::read(BOOKING).unwrap();
        let fewer = flow_of(&BOOKING.replace(", \"done\": {\"exists\": \"paid\"}", ""));
        let err = written.check(&fewer).unwrap_err();
        assert!(err.starts_with("step book's done condition"), "{err}");
        let renamed = flow_of(&BOOKING.replace("\"book\"", "\"booking\""));
        assert!(
            written
                .check(&renamed)
                .unwrap_err()
                .contains("declares the steps")
        );
    }

    fn leaf() -> impl Strategy<Value = Value> {
        let tool = prop_oneof![Just("t0"), Just("t1"), Just("t2")];
        let key = prop_oneof![Just("k0"), Just("k1"), Just("k2")];
        let value = prop_oneof![
            any::<i64>().prop_map(|n| json!(n)),
            any::<bool>().prop_map(|b| json!(b)),
            "[a-z]{0,4}".prop_map(|s| json!(s)),
            (any::<u8>(), "[a-z]{1,3}").prop_map(|(n, s)| json!({ "n": n, "s": s })),
        ];
        prop_oneof![
            tool.clone().prop_map(|t| json!({ "called_ok": t })),
            tool.prop_map(|t| json!({ "called": t })),
            key.clone().prop_map(|k| json!({ "is_true": k })),
            key.clone().prop_map(|k| json!({ "exists": k })),
            (key, value).prop_map(|(k, v)| json!({"equals": {"key": k, "value": v}})),
        ]
    }

    /// A guard as the spec format writes one: a leaf, or `all`, `any`
    /// (one to three guards) or `not` of guards, a few levels deep.
    fn guard_json() -> impl Strategy<Value = Value> {
        leaf().prop_recursive(3, 12, 3, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 1..4).prop_map(|g| json!({ "all": g })),
                proptest::collection::vec(inner.clone(), 1..4).prop_map(|g| json!({ "any": g })),
                inner.prop_map(|g| json!({ "not": g })),
            ]
        })
    }

    /// One step (or stage) `i` of a spec, its `after` drawn from the
    /// steps before it.
    fn step_json(i: usize, stage: bool) -> impl Strategy<Value = Value> {
        let tools = proptest::sample::subsequence(vec!["t0", "t1", "t2", "t3"], 0..=4);
        let after = proptest::sample::subsequence((0..i).collect::<Vec<_>>(), 0..=i);
        let guards = proptest::collection::btree_map(
            prop_oneof![Just("t0"), Just("t1"), Just("t4")],
            guard_json(),
            0..3,
        );
        let escalate = (proptest::option::of(1u32..6), proptest::option::of(1u32..6));
        let slots = proptest::collection::vec(
            proptest::option::of(proptest::sample::subsequence(vec!["k0", "k1", "k2"], 1..=2)),
            0..3,
        );
        (
            tools,
            after,
            guards,
            proptest::option::of(guard_json()),
            escalate,
            slots,
        )
            .prop_map(
                move |(tools, after, guards, done, (fails, interruptions), slots)| {
                    let mut step = Map::new();
                    step.insert("id".into(), json!(format!("s{i}")));
                    if !after.is_empty() {
                        let after: Vec<String> = after.iter().map(|a| format!("s{a}")).collect();
                        step.insert("after".into(), json!(after));
                    }
                    let mut allow = tools.clone();
                    if !stage {
                        // A gate is on an allowed tool.
                        allow.extend(guards.keys().copied());
                        allow.sort();
                        allow.dedup();
                    }
                    if !allow.is_empty() {
                        step.insert("allow".into(), json!(allow));
                    }
                    if !guards.is_empty() {
                        step.insert(
                            (if stage { "commits" } else { "gates" }).into(),
                            json!(guards),
                        );
                    }
                    if let Some(done) = done {
                        step.insert("done".into(), done);
                    }
                    if fails.is_some() || interruptions.is_some() {
                        let mut e = Map::new();
                        if let Some(n) = fails {
                            e.insert("tool_failures".into(), json!(n));
                        }
                        if let Some(n) = interruptions {
                            e.insert("interruptions".into(), json!(n));
                        }
                        step.insert("escalate".into(), Value::Object(e));
                    }
                    if stage && !slots.is_empty() {
                        // Slot keys are unique across stages: named after the stage.
                        let slots: Vec<Value> = slots
                            .iter()
                            .enumerate()
                            .map(|(j, from)| {
                                let key = format!("slot{i}_{j}");
                                match from {
                                    Some(inputs) => json!({"key": key, "resolve_from": inputs}),
                                    None => json!({ "key": key }),
                                }
                            })
                            .collect();
                        step.insert("slots".into(), json!(slots));
                    }
                    Value::Object(step)
                },
            )
    }

    fn spec_json() -> impl Strategy<Value = String> {
        (any::<bool>(), 1usize..5).prop_flat_map(|(stage, n)| {
            let steps: Vec<_> = (0..n).map(|i| step_json(i, stage)).collect();
            steps.prop_map(move |steps| {
                let (kind, list) = if stage {
                    ("conversation", "stages")
                } else {
                    ("flow", "steps")
                };
                json!({"v": 1, "kind": kind, list: steps}).to_string()
            })
        })
    }

    proptest! {
        /// For every spec file the format allows, the flow livesim's reader
        /// makes of it is the one the documented rules give (read here
        /// apart): a differential test of the reader and of this check.
        #[test]
        fn livesims_reader_agrees_with_the_documented_rules(text in spec_json()) {
            let spec = Spec::from_json(&text, "generated");
            prop_assert!(spec.is_ok(), "livesim refused {text}: {}", spec.err().unwrap());
            let flow = match spec.unwrap() {
                Spec::Flow(flow) => flow,
                Spec::Conversation(convo) => convo.flow().clone(),
            };
            let written = WrittenSpec::read(&text).unwrap();
            prop_assert_eq!(written.check(&flow), Ok(()), "{}", text);
        }
    }
}
