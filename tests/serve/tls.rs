//! `--tls`: wss:// on a fresh self-signed certificate, which a client
//! trusts by loading the printed certificate file and nothing else.

use std::sync::Arc;

use livesim::testing::ScriptedServer;
use rustls::RootCertStore;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use serde_json::json;
use tokio_tungstenite::Connector;

use super::harness::{KEY, TempFile, hang_up, send, serve, until};

fn client_trusting(certificate: &std::path::Path) -> Connector {
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(certificate).unwrap() {
        roots.add(cert.unwrap()).unwrap();
    }
    assert_eq!(roots.len(), 1, "the file holds one certificate");
    // ring, as livesim uses (rustls 0.23.48 deprecates it for lacking
    // post-quantum key exchange).
    #[allow(deprecated)]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    Connector::Rustls(Arc::new(config))
}

#[tokio::test]
async fn wss_with_the_printed_certificate_plays_a_script() {
    let script = ScriptedServer::new()
        .named("over-tls")
        .says("Hello over TLS.");
    let mut served = serve(&script.to_json(), &["--tls", "--connections", "2"]).await;
    assert!(served.url.starts_with("wss://127.0.0.1:"), "{}", served.url);
    served.line().await; // the base URL
    let line = served.line().await;
    let path = line
        .split("SSL_CERT_FILE=")
        .nth(1)
        .and_then(|rest| rest.strip_suffix(')'))
        .unwrap_or_else(|| panic!("no certificate path in {line:?}"))
        .to_string();
    let certificate = TempFile(path.into()); // removed when the test ends
    assert!(
        certificate.path().starts_with(std::env::temp_dir()),
        "{line}"
    );
    let pem = std::fs::read_to_string(certificate.path()).unwrap();
    assert_eq!(pem.matches("BEGIN CERTIFICATE").count(), 1, "{pem}");
    assert!(
        !pem.contains("PRIVATE KEY"),
        "the key must never be written"
    );

    // The certificate names both 127.0.0.1 and localhost.
    for url in [
        served.url.clone(),
        served.url.replace("127.0.0.1", "localhost"),
    ] {
        let mut request =
            tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(
                url.as_str(),
            )
            .unwrap();
        request
            .headers_mut()
            .insert("x-goog-api-key", KEY.parse().unwrap());
        let (mut ws, _) = tokio_tungstenite::connect_async_tls_with_config(
            request,
            None,
            false,
            Some(client_trusting(certificate.path())),
        )
        .await
        .unwrap();
        send(&mut ws, json!({ "setup": { "model": "models/test" } })).await;
        until(&mut ws, "setupComplete").await;
        let text = until(&mut ws, "serverContent").await;
        assert_eq!(
            text["serverContent"]["modelTurn"]["parts"][0]["text"],
            "Hello over TLS."
        );
        hang_up(&mut ws).await;
    }

    let ended = served.finish().await;
    assert_eq!(ended.code, Some(0), "{}", ended.output());
    assert!(!ended.output().contains(KEY), "{}", ended.output());
}

#[tokio::test]
async fn a_client_that_does_not_trust_the_certificate_is_refused_and_not_counted() {
    let script = ScriptedServer::new().named("over-tls").says("Hello.");
    let out = TempFile::unique("cert", "pem");
    let cert_out = out.path().to_str().unwrap().to_string();
    let mut served = serve(&script.to_json(), &["--tls", "--cert-out", &cert_out]).await;
    served.line().await;
    assert!(served.line().await.contains(&cert_out));

    // The webpki roots do not hold a self-signed certificate.
    let refused = tokio_tungstenite::connect_async(served.url.as_str()).await;
    assert!(
        refused.is_err(),
        "a client with public roots only must refuse"
    );

    // The refused handshake did not use up the one connection.
    let mut request =
        tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(
            served.url.as_str(),
        )
        .unwrap();
    request
        .headers_mut()
        .insert("x-goog-api-key", KEY.parse().unwrap());
    let (mut ws, _) = tokio_tungstenite::connect_async_tls_with_config(
        request,
        None,
        false,
        Some(client_trusting(out.path())),
    )
    .await
    .unwrap();
    send(&mut ws, json!({ "setup": { "model": "models/test" } })).await;
    until(&mut ws, "setupComplete").await;
    until(&mut ws, "serverContent").await;
    hang_up(&mut ws).await;

    let ended = served.finish().await;
    assert_eq!(ended.code, Some(0), "{}", ended.output());
    assert!(
        ended.stderr.contains("#1 TLS handshake failed"),
        "{}",
        ended.stderr
    );
    assert!(
        ended
            .stderr
            .contains("connection 2: script \"over-tls\" played to its end"),
        "{}",
        ended.stderr
    );
}
