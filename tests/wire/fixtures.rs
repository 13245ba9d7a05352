//! The fixture corpus, case by case: what each frame decodes to.
//!
//! Every file under `tests/fixtures/wire/server` and `.../client` is named
//! in [`CHECKED`], so a fixture added without an expectation fails
//! `every_fixture_has_an_expectation`.

use std::time::Duration;

use livesim::wire::{
    Behavior, CloseClass, Decoded, Frame, FrameKind, Language, Modality, Outcome, PartKind,
    ProtocolError, ServerMessage, TurnCompleteReason, UrlRetrievalStatus, VadSignalType,
    VoiceActivityType, decode,
};
use serde_json::json;

use super::{client, fixture_bytes, fixture_names, server};

const CHECKED: &[&str] = &[
    "server/base64_empty.json",
    "server/base64_invalid.json",
    "server/base64_odd_length.json",
    "server/base64_unpadded.json",
    "server/empty_object.json",
    "server/error_key.json",
    "server/explicit_defaults.json",
    "server/generation_complete.json",
    "server/go_away_absent.json",
    "server/go_away_fractional.json",
    "server/go_away_malformed.json",
    "server/go_away_micros.json",
    "server/go_away_whole.json",
    "server/grounding_metadata.json",
    "server/int64_number.json",
    "server/int64_string.json",
    "server/interrupted_alone.json",
    "server/interrupted_and_turn_complete.json",
    "server/invalid_utf8.bin",
    "server/json_array.txt",
    "server/json_null.txt",
    "server/known_with_unknown_sibling.json",
    "server/model_turn_empty_parts.json",
    "server/model_turn_no_parts.json",
    "server/not_json.txt",
    "server/part_code_execution.json",
    "server/part_empty.json",
    "server/part_file_data.json",
    "server/part_inline_audio.json",
    "server/part_text.json",
    "server/part_thought.json",
    "server/part_thought_signature.json",
    "server/part_unknown_key.json",
    "server/resumption_empty_handle.json",
    "server/resumption_handle.json",
    "server/resumption_no_handle.json",
    "server/resumption_not_resumable.json",
    "server/server_content_empty.json",
    "server/setup_complete_empty.json",
    "server/setup_complete_session_id.json",
    "server/snake_case_frame.json",
    "server/text_with_turn_complete.json",
    "server/tool_call_args_shapes.json",
    "server/tool_call_cancellation.json",
    "server/tool_call_duplicate_ids.json",
    "server/tool_call_two_calls.json",
    "server/transcriptions.json",
    "server/truncated_json.txt",
    "server/turn_complete_reason_malformed.json",
    "server/turn_complete_reason_unknown.json",
    "server/unknown_top_level_key.json",
    "server/url_context_metadata.json",
    "server/usage_all_fields.json",
    "server/usage_alone.json",
    "server/usage_with_tool_call.json",
    "server/usage_with_turn_complete.json",
    "server/vad_signal.json",
    "server/voice_activity_sibling.json",
    "server/waiting_for_input.json",
    "client/client_content_prefill.json",
    "client/client_content_turns.json",
    "client/client_realtime_snake_case.json",
    "client/client_snake_case.json",
    "client/client_two_payloads.json",
    "client/client_unknown_key.json",
    "client/realtime_activity_end.json",
    "client/realtime_activity_start.json",
    "client/realtime_audio.json",
    "client/realtime_audio_stream_end.json",
    "client/realtime_media_chunks.json",
    "client/realtime_text.json",
    "client/realtime_video.json",
    "client/setup_affective_dialog.json",
    "client/setup_full.json",
    "client/setup_minimal.json",
    "client/setup_resumption_fresh.json",
    "client/setup_transparent.json",
    "client/tool_response.json",
    "client/tool_response_no_id.json",
    "client/tool_response_scalar.json",
];

