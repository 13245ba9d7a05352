//! The fixture corpus: every file under `tests/fixtures/wire/server` and
//! `.../client` is named in [`CHECKED`] and has its expectations in
//! `server_frames.rs` or `client_frames.rs`, so a fixture added without one
//! fails `every_fixture_has_an_expectation`.

use super::fixture_names;

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
