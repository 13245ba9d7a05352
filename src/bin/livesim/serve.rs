//! `livesim serve`: a script file played to any WebSocket client.

use std::io::{ErrorKind, Write as _};
use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use livesim::serve::{Connections, Limits, ServeOptions, Server};
use livesim::testing::ScriptedServer;

use crate::files;

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// The script file (JSON: `{"v": 1, "name": …, "actions": [...]}`).
    pub script: PathBuf,
    /// The port on 127.0.0.1; 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// How many connections to serve, one script play each, before exiting.
    #[arg(long, default_value = "1", conflicts_with = "keep_serving")]
    pub connections: NonZeroUsize,
    /// Serve connections until stopped.
    #[arg(long)]
    pub keep_serving: bool,
    /// Serve wss:// with a fresh self-signed certificate for 127.0.0.1 and
    /// localhost (clients trust it with SSL_CERT_FILE=<printed path>).
    #[arg(long)]
    pub tls: bool,
    /// Where to write the certificate (PEM; the key is never written).
    /// Default: livesim-serve-<port>.pem in the system temp directory.
    #[arg(long, value_name = "PATH", requires = "tls")]
    pub cert_out: Option<PathBuf>,
    /// The largest message a client may send (bytes; KiB and MiB
    /// suffixes accepted); a larger one is closed with 1009.
    #[arg(long, value_name = "SIZE", default_value = "4MiB", value_parser = parse_size)]
    pub max_message_size: usize,
    /// How long a client has after the upgrade to send setup (`10s`,
    /// `500ms`, `2m`); then the connection is closed with 1011.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    pub setup_timeout: Duration,
    /// How long a connection may go without a frame either way (script
    /// pauses included); then it is closed with 1011.
    #[arg(long, value_name = "DURATION", default_value = "120s", value_parser = parse_duration)]
    pub idle_timeout: Duration,
    /// Record each connection as a wire log in DIR
    /// (`connection-<n>.jsonl`: secrets removed, directions as the client
    /// saw them), which `livesim sim import` makes a seed of. A DIR that
    /// holds an earlier run's recordings is refused: each run numbers its
    /// connections from 1.
    #[arg(long, value_name = "DIR")]
    pub record: Option<PathBuf>,
}

/// `4194304`, `512KiB`, `4MiB`.
fn parse_size(text: &str) -> Result<usize, String> {
    let text = text.trim();
    let (number, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(at) => text.split_at(at),
        None => (text, ""),
    };
    let scale = match unit.trim() {
        "" | "B" => 1,
        "KiB" | "K" | "KB" => 1024,
        "MiB" | "M" | "MB" => 1024 * 1024,
        other => {
            return Err(format!(
                "unknown unit {other:?}: write bytes, KiB or MiB (4MiB)"
            ));
        }
    };
    let number: usize = number
        .parse()
        .map_err(|_| format!("{text:?} is not a size: write bytes, KiB or MiB (4MiB)"))?;
    match number.checked_mul(scale) {
        Some(0) => Err("the size must be at least one byte".to_string()),
        Some(bytes) => Ok(bytes),
        None => Err(format!("{text:?} is too large")),
    }
}

/// `10s`, `500ms`, `2m`, or a number of seconds.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let bad = || format!("{text:?} is not a duration: write 500ms, 10s or 2m");
    let (number, scale_ms) = if let Some(n) = text.strip_suffix("ms") {
        (n, 1)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1000)
    } else if let Some(n) = text.strip_suffix('m') {
        (n, 60_000)
    } else {
        (text, 1000)
    };
    let number: u64 = number.trim().parse().map_err(|_| bad())?;
    let ms = number.checked_mul(scale_ms).ok_or_else(bad)?;
    if ms == 0 {
        return Err("the timeout must be longer than zero".to_string());
    }
    Ok(Duration::from_millis(ms))
}

pub fn run(args: ServeArgs) -> ExitCode {
    let script = match ScriptedServer::load(&args.script) {
        Ok(script) => script,
        Err(error) => {
            return files::fail("serve", error);
        }
    };
    let options = ServeOptions {
        port: args.port,
        connections: if args.keep_serving {
            Connections::Forever
        } else {
            Connections::Count(args.connections)
        },
        tls: args.tls,
        certificate_out: args.cert_out,
        record: args.record,
        limits: Limits {
            max_message_size: args.max_message_size,
            setup_timeout: args.setup_timeout,
            idle_timeout: args.idle_timeout,
        },
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            return files::fail("serve", format!("could not start the runtime: {error}"));
        }
    };
    runtime.block_on(async {
        let server = match Server::bind(script, options).await {
            Ok(server) => server,
            Err(error) => {
                return files::fail("serve", error);
            }
        };
        // Tests and scripts parse this first line: keep its shape.
        let mut lines = vec![
            format!("livesim serve: listening on {}", server.url()),
            format!("livesim serve: base URL {}", server.base_url()),
        ];
        if let Some(path) = server.certificate_path() {
            lines.push(format!(
                "livesim serve: certificate {} (trust it with SSL_CERT_FILE={})",
                path.display(),
                path.display()
            ));
        }
        if let Err(problem) = announce(&lines) {
            return files::fail("serve", problem);
        }
        let report = server.run(Arc::new(|line: &str| files::say(line))).await;
        ExitCode::from(report.exit_code())
    })
}

/// Prints where the server listens, a line at a time as the lines go out.
/// The first line, the URL, must reach stdout: without it no client knows
/// where to connect. A reader that leaves after it (`| head -1`) has what
/// it came for, and the server goes on; any other failure is an error.
fn announce(lines: &[String]) -> Result<(), String> {
    let mut stdout = std::io::stdout().lock();
    for (at, line) in lines.iter().enumerate() {
        match writeln!(stdout, "{line}").and_then(|()| stdout.flush()) {
            Ok(()) => {}
            Err(e) if at > 0 && e.kind() == ErrorKind::BrokenPipe => return Ok(()),
            Err(e) => {
                return Err(format!(
                    "cannot write the output: {e}; without the URL no client knows where \
                     to connect: give stdout a terminal, a file, or a pipe that is read"
                ));
            }
        }
    }
    Ok(())
}
