//! Serving a script to any client, from Rust: the library's `serve`
//! (what `livesim serve` runs) on 127.0.0.1, a free port, one connection.
//!
//! ```sh
//! cargo run --example serve_script            # serves, and plays the client itself
//! cargo run --example serve_script -- --wait  # serves wss:// and waits for your client
//! ```
//!
//! By default the example is its own client: a livesim session pointed at
//! the server's base URL (`Live::builder().base_url(..).connect()`) speaks
//! first, answers the tool call and prints the model's text, so it runs
//! anywhere (CI included) without Python. With `--wait` it serves over
//! TLS (Google's Python SDK insists on `wss://` when given a key), prints
//! the certificate and base URL, and waits for one client, such as
//! `examples/serve/client.py` on `google-genai`. Either way it exits 0
//! when the script (`examples/serve/weather-first.json`) played to its
//! end, 1 when the client broke it.

use std::process::ExitCode;
use std::sync::Arc;

use livesim::prelude::*;
use livesim::serve::{ServeOptions, Server};
use livesim::testing::ScriptedServer;
use serde_json::json;

const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/examples/serve/weather-first.json"
);

/// The client side: a livesim session against the served script.
async fn play_client(base_url: String) -> Result<String, String> {
    let handle = Live::builder()
        .base_url(base_url)
        .api_key("FAKE-KEY") // sent, never printed; the server does not check it
        .text_only()
        .tools(T::simple(
            "get_weather",
            "Weather for a city",
            |args| async move { Ok(json!({ "city": args["city"], "sky": "sunny" })) },
        ))
        .connect()
        .await
        .map_err(|e| e.to_string())?;
    handle
        .send_text("What's the weather in Paris?")
        .map_err(|e| e.to_string())?;
    let mut events = handle.events();
    let mut text = String::new();
    while let Some(event) = events.next().await {
        match event {
            LiveEvent::TextDelta { text: t, .. } => text.push_str(&t),
            LiveEvent::TurnComplete { .. } => break,
            LiveEvent::Disconnected { .. } => return Err("the server closed early".into()),
            _ => {}
        }
    }
    handle.disconnect().await;
    Ok(text)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let wait = std::env::args().any(|a| a == "--wait");
    let script = match ScriptedServer::load(SCRIPT) {
        Ok(script) => script,
        Err(e) => {
            eprintln!("serve_script: {e}");
            return ExitCode::from(2);
        }
    };
    let options = ServeOptions {
        tls: wait,
        ..ServeOptions::default() // port 0 (a free one), one connection
    };
    let server = match Server::bind(script, options).await {
        Ok(server) => server,
        Err(e) => {
            eprintln!("serve_script: {e}");
            return ExitCode::from(2);
        }
    };
    println!("serving {}", server.url());
    println!("base URL {}", server.base_url());
    // One line per frame, redacted (no key, no handle).
    let log = Arc::new(|line: &str| eprintln!("  {line}"));

    let report = if wait {
        if let Some(pem) = server.certificate_path() {
            println!(
                "run: SSL_CERT_FILE={} python examples/serve/client.py {}",
                pem.display(),
                server.base_url().replacen("wss://", "https://", 1)
            );
        }
        server.run(log).await
    } else {
        // Server and client in one task: no thread, no spawn.
        let base_url = server.base_url();
        let (report, client) = tokio::join!(server.run(log), play_client(base_url));
        match client {
            Ok(text) => println!("the client heard: {text:?}"),
            Err(e) => eprintln!("serve_script: client: {e}"),
        }
        report
    };
    for connection in &report.connections {
        println!("{connection}");
    }
    if report.success() {
        println!("serve_script: ok");
        ExitCode::SUCCESS
    } else {
        ExitCode::from(report.exit_code())
    }
}
