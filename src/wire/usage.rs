//! `usageMetadata`: token counts, alone in a frame or beside any payload.
//!
//! Vertex has used other names (`candidatesTokenCount`); those land in
//! `extra` rather than failing the frame.

use serde::{Deserialize, Serialize};

use super::Extra;
use super::numbers::int32;
use super::open_enum::Modality;

/// `usageMetadata`. Counts are numbers on the wire; quoted counts are
/// accepted too.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageMetadata {
    /// Tokens in the prompt.
    #[serde(
        default,
        alias = "prompt_token_count",
        with = "int32",
        skip_serializing_if = "Option::is_none"
    )]
    pub prompt_token_count: Option<i64>,
    /// Prompt tokens served from cache.
    #[serde(
        default,
        alias = "cached_content_token_count",
        with = "int32",
        skip_serializing_if = "Option::is_none"
    )]
    pub cached_content_token_count: Option<i64>,
    /// Tokens in the response.
    #[serde(
        default,
        alias = "response_token_count",
        with = "int32",
        skip_serializing_if = "Option::is_none"
    )]
    pub response_token_count: Option<i64>,
    /// Tokens in tool-use prompts.
    #[serde(
        default,
        alias = "tool_use_prompt_token_count",
        with = "int32",
        skip_serializing_if = "Option::is_none"
    )]
    pub tool_use_prompt_token_count: Option<i64>,
    /// Tokens spent reasoning.
    #[serde(
        default,
        alias = "thoughts_token_count",
        with = "int32",
        skip_serializing_if = "Option::is_none"
    )]
    pub thoughts_token_count: Option<i64>,
    /// All tokens.
    #[serde(
        default,
        alias = "total_token_count",
        with = "int32",
        skip_serializing_if = "Option::is_none"
    )]
    pub total_token_count: Option<i64>,
    /// Prompt tokens by modality.
    #[serde(
        default,
        alias = "prompt_tokens_details",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub prompt_tokens_details: Vec<ModalityTokenCount>,
    /// Cached tokens by modality.
    #[serde(
        default,
        alias = "cache_tokens_details",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub cache_tokens_details: Vec<ModalityTokenCount>,
    /// Response tokens by modality.
    #[serde(
        default,
        alias = "response_tokens_details",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub response_tokens_details: Vec<ModalityTokenCount>,
    /// Tool-use prompt tokens by modality.
    #[serde(
        default,
        alias = "tool_use_prompt_tokens_details",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub tool_use_prompt_tokens_details: Vec<ModalityTokenCount>,
    /// Keys this version does not know (`trafficType`, …), kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Tokens of one modality.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModalityTokenCount {
    /// `TEXT`, `AUDIO`, …
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modality: Option<Modality>,
    /// How many.
    #[serde(
        default,
        alias = "token_count",
        with = "int32",
        skip_serializing_if = "Option::is_none"
    )]
    pub token_count: Option<i64>,
    /// Keys this version does not know, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}
