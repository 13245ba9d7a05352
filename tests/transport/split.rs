//! The seeded text splitter.

use livesim::Seed;
use livesim::executor::{Simulation, check_determinism};
use livesim::transport::split::{TextSplit, split_text};
use livesim::wire::Frame;
use livesim::wire::ServerMessage;
use proptest::prelude::*;
use serde_json::{Value, json};

fn split_under(seed: u64, split: TextSplit, frame: Frame) -> Vec<Frame> {
    Simulation::new(Seed::new(seed))
        .run(move || async move { split.split(&frame) })
        .unwrap()
        .value
}

fn json_of(frame: &Frame) -> Value {
    serde_json::from_slice(frame.payload().unwrap()).unwrap()
}

fn text_of(frame: &Frame) -> String {
    let msg = ServerMessage::from_slice(frame.payload().unwrap()).unwrap();
    msg.server_content.unwrap().model_turn.unwrap().parts[0]
        .text
        .clone()
        .unwrap()
}

fn closing_frame(text: &str) -> Frame {
    Frame::Binary(
        json!({
            "serverContent": {
                "modelTurn": {"role": "model", "parts": [{"text": text, "thought": true, "thoughtSignature": "c2ln"}], "futureKey": 1},
                "turnComplete": true,
                "outputTranscription": {"text": "spoken"}
            },
            "usageMetadata": {"totalTokenCount": 9},
            "newTopLevel": {"x": 1}
        })
        .to_string()
        .into_bytes(),
    )
}

#[test]
fn pieces_concatenate_to_the_text_and_the_rest_rides_on_the_last() {
    let mut piece_counts = std::collections::BTreeSet::new();
    for seed in 0..100 {
        let original = closing_frame("Grüße aus Zürich — 🕰️ ist es spät?");
        let pieces = split_under(seed, TextSplit { max_pieces: 5 }, original.clone());
        piece_counts.insert(pieces.len());
        assert!((1..=5).contains(&pieces.len()));
        let joined: String = pieces.iter().map(text_of).collect();
        assert_eq!(joined, "Grüße aus Zürich — 🕰️ ist es spät?", "seed {seed}");
        assert!(
            pieces.iter().all(|p| matches!(p, Frame::Binary(_))),
            "the frame kind is kept"
        );

        let (last, rest) = pieces.split_last().unwrap();
        let mut expected_last = json_of(&original);
        expected_last["serverContent"]["modelTurn"]["parts"][0]["text"] = json!(text_of(last));
        assert_eq!(
            json_of(last),
            expected_last,
            "seed {seed}: everything else is on the last piece"
        );
        for piece in rest {
            let text = text_of(piece);
            assert!(!text.is_empty());
            assert_eq!(
                json_of(piece),
                json!({"serverContent": {"modelTurn": {"role": "model", "parts": [{"text": text, "thought": true}]}}}),
                "seed {seed}"
            );
        }
    }
    assert!(piece_counts.len() >= 4, "{piece_counts:?}");
}

#[test]
fn the_same_seed_splits_the_same_way_and_seeds_differ() {
    let frame = Frame::Text(
        r#"{"serverContent":{"modelTurn":{"parts":[{"text":"abcdefghijklmnopqrstuvwxyz"}]}}}"#
            .into(),
    );
    let once = split_under(7, TextSplit::default(), frame.clone());
    assert_eq!(split_under(7, TextSplit::default(), frame.clone()), once);
    let all: std::collections::BTreeSet<Vec<String>> = (0..50)
        .map(|s| {
            split_under(s, TextSplit::default(), frame.clone())
                .iter()
                .map(text_of)
                .collect()
        })
        .collect();
    assert!(all.len() > 20, "{}", all.len());
    check_determinism(&Simulation::new(Seed::new(11)), move || {
        let frame = frame.clone();
        async move { split_text(&frame) }
    })
    .unwrap();
}

#[test]
fn frames_that_are_not_single_text_parts_pass_unchanged() {
    let unchanged = [
        Frame::Text(
            r#"{"serverContent":{"modelTurn":{"parts":[{"text":"ab"},{"text":"cd"}]}}}"#.into(),
        ),
        Frame::Text(
            r#"{"serverContent":{"modelTurn":{"parts":[{"inlineData":{"data":"AAAA"}}]}}}"#.into(),
        ),
        Frame::Text(r#"{"serverContent":{"modelTurn":{"parts":[{"text":"x"}]}}}"#.into()),
        Frame::Text(r#"{"serverContent":{"turnComplete":true}}"#.into()),
        Frame::Text(r#"{"toolCall":{"functionCalls":[]}}"#.into()),
        Frame::Text("not json".into()),
        Frame::Binary(vec![0xff, 0x00]),
        Frame::close(1000, "bye"),
    ];
    for frame in unchanged {
        for seed in 0..20 {
            assert_eq!(
                split_under(seed, TextSplit::default(), frame.clone()),
                vec![frame.clone()]
            );
        }
    }
}

#[test]
fn snake_case_frames_split_with_their_own_spelling() {
    let frame = Frame::Text(r#"{"server_content":{"model_turn":{"parts":[{"text":"hello world"}]},"turn_complete":true}}"#.into());
    for seed in 0..30 {
        let pieces = split_under(seed, TextSplit { max_pieces: 3 }, frame.clone());
        let joined: String = pieces.iter().map(text_of).collect();
        assert_eq!(joined, "hello world");
        assert!(
            pieces
                .iter()
                .all(|p| json_of(p).get("server_content").is_some())
        );
    }
}

#[test]
fn outside_a_simulation_nothing_is_split() {
    let frame = closing_frame("a long enough text to split");
    assert_eq!(split_text(&frame), vec![frame]);
}

proptest! {
    /// For any text and seed, the pieces' texts concatenate to the original and there are at most `max_pieces`.
    #[test]
    fn any_text_splits_losslessly(text in "\\PC{0,40}", seed in 0u64..1000, max in 1usize..8) {
        let frame = Frame::Text(json!({"serverContent": {"modelTurn": {"parts": [{"text": text}]}, "turnComplete": true}}).to_string());
        let pieces = split_under(seed, TextSplit { max_pieces: max }, frame);
        prop_assert!(!pieces.is_empty() && pieces.len() <= max.max(1));
        let joined: String = pieces.iter().map(text_of).collect();
        prop_assert_eq!(joined, text);
        let ends: Vec<bool> = pieces
            .iter()
            .map(|p| ServerMessage::from_slice(p.payload().unwrap()).unwrap().server_content.unwrap().turn_complete)
            .collect();
        prop_assert_eq!(ends.iter().filter(|e| **e).count(), 1);
        prop_assert!(ends[ends.len() - 1]);
    }
}
