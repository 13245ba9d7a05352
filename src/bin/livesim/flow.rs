//! `livesim flow replay | why | ci`: specs against recorded sessions and
//! scenario corpora.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand, ValueEnum};
use livesim::flow::Spec;
use livesim::simulation::{Corpus, JournalFile, Scenario, Step};
use serde::Serialize;

use crate::files;

#[derive(Subcommand, Debug)]
pub enum FlowCommand {
    /// Re-decide a recorded session's flow decisions with a spec, turn by
    /// turn.
    ///
    /// Prints each turn's active steps (the spec's), the recorded slot
    /// writes and tool outcomes, and a line starting with DIVERGED at every
    /// step where the spec decides differently from the session: what was
    /// recorded, what the spec decides, and why. The replay goes on to the
    /// end, following the recording. The spec decides under Enforce.
    ///
    /// Exit status: 0 when the last line is CLEAN (the spec reproduces every
    /// recorded decision), 1 when anything DIVERGED, 2 for bad usage or an
    /// input that cannot be read (the error names the file and line).
    Replay(ReplayArgs),
    /// Explain the flow at a turn of a recorded session, as JSON.
    ///
    /// Replays the recording up to turn boundary N (0 is before the first
    /// turn) and prints the explanation: done steps, active steps with what
    /// each waits for and the state of its gates, steps still waiting, and
    /// for every tool of the spec whether it is admitted and why not. With
    /// --tool, only whether that tool is admitted and, if not, why.
    ///
    /// Exit status: 0 when the explanation was printed (admitted or not),
    /// 2 for bad usage, an input that cannot be read, or a turn beyond the
    /// recording (the error says how many turns it has).
    Why(WhyArgs),
    /// Run every scenario corpus under a folder.
    ///
    /// Finds every <name>.spec.json under DIR and runs each
    /// <name>.<label>.scenario.json beside it, under Enforce. Prints one line
    /// per scenario (PASS, FAIL with the failing step and why, or ERROR) and
    /// a summary. A scenario with no spec beside it is an ERROR, not
    /// skipped; other files are ignored.
    ///
    /// Exit status: 0 when every scenario passed, 1 when one failed at a
    /// step, 2 when one could not run (no spec beside it, a file that
    /// cannot be read), for a JUnit FILE that cannot be written, or for
    /// bad usage (a DIR that holds no scenario).
    Ci(CiArgs),
}

/// How a command prints its result.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Lines for people.
    Text,
    /// One JSON document, for programs.
    Json,
}

#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// The spec file (<name>.spec.json); `-` reads it from stdin.
    pub spec: PathBuf,
    /// The journal a FileJournalSink wrote; `-` reads it from stdin.
    #[arg(long, value_name = "JOURNAL")]
    pub journal: PathBuf,
    /// Text, or the report as JSON.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

#[derive(Args, Debug)]
pub struct WhyArgs {
    /// The spec file (<name>.spec.json); `-` reads it from stdin.
    pub spec: PathBuf,
    /// The journal a FileJournalSink wrote; `-` reads it from stdin.
    #[arg(long, value_name = "JOURNAL")]
    pub journal: PathBuf,
    /// The turn boundary to explain: 0 before the first turn, then 1, 2, …
    /// as `livesim flow replay` numbers them.
    #[arg(long, value_name = "N")]
    pub turn: u64,
    /// Only whether this tool is admitted at that turn, and if not, why.
    #[arg(long, value_name = "TOOL")]
    pub tool: Option<String>,
    /// JSON (the default), or text for people.
    #[arg(long, value_enum, default_value_t = Format::Json)]
    pub format: Format,
}

