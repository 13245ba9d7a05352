//! The `livesim` command line.
//!
//! Subcommands land with the layers they drive; today the tree is the
//! skeleton: `livesim --help`, `livesim --version`, `livesim sim --help`.

use clap::{Parser, Subcommand};

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
}

#[derive(Subcommand, Debug)]
enum SimCommand {}

fn main() {
    let cli = Cli::parse();
    match cli.command {
        Command::Sim { command: None } => {
            eprintln!(
                "livesim sim: no simulation subcommand is built yet; `sim soak` lands with the soak engine (see README)."
            );
            std::process::exit(2);
        }
        Command::Sim {
            command: Some(never),
        } => match never {},
    }
}
