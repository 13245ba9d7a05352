//! Nothing secret is ever printed: not the API key (header or `?key=`),
//! not an `Authorization` value or token name, not a resumption handle,
//! not even when a client echoes them back in a message that breaks the
//! script and is quoted in the error.

use livesim::testing::ScriptedServer;
use serde_json::json;

use super::harness::{KEY, next, send, serve, until};

const TOKEN: &str = "auth_tokens/ephemeral-SECRET-9f8e7d";
const HANDLE: &str = "HANDLE-SECRET-4242";

#[tokio::test]
async fn no_credential_or_handle_reaches_stdout_or_stderr() {
    let script = ScriptedServer::new().named("secrets").says("Hello.");
    let served = serve(&script.to_json(), &["--connections", "2"]).await;

    // The ephemeral-token endpoint, with the key in the query as some
    // clients do, and a token in the Authorization header.
    let url = served.url.replace(
        "v1beta.GenerativeService.BidiGenerateContent",
        "v1alpha.GenerativeService.BidiGenerateContentConstrained",
    );
    let open = || async {
        let mut request =
            tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(
                format!("{url}?key={KEY}&alt=json").as_str(),
            )
            .unwrap();
        request
            .headers_mut()
            .insert("authorization", format!("Token {TOKEN}").parse().unwrap());
        tokio_tungstenite::connect_async(request).await.unwrap().0
    };
    // A handle this server never issued: refused, and named in the
    // error without being quoted.
    let mut ws = open().await;
    send(
        &mut ws,
        json!({ "setup": { "model": "models/test",
        "session_resumption": { "handle": HANDLE } } }),
    )
    .await;
    let close = until(&mut ws, "close").await;
    assert_eq!(close["close"], 1008);
    while next(&mut ws).await.is_some() {}

    let mut ws = open().await;
    send(&mut ws, json!({ "setup": { "model": "models/test" } })).await;
    until(&mut ws, "setupComplete").await;
    // Echo every secret back in a message the script does not expect: the
    // error quotes the message.
    let echo = format!("my key is {KEY}, my token {TOKEN}");
    send(&mut ws, json!({ "realtime_input": { "text": echo } })).await;
    let close = until(&mut ws, "close").await;
    assert_eq!(close["close"], 1007);
    while next(&mut ws).await.is_some() {}

    let ended = served.finish().await;
    assert_eq!(ended.code, Some(1), "{}", ended.output());
    let output = ended.output();
    for secret in [KEY, TOKEN, "ephemeral-SECRET", HANDLE] {
        assert!(!output.contains(secret), "{secret:?} printed in:\n{output}");
    }
    // What is said instead: where the credential came, and that it was
    // redacted where it was echoed.
    for line in [
        "upgraded on /ws/google.ai.generativelanguage.v1alpha.GenerativeService.BidiGenerateContentConstrained",
        "credential present: an Authorization header (Token …), ?key= in the URL (value not logged)",
        "warning: the credential came in the URL query (?key=); it belongs in a header",
        "resuming with a handle (not logged)",
        "setup resumes a handle, but this client session has been issued none",
        "the client sent realtimeInput, which the script does not expect here",
        "my key is <redacted>",
    ] {
        assert!(output.contains(line), "no {line:?} in:\n{output}");
    }
}

/// A resumption handle in a setup that is not JSON (a client that cut its
/// message), or written `session_resumption` as the Python SDK writes it,
/// is a secret from the first byte: whatever the error quotes of the
/// message, the handle is not printed.
#[tokio::test]
async fn a_handle_in_a_broken_or_snake_case_setup_is_never_printed() {
    use futures::SinkExt;
    use tokio_tungstenite::tungstenite::Message;

    let script = ScriptedServer::new().named("secrets").says("Hello.");
    let served = serve(&script.to_json(), &["--connections", "2"]).await;
    let broken = format!(
        "{{\"setup\": {{\"model\": \"models/test\", \"session_resumption\": {{\"handle\": \"{HANDLE}\"}}}}"
    );
    let (mut ws, _) = tokio_tungstenite::connect_async(served.url.as_str())
        .await
        .unwrap();
    ws.send(Message::Text(broken.into())).await.unwrap();
    while next(&mut ws).await.is_some() {}

    let (mut ws, _) = tokio_tungstenite::connect_async(served.url.as_str())
        .await
        .unwrap();
    send(
        &mut ws,
        json!({ "setup": { "model": "models/test",
        "session_resumption": { "handle": HANDLE } },
        "echo": HANDLE }),
    )
    .await;
    while next(&mut ws).await.is_some() {}

    let ended = served.finish().await;
    let output = ended.output();
    assert!(!output.contains(HANDLE), "the handle printed in:\n{output}");
    // Each connection's error quotes its message, the handle replaced.
    assert_eq!(
        output.matches("\"handle\": \"<handle-1>\"").count(),
        1,
        "{output}"
    );
    assert!(output.contains("\"echo\":\"<handle-1>\""), "{output}");
}
