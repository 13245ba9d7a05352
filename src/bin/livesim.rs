//! The `livesim` command line.
//!
//! `livesim serve` serves a script to any WebSocket client; `livesim sim`
//! is the skeleton the soak engine will fill.

use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Args, Parser, Subcommand};
use livesim::serve::{Connections, ServeOptions, Server};
use livesim::testing::ScriptedServer;

/// Build Gemini Live agent sessions and test them deterministically.
#[derive(Parser, Debug)]
#[command(name = "livesim", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Seeded simulation runs of the agents in `sim/` (soak, replay).
    Sim {
        #[command(subcommand)]
        command: Option<SimCommand>,
    },
    /// Serve a script to any WebSocket client on 127.0.0.1, at the Live
    /// API's path.
    ///
    /// The first line on stdout is `livesim serve: listening on URL`. Every
    /// frame is logged to stderr (redacted). Exit status: 0 when the
    /// script played to its end on every connection, 1 when a client broke
    /// it or hung up early, 2 for bad usage or an unreadable script.
    Serve(ServeArgs),
}

#[derive(Subcommand, Debug)]
enum SimCommand {}

#[derive(Args, Debug)]
struct ServeArgs {
    /// The script file (JSON: `{"v": 1, "name": …, "actions": [...]}`).
    script: PathBuf,
    /// The port on 127.0.0.1; 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// How many connections to serve, one script play each, before exiting.
    #[arg(long, default_value = "1", conflicts_with = "keep_serving")]
    connections: NonZeroUsize,
    /// Serve connections until stopped.
    #[arg(long)]
    keep_serving: bool,
    /// Serve wss:// with a fresh self-signed certificate for 127.0.0.1 and
    /// localhost (clients trust it with SSL_CERT_FILE=<printed path>).
    #[arg(long)]
    tls: bool,
    /// Where to write the certificate (PEM; the key is never written).
    /// Default: livesim-serve-<port>.pem in the system temp directory.
    #[arg(long, value_name = "PATH", requires = "tls")]
    cert_out: Option<PathBuf>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Sim { command: None } => {
            eprintln!(
                "livesim sim: no simulation subcommand is built yet; `sim soak` lands with the soak engine (see README)."
            );
            ExitCode::from(2)
        }
        Command::Sim {
            command: Some(never),
        } => match never {},
        Command::Serve(args) => serve(args),
    }
}

fn serve(args: ServeArgs) -> ExitCode {
    let script = match ScriptedServer::load(&args.script) {
        Ok(script) => script,
        Err(error) => {
            eprintln!("livesim serve: {error}");
            return ExitCode::from(2);
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
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("livesim serve: could not start the runtime: {error}");
            return ExitCode::from(2);
        }
    };
    runtime.block_on(async {
        let server = match Server::bind(script, options).await {
            Ok(server) => server,
            Err(error) => {
                eprintln!("livesim serve: {error}");
                return ExitCode::from(2);
            }
        };
        // Tests and scripts parse this first line: keep its shape.
        println!("livesim serve: listening on {}", server.url());
        println!("livesim serve: base URL {}", server.base_url());
        if let Some(path) = server.certificate_path() {
            println!(
                "livesim serve: certificate {} (trust it with SSL_CERT_FILE={})",
                path.display(),
                path.display()
            );
        }
        let report = server.run(Arc::new(|line: &str| eprintln!("{line}"))).await;
        ExitCode::from(report.exit_code())
    })
}
