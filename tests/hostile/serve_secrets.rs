//! What `livesim serve` prints and records keeps no resumption handle,
//! however the client or the script carries one: in a setup that does
//! not parse or names it twice, or in a script's own close reason.

use serde_json::json;
use tokio::io::AsyncWriteExt;

use super::Scratch;
use super::harness::{next, serve, until};
use super::serve_protocol::{close_code, frame, upgraded, waiting_script};

/// A setup that carries a resumption handle but does not parse (cut
/// short, a lone surrogate escape) or carries it twice (both spellings)
/// is refused, and the handle reaches neither the log nor `--record`'s
/// wire log.
#[tokio::test]
async fn a_handle_in_a_setup_that_breaks_reaches_no_log_or_recording() {
    let cases: [(&str, &str); 3] = [
        (
            "RESUME-HANDLE-CUT-111",
            r#"{"setup": {"model": "models/test", "sessionResumption": {"handle": "RESUME-HANDLE-CUT-111"}}"#,
        ),
        (
            "RESUME-HANDLE-SURROGATE-222",
            r#"{"setup": {"model": "models/test\ud800", "sessionResumption": {"handle": "RESUME-HANDLE-SURROGATE-222"}}}"#,
        ),
        (
            "RESUME-HANDLE-SNAKE-333",
            r#"{"setup": {"model": "models/test", "sessionResumption": {"handle": "RESUME-HANDLE-CAMEL-333"}, "session_resumption": {"handle": "RESUME-HANDLE-SNAKE-333"}}, "extra": 1}"#,
        ),
    ];
    for (handle, setup) in cases {
        let dir = Scratch::new(&format!("handle-{}", &handle[14..]));
        let served = serve(
            &waiting_script(),
            &["--record", dir.path().to_str().unwrap()],
        )
        .await;
        let mut tcp = upgraded(&served, super::harness::PATH).await;
        tcp.write_all(&frame(0x1, setup.as_bytes(), true))
            .await
            .unwrap();
        assert_eq!(
            close_code(&mut tcp).await.map(|c| c.0),
            Some(1007),
            "{setup}"
        );
        drop(tcp);
        let ended = served.finish().await;
        let recorded = std::fs::read_to_string(dir.path().join("connection-1.jsonl")).unwrap();
        assert!(ended.stderr.contains("must be setup"), "{}", ended.stderr);
        for text in [&ended.stderr, &ended.stdout, &recorded] {
            assert!(!text.contains(handle), "{handle} leaked:\n{text}");
            assert!(!text.contains("RESUME-HANDLE-CAMEL-333"), "{text}");
        }
    }
}

/// A script that quotes the handle it issued (in its close reason) has
/// it printed as `<redacted>` in the log and as a placeholder in the
/// recording, never as itself.
#[tokio::test]
async fn a_handle_the_script_quotes_reaches_no_log_or_recording() {
    let script = json!({
        "v": 1,
        "name": "quotes",
        "actions": [
            { "resumption_update": { "handle": "SCRIPT-HANDLE-444" } },
            { "close": { "code": 1000, "reason": "bye SCRIPT-HANDLE-444" } }
        ]
    });
    let dir = Scratch::new("quotes");
    let served = serve(&script, &["--record", dir.path().to_str().unwrap()]).await;
    let mut ws = super::harness::resuming_client(&served).await;
    until(&mut ws, "setupComplete").await;
    while next(&mut ws).await.is_some() {}
    let ended = served.finish().await;
    let recorded = std::fs::read_to_string(dir.path().join("connection-1.jsonl")).unwrap();
    assert!(ended.stderr.contains("bye <redacted>"), "{}", ended.stderr);
    for text in [&ended.stderr, &ended.stdout, &recorded] {
        assert!(!text.contains("SCRIPT-HANDLE-444"), "{text}");
    }
}
