//! Server frames from the fixture corpus, case by case: what each decodes to.

use std::time::Duration;

use livesim::wire::{
    Frame, FrameKind, Language, Modality, Outcome, PartKind, ProtocolError, ServerMessage,
    TurnCompleteReason, UrlRetrievalStatus, VadSignalType, VoiceActivityType, decode,
};
use serde_json::json;

use super::{fixture_bytes, server};

fn parts(msg: &ServerMessage) -> &[livesim::wire::Part] {
    &msg.server_content
        .as_ref()
        .unwrap()
        .model_turn
        .as_ref()
        .unwrap()
        .parts
}

// --- Envelope and parsing -------------------------------------------------

#[test]
fn an_unknown_top_level_key_is_kept_not_an_error() {
    let msg = server("unknown_top_level_key");
    assert!(msg.has_no_known_payload());
    assert_eq!(msg.extra["newFeature"], json!({"x": 1}));
    assert!(msg.in_band_error().is_none());
}

#[test]
fn a_known_payload_and_an_unknown_sibling_both_survive() {
    let msg = server("known_with_unknown_sibling");
    assert_eq!(msg.payload_names(), ["serverContent"]);
    assert_eq!(parts(&msg)[0].text.as_deref(), Some("Hi"));
    assert_eq!(
        msg.extra["futureSignal"],
        json!({"level": 3, "tags": ["a"]})
    );

    let msg = server("voice_activity_sibling");
    assert_eq!(msg.payload_names(), ["serverContent", "voiceActivity"]);
    assert_eq!(
        msg.voice_activity.unwrap().voice_activity_type,
        Some(VoiceActivityType::ActivityStart)
    );
    let msg = server("vad_signal");
    assert_eq!(
        msg.voice_activity_detection_signal.unwrap().vad_signal_type,
        Some(VadSignalType::EndOfSpeech)
    );
}

#[test]
fn usage_metadata_alone_and_beside_other_payloads() {
    let alone = server("usage_alone");
    assert_eq!(alone.payload_names(), ["usageMetadata"]);
    let usage = alone.usage_metadata.unwrap();
    assert_eq!(
        (
            usage.prompt_token_count,
            usage.response_token_count,
            usage.total_token_count
        ),
        (Some(147), Some(36), Some(183))
    );
    assert_eq!(usage.prompt_tokens_details.len(), 2);
    assert_eq!(
        usage.prompt_tokens_details[0].modality,
        Some(Modality::Audio)
    );
    assert_eq!(usage.response_tokens_details[0].token_count, Some(36));

    let with_call = server("usage_with_tool_call");
    assert_eq!(with_call.payload_names(), ["toolCall", "usageMetadata"]);
    assert_eq!(
        with_call.tool_call.unwrap().function_calls[0].name,
        "get_weather"
    );
    assert_eq!(
        with_call.usage_metadata.unwrap().total_token_count,
        Some(55)
    );

    let with_end = server("usage_with_turn_complete");
    assert!(with_end.server_content.unwrap().turn_complete);
    assert_eq!(
        with_end.usage_metadata.unwrap().total_token_count,
        Some(183)
    );

    let all = server("usage_all_fields").usage_metadata.unwrap();
    assert_eq!(
        (
            all.cached_content_token_count,
            all.tool_use_prompt_token_count,
            all.thoughts_token_count
        ),
        (Some(2), Some(1), Some(4))
    );
    assert_eq!(all.cache_tokens_details[0].token_count, Some(2));
    assert_eq!(
        all.tool_use_prompt_tokens_details[0].modality,
        Some(Modality::Text)
    );
    // Vertex's and newer names stay available instead of failing the frame.
    assert_eq!(all.extra["candidatesTokenCount"], 5);
    assert_eq!(all.extra["trafficType"], "ON_DEMAND");
}

#[test]
fn binary_and_text_frames_decode_alike() {
    let bytes = fixture_bytes("server", "usage_with_tool_call.json");
    let text = decode::<ServerMessage>(&Frame::Text(String::from_utf8(bytes.clone()).unwrap()));
    let binary = decode::<ServerMessage>(&Frame::Binary(bytes));
    assert_eq!(text.unwrap(), binary.unwrap());
}

