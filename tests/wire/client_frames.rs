//! Client frames from the fixture corpus, case by case: what each decodes to.

use livesim::wire::{Behavior, Modality};
use serde_json::json;

use super::client;

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
