//! `livesim session scenario`: the scenario a recorded journal implies.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use livesim::simulation::JournalFile;

use crate::files;

#[derive(Subcommand, Debug)]
pub enum SessionCommand {
    /// Print the scenario a recorded journal implies, as JSON on stdout.
    ///
    /// The journal is what a FileJournalSink wrote: one state mutation per
    /// line. Each flow decision becomes a step (an admitted call
    /// expect_allowed, a refused one expect_denied, a result tool_result, a
    /// turn boundary "turn" then expect_active) and other state writes
    /// become set steps. Save the output as <name>.<label>.scenario.json
    /// beside <name>.spec.json and `livesim flow ci` runs it.
    ///
    /// Exit status: 0 when the scenario was printed, 2 for bad usage or a
    /// journal that cannot be read (the error names the file and line).
    Scenario(ScenarioArgs),
}

#[derive(Args, Debug)]
pub struct ScenarioArgs {
    /// The journal file (JSONL); `-` reads it from stdin.
    pub journal: PathBuf,
    /// The scenario's name. Default: the file name without `.jsonl` and
    /// `.journal` (`user-123.journal.jsonl` gives `user-123`); required
    /// when the journal comes from stdin.
    #[arg(long)]
    pub name: Option<String>,
}

pub fn run(command: SessionCommand) -> ExitCode {
    match command {
        SessionCommand::Scenario(args) => scenario(args),
    }
}

fn scenario(args: ScenarioArgs) -> ExitCode {
    const COMMAND: &str = "session scenario";
    let name = match (&args.name, files::is_stdin(&args.journal)) {
        (Some(name), _) => name.clone(),
        (None, true) => {
            return files::fail(
                COMMAND,
                "the journal comes from stdin, so give the scenario a name with --name",
            );
        }
        (None, false) => match JournalFile::name_for(&args.journal) {
            Some(name) => name,
            None => {
                return files::fail(
                    COMMAND,
                    format!(
                        "{}: no name in the file name; give one with --name",
                        args.journal.display()
                    ),
                );
            }
        },
    };
    let journal = match files::journal(&args.journal) {
        Ok(journal) => journal,
        Err(problem) => return files::fail(COMMAND, problem),
    };
    match journal.scenario(name) {
        Ok(scenario) => files::print(scenario.to_json().trim_end(), files::PASS),
        Err(problem) => files::fail(COMMAND, problem),
    }
}