fn protocol_error(file: &str, kind: FrameKind) -> ProtocolError {
    let bytes = fixture_bytes("server", file);
    let frame = match kind {
        FrameKind::Binary => Frame::Binary(bytes),
        _ => Frame::Text(String::from_utf8(bytes).unwrap()),
    };
    decode::<ServerMessage>(&frame).unwrap_err()
}

#[test]
fn invalid_utf8_and_non_json_are_protocol_errors() {
    let err = protocol_error("invalid_utf8.bin", FrameKind::Binary);
    assert!(
        matches!(
            err,
            ProtocolError::NotUtf8 {
                kind: FrameKind::Binary,
                valid_up_to: 49,
                ..
            }
        ),
        "{err:?}"
    );

    let err = protocol_error("not_json.txt", FrameKind::Text);
    let text = err.to_string();
    assert!(
        text.starts_with(
            "text frame of 28 bytes is not a valid ServerMessage: expected value at line 1 column 1"
        ),
        "{text}"
    );

    let err = protocol_error("truncated_json.txt", FrameKind::Binary);
    assert!(err.to_string().contains("EOF while parsing"), "{err}");

    for file in ["json_array.txt", "json_null.txt"] {
        let err = protocol_error(file, FrameKind::Text);
        assert!(err.to_string().contains("invalid type"), "{file}: {err}");
    }
}

#[test]
fn an_error_key_frame_is_decoded_with_its_error_exposed() {
    let msg = server("error_key");
    assert!(msg.has_no_known_payload());
    let error = msg.in_band_error().unwrap();
    assert_eq!(error.code, Some(400));
    assert_eq!(error.message, Some("Request contains an invalid argument."));
    assert_eq!(error.value["status"], "INVALID_ARGUMENT");
}

#[test]
fn empty_objects_decode_to_empty_payloads() {
    let msg = server("setup_complete_empty");
    assert_eq!(msg.setup_complete.unwrap(), Default::default());
    assert_eq!(
        server("setup_complete_session_id")
            .setup_complete
            .unwrap()
            .session_id
            .as_deref(),
        Some("sess-42")
    );
    assert_eq!(
        server("server_content_empty").server_content.unwrap(),
        Default::default()
    );
    assert!(parts(&server("model_turn_empty_parts")).is_empty());
    assert!(parts(&server("model_turn_no_parts")).is_empty());
    assert_eq!(server("empty_object"), ServerMessage::default());
    // Proto3 defaults written out: false and null mean absent.
    let content = server("explicit_defaults").server_content.unwrap();
    assert!(!content.turn_complete && !content.interrupted && content.model_turn.is_none());
}

// --- Part kinds -------------------------------------------------------------

#[test]
fn every_part_kind_is_recognised() {
    assert_eq!(
        parts(&server("part_text"))[0].kind(),
        PartKind::Text("Sunny, 21C.")
    );
    assert_eq!(
        parts(&server("part_thought"))[0].kind(),
        PartKind::Thought("The user wants weather; call the tool.")
    );
    let signed = server("part_thought_signature");
    assert_eq!(
        parts(&signed)[0].thought_signature.as_deref(),
        Some("c2lnbmF0dXJl")
    );

    let audio = server("part_inline_audio");
    let PartKind::InlineData(blob) = parts(&audio)[0].kind() else {
        panic!()
    };
    assert_eq!(blob.mime_type.as_deref(), Some("audio/pcm;rate=24000"));
    assert_eq!(blob.bytes().unwrap(), [0, 0, 0xff, 0xff, 1, 0, 2, 0]);
    // Audio and its transcript share the frame.
    let content = audio.server_content.as_ref().unwrap();
    assert_eq!(
        content
            .output_transcription
            .as_ref()
            .unwrap()
            .text
            .as_deref(),
        Some("Hello")
    );

    let unknown = server("part_unknown_key");
    let kinds: Vec<_> = parts(&unknown).iter().map(|p| p.kind()).collect();
    assert!(matches!(kinds[0], PartKind::Unknown(extra) if extra.contains_key("videoMetadata")));
    assert_eq!(kinds[1], PartKind::Text("after"));

    assert_eq!(parts(&server("part_empty"))[0].kind(), PartKind::Empty);

    let code = server("part_code_execution");
    let [exec, result] = parts(&code) else {
        panic!()
    };
    let PartKind::ExecutableCode(exec) = exec.kind() else {
        panic!()
    };
    assert_eq!(
        (exec.language.clone(), exec.code.as_deref()),
        (Some(Language::Python), Some("print(2+2)"))
    );
    let PartKind::CodeExecutionResult(result) = result.kind() else {
        panic!()
    };
    assert_eq!(
        (result.outcome.clone(), result.output.as_deref()),
        (Some(Outcome::Ok), Some("4\n"))
    );

    let file = server("part_file_data");
    let PartKind::FileData(file_data) = parts(&file)[0].kind() else {
        panic!()
    };
    assert_eq!(file_data.file_uri.as_deref(), Some("gs://bucket/doc.pdf"));
}

