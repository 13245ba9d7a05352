//! `livesim serve`: a script file played to any WebSocket client.

use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use livesim::serve::{Connections, ServeOptions, Server};
use livesim::testing::ScriptedServer;

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
}

pub fn run(args: ServeArgs) -> ExitCode {
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
