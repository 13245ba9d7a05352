//! `wss://` for `livesim serve --tls`: a self-signed certificate for
//! 127.0.0.1 and localhost, made fresh for each run.
//!
//! Some SDKs insist on `wss://` whenever they hold an API key; they trust
//! the served certificate when pointed at it (`SSL_CERT_FILE=<path>` for
//! Python, or a root store holding only it). Only the certificate is
//! written, as PEM: the private key stays in this process's memory, so no
//! file a client might load as a "cert file" ever holds a key.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::TlsAcceptor;

use super::server::ServeError;

/// The names the certificate is valid for.
const NAMES: [&str; 2] = ["127.0.0.1", "localhost"];

/// A TLS acceptor and where its certificate was written.
pub(crate) struct LocalTls {
    pub acceptor: TlsAcceptor,
    pub certificate: PathBuf,
}

/// Where the certificate goes when no path was given: the system temp
/// directory, named after the port.
pub(crate) fn default_certificate_path(port: u16) -> PathBuf {
    std::env::temp_dir().join(format!("livesim-serve-{port}.pem"))
}

/// Makes a key pair and a self-signed certificate, writes the certificate
/// to `path`, and builds the acceptor.
pub(crate) fn local_tls(path: &Path) -> Result<LocalTls, ServeError> {
    let problem = |what: &str, e: &dyn std::fmt::Display| ServeError::Tls(format!("{what}: {e}"));
    let key = rcgen::KeyPair::generate().map_err(|e| problem("generating a key", &e))?;
    let mut params = rcgen::CertificateParams::new(NAMES.map(String::from).to_vec())
        .map_err(|e| problem("certificate names", &e))?;
    params.distinguished_name = rcgen::DistinguishedName::new();
    params.distinguished_name.push(
        rcgen::DnType::CommonName,
        "livesim serve (local test certificate)",
    );
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
    let certificate = params
        .self_signed(&key)
        .map_err(|e| problem("signing the certificate", &e))?;

    // Made new and renamed into place: the default path is in the shared
    // temp directory, where a link or a file someone else put at that name
    // must be neither written through nor written into.
    crate::jsonl::write_replacing(path, certificate.pem().as_bytes()).map_err(|source| {
        ServeError::Certificate {
            path: path.to_path_buf(),
            source,
        }
    })?;

    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    // ring, not aws-lc-rs (rustls's default, a C library to build): rustls
    // 0.23.48 deprecates ring's provider for lacking post-quantum key
    // exchange, which a test server or a test client does not need.
    #[allow(deprecated)]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| problem("TLS versions", &e))?
        .with_no_client_auth()
        .with_single_cert(vec![certificate.der().clone()], key)
        .map_err(|e| problem("the TLS configuration", &e))?;
    Ok(LocalTls {
        acceptor: TlsAcceptor::from(Arc::new(config)),
        certificate: path.to_path_buf(),
    })
}