// --- Base64 -----------------------------------------------------------------

fn blob_bytes(name: &str) -> Result<Vec<u8>, livesim::wire::Base64Error> {
    let msg = server(name);
    parts(&msg)[0].inline_data.as_ref().unwrap().bytes()
}

#[test]
fn base64_edge_cases() {
    // Three bytes: not a whole 16-bit sample, and kept as sent.
    assert_eq!(blob_bytes("base64_odd_length").unwrap(), [1, 2, 3]);
    assert_eq!(blob_bytes("base64_empty").unwrap(), Vec::<u8>::new());
    assert_eq!(blob_bytes("base64_unpadded").unwrap(), [1, 2, 3, 4]);
    // Invalid base64 fails the payload, not the frame: turnComplete survives.
    let err = blob_bytes("base64_invalid").unwrap_err();
    assert!(
        err.to_string().starts_with(
            "inline data (audio/pcm;rate=24000, 11 base64 characters) is not valid base64"
        ),
        "{err}"
    );
    assert!(
        server("base64_invalid")
            .server_content
            .unwrap()
            .turn_complete
    );
}

// --- Numbers and durations --------------------------------------------------

#[test]
fn int64_strings_and_numbers() {
    let s = server("int64_string").session_resumption_update.unwrap();
    assert_eq!(s.last_consumed_client_message_index, Some(7));
    let n = server("int64_number").session_resumption_update.unwrap();
    assert_eq!(n.last_consumed_client_message_index, Some(7));
    // Written back as the canonical string.
    assert!(
        server("int64_number")
            .to_json()
            .contains(r#""lastConsumedClientMessageIndex":"7""#)
    );
}

#[test]
fn go_away_durations() {
    let left = |name| server(name).go_away.unwrap().time_left;
    assert_eq!(left("go_away_fractional"), Some(Duration::from_millis(250)));
    assert_eq!(left("go_away_whole"), Some(Duration::from_secs(50)));
    assert_eq!(
        left("go_away_micros"),
        Some(Duration::from_micros(59_999_999))
    );
    assert_eq!(left("go_away_absent"), None);
    let err =
        ServerMessage::from_slice(&fixture_bytes("server", "go_away_malformed.json")).unwrap_err();
    assert!(
        err.to_string()
            .contains(r#""soon" is not a protobuf duration"#),
        "{err}"
    );
}

// --- Resumption -------------------------------------------------------------

#[test]
fn resumption_updates() {
    let handle = |name| server(name).session_resumption_update.unwrap();
    assert_eq!(handle("resumption_handle").usable_handle(), Some("CiQ3Y"));
    assert!(!handle("resumption_not_resumable").resumable);
    assert_eq!(handle("resumption_not_resumable").usable_handle(), None);
    assert!(handle("resumption_no_handle").resumable);
    assert_eq!(handle("resumption_no_handle").usable_handle(), None);
    assert_eq!(
        handle("resumption_empty_handle").new_handle.as_deref(),
        Some("")
    );
    assert_eq!(handle("resumption_empty_handle").usable_handle(), None);
    assert_eq!(handle("int64_string").usable_handle(), Some("CiQ4Z"));
}

// --- Turn semantics, as decoded ---------------------------------------------

#[test]
fn turn_flags_and_reasons() {
    let content = |name| server(name).server_content.unwrap();
    let c = content("text_with_turn_complete");
    assert!(c.turn_complete);
    assert_eq!(c.model_turn.unwrap().text(), "lo!");
    let c = content("interrupted_and_turn_complete");
    assert!(c.interrupted && c.turn_complete);
    let c = content("interrupted_alone");
    assert!(c.interrupted && !c.turn_complete);
    assert!(content("generation_complete").generation_complete);
    assert!(content("waiting_for_input").waiting_for_input);
    assert_eq!(
        content("turn_complete_reason_malformed").turn_complete_reason,
        Some(TurnCompleteReason::MalformedFunctionCall)
    );
    let unknown = content("turn_complete_reason_unknown")
        .turn_complete_reason
        .unwrap();
    assert_eq!(unknown, TurnCompleteReason::Other("SOME_NEW_REASON".into()));
    assert!(!unknown.is_known());

    let t = content("transcriptions");
    assert_eq!(
        t.input_transcription.as_ref().unwrap().text.as_deref(),
        Some("What is the weather")
    );
    assert!(t.input_transcription.unwrap().finished);
    assert!(!t.output_transcription.unwrap().finished);
    assert_eq!(
        t.interim_input_transcription.unwrap().text.as_deref(),
        Some("What is")
    );
}

#[test]
fn grounding_and_url_context_metadata() {
    let g = server("grounding_metadata")
        .server_content
        .unwrap()
        .grounding_metadata
        .unwrap();
    assert_eq!(g.web_search_queries, ["weather oslo"]);
    assert_eq!(g.grounding_chunks[0]["web"]["title"], "Weather");
    assert_eq!(g.grounding_supports[0]["groundingChunkIndices"], json!([0]));
    assert_eq!(
        g.search_entry_point.unwrap().rendered_content.as_deref(),
        Some("<div>weather oslo</div>")
    );

    let u = server("url_context_metadata")
        .server_content
        .unwrap()
        .url_context_metadata
        .unwrap();
    assert_eq!(
        u.url_metadata[0].url_retrieval_status,
        Some(UrlRetrievalStatus::Success)
    );
    assert_eq!(
        u.url_metadata[1].url_retrieval_status,
        Some(UrlRetrievalStatus::Other(
            "URL_RETRIEVAL_STATUS_PAYWALL".into()
        ))
    );
}

// --- Tools ------------------------------------------------------------------

#[test]
fn tool_calls() {
    let two = server("tool_call_two_calls").tool_call.unwrap();
    let ids: Vec<_> = two
        .function_calls
        .iter()
        .map(|c| c.id.as_deref().unwrap())
        .collect();
    assert_eq!(ids, ["fc_01", "fc_02"]);

    // Decoding keeps both calls that share an id; the session decides.
    let dup = server("tool_call_duplicate_ids").tool_call.unwrap();
    assert_eq!(dup.function_calls.len(), 2);
    assert_eq!(dup.function_calls[0].id, dup.function_calls[1].id);
    assert_eq!(dup.function_calls[1].args, Some(json!({"seats": 3})));

    let shapes = server("tool_call_args_shapes").tool_call.unwrap();
    let args: Vec<_> = shapes
        .function_calls
        .iter()
        .map(|c| c.args.clone())
        .collect();
    assert_eq!(args[0], None);
    assert_eq!(args[1], Some(json!({})));
    assert_eq!(args[2].as_ref().unwrap()["filter"]["range"]["to"], 3);

    let cancel = server("tool_call_cancellation")
        .tool_call_cancellation
        .unwrap();
    assert_eq!(cancel.ids, ["fc_02", "fc_unknown"]);
}

#[test]
fn snake_case_from_the_server_is_accepted() {
    let msg = server("snake_case_frame");
    let content = msg.server_content.as_ref().unwrap();
    assert!(content.turn_complete && content.generation_complete);
    assert_eq!(
        content.turn_complete_reason,
        Some(TurnCompleteReason::NeedMoreInput)
    );
    let part = &content.model_turn.as_ref().unwrap().parts[0];
    assert_eq!(
        part.inline_data.as_ref().unwrap().mime_type.as_deref(),
        Some("audio/pcm")
    );
    // A quoted count is accepted too.
    assert_eq!(
        msg.usage_metadata.as_ref().unwrap().total_token_count,
        Some(12)
    );
    assert!(msg.extra.is_empty(), "{:?}", msg.extra);
    // And camelCase goes out.
    assert!(
        msg.to_json()
            .starts_with(r#"{"serverContent":{"modelTurn":{"parts":[{"text":"hi","inlineData""#)
    );
}