#[test]
fn every_fixture_has_an_expectation() {
    let mut on_disk: Vec<String> = ["server", "client"]
        .iter()
        .flat_map(|sub| {
            fixture_names(sub)
                .into_iter()
                .map(move |n| format!("{sub}/{n}"))
        })
        .collect();
    on_disk.sort();
    let mut checked: Vec<String> = CHECKED.iter().map(|s| s.to_string()).collect();
    checked.sort();
    assert_eq!(on_disk, checked);
}

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

// --- Client messages ----------------------------------------------------------

#[test]
fn client_setup_is_fully_typed() {
    let setup = client("setup_full").setup.unwrap();
    let generation = setup.generation_config.as_ref().unwrap();
    assert_eq!(generation.response_modalities, [Modality::Audio]);
    assert_eq!(
        (generation.top_k, generation.max_output_tokens),
        (Some(40), Some(1024))
    );
    let voice = generation
        .speech_config
        .as_ref()
        .unwrap()
        .voice_config
        .as_ref()
        .unwrap();
    assert_eq!(
        voice
            .prebuilt_voice_config
            .as_ref()
            .unwrap()
            .voice_name
            .as_deref(),
        Some("Kore")
    );
    assert_eq!(
        generation.thinking_config.as_ref().unwrap().thinking_budget,
        Some(512)
    );
    let declaration = &setup.tools[0].function_declarations[0];
    assert_eq!(declaration.behavior, Some(Behavior::NonBlocking));
    assert!(setup.tools[1].google_search.is_some() && setup.tools[2].code_execution.is_some());
    let vad = setup
        .realtime_input_config
        .as_ref()
        .unwrap()
        .automatic_activity_detection
        .as_ref()
        .unwrap();
    assert_eq!(vad.silence_duration_ms, Some(500));
    assert_eq!(
        setup.session_resumption.as_ref().unwrap().handle.as_deref(),
        Some("CiQ3Y")
    );
    let compression = setup.context_window_compression.as_ref().unwrap();
    assert_eq!(compression.trigger_tokens, Some(25600));
    assert_eq!(
        compression.sliding_window.as_ref().unwrap().target_tokens,
        Some(12800)
    );
    assert!(setup.input_audio_transcription.is_some());
    assert_eq!(
        setup
            .history_config
            .unwrap()
            .initial_history_in_client_content,
        Some(true)
    );
    assert!(setup.extra.is_empty());

    let fresh = client("setup_resumption_fresh").setup.unwrap();
    assert_eq!(fresh.session_resumption.unwrap(), Default::default());
    assert_eq!(
        client("setup_transparent")
            .setup
            .unwrap()
            .session_resumption
            .unwrap()
            .transparent,
        Some(true)
    );
    assert_eq!(client("setup_minimal").payload_names(), ["setup"]);
    let affective = client("setup_affective_dialog")
        .setup
        .unwrap()
        .generation_config
        .unwrap();
    assert_eq!(affective.enable_affective_dialog, Some(true));
    assert_eq!(affective.frequency_penalty, Some(-0.25));
}

