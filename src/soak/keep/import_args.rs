//! Arguments for a call imported from a journal, which does not record
//! them: taken back from what the call wrote through its tool's `writes`
//! templates, or left unfit so that a call that failed fails again.

use serde_json::{Map, Value};

use crate::soak::agent::tools::SimTool;

/// The argument a write template names, and its value, from the value the
/// template rendered: `"{args.amount}"` rendered as `42.5` gives
/// `("amount", 42.5)`; `"R-{args.card}"` rendered as `"R-4242"` gives
/// `("card", "4242")`.
pub(super) fn invert(template: &Value, written: &Value) -> Option<(String, Value)> {
    let text = template.as_str()?;
    let start = text.find("{args.")?;
    let end = start + text[start..].find('}')?;
    let path = &text[start + "{args.".len()..end];
    let (prefix, suffix) = (&text[..start], &text[end + 1..]);
    if suffix.contains("{args.") {
        return None;
    }
    if prefix.is_empty() && suffix.is_empty() {
        return Some((path.to_string(), written.clone()));
    }
    let middle = written
        .as_str()?
        .strip_prefix(prefix)?
        .strip_suffix(suffix)?;
    Some((path.to_string(), Value::String(middle.to_string())))
}

/// Sets `path` (`a.b`) in `args` to `value`.
pub(super) fn set_path(args: &mut Value, path: &str, value: Value) {
    let mut at = args;
    let mut parts = path.split('.').peekable();
    while let Some(part) = parts.next() {
        if !at.is_object() {
            *at = Value::Object(Map::new());
        }
        let map = at.as_object_mut().expect("made an object above");
        if parts.peek().is_none() {
            map.insert(part.to_string(), value);
            return;
        }
        at = map
            .entry(part.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
    }
}

/// Leaves a required argument out, so the call fails its parameter check.
/// `false` when the tool requires none.
pub(super) fn unfit(sim: &SimTool, args: &mut Value) -> bool {
    let required = sim
        .parameters
        .as_ref()
        .and_then(|p| p.get("required"))
        .and_then(Value::as_array)
        .and_then(|r| r.first())
        .and_then(Value::as_str);
    match (required, args.as_object_mut()) {
        (Some(key), Some(map)) => {
            map.remove(key);
            true
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_template_gives_back_the_argument_it_rendered() {
        assert_eq!(
            invert(&json!("{args.amount}"), &json!(17.25)),
            Some(("amount".into(), json!(17.25)))
        );
        assert_eq!(
            invert(&json!("R-{args.card}/x"), &json!("R-4242/x")),
            Some(("card".into(), json!("4242")))
        );
        // Text the template did not render, or two placeholders: nothing.
        assert_eq!(invert(&json!("R-{args.card}"), &json!("Q-4242")), None);
        assert_eq!(invert(&json!("{args.a}-{args.b}"), &json!("1-2")), None);
        assert_eq!(invert(&json!(true), &json!(true)), None);
    }

    #[test]
    fn a_path_sets_nested_arguments() {
        let mut args = json!({"city": "Oslo"});
        set_path(&mut args, "where.zip", json!("0150"));
        assert_eq!(args, json!({"city": "Oslo", "where": {"zip": "0150"}}));
    }
}
