//! A real headless Chromium, driven over the DevTools protocol on the
//! WebSocket client livesim already has: open a page, evaluate script in
//! it, collect console errors (CSP violations and uncaught exceptions
//! included), take a screenshot.
//!
//! Chromium is found as `$LIVESIM_CHROMIUM`, else `chromium`,
//! `chromium-browser` or `google-chrome` on the PATH; when none is there
//! the error says how to install it (`.ci/run` does). Every wait has a
//! timeout, so a browser that hangs fails the test instead of stalling it.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use base64::Engine as _;
use futures::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// How long any one step may take.
const STEP: Duration = Duration::from_secs(60);

/// The window pages are rendered in.
pub const WIDTH: u32 = 1400;
pub const HEIGHT: u32 = 900;

pub struct Browser {
    child: Child,
    profile: PathBuf,
    ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
    next: u64,
    session: String,
    errors: Vec<String>,
    loaded: bool,
}

fn chromium() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("LIVESIM_CHROMIUM") {
        return Ok(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        for dir in std::env::split_paths(&path) {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
    }
    Err(
        "no Chromium found (looked for $LIVESIM_CHROMIUM, then chromium, chromium-browser and \
         google-chrome on the PATH): install it (Debian: apt-get install -y chromium; .ci/run \
         does) or set LIVESIM_CHROMIUM to its path"
            .to_string(),
    )
}

async fn within<T>(what: &str, step: impl Future<Output = T>) -> Result<T, String> {
    tokio::time::timeout(STEP, step)
        .await
        .map_err(|_| format!("Chromium: {what} took longer than {STEP:?}"))
}

impl Browser {
    /// Starts Chromium with a fresh profile and opens one blank page.
    pub async fn launch() -> Result<Browser, String> {
        let binary = chromium()?;
        let profile = std::env::temp_dir().join(format!(
            "livesim-chromium-{}-{}",
            std::process::id(),
            PROFILES.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&profile);
        std::fs::create_dir_all(&profile).map_err(|e| format!("{}: {e}", profile.display()))?;
        let mut child = Command::new(&binary)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-extensions",
                "--no-first-run",
                "--no-default-browser-check",
                "--hide-scrollbars",
                "--remote-debugging-port=0",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
        let stderr = child.stderr.take().expect("stderr is piped");
        let mut lines = BufReader::new(stderr).lines();
        let mut seen = Vec::new();
        let url = within("starting", async {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(url) = line.strip_prefix("DevTools listening on ") {
                    return Some(url.trim().to_string());
                }
                seen.push(line);
            }
            None
        })
        .await?
        .ok_or_else(|| {
            format!(
                "{} exited without a DevTools address:\n{}",
                binary.display(),
                seen.join("\n")
            )
        })?;
        // Keep reading its stderr so it never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let (ws, _) = within("connecting", tokio_tungstenite::connect_async(url.as_str()))
            .await?
            .map_err(|e| format!("cannot connect to Chromium at {url}: {e}"))?;
        let mut browser = Browser {
            child,
            profile,
            ws,
            next: 0,
            session: String::new(),
            errors: Vec::new(),
            loaded: false,
        };
        let target = browser
            .call("Target.createTarget", json!({ "url": "about:blank" }))
            .await?;
        let target = target["targetId"].as_str().unwrap_or_default().to_string();
        let attached = browser
            .call(
                "Target.attachToTarget",
                json!({ "targetId": target, "flatten": true }),
            )
            .await?;
        browser.session = attached["sessionId"]
            .as_str()
            .ok_or("Chromium: no session id")?
            .to_string();
        for method in ["Page.enable", "Runtime.enable", "Log.enable"] {
            browser.call(method, json!({})).await?;
        }
        browser
            .call(
                "Emulation.setDeviceMetricsOverride",
                json!({ "width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": false }),
            )
            .await?;
        Ok(browser)
    }

    /// Sends one command (to the page once attached) and waits for its
    /// answer, noting every event that comes meanwhile.
    async fn call(&mut self, method: &str, params: Value) -> Result<Value, String> {
        self.next += 1;
        let id = self.next;
        let mut message = json!({ "id": id, "method": method, "params": params });
        if !self.session.is_empty() {
            message["sessionId"] = json!(self.session);
        }
        self.ws
            .send(Message::Text(message.to_string().into()))
            .await
            .map_err(|e| format!("Chromium: sending {method}: {e}"))?;
        within(method, async {
            loop {
                let message = self.receive().await?;
                if message["id"] == json!(id) {
                    return match message.get("error") {
                        Some(error) => Err(format!("Chromium: {method}: {error}")),
                        None => Ok(message["result"].clone()),
                    };
                }
            }
        })
        .await?
    }

    async fn receive(&mut self) -> Result<Value, String> {
        loop {
            let message = match self.ws.next().await {
                Some(Ok(Message::Text(text))) => text,
                Some(Ok(_)) => continue,
                Some(Err(e)) => return Err(format!("Chromium: {e}")),
                None => return Err("Chromium closed the connection".to_string()),
            };
            let message: Value = serde_json::from_str(message.as_str())
                .map_err(|e| format!("Chromium sent something that is not JSON: {e}"))?;
            self.note(&message);
            return Ok(message);
        }
    }

    /// Keeps what a person would see as an error in the console.
    fn note(&mut self, event: &Value) {
        let params = &event["params"];
        match event["method"].as_str() {
            Some("Runtime.consoleAPICalled")
                if matches!(params["type"].as_str(), Some("error" | "assert")) =>
            {
                let args: Vec<String> = params["args"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|a| {
                        a.get("value")
                            .map(Value::to_string)
                            .or_else(|| a["description"].as_str().map(String::from))
                            .unwrap_or_default()
                    })
                    .collect();
                self.errors
                    .push(format!("console.error: {}", args.join(" ")));
            }
            Some("Runtime.exceptionThrown") => {
                let details = &params["exceptionDetails"];
                self.errors.push(format!(
                    "uncaught: {} {}",
                    details["text"].as_str().unwrap_or_default(),
                    details["exception"]["description"]
                        .as_str()
                        .unwrap_or_default()
                ));
            }
            Some("Log.entryAdded") if params["entry"]["level"] == "error" => {
                self.errors.push(format!(
                    "log: {}",
                    params["entry"]["text"].as_str().unwrap_or_default()
                ));
            }
            Some("Page.loadEventFired") => self.loaded = true,
            _ => {}
        }
    }

    /// Opens a file and waits until it has loaded and painted twice.
    /// Returns the page's own measure of how long that took, in ms since
    /// navigation started.
    pub async fn open(&mut self, path: &Path) -> Result<f64, String> {
        let path = path
            .canonicalize()
            .map_err(|e| format!("{}: {e}", path.display()))?;
        self.loaded = false;
        self.call(
            "Page.navigate",
            json!({ "url": format!("file://{}", path.display()) }),
        )
        .await?;
        within("loading the page", async {
            while !self.loaded {
                self.receive().await?;
            }
            Ok::<(), String>(())
        })
        .await??;
        let painted = self
            .eval(
                "new Promise(done => requestAnimationFrame(() => requestAnimationFrame(\
                 () => done(performance.now()))))",
            )
            .await?;
        painted
            .as_f64()
            .ok_or_else(|| format!("the page said {painted} for its render time"))
    }

    /// Evaluates `expression` in the page (promises awaited) and returns
    /// its value as JSON.
    pub async fn eval(&mut self, expression: &str) -> Result<Value, String> {
        let result = self
            .call(
                "Runtime.evaluate",
                json!({ "expression": expression, "returnByValue": true, "awaitPromise": true }),
            )
            .await?;
        if let Some(exception) = result.get("exceptionDetails") {
            return Err(format!("`{expression}` threw: {exception}"));
        }
        Ok(result["result"]["value"].clone())
    }

    /// Saves what the window shows as a PNG.
    pub async fn screenshot(&mut self, out: &Path) -> Result<(), String> {
        let shot = self
            .call("Page.captureScreenshot", json!({ "format": "png" }))
            .await?;
        let png = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().unwrap_or_default())
            .map_err(|e| format!("the screenshot is not base64: {e}"))?;
        if let Some(dir) = out.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        std::fs::write(out, png).map_err(|e| format!("{}: {e}", out.display()))
    }

    /// Every console error so far.
    pub fn errors(&self) -> &[String] {
        &self.errors
    }

    /// Closes the browser (its profile goes when it is dropped).
    pub async fn close(mut self) {
        self.session.clear();
        let _ = self.call("Browser.close", json!({})).await;
        let _ = tokio::time::timeout(Duration::from_secs(10), self.child.wait()).await;
    }
}

impl Drop for Browser {
    /// A test that fails half-way leaves no browser and no profile behind.
    fn drop(&mut self) {
        let _ = self.child.start_kill();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

static PROFILES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
