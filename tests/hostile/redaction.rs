//! Redaction on adversarial text: every scrubber is linear, so the inputs
//! that made the old one quadratic (`?key=` repeated: 128 KB took 13 s)
//! finish here at 1 MB (10 MB nightly) with the right answer; the speed
//! itself is measured in `benches/redact.rs`, not here. A scrubber that
//! went quadratic again would not finish these tests in CI's time.

use livesim::testing::ScriptedServer;
use livesim::transport::recording::{Recording, WireLogWriter};
use livesim::transport::wire_log::WireLog;
use livesim::transport::{Transport, memory};
use livesim::wire::Frame;
use livesim::wire::{Redactor, Secret, clip, scrub_builtin};
use proptest::prelude::*;
use serde_json::json;

use super::harness::{LIMIT, hang_up, send, serve, until};

const SECRET: &str = "FAKE-KEY-redact-0123456789";

fn size() -> usize {
    if super::large() { 10 << 20 } else { 1 << 20 }
}

fn repeated(piece: &str) -> String {
    piece.repeat(size() / piece.len())
}

/// Asserts without printing megabytes.
fn same(what: &str, got: &str, want: &str) {
    assert!(
        got == want,
        "{what}: got {} bytes starting {:?}, want {} bytes starting {:?}",
        got.len(),
        &got[..got.len().min(80)],
        want.len(),
        &want[..want.len().min(80)]
    );
}

#[test]
fn adversarial_repetitions_scrub_to_the_right_text() {
    let redactor = Redactor::new().with_secret(&Secret::new(SECRET));
    let scrub = |text: &str| redactor.scrub(text).into_owned();
    // A parameter value runs to the next separator: one cut for all.
    same("?key=", &scrub(&repeated("?key=")), "?key=<redacted>");
    // Empty values (the next `&` ends each) are no credential.
    let empties = repeated("&access_token=");
    same("&access_token=", &scrub(&empties), &empties);
    // Markers that are not parameters are left alone, whole.
    for unchanged in ["monkey=", "?ke", "?key"] {
        let text = repeated(unchanged);
        same(unchanged, &scrub(&text), &text);
    }
    // Each bearer's credential is the next word, which is `Bearer`.
    let bearers = repeated("Bearer x ");
    let want = "Bearer <redacted> ".repeat(bearers.len() / "Bearer x ".len());
    same("Bearer", &scrub(&bearers), &want);
    // The secret's own prefix, repeated, is not the secret.
    let prefixes = repeated(&SECRET[..SECRET.len() - 1]);
    same("prefixes", &scrub(&prefixes), &prefixes);
    // The secret back to back: every copy goes.
    let secrets = repeated(SECRET);
    same(
        "secrets",
        &scrub(&secrets),
        &"<redacted>".repeat(secrets.len() / SECRET.len()),
    );
    // A header name whose value is the next header name: each is cut.
    let headers = scrub(&repeated("x-goog-api-key:"));
    assert!(headers.starts_with("x-goog-api-key:<redacted>:x-goog-api-key:<redacted>"));
    assert!(!headers.contains("key:x-goog"));
    // Token names back to back.
    assert!(!scrub(&repeated("auth_tokens/")).contains("auth_tokens/"));
}

/// A key that a server echoes straddling the point where a message is
/// cut leaves no fragment: redaction comes first, the cut after, on a
/// character boundary.
#[test]
fn cutting_after_redaction_keeps_no_fragment() {
    let redactor = Redactor::new().with_secret(&Secret::new(SECRET));
    for at in 280..310 {
        let body = format!("{}{SECRET} é", "é".repeat(at / 2));
        let shown = clip(&redactor.scrub(&body), 300).into_owned();
        assert!(!shown.contains(&SECRET[..8]), "{shown}");
    }
    assert_eq!(clip("ab", 1), "a…(2 bytes)");
}

/// A wire log of a 1 MB adversarial frame (the old scrubber took 1.7 s
/// for 64 KB) is written, and holds no credential.
#[tokio::test]
async fn a_recording_of_an_adversarial_frame_holds_no_credential() {
    let (client, mut server) = memory::pair();
    let log = super::Scratch::new("adversarial.jsonl");
    let file = std::fs::File::create(log.path()).unwrap();
    let writer = WireLogWriter::builder(file)
        .secret(&Secret::new(SECRET))
        .start()
        .unwrap();
    let mut recorded = Recording::new(client, writer);
    let text = format!("{}{SECRET}", repeated("?key="));
    let frame = json!({ "serverContent": { "modelTurn": { "parts": [{ "text": text }] } } });
    server.send(Frame::Text(frame.to_string())).await.unwrap();
    let received = recorded.recv().await.unwrap().unwrap();
    assert!(matches!(received, Frame::Text(_)));
    drop(recorded);
    let read = WireLog::read(log.path()).unwrap();
    let line = read.frames[0].json.as_ref().unwrap().to_string();
    assert!(!line.contains(SECRET));
    assert!(line.contains("?key=<redacted>"), "{line:.200}");
}

/// `livesim serve` given a setup whose model is 3 MiB of `?key=` answers a
/// second client as promptly as ever (the old scrubber froze it for
/// minutes: the waits here are capped).
#[tokio::test]
async fn serve_is_not_frozen_by_an_adversarial_setup() {
    let script = ScriptedServer::new().named("adversarial").says("Hello.");
    let served = serve(&script.to_json(), &["--connections", "2"]).await;
    let (mut slow, _) = tokio_tungstenite::connect_async(served.url.as_str())
        .await
        .unwrap();
    // 3 MiB: under serve's 4 MiB message limit, in every run.
    let model = "?key=".repeat((3 << 20) / 5);
    send(&mut slow, json!({ "setup": { "model": model } })).await;
    let (mut other, _) = tokio_tungstenite::connect_async(served.url.as_str())
        .await
        .unwrap();
    send(&mut other, json!({ "setup": { "model": "models/test" } })).await;
    tokio::time::timeout(LIMIT, until(&mut other, "serverContent"))
        .await
        .expect("the second client was served");
    until(&mut slow, "serverContent").await;
    hang_up(&mut other).await;
    hang_up(&mut slow).await;
    let ended = served.finish().await;
    assert_eq!(ended.code, Some(0), "{:.2000}", ended.output());
    assert!(
        ended.stderr.contains("setup: model ?key=<redacted>"),
        "{:.2000}",
        ended.stderr
    );
}

fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("?key=".to_string()),
        Just("&".to_string()),
        Just("key=".to_string()),
        Just("Bearer ".to_string()),
        Just("x-goog-api-key: ".to_string()),
        Just("auth_tokens/".to_string()),
        Just(SECRET.to_string()),
        Just(SECRET[..6].to_string()),
        Just(" ".to_string()),
        "[a-zA-Z0-9_.é=/-]{1,8}",
    ]
}

proptest! {
    /// Scrubbing removes every configured secret and every secret-shaped
    /// credential, and scrubbing its output again changes nothing.
    #[test]
    fn scrubbing_is_complete_and_idempotent(parts in prop::collection::vec(fragment(), 0..40)) {
        let text: String = parts.concat();
        let redactor = Redactor::new().with_secret(&Secret::new(SECRET));
        let once = redactor.scrub(&text).into_owned();
        prop_assert!(!once.contains(SECRET), "{once}");
        prop_assert_eq!(redactor.scrub(&once).into_owned(), once.clone());
        prop_assert_eq!(scrub_builtin(&once).into_owned(), once);
    }
}
