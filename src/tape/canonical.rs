//! Canonical JSON: the form tape inputs are matched in.

use serde_json::Value;

/// `value` as canonical JSON: object keys sorted (by their UTF-8 bytes) at
/// every depth, no whitespace. Two values that differ only in key order
/// have the same canonical form.
///
/// ```
/// use livesim::tape::canonical_json;
/// use serde_json::json;
///
/// assert_eq!(canonical_json(&json!({"b": 1, "a": [true, {"d": null, "c": "x"}]})),
///            r#"{"a":[true,{"c":"x","d":null}],"b":1}"#);
/// ```
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write(value, &mut out);
    out
}

fn write(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}