#[derive(Args, Debug)]
pub struct CiArgs {
    /// The folder to search, sub-folders included.
    #[arg(default_value = "sim")]
    pub dir: PathBuf,
    /// Also write the results as JUnit XML to FILE: one test case per
    /// scenario, the failing step in the failure message.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Text, or the results as JSON.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

pub fn run(command: FlowCommand) -> ExitCode {
    match command {
        FlowCommand::Replay(args) => replay(args),
        FlowCommand::Why(args) => why(args),
        FlowCommand::Ci(args) => ci(args),
    }
}

/// The spec and the scenario the journal implies.
fn inputs(spec: &Path, journal: &Path) -> Result<(Spec, Scenario), String> {
    if files::is_stdin(spec) && files::is_stdin(journal) {
        return Err("only one of the spec and the journal can come from stdin (`-`)".into());
    }
    let spec = files::spec(spec)?;
    let name = JournalFile::name_for(journal)
        .filter(|_| !files::is_stdin(journal))
        .unwrap_or_else(|| "stdin".into());
    let scenario = files::journal(journal)?
        .scenario(name)
        .map_err(|e| e.to_string())?;
    Ok((spec, scenario))
}

fn replay(args: ReplayArgs) -> ExitCode {
    const COMMAND: &str = "flow replay";
    let (spec, scenario) = match inputs(&args.spec, &args.journal) {
        Ok(inputs) => inputs,
        Err(problem) => return files::fail(COMMAND, problem),
    };
    // Only state writes: the session was not governed, and a CLEAN would
    // claim a check that never happened.
    if scenario
        .steps
        .iter()
        .all(|step| matches!(step, Step::Set { .. }))
    {
        return files::fail(
            COMMAND,
            format!(
                "{}: the journal records no flow decisions to replay (no flow:* entries: \
                 was the session governed by a flow?)",
                args.journal.display()
            ),
        );
    }
    let report = scenario.replay(&spec);
    let status = if report.clean() {
        files::PASS
    } else {
        files::FINDING
    };
    match args.format {
        Format::Text => files::print(&report.to_string(), status),
        Format::Json => print_json(COMMAND, &report, status),
    }
}

fn why(args: WhyArgs) -> ExitCode {
    const COMMAND: &str = "flow why";
    let (spec, scenario) = match inputs(&args.spec, &args.journal) {
        Ok(inputs) => inputs,
        Err(problem) => return files::fail(COMMAND, problem),
    };
    let sim = match scenario.replay_to(&spec, args.turn) {
        Ok(sim) => sim,
        Err(beyond) => {
            return files::fail(COMMAND, format!("{}: {beyond}", args.journal.display()));
        }
    };
    match (&args.tool, args.format) {
        (Some(tool), Format::Json) => print_json(COMMAND, &sim.explain_tool(tool), files::PASS),
        (Some(tool), Format::Text) => {
            files::print(&sim.explain_tool(tool).to_string(), files::PASS)
        }
        (None, Format::Json) => print_json(COMMAND, &sim.explain(), files::PASS),
        (None, Format::Text) => files::print(sim.explain().to_string().trim_end(), files::PASS),
    }
}

fn ci(args: CiArgs) -> ExitCode {
    const COMMAND: &str = "flow ci";
    let report = match Corpus::discover(&args.dir) {
        Ok(corpus) => corpus.run(),
        Err(problem) => return files::fail(COMMAND, problem),
    };
    let junit = args.junit.as_ref().and_then(|path| {
        let written = report.to_junit().and_then(|xml| std::fs::write(path, xml));
        written
            .err()
            .map(|e| format!("{}: cannot write the JUnit report: {e}", path.display()))
    });
    let status = if report.errors() > 0 || junit.is_some() {
        files::INPUT
    } else if report.failures() > 0 {
        files::FINDING
    } else {
        files::PASS
    };
    // The results are printed even when the JUnit file cannot be written,
    // so the run is not lost; the exit status says it was not all well.
    // They quote the files read (why one cannot be used, a failing step's
    // tool), cut as an error quoting them on stderr is.
    let printed = match args.format {
        Format::Text => files::print_cut(&report.to_string(), status),
        Format::Json => match serde_json::to_value(&report) {
            Ok(mut value) => {
                files::cut_strings(&mut value);
                print_json(COMMAND, &value, status)
            }
            Err(e) => files::fail(COMMAND, format!("cannot write the JSON: {e}")),
        },
    };
    match junit {
        Some(problem) => files::fail(COMMAND, problem),
        None => printed,
    }
}

fn print_json(command: &str, value: &impl Serialize, status: u8) -> ExitCode {
    match serde_json::to_string_pretty(value) {
        Ok(text) => files::print(&text, status),
        Err(e) => files::fail(command, format!("cannot write the JSON: {e}")),
    }
}
