//! The four frames the wire benchmark and profile measure: a text chunk,
//! an audio chunk (6000 bytes of PCM, ~8 KB of base64, with its
//! transcript), a tool call with two calls, and a closing frame with usage.

use base64::Engine as _;
use serde_json::json;

/// (name, JSON bytes) of each frame.
pub fn frames() -> Vec<(&'static str, Vec<u8>)> {
    let pcm: Vec<u8> = (0..6000u32).map(|i| (i * 7 % 251) as u8).collect();
    let audio = base64::engine::general_purpose::STANDARD.encode(&pcm);
    vec![
        (
            "text_chunk",
            json!({"serverContent": {"modelTurn": {"parts": [
                {"text": "The forecast for Oslo is light snow, turning to sleet by evening."}
            ]}}}),
        ),
        (
            "audio_chunk_8k",
            json!({"serverContent": {
                "modelTurn": {"parts": [{"inlineData": {"mimeType": "audio/pcm;rate=24000", "data": audio}}]},
                "outputTranscription": {"text": "light snow, turning"}
            }}),
        ),
        (
            "tool_call",
            json!({"toolCall": {"functionCalls": [
                {"id": "fc_01", "name": "get_weather", "args": {"city": "Oslo", "units": "metric", "days": 3}},
                {"id": "fc_02", "name": "book_table", "args": {"party": {"size": 4, "names": ["Ada", "Grace"]}, "time": "19:30"}}
            ]}}),
        ),
        (
            "usage",
            json!({"serverContent": {"turnComplete": true},
                "usageMetadata": {"promptTokenCount": 147, "responseTokenCount": 36, "totalTokenCount": 183,
                    "promptTokensDetails": [{"modality": "AUDIO", "tokenCount": 120}, {"modality": "TEXT", "tokenCount": 27}],
                    "responseTokensDetails": [{"modality": "AUDIO", "tokenCount": 36}]}}),
        ),
    ]
    .into_iter()
    .map(|(name, value)| (name, value.to_string().into_bytes()))
    .collect()
}