#[test]
fn client_content_realtime_input_and_tool_responses() {
    let turns = client("client_content_turns").client_content.unwrap();
    assert_eq!(turns.turns.len(), 3);
    assert_eq!(turns.turns[1].role.as_deref(), Some("model"));
    assert_eq!(
        client("client_content_prefill")
            .client_content
            .unwrap()
            .turn_complete,
        Some(false)
    );

    let realtime = |name| client(name).realtime_input.unwrap();
    assert_eq!(
        realtime("realtime_audio").audio.unwrap().bytes().unwrap(),
        [0, 0, 0xff, 0xff, 1, 0]
    );
    assert_eq!(
        realtime("realtime_video")
            .video
            .unwrap()
            .mime_type
            .as_deref(),
        Some("image/jpeg")
    );
    assert_eq!(
        realtime("realtime_text").text.as_deref(),
        Some("and also check Paris")
    );
    assert!(realtime("realtime_activity_start").activity_start.is_some());
    assert!(realtime("realtime_activity_end").activity_end.is_some());
    assert_eq!(
        realtime("realtime_audio_stream_end").audio_stream_end,
        Some(true)
    );
    assert_eq!(realtime("realtime_media_chunks").media_chunks.len(), 1);

    let responses = client("tool_response")
        .tool_response
        .unwrap()
        .function_responses;
    assert_eq!(
        responses[1].scheduling,
        Some(livesim::wire::Scheduling::WhenIdle)
    );
    assert!(responses[1].will_continue);
    // What a strict fake server must be able to see and reject.
    let scalar = client("tool_response_scalar").tool_response.unwrap();
    assert_eq!(
        scalar.function_responses[0].response,
        Some(json!("not an object"))
    );
    assert_eq!(
        client("tool_response_no_id")
            .tool_response
            .unwrap()
            .function_responses[0]
            .id,
        None
    );
    let unknown = client("client_unknown_key");
    assert!(unknown.extra.contains_key("toolConfig"));
    assert_eq!(
        client("client_two_payloads").payload_names(),
        ["clientContent", "realtimeInput"]
    );
    assert_eq!(
        client("client_snake_case"),
        livesim::wire::ClientMessage::text_turn("hi")
    );
    let snake = client("client_realtime_snake_case").realtime_input.unwrap();
    assert!(snake.activity_start.is_some() && snake.audio_stream_end == Some(true));
}

// --- Close frames -------------------------------------------------------------

#[test]
fn close_frames_are_classified_with_their_reasons() {
    let cases = [
        (
            1007,
            "API key not valid. Please pass a valid API key.",
            CloseClass::Fatal,
        ),
        (
            1007,
            "Invalid JSON payload received. Unknown name \"x\" at 'setup': Cannot find field.",
            CloseClass::Fatal,
        ),
        (
            1008,
            "models/x is not found for API version v1beta, or is not supported for bidiGenerateContent. Call",
            CloseClass::Fatal,
        ),
        (
            1008,
            "BidiGenerateContent session not found",
            CloseClass::ResumeRejected,
        ),
        (1008, "Requested entity was not found.", CloseClass::Fatal),
        (1000, "", CloseClass::Retryable),
        (1001, "", CloseClass::Retryable),
        (1002, "", CloseClass::Retryable),
        (1009, "", CloseClass::Retryable),
        (1011, "Internal error encountered.", CloseClass::Retryable),
        (
            1011,
            "Deadline expired before operation could complete.",
            CloseClass::Retryable,
        ),
    ];
    for (code, reason, class) in cases {
        let Decoded::Closed(closed) = decode::<ServerMessage>(&Frame::close(code, reason)).unwrap()
        else {
            panic!()
        };
        assert_eq!(
            (closed.code, closed.class, closed.reason.as_str()),
            (code, class, reason)
        );
    }
    let Decoded::Closed(none) = decode::<ServerMessage>(&Frame::Close(None)).unwrap() else {
        panic!()
    };
    assert_eq!((none.code, none.class), (1005, CloseClass::Retryable));
}

#[test]
fn close_reasons_are_redacted_and_truncated_reasons_kept() {
    let Decoded::Closed(closed) = decode::<ServerMessage>(&Frame::close(
        1008,
        "token auth_tokens/abcDEF123 rejected for wss://h/ws?access_token=auth_tokens/abcDEF123",
    ))
    .unwrap() else {
        panic!()
    };
    assert!(!closed.reason.contains("abcDEF123"), "{}", closed.reason);
    // A 123-byte reason cut mid-word by the server arrives as it is.
    let cut = "x".repeat(100) + " is not supported for bidiGenerate";
    let cut = &cut[..123];
    let Decoded::Closed(closed) = decode::<ServerMessage>(&Frame::close(1008, cut)).unwrap() else {
        panic!()
    };
    assert_eq!(closed.reason, cut);
    assert_eq!(closed.class, CloseClass::Fatal);
}
