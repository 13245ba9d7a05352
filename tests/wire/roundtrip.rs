//! Round trips: decode → encode → decode gives the same message for every
//! fixture of every message type; what goes out is camelCase; snake_case
//! comes in as the same message.

use livesim::wire::{
    ClientMessage, Content, FunctionCall, Part, ServerContent, ServerMessage, ToolCall,
    Transcription,
};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

use super::{fixture_bytes, fixture_names};

/// Fixtures whose input is not the canonical encoding (numbers for int64,
/// snake_case, written-out defaults, empty lists): they round-trip as
/// messages, but their bytes come back canonical.
const NON_CANONICAL: &[&str] = &[
    "client/client_realtime_snake_case.json",
    "client/client_snake_case.json",
    "client/client_unknown_key.json",
    "server/explicit_defaults.json",
    "server/int64_number.json",
    "server/model_turn_empty_parts.json",
    "server/resumption_empty_handle.json",
    "server/resumption_not_resumable.json",
    "server/snake_case_frame.json",
];

/// Fixtures with camelCase keys that livesim does not know (kept in
/// `extra`), which a snake_case rewrite would rename.
const UNKNOWN_CAMEL_KEYS: &[&str] = &[
    "client/client_unknown_key.json",
    "server/grounding_metadata.json",
    "server/known_with_unknown_sibling.json",
    "server/part_unknown_key.json",
    "server/unknown_top_level_key.json",
    "server/usage_all_fields.json",
];

/// Fixtures that are meant not to decode.
const UNDECODABLE: &[&str] = &["server/go_away_malformed.json"];

fn json_fixtures() -> Vec<(String, Vec<u8>)> {
    ["server", "client"]
        .iter()
        .flat_map(|sub| {
            fixture_names(sub)
                .into_iter()
                .filter(|n| n.ends_with(".json"))
                .map(move |n| (format!("{sub}/{n}"), fixture_bytes(sub, &n)))
        })
        .filter(|(name, _)| !UNDECODABLE.contains(&name.as_str()))
        .collect()
}

/// Decodes as the fixture's side's message, re-encodes, returns both JSONs.
fn round_trip(name: &str, bytes: &[u8]) -> (Value, Value) {
    if name.starts_with("server/") {
        let first = ServerMessage::from_slice(bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        let encoded = first.to_json();
        let second = ServerMessage::from_slice(encoded.as_bytes()).unwrap();
        assert_eq!(first, second, "{name}");
        (
            serde_json::from_slice(bytes).unwrap(),
            serde_json::from_str(&encoded).unwrap(),
        )
    } else {
        let first = ClientMessage::from_slice(bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        let encoded = first.to_json();
        let second = ClientMessage::from_slice(encoded.as_bytes()).unwrap();
        assert_eq!(first, second, "{name}");
        (
            serde_json::from_slice(bytes).unwrap(),
            serde_json::from_str(&encoded).unwrap(),
        )
    }
}

#[test]
fn every_fixture_round_trips() {
    let fixtures = json_fixtures();
    assert!(fixtures.len() > 70);
    for (name, bytes) in &fixtures {
        let (input, output) = round_trip(name, bytes);
        if !NON_CANONICAL.contains(&name.as_str()) {
            assert_eq!(
                output, input,
                "{name}: canonical input comes back as it was"
            );
        }
    }
}

fn keys_with_underscores(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                if k.contains('_') {
                    out.push(k.clone());
                }
                keys_with_underscores(v, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| keys_with_underscores(v, out)),
        _ => {}
    }
}

#[test]
fn encoding_is_camel_case_even_for_snake_case_input() {
    for (name, bytes) in json_fixtures() {
        let (_, output) = round_trip(&name, &bytes);
        let mut snake = Vec::new();
        keys_with_underscores(&output, &mut snake);
        assert!(snake.is_empty(), "{name}: {snake:?}");
    }
}

fn to_snake(key: &str) -> String {
    let mut out = String::new();
    for c in key.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

fn snake_keys(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (to_snake(k), snake_keys(v)))
                .collect::<Map<String, Value>>(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(snake_keys).collect()),
        other => other.clone(),
    }
}

