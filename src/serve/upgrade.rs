//! The WebSocket upgrade, checked as the Live service checks it: the path
//! must be a Live endpoint (anything else gets HTTP 404), and the
//! credential is noted (never recorded) wherever the client put it.
//!
//! What comes out is safe to print: which path was asked for, which
//! credential carriers were present, and a [`Redactor`] that knows the
//! credential values so nothing downstream can print them.

// tungstenite's handshake callback returns its own large error type.
#![allow(clippy::result_large_err)]

use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::StatusCode;

use crate::wire::{Redactor, Secret};

/// The paths `livesim serve` answers on: the Google AI Live endpoint, in
/// the v1beta and v1alpha API versions, for API keys
/// (`BidiGenerateContent`) and ephemeral tokens
/// (`BidiGenerateContentConstrained`). The first is the one printed.
pub const SERVED_PATHS: [&str; 4] = [
    "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent",
    "/ws/google.ai.generativelanguage.v1alpha.GenerativeService.BidiGenerateContent",
    "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContentConstrained",
    "/ws/google.ai.generativelanguage.v1alpha.GenerativeService.BidiGenerateContentConstrained",
];

/// Query parameters that carry a credential on the Live endpoint.
const CREDENTIAL_PARAMS: [&str; 2] = ["key", "access_token"];

/// What one upgrade request carried, without the secrets themselves.
#[derive(Debug, Default)]
pub(crate) struct Inspection {
    /// The path asked for, scrubbed.
    pub path: String,
    /// Whether the path is one of [`SERVED_PATHS`].
    pub served: bool,
    /// Lines worth logging about the request (credential placement).
    pub notes: Vec<String>,
    /// Knows every credential value the request carried.
    pub redactor: Redactor,
}

impl Inspection {
    /// The handshake callback: notes what the request carried and refuses
    /// a path that is not a Live endpoint with 404, as the service does.
    pub fn check(
        &mut self,
        request: &Request,
        response: Response,
    ) -> Result<Response, ErrorResponse> {
        self.learn_secrets(request);
        self.path = self.redactor.scrub(request.uri().path()).into_owned();
        self.served = SERVED_PATHS.contains(&request.uri().path());
        if !self.served {
            let body = format!(
                "livesim serve: no Live endpoint at this path; served paths: {}",
                SERVED_PATHS.join(", ")
            );
            let mut refusal = ErrorResponse::new(Some(body));
            *refusal.status_mut() = StatusCode::NOT_FOUND;
            return Err(refusal);
        }
        self.note_credentials(request);
        Ok(response)
    }

    /// Every credential value, wherever it is, goes into the redactor
    /// first, so no line built afterwards can show it.
    fn learn_secrets(&mut self, request: &Request) {
        let headers = request.headers();
        for name in ["x-goog-api-key", "authorization"] {
            for value in headers.get_all(name) {
                let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
                // `Bearer X` / `Token X`: the credential alone may turn up
                // elsewhere, so it is a secret on its own too.
                if let Some((_, credential)) = value.split_once(' ') {
                    self.redactor.add_secret(&Secret::new(credential.trim()));
                }
                self.redactor.add_secret(&Secret::new(value));
            }
        }
        for (_, value) in credential_params(request) {
            self.redactor.add_secret(&Secret::new(value));
        }
    }

    fn note_credentials(&mut self, request: &Request) {
        let headers = request.headers();
        let mut carriers = Vec::new();
        if headers.contains_key("x-goog-api-key") {
            carriers.push("an x-goog-api-key header".to_string());
        }
        if let Some(value) = headers.get("authorization") {
            let scheme = String::from_utf8_lossy(value.as_bytes())
                .split(' ')
                .next()
                .unwrap_or_default()
                .to_string();
            carriers.push(format!("an Authorization header ({scheme} …)"));
        }
        let in_query: Vec<String> = credential_params(request)
            .into_iter()
            .map(|(name, _)| name)
            .collect();
        for name in &in_query {
            carriers.push(format!("?{name}= in the URL"));
        }
        if carriers.is_empty() {
            self.notes.push(
                "no credential (the Live service would refuse this upgrade; send the key in an x-goog-api-key header)"
                    .to_string(),
            );
        } else {
            self.notes.push(format!(
                "credential present: {} (value not logged)",
                carriers.join(", ")
            ));
        }
        if !in_query.is_empty() {
            self.notes.push(format!(
                "warning: the credential came in the URL query (?{}=); it belongs in a header \
                 (x-goog-api-key, or Authorization for tokens): URLs end up in logs",
                in_query.join("=, ?")
            ));
        }
    }

    /// The log line for a refused path.
    pub fn refusal(&self) -> String {
        format!(
            "refused the upgrade to {} with HTTP 404: served paths are {}",
            self.path,
            SERVED_PATHS.join(", ")
        )
    }
}

/// The credential query parameters of `request`, as (name, value).
fn credential_params(request: &Request) -> Vec<(String, String)> {
    let Some(query) = request.uri().query() else {
        return Vec::new();
    };
    query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .filter(|(name, value)| CREDENTIAL_PARAMS.contains(name) && !value.is_empty())
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect()
}
