//! Tools: what a session declares in `setup`, the calls the server makes
//! (`toolCall`), their cancellation (`toolCallCancellation`) and the
//! client's answers (`toolResponse`).
//!
//! Ids and arguments are kept exactly as sent: a `toolCall` with two calls
//! sharing one id decodes to two calls; the policy for duplicates belongs
//! to the session, not to the decoder.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::numbers::flag;
use super::open_enum::{Behavior, Scheduling};
use super::{Extra, Object};

/// One entry of `setup.tools`: function declarations and/or a built-in tool.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// Functions the model may call.
    #[serde(
        default,
        alias = "function_declarations",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub function_declarations: Vec<FunctionDeclaration>,
    /// Google Search grounding (`{}` turns it on).
    #[serde(
        default,
        alias = "google_search",
        skip_serializing_if = "Option::is_none"
    )]
    pub google_search: Option<Object>,
    /// The code-execution tool (`{}` turns it on).
    #[serde(
        default,
        alias = "code_execution",
        skip_serializing_if = "Option::is_none"
    )]
    pub code_execution: Option<Object>,
    /// The URL-context tool (`{}` turns it on).
    #[serde(
        default,
        alias = "url_context",
        skip_serializing_if = "Option::is_none"
    )]
    pub url_context: Option<Object>,
    /// Keys this version does not know, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

impl Tool {
    /// A tool entry declaring these functions.
    pub fn functions(declarations: Vec<FunctionDeclaration>) -> Self {
        Tool {
            function_declarations: declarations,
            ..Tool::default()
        }
    }
}

/// A function the model may call.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FunctionDeclaration {
    /// The function's name, echoed in calls.
    #[serde(default)]
    pub name: String,
    /// What it does, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its parameters as an OpenAPI-style schema (`{"type": "OBJECT", …}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Value>,
    /// Its parameters as JSON Schema, the alternative to `parameters`.
    #[serde(
        default,
        alias = "parameters_json_schema",
        skip_serializing_if = "Option::is_none"
    )]
    pub parameters_json_schema: Option<Value>,
    /// The schema of its response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<Value>,
    /// `BLOCKING` (default) or `NON_BLOCKING`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub behavior: Option<Behavior>,
    /// Keys this version does not know, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `toolCall`: the server asks the client to run functions.
///
/// ```
/// use livesim::wire::ServerMessage;
///
/// let frame = br#"{"toolCall":{"functionCalls":[
///     {"id":"fc_1","name":"get_weather","args":{"city":"Oslo"}},
///     {"id":"fc_1","name":"get_weather"}]}}"#;
/// let call = ServerMessage::from_slice(frame).unwrap().tool_call.unwrap();
/// assert_eq!(call.function_calls.len(), 2); // a duplicate id is kept, not merged
/// assert_eq!(call.function_calls[0].args.as_ref().unwrap()["city"], "Oslo");
/// assert_eq!(call.function_calls[1].args, None);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    /// The calls, in the order sent.
    #[serde(
        default,
        alias = "function_calls",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub function_calls: Vec<FunctionCall>,
    /// Keys this version does not know, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One function call.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FunctionCall {
    /// An opaque id that the response must echo.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The function's name.
    #[serde(default)]
    pub name: String,
    /// The arguments: normally an object; absent, `{}` and nested values
    /// are all kept as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Value>,
    /// Keys this version does not know, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `toolCallCancellation`: calls the client should stop and not answer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallCancellation {
    /// Ids of calls sent earlier.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ids: Vec<String>,
    /// Keys this version does not know, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `toolResponse`: the client's answers to function calls.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResponse {
    /// One response per answered call.
    #[serde(
        default,
        alias = "function_responses",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub function_responses: Vec<FunctionResponse>,
    /// Keys this version does not know, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The answer to one function call.
///
/// ```
/// use livesim::wire::FunctionResponse;
/// use serde_json::json;
///
/// let answer = FunctionResponse::new("fc_1", "get_weather", json!({"result": "-3C"}));
/// assert_eq!(
///     serde_json::to_value(&answer).unwrap(),
///     json!({"id": "fc_1", "name": "get_weather", "response": {"result": "-3C"}}),
/// );
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FunctionResponse {
    /// The id of the call answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The function's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The result: the server wants a JSON object (`{"result": …}` or
    /// `{"error": …}`); other values are kept so a fake server can reject them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<Value>,
    /// For non-blocking functions: when the model takes the answer up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduling: Option<Scheduling>,
    /// For non-blocking functions: more responses for this call follow.
    #[serde(
        default,
        alias = "will_continue",
        deserialize_with = "flag::deserialize",
        skip_serializing_if = "flag::is_false"
    )]
    pub will_continue: bool,
    /// Keys this version does not know, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

impl FunctionResponse {
    /// The response `response` to call `id` of function `name`.
    pub fn new(id: impl Into<String>, name: impl Into<String>, response: Value) -> Self {
        FunctionResponse {
            id: Some(id.into()),
            name: Some(name.into()),
            response: Some(response),
            ..FunctionResponse::default()
        }
    }
}