#[test]
fn snake_case_input_decodes_to_the_same_message() {
    let mut compared = 0;
    for (name, bytes) in json_fixtures() {
        if UNKNOWN_CAMEL_KEYS.contains(&name.as_str()) {
            continue;
        }
        let camel: Value = serde_json::from_slice(&bytes).unwrap();
        let snake = snake_keys(&camel).to_string();
        if name.starts_with("server/") {
            assert_eq!(
                ServerMessage::from_slice(snake.as_bytes()).unwrap(),
                ServerMessage::from_slice(&bytes).unwrap(),
                "{name}"
            );
        } else {
            assert_eq!(
                ClientMessage::from_slice(snake.as_bytes()).unwrap(),
                ClientMessage::from_slice(&bytes).unwrap(),
                "{name}"
            );
        }
        compared += 1;
    }
    assert!(compared > 60);
}

#[test]
fn built_messages_encode_as_the_protocol_spells_them() {
    let content = ServerMessage {
        server_content: Some(ServerContent {
            model_turn: Some(Content::from_parts(vec![Part::text("Hel")])),
            turn_complete: true,
            ..ServerContent::default()
        }),
        ..ServerMessage::default()
    };
    assert_eq!(
        content.to_json(),
        r#"{"serverContent":{"modelTurn":{"parts":[{"text":"Hel"}]},"turnComplete":true}}"#
    );
    let answer = ClientMessage::tool_response(vec![livesim::wire::FunctionResponse::new(
        "fc_01",
        "get_weather",
        json!({"result": "-3C"}),
    )]);
    assert_eq!(
        answer.to_json(),
        r#"{"toolResponse":{"functionResponses":[{"id":"fc_01","name":"get_weather","response":{"result":"-3C"}}]}}"#
    );
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        ".{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z]{1,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

prop_compose! {
    fn arb_server_message()(
        texts in prop::collection::vec((".{0,12}", any::<bool>()), 0..4),
        flags in any::<[bool; 4]>(),
        transcript in prop::option::of((".{0,12}", any::<bool>())),
        // A `null` args value reads back as absent, so it is not generated.
        calls in prop::collection::vec(
            ("[a-z0-9_]{0,6}", "[a-z_]{1,8}", prop::option::of(arb_json().prop_filter("not null", |v| !v.is_null()))),
            0..3,
        ),
        extra in prop::collection::btree_map("x[A-Za-z]{1,6}", arb_json(), 0..2),
    ) -> ServerMessage {
        let parts = texts.into_iter().map(|(t, thought)| if thought { Part::thought(t) } else { Part::text(t) }).collect();
        ServerMessage {
            server_content: Some(ServerContent {
                model_turn: Some(Content::from_parts(parts)),
                turn_complete: flags[0],
                interrupted: flags[1],
                generation_complete: flags[2],
                waiting_for_input: flags[3],
                output_transcription: transcript.map(|(text, finished)| Transcription { text: Some(text), finished, ..Default::default() }),
                ..ServerContent::default()
            }),
            tool_call: (!calls.is_empty()).then(|| ToolCall {
                function_calls: calls.into_iter().map(|(id, name, args)| FunctionCall { id: Some(id), name, args, ..Default::default() }).collect(),
                ..ToolCall::default()
            }),
            extra,
            ..ServerMessage::default()
        }
    }
}

proptest! {
    /// Any message built from the typed API decodes back from its own encoding unchanged.
    #[test]
    fn built_server_messages_round_trip(message in arb_server_message()) {
        let encoded = message.to_json();
        prop_assert_eq!(ServerMessage::from_slice(encoded.as_bytes()).unwrap(), message);
    }
}
