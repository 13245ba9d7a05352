//! A tool's `parameters`, checked as the Live API reads a parameter
//! schema (its OpenAPI subset) before any run draws arguments from it.
//!
//! The generator draws arguments from `type`, `properties`, `required`,
//! `items` and `enum`, and `examples` are checked against them: a schema
//! whose `type` is misspelt, whose `required` names no property, or whose
//! `enum` offers nothing would make every run draw from something the
//! agent's author did not mean, so each is refused where it is written.
//! Other members (`description`, `format`, `nullable`, `minimum`, …) are
//! the API's too and pass unread.

use crate::jsonl::did_you_mean;
use crate::soak::file_reader::{Decoded, Node};

/// The types a schema names, upper case (the API reads either case).
const TYPES: [&str; 7] = [
    "OBJECT", "STRING", "INTEGER", "NUMBER", "BOOLEAN", "ARRAY", "NULL",
];

/// How deep schemas may nest: far past any tool's, short of a stack's
/// limit.
const DEPTH: usize = 32;

/// Checks the parameter schema at `node`.
pub(crate) fn check(node: &Node<'_>) -> Decoded<()> {
    schema(node, 0)
}

fn schema(node: &Node<'_>, depth: usize) -> Decoded<()> {
    if depth > DEPTH {
        return node.fail(format!("schemas nest more than {DEPTH} deep"));
    }
    let fields = node.map("a schema: an object such as {\"type\": \"STRING\"}")?;
    if let Some(kind) = fields.get("type") {
        let name = kind.string("a type name")?;
        let upper = name.to_ascii_uppercase();
        if !TYPES.contains(&upper.as_str()) {
            let hint = did_you_mean(&upper, &TYPES);
            return kind.fail(format!(
                "`{name}` is not a schema type (one of {}){hint}",
                TYPES.join(", ")
            ));
        }
    }
    let mut declared = Vec::new();
    if let Some(properties) = fields.get("properties") {
        let properties = properties.map("properties: an object of name → schema")?;
        for (name, property) in properties.members() {
            schema(&property, depth + 1)?;
            declared.push(name.as_str());
        }
    }
    if let Some(required) = fields.get("required") {
        for name in required.list("a list of required property names")? {
            let text = name.string("a property name")?;
            if fields.get("properties").is_some() && !declared.contains(&text.as_str()) {
                let hint = did_you_mean(&text, &declared);
                return name.fail(format!(
                    "`{text}` is required but not among the properties{hint}"
                ));
            }
        }
    }
    // An array without `items` draws strings, as the API allows.
    if let Some(items) = fields.get("items") {
        schema(&items, depth + 1)?;
    }
    if let Some(choices) = fields.get("enum")
        && choices.list("a list of allowed values")?.is_empty()
    {
        return choices.fail("an enum must offer at least one value");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn problem(schema: Value) -> Option<String> {
        let text = schema.to_string();
        check(&Node::root(&schema))
            .err()
            .map(|m| m.locate("tool.json", &text).to_string())
    }

    #[test]
    fn the_api_s_schemas_pass() {
        assert_eq!(
            problem(json!({
                "type": "OBJECT",
                "properties": {
                    "city": {"type": "STRING", "description": "where"},
                    "days": {"type": "integer", "minimum": 1},
                    "units": {"type": "STRING", "enum": ["C", "F"]},
                    "stops": {"type": "ARRAY", "items": {"type": "OBJECT", "properties": {}}}
                },
                "required": ["city"]
            })),
            None
        );
        assert_eq!(problem(json!({})), None);
    }

    #[test]
    fn each_mistake_is_named_where_it_is() {
        let cases = [
            (
                json!({"type": "BOGUS"}),
                "type: `BOGUS` is not a schema type",
            ),
            (json!({"type": "STRNG"}), "did you mean `STRING`?"),
            (json!({"type": 5}), "type: expected a type name"),
            (json!({"properties": 9}), "properties: expected properties"),
            (
                json!({"properties": {"a": {"type": "NOPE"}}}),
                "properties.a.type: `NOPE` is not a schema type",
            ),
            (json!({"required": false}), "required: expected a list"),
            (
                json!({"required": [1, 2]}),
                "required[0]: expected a property name",
            ),
            (
                json!({"properties": {"amount": {}}, "required": ["amuont"]}),
                "required[0]: `amuont` is required but not among the properties; did you mean `amount`?",
            ),
            (
                json!({"enum": []}),
                "enum: an enum must offer at least one value",
            ),
            (json!({"items": "x"}), "items: expected a schema"),
            (json!([1]), "expected a schema"),
        ];
        for (schema, expected) in cases {
            let found = problem(schema.clone()).unwrap_or_default();
            assert!(found.contains(expected), "{schema}: {found}");
        }
    }

    #[test]
    fn a_schema_nested_past_any_tool_s_is_refused() {
        let mut schema = json!({"type": "STRING"});
        for _ in 0..100 {
            schema = json!({"type": "ARRAY", "items": schema});
        }
        assert!(problem(schema).unwrap().contains("nest more than"));
    }
}
