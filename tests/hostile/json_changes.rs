//! Changes a JSON document can undergo, value by value, for the tests
//! that change valid files and frames the way a careless user or an
//! attacker would: a number made huge, negative, fractional or past u64,
//! a list emptied, reversed or grown, a key dropped, a string emptied or
//! made long, a value of another type. And what those tests share: how
//! many cases they run, and the failures of a run they ask about.

use proptest::test_runner::Config;
use serde_json::Value;

/// What `run` broke of `invariants`, each as `name: message`.
pub fn broken(run: &livesim::soak::SeedRun, invariants: &[&str]) -> Vec<String> {
    run.failures
        .iter()
        .filter(|f| invariants.contains(&f.invariant.as_str()))
        .map(|f| format!("{}: {}", f.invariant, f.message))
        .collect()
}

/// The cases a test of changed inputs runs: `PROPTEST_CASES` divided by
/// `share` (a test whose case costs more runs fewer), and at least
/// `least`, which is also the number when the variable is not set.
pub fn cases(least: u32, share: u32) -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse::<u32>().ok())
        .map_or(least, |n| (n / share).max(least));
    Config {
        cases,
        ..Config::default()
    }
}

/// One step from a value to a member of it.
#[derive(Clone, Debug)]
enum Seg {
    Key(String),
    Index(usize),
}

/// Every node of `value`, as paths from the root (the root first).
fn paths(value: &Value, at: &mut Vec<Seg>, out: &mut Vec<Vec<Seg>>) {
    out.push(at.clone());
    match value {
        Value::Object(map) => {
            for (key, member) in map {
                at.push(Seg::Key(key.clone()));
                paths(member, at, out);
                at.pop();
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                at.push(Seg::Index(i));
                paths(item, at, out);
                at.pop();
            }
        }
        _ => {}
    }
}

fn node_mut<'a>(value: &'a mut Value, path: &[Seg]) -> &'a mut Value {
    path.iter().fold(value, |v, seg| match seg {
        Seg::Key(k) => &mut v[k.as_str()],
        Seg::Index(i) => &mut v[*i],
    })
}

fn number(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{text:?}: {e}"))
}

/// The changes a value can undergo.
pub const CHANGES: u8 = 18;

/// Changes the node at `path` of `value` by change `change`.
fn change(value: &mut Value, path: &[Seg], change: u8) {
    if change == CHANGES - 1 {
        // Drop the node from its parent.
        if let Some((last, parent)) = path.split_last() {
            match (node_mut(value, parent), last) {
                (Value::Object(map), Seg::Key(k)) => {
                    map.shift_remove(k);
                }
                (Value::Array(items), Seg::Index(i)) => {
                    items.remove(*i);
                }
                _ => {}
            }
        }
        return;
    }
    let node = node_mut(value, path);
    *node = match change {
        0 => number("0"),
        1 => number("-1"),
        2 => number("1e308"),
        3 => number("18446744073709551615"),
        4 => number("1e400"),
        5 => number("0.5"),
        6 => number("-0.0000001"),
        7 => Value::String(String::new()),
        8 => Value::Null,
        9 => Value::Array(Vec::new()),
        10 => Value::Object(Default::default()),
        11 => Value::Bool(true),
        12 => Value::String("x".repeat(5000)),
        13 => Value::String("{args.}\u{0}../é{".to_string()),
        14 => match node.take() {
            Value::Array(mut items) => {
                items.reverse();
                Value::Array(items)
            }
            // A thousand times as large, where the digits allow it.
            Value::Number(n) => {
                serde_json::from_str(&format!("{n}000")).unwrap_or_else(|_| number("1000"))
            }
            other => other,
        },
        15 => match node.take() {
            Value::Array(mut items) => {
                if let Some(first) = items.first().cloned() {
                    items.push(first);
                }
                Value::Array(items)
            }
            Value::String(s) => Value::String(format!("{s}{s}")),
            other => other,
        },
        _ => match node.take() {
            Value::Object(mut map) => {
                let first = map.keys().next().cloned();
                if let Some(k) = first {
                    map.shift_remove(&k);
                }
                Value::Object(map)
            }
            Value::Number(n) => {
                let n = n.to_string();
                number(n.strip_prefix('-').map_or(&*format!("-{n}"), |p| p))
            }
            other => other,
        },
    };
}

/// `text` (JSON) with `changes` made (see [`change_value`]).
pub fn changed(text: &str, changes: &[(u32, u8)]) -> String {
    let mut value: Value = serde_json::from_str(text).expect("JSON");
    change_value(&mut value, changes);
    serde_json::to_string_pretty(&value).expect("JSON")
}

/// Makes `changes` to `value`, each a node (by its index among the
/// nodes, modulo their number) and a change.
pub fn change_value(value: &mut Value, changes: &[(u32, u8)]) {
    for &(pick, c) in changes {
        let mut all = Vec::new();
        paths(value, &mut Vec::new(), &mut all);
        let path = all[pick as usize % all.len()].clone();
        change(value, &path, c);
    }
}
