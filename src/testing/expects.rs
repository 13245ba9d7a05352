//! What a script's `expect` can name, and whether a client message is the
//! one it waits for.
//!
//! Only input the session consumes in order is waited for: `clientContent`,
//! `realtimeInput` and `contextUpdate` (the protocol's fourth input, which
//! Google's SDKs send as `send_context_update` / `sendContextUpdate`). A
//! tool response is what a `call` waits for, and `setup` opens every
//! connection: an `expect` of either, or of a misspelt name, could never
//! match, so the script loader refuses it.

use serde_json::Value;

use crate::jsonl::nearest;
use crate::wire::camel_case;

/// The client messages an `expect` may wait for, and the members
/// `key.member` may name in each.
const KINDS: &[(&str, &[&str])] = &[
    ("clientContent", &["turns", "turnComplete"]),
    (
        "realtimeInput",
        &[
            "audio",
            "video",
            "text",
            "mediaChunks",
            "activityStart",
            "activityEnd",
            "audioStreamEnd",
        ],
    ),
    ("contextUpdate", &["systemInstruction", "tools"]),
];

/// Why `wanted` (as written in a script) can never match a client
/// message, or `Ok` when it can.
pub(crate) fn check(wanted: &str) -> Result<(), String> {
    check_as("expect", wanted)
}

/// [`check`], for a name the script gives as `what` (`expect`, `stream`).
pub(crate) fn check_as(what: &str, wanted: &str) -> Result<(), String> {
    let (top, member) = match wanted.split_once('.') {
        Some((top, member)) => (top, Some(member)),
        None => (wanted, None),
    };
    let kinds: Vec<&str> = KINDS.iter().map(|(kind, _)| *kind).collect();
    let Some((kind, members)) = KINDS.iter().find(|(kind, _)| *kind == camel_case(top)) else {
        let why = match camel_case(top).as_str() {
            "toolResponse" => {
                " (a tool response is what a `call` waits for; the script cannot expect one)"
                    .to_string()
            }
            "setup" => {
                " (every connection opens with setup; the script cannot expect one)".to_string()
            }
            _ => nearest(top, &kinds)
                .map(|meant| format!("; did you mean `{}`?", with_member(meant, member)))
                .unwrap_or_default(),
        };
        return Err(format!(
            "{what} `{wanted}` names no client message the script can wait for{why} (expected one of {})",
            quoted(&kinds)
        ));
    };
    match member {
        Some(member) if !members.contains(&camel_case(member).as_str()) => {
            let hint = nearest(member, members)
                .map(|meant| format!("; did you mean `{kind}.{meant}`?"))
                .unwrap_or_default();
            Err(format!(
                "{what} `{wanted}` names no member a {kind} message holds{hint} (expected one of {})",
                quoted(members)
            ))
        }
        _ => Ok(()),
    }
}

fn with_member(kind: &str, member: Option<&str>) -> String {
    match member {
        Some(member) => format!("{kind}.{member}"),
        None => kind.to_string(),
    }
}

fn quoted(words: &[&str]) -> String {
    let quoted: Vec<String> = words.iter().map(|w| format!("`{w}`")).collect();
    quoted.join(", ")
}

/// Whether a client message with top-level `key` and `body` is what the
/// script's `expect` of `wanted` (camelCase) waits for: `key` itself, or
/// `key.member` for a message whose body holds `member`
/// (`realtimeInput.audio`, `realtimeInput.activityStart`).
pub(crate) fn matches(wanted: &str, key: &str, body: Option<&Value>) -> bool {
    match wanted.split_once('.') {
        None => wanted == key,
        Some((top, member)) => {
            top == key
                && body
                    .and_then(Value::as_object)
                    .is_some_and(|b| b.keys().any(|k| camel_case(k) == member))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn an_expect_that_can_never_match_is_named_with_the_nearest_kind() {
        for fine in [
            "clientContent",
            "client_content",
            "realtimeInput.audio",
            "realtime_input.activity_start",
            "contextUpdate",
        ] {
            assert_eq!(check(fine), Ok(()), "{fine}");
        }
        let typo = check("clientcontent").unwrap_err();
        assert!(typo.contains("did you mean `clientContent`?"), "{typo}");
        let member = check("realtimeInput.audoi").unwrap_err();
        assert!(
            member.contains("did you mean `realtimeInput.audio`?"),
            "{member}"
        );
        let answer = check("toolResponse").unwrap_err();
        assert!(answer.contains("what a `call` waits for"), "{answer}");
        assert!(check("tool_response").is_err());
    }
}
