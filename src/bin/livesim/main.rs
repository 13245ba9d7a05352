//! The `livesim` command line.
//!
//! A thin layer over library calls: each command lives in its own module
//! (`serve.rs`, `session.rs`, `flow.rs`, `sim.rs`), parses its arguments
//! with clap and maps the library's outcome to an exit status (`files.rs`
//! holds the statuses and the reading of `-` as stdin).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

// A soak allocates and frees a great deal in every run (frames, events,
// records); with mimalloc `livesim sim soak` takes about 12 % less CPU,
// and with its version 2 about 5 % less again (benches/README.md, "Soak").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod files;
mod flow;
mod serve;
mod session;
mod sim;

/// Build Gemini Live agent sessions and test them deterministically.
#[derive(Parser, Debug)]
#[command(
    name = "livesim",
    version,
    about,
    long_about = None,
    after_help = "Exit status, for every command: 0 when everything held, 1 when the command \
                  found something (a DIVERGED decision, a failing scenario), 2 for bad usage \
                  or an input that cannot be used."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Seeded sessions against the agents in `sim/`: soak them, run one
    /// seed, check that seeds replay.
    Sim {
        #[command(subcommand)]
        command: sim::SimCommand,
    },
    /// Serve a script to any WebSocket client on 127.0.0.1, at the Live
    /// API's path.
    ///
    /// The first line on stdout is `livesim serve: listening on URL`. Every
    /// frame is logged to stderr (redacted). Exit status: 0 when the
    /// script played to its end on every connection, 1 when a client broke
    /// it or hung up early, 2 for bad usage or an unreadable script.
    Serve(serve::ServeArgs),
    /// Recorded sessions: the scenario a journal implies.
    Session {
        #[command(subcommand)]
        command: session::SessionCommand,
    },
    /// Flow specs against recorded sessions and scenario corpora (replay,
    /// why, ci).
    Flow {
        #[command(subcommand)]
        command: flow::FlowCommand,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Sim { command } => sim::run(command),
        Command::Serve(args) => serve::run(args),
        Command::Session { command } => session::run(command),
        Command::Flow { command } => flow::run(command),
    }
}
