//! Wrong paths get 404 (and the server goes on serving); bad usage and
//! unreadable scripts exit 2 with a message naming the file.

use livesim::testing::ScriptedServer;
use serde_json::json;
use tokio_tungstenite::tungstenite::Error as WsError;

use super::harness::{KEY, TempFile, hang_up, livesim, send, serve, until};

#[tokio::test]
async fn a_wrong_path_gets_404_at_upgrade_and_the_log_lists_the_served_paths() {
    let script = ScriptedServer::new().named("hello").says("Hello.");
    let served = serve(&script.to_json(), &[]).await;

    let wrong = format!(
        "{}/ws/google.cloud.aiplatform.v1beta1.LlmBidiService/BidiGenerateContent",
        served.base_url
    );
    match tokio_tungstenite::connect_async(wrong.as_str()).await {
        Err(WsError::Http(response)) => {
            assert_eq!(response.status().as_u16(), 404);
        }
        other => panic!("expected HTTP 404, got {other:?}"),
    }

    // The refusal did not use up the one connection.
    let (mut ws, _) = tokio_tungstenite::connect_async(served.url.as_str())
        .await
        .unwrap();
    send(&mut ws, json!({ "setup": { "model": "models/test" } })).await;
    until(&mut ws, "setupComplete").await;
    until(&mut ws, "serverContent").await;
    hang_up(&mut ws).await;

    let ended = served.finish().await;
    assert_eq!(ended.code, Some(0), "{}", ended.output());
    assert!(
        ended.stderr.contains(
            "#1 refused the upgrade to /ws/google.cloud.aiplatform.v1beta1.LlmBidiService/BidiGenerateContent with HTTP 404: served paths are /ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent, "
        ),
        "{}",
        ended.stderr
    );
    assert!(
        ended.stderr.contains("#2 no credential"),
        "{}",
        ended.stderr
    );
    assert!(!ended.output().contains(KEY));
}

#[test]
fn a_missing_script_exits_2_naming_the_file() {
    let missing = TempFile::unique("missing", "json");
    let ended = livesim(&["serve", missing.path().to_str().unwrap()]);
    assert_eq!(ended.code, Some(2), "{}", ended.output());
    assert!(
        ended.stderr.contains(&format!(
            "livesim serve: script {}: No such file",
            missing.path().display()
        )),
        "{}",
        ended.stderr
    );
    assert!(ended.stdout.is_empty(), "{}", ended.stdout);
}

#[test]
fn an_invalid_script_exits_2_naming_the_file_and_the_place() {
    let bad = TempFile::with(
        "bad",
        "json",
        "{\"v\": 1,\n \"actions\": [{\"sing\": {}}]}\n",
    );
    let ended = livesim(&["serve", bad.path().to_str().unwrap()]);
    assert_eq!(ended.code, Some(2), "{}", ended.output());
    let expected = format!(
        "livesim serve: script {}: unknown name `sing` at line 2, column 15 (expected one of `send`, ",
        bad.path().display()
    );
    assert!(ended.stderr.contains(&expected), "{}", ended.stderr);
}

#[test]
fn bad_usage_exits_2() {
    let script = TempFile::with(
        "usage",
        "json",
        &ScriptedServer::new().to_json().to_string(),
    );
    let path = script.path().to_str().unwrap();
    for args in [
        vec!["serve"],
        vec!["serve", path, "--connections", "0"],
        vec!["serve", path, "--cert-out", "/tmp/x.pem"],
        vec!["serve", path, "--connections", "2", "--keep-serving"],
    ] {
        let ended = livesim(&args);
        assert_eq!(ended.code, Some(2), "{args:?}: {}", ended.output());
        assert!(
            ended.stderr.starts_with("error: "),
            "{args:?}: {}",
            ended.stderr
        );
        assert!(
            !ended.stderr.contains("listening"),
            "{args:?}: {}",
            ended.stderr
        );
    }
}
