//! Arguments for generated tool calls: ones that fit a tool's parameters
//! (a declared example, or values drawn from its schema) and ones that do
//! not (a required argument left out, a value of the wrong type).
//!
//! Schemas are the Live API's OpenAPI subset: `type` (`OBJECT`, `STRING`,
//! `INTEGER`, `NUMBER`, `BOOLEAN`, `ARRAY`, in either case), `properties`,
//! `required`, `items`, `enum`. Anything else draws `null`.

use serde_json::{Map, Value, json};

use crate::executor::Stream;

/// Words string arguments are drawn from, a few of them not ASCII.
const WORDS: [&str; 10] = [
    "Paris",
    "Zürich",
    "Lyon",
    "東京",
    "Oslo",
    "São Paulo",
    "alpha",
    "order-7",
    "Kraków",
    "blue",
];

/// Arguments that fit `parameters`: one of `examples` when there are
/// some, else values drawn from the schema.
pub(crate) fn valid(parameters: Option<&Value>, examples: &[Value], draw: &mut Stream) -> Value {
    if let Some(example) = draw.pick(examples) {
        return example.clone();
    }
    match parameters {
        Some(schema) => from_schema(schema, draw, 0),
        None => json!({}),
    }
}

/// Arguments that do not fit: a required argument missing, or one of the
/// wrong type; an unexpected argument when the schema declares none.
pub(crate) fn bad(parameters: Option<&Value>, examples: &[Value], draw: &mut Stream) -> Value {
    let mut args = match valid(parameters, examples, draw) {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    let required: Vec<String> = parameters
        .and_then(|p| p.get("required"))
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    let present: Vec<String> = args.keys().cloned().collect();
    if !required.is_empty() && draw.chance(0.5) {
        if let Some(key) = draw.pick(&required) {
            args.remove(key);
        }
    } else if let Some(key) = draw.pick(&present).cloned() {
        let wrong = match args.get(&key) {
            Some(Value::String(_)) => json!(42),
            _ => json!("not the right type"),
        };
        args.insert(key, wrong);
    } else {
        args.insert("unexpected".into(), json!(true));
    }
    Value::Object(args)
}

fn schema_type(schema: &Value) -> String {
    schema
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("OBJECT")
        .to_ascii_uppercase()
}

fn from_schema(schema: &Value, draw: &mut Stream, depth: usize) -> Value {
    if let Some(choices) = schema.get("enum").and_then(Value::as_array)
        && let Some(choice) = draw.pick(choices)
    {
        return choice.clone();
    }
    match schema_type(schema).as_str() {
        "OBJECT" => {
            let mut out = Map::new();
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
                for (key, property) in properties {
                    // Optional arguments are given half the time.
                    if depth < 4 && (required.contains(&key.as_str()) || draw.chance(0.5)) {
                        out.insert(key.clone(), from_schema(property, draw, depth + 1));
                    }
                }
            }
            Value::Object(out)
        }
        "STRING" => json!(WORDS[draw.index(WORDS.len())]),
        "INTEGER" => json!(draw.range(1..=12)),
        "NUMBER" => json!(draw.range(100..=9999) as f64 / 100.0),
        "BOOLEAN" => json!(draw.chance(0.5)),
        "ARRAY" => {
            let n = if depth < 4 { draw.range(0..=3) } else { 0 };
            let items = schema
                .get("items")
                .cloned()
                .unwrap_or(json!({"type": "STRING"}));
            Value::Array(
                (0..n)
                    .map(|_| from_schema(&items, draw, depth + 1))
                    .collect(),
            )
        }
        _ => Value::Null,
    }
}

/// Why `args` do not fit `parameters`, if they do not: a required
/// argument missing, an argument not declared, or a value of the wrong
/// type (checked one level deep, as a tool's own decoding would).
pub(crate) fn misfit(parameters: Option<&Value>, args: &Value) -> Option<String> {
    let schema = parameters?;
    let Some(args) = args.as_object() else {
        return Some(format!("arguments must be an object, got {args}"));
    };
    let properties = schema.get("properties").and_then(Value::as_object);
    for key in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !args.contains_key(key) {
            return Some(format!("missing required argument `{key}`"));
        }
    }
    for (key, value) in args {
        let Some(property) = properties.and_then(|p| p.get(key)) else {
            return Some(format!("unexpected argument `{key}`"));
        };
        let fits = match schema_type(property).as_str() {
            "STRING" => value.is_string(),
            "INTEGER" => value.is_i64() || value.is_u64(),
            "NUMBER" => value.is_number(),
            "BOOLEAN" => value.is_boolean(),
            "ARRAY" => value.is_array(),
            "OBJECT" => value.is_object(),
            _ => true,
        };
        if !fits {
            return Some(format!(
                "argument `{key}` should be {}, got {value}",
                schema_type(property).to_ascii_lowercase()
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::Seed;

    fn schema() -> Value {
        json!({"type": "OBJECT",
               "properties": {"city": {"type": "STRING"}, "days": {"type": "INTEGER"},
                              "units": {"type": "STRING", "enum": ["C", "F"]}},
               "required": ["city"]})
    }

    /// Drawn arguments always fit their schema; bad ones never do.
    #[test]
    fn valid_arguments_fit_and_bad_ones_do_not() {
        let mut draw = Stream::new(Seed::new(1), "t");
        for _ in 0..500 {
            let good = valid(Some(&schema()), &[], &mut draw);
            assert_eq!(misfit(Some(&schema()), &good), None, "{good}");
            let bad = bad(Some(&schema()), &[], &mut draw);
            assert!(misfit(Some(&schema()), &bad).is_some(), "{bad}");
        }
    }
}
