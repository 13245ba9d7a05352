//! `livesim sim`: the soak over agents described as data (`sim/`).
//!
//! `soak` runs every agent for many seeds, prints the summary and saves
//! each failure, shrunk, to the seeds corpus; `run` plays one seed of one
//! agent and shows it; `check` runs seeds twice here and once in a child
//! process and reports the first divergence; `shrink` and `replay` work
//! the corpus (`sim/corpus.rs`); `soak --triage` and `--baseline` collapse
//! its failures by signature and compare them with an earlier soak's
//! (`sim/triage.rs`). `--html` and `--format json` hand the
//! result to `livesim::timeline` (a run's timeline, the soak's report
//! page). Exit status: 0 when everything held, 1 when something broke, 2
//! for bad usage or a file that cannot be read.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand, ValueEnum};
use livesim::Seed;
use livesim::soak::{Agent, Checks, Shard, Soak, Summary, soak_all, soak_corpus_first};
use livesim::timeline::{SoakPage, Timeline};

/// Prints a line of the command's output to stdout; a write that fails
/// is kept for `files::finish`, which sets the exit status.
macro_rules! say {
    ($($arg:tt)*) => {
        crate::files::out(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// Prints output to stdout without a newline, like `say!`.
macro_rules! say_raw {
    ($($arg:tt)*) => {
        crate::files::out(format_args!($($arg)*))
    };
}

/// A line on stderr (progress, a diagnostic); a closed stderr is no
/// reason to stop, so a failed write is ignored.
macro_rules! note {
    ($($arg:tt)*) => {
        crate::files::say(&format!($($arg)*))
    };
}

mod check;
mod corpus;
mod import;
mod parse;
mod passk;
mod progress;
mod triage;

use parse::{jobs, jobs_or_all_cores, parse_duration, parse_duration_or_zero, parse_seeds};
use progress::Display;

/// The seeds a soak runs when not told: about half a minute for the four
/// agents of `sim/` on a two-core machine, in a release build.
const DEFAULT_SEEDS: u64 = 2000;

#[derive(Subcommand, Debug)]
pub enum SimCommand {
    /// Soak every agent in DIR (default: the nearest `sim/`): seeded
    /// sessions with generated conversations and faults, every invariant
    /// checked after each, then a summary. Exit status 1 if any failed.
    Soak(Box<SoakArgs>),
    /// Play one seed of one agent: the swarm, a lane timeline (one line per
    /// event), every invariant's verdict, the trace hash; `--html` draws
    /// the run as a page.
    Run(RunArgs),
    /// Run each seed twice here and once in a child process, and report
    /// the first place two runs of a seed differ.
    Check(CheckArgs),
    /// Shrink one seed's failure to a small case that breaks the same
    /// invariant, and save it to the seeds corpus (`--shrink-runs 0` or
    /// `--shrink-time 0` saves it as found). Exit status 1 when the seed
    /// fails, 0 when it passes, 2 for an --invariant the agent does not
    /// check.
    Shrink(corpus::ShrinkArgs),
    /// Replay seeds-corpus entries (files, or folders of them): exit
    /// status 0 when every one passes now, 1 when one still fails, 2 when
    /// one cannot be read or its agent no longer exists.
    Replay(corpus::ReplayArgs),
    /// Play one fixed conversation (a corpus entry, or a saved script
    /// with --agent) under many seeds, each drawing its own interleavings
    /// and tool outcomes: pass^1, pass^k (the chance k trials all pass)
    /// and the seeds that failed. Exit status 1 when --at-least is not met.
    Passk(passk::PassKArgs),
    /// Make a recorded wire log (the recording transport's file) into a
    /// script and a seeds-corpus entry of an agent: damaged lines skipped
    /// and named, resumption handles replaced. Exit status 1 when the
    /// imported session breaks an invariant (it is then shrunk and kept).
    Import(import::ImportArgs),
}

#[derive(Args, Debug)]
pub struct SoakArgs {
    /// A folder of agents (each a folder holding agent.json), or one
    /// agent's folder. Default: the nearest `sim/`, here or above.
    pub dir: Option<PathBuf>,
    /// The seeds: N (0..N), A..B or A..=B, hex or decimal. Default 0..2000.
    #[arg(long)]
    pub seeds: Option<String>,
    /// Start no new session after this long (`90s`, `5m`, `1h`); without
    /// --seeds, run seeds from 0 until the time is up.
    #[arg(long)]
    pub duration: Option<String>,
    /// Sessions run at once, 1 to 256 (each is a thread; a soak hands
    /// out seeds 256 at a time, so more would only wait). Default: every
    /// core, up to 256.
    #[arg(long, value_parser = jobs)]
    pub jobs: Option<usize>,
    /// Run shard K of N: the seeds whose offset from the start, modulo N,
    /// is K-1 (shards are disjoint and cover the range).
    #[arg(long, value_name = "K/N")]
    pub shard: Option<Shard>,
    /// Also write the results as JUnit XML.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Run the fresh seeds only: no variants of the runs that found a new
    /// event order or a rare goal.
    #[arg(long)]
    pub no_explore: bool,
    /// Report a run still going after this long in wall time as a `hang`
    /// (`90s`, `5m`) and go on: a task that never yields holds its
    /// thread. Default: `LIVESIM_HANG`, else 60s.
    #[arg(long, value_name = "DURATION")]
    pub hang_after: Option<String>,
    #[command(flatten)]
    pub save: corpus::SaveArgs,
    /// Save at most N failures per agent and invariant (the lowest
    /// seeds); 0: every one.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub save_limit: usize,
    /// Also write the report as a page (one HTML file; each failure's
    /// timeline in a folder beside it).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// What stdout gets: the summary as text, or the report as JSON.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    #[command(flatten)]
    pub triage: triage::TriageArgs,
}

/// How a command prints its result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// For people.
    Text,
    /// For other tools.
    Json,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// The agent: a name under the nearest `sim/`, or a folder holding
    /// agent.json.
    pub agent: String,
    /// The seed (hex like 0x1f, or decimal).
    #[arg(long)]
    pub seed: Seed,
    /// Print the executor's whole trace too.
    #[arg(long)]
    pub trace: bool,
    /// Write the seed's script to FILE (replay it with the test kit or
    /// `livesim serve`).
    #[arg(long, value_name = "FILE")]
    pub save_script: Option<PathBuf>,
    /// Write the run's timeline to FILE: one HTML page, its lanes over
    /// virtual time, the failure where it happened.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// What stdout gets: the run as text, or its timeline as JSON.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

#[derive(Args, Debug)]
pub struct CheckArgs {
    /// A folder of agents, or one agent's folder. Default: the nearest
    /// `sim/`.
    pub dir: Option<PathBuf>,
    /// The seeds: N (0..N), A..B or A..=B.
    #[arg(long, default_value = "0..100")]
    pub seeds: String,
    /// Sessions run at once, 1 to 256 (each is a thread; a soak hands
    /// out seeds 256 at a time, so more would only wait). Default: every
    /// core, up to 256.
    #[arg(long, value_parser = jobs)]
    pub jobs: Option<usize>,
    /// Print `agent seed hash` for each seed (one run each) and nothing
    /// else: what the child process does.
    #[arg(long, hide = true)]
    pub hashes: bool,
}

pub fn run(command: SimCommand) -> ExitCode {
    let status = match command {
        SimCommand::Soak(args) => soak(*args),
        SimCommand::Run(args) => run_one(args),
        SimCommand::Check(args) => check::run(args),
        SimCommand::Shrink(args) => corpus::shrink(args),
        SimCommand::Replay(args) => corpus::replay(args),
        SimCommand::Passk(args) => passk::run(args),
        SimCommand::Import(args) => import::run(args),
    };
    crate::files::finish(status)
}

/// Where the agents came from, for replay lines.
struct Agents {
    agents: Vec<Agent>,
    /// How a replay line names agent `name`.
    named_by_path: bool,
    /// The nearest `sim/`, when the agents came from there.
    home: Option<PathBuf>,
}

/// The nearest `sim/` folder holding an agent: here, or above.
fn nearest_sim() -> Result<PathBuf, String> {
    let here =
        std::env::current_dir().map_err(|e| format!("cannot read the current folder: {e}"))?;
    for dir in here.ancestors() {
        let sim = dir.join("sim");
        if sim.is_dir() && !agent_dirs(&sim).is_empty() {
            return Ok(sim);
        }
    }
    Err(format!(
        "no agents found: looked for sim/*/agent.json in {} and every folder above it.\n\
         Point it at a folder of agents (livesim sim soak path/to/agents) or at one agent's \
         folder (livesim sim soak path/to/agent, holding agent.json); docs/formats/agent.md \
         in livesim's repository shows an agent file.",
        here.display()
    ))
}

fn agent_dirs(dir: &Path) -> Vec<PathBuf> {
    Agent::folders_in(dir).unwrap_or_default()
}

fn load_agents(dir: Option<&Path>) -> Result<Agents, String> {
    let mut home = None;
    let (dirs, named_by_path) = match dir {
        None => {
            let sim = nearest_sim()?;
            home = Some(sim.clone());
            (agent_dirs(&sim), false)
        }
        Some(dir) if Agent::holds_agent_file(dir) => (vec![dir.to_path_buf()], true),
        Some(dir) if !dir.is_dir() => return Err(format!("{}: no such folder", dir.display())),
        Some(dir) => {
            let dirs = Agent::folders_in(dir)
                .map_err(|e| format!("{}: cannot read the folder: {e}", dir.display()))?;
            if dirs.is_empty() {
                return Err(format!(
                    "no agents in {}: looked for {}/agent.json and {}/*/agent.json",
                    dir.display(),
                    dir.display(),
                    dir.display()
                ));
            }
            (dirs, true)
        }
    };
    let agents = dirs
        .iter()
        .map(|d| Agent::load(d).map_err(|e| e.to_string()))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Agents {
        agents,
        named_by_path,
        home,
    })
}

/// How the replay line starts: `livesim`, or the cargo command when this
/// runs through `cargo run` (a fresh clone has no `livesim` on its path).
fn command_prefix() -> &'static str {
    if std::env::var_os("CARGO").is_some() {
        "cargo run --release --"
    } else {
        "livesim"
    }
}

fn soaks(agents: &Agents, checks: Checks) -> Vec<Soak> {
    let prefix = command_prefix();
    agents
        .agents
        .iter()
        .map(|agent| {
            let name = if agents.named_by_path {
                shell_word(&agent.dir.display().to_string())
            } else {
                agent.name.clone()
            };
            // An agent that is not under the nearest `sim/` is found by
            // its folder, which the replay of a kept case must be told.
            let agent_flag = if agents.named_by_path {
                format!(" --agent {name}")
            } else {
                String::new()
            };
            Soak::agent(agent)
                .check_determinism_every(checks.determinism_every)
                .replay_line(move |seed| format!("{prefix} sim run {name} --seed {seed}"))
                .replay_case_line(move |file| {
                    let file = shell_word(&file.display().to_string());
                    format!("{prefix} sim replay{agent_flag} {file}")
                })
        })
        .collect()
}

/// `n` actions, in the singular for one.
fn actions(n: usize) -> String {
    if n == 1 {
        "1 action".to_string()
    } else {
        format!("{n} actions")
    }
}

/// `text` as one word of a shell command: as it is when that is safe,
/// else in single quotes (a replay line is pasted into a shell).
fn shell_word(text: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:=,+@%".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

fn usage(command: &str, message: &str) -> ExitCode {
    crate::files::fail(&format!("sim {command}"), message)
}

fn soak(args: SoakArgs) -> ExitCode {
    let agents = match load_agents(args.dir.as_deref()) {
        Ok(agents) => agents,
        Err(message) => return usage("soak", &message),
    };
    let duration = match args.duration.as_deref().map(parse_duration).transpose() {
        Ok(duration) => duration,
        Err(message) => return usage("soak", &format!("--duration {message}")),
    };
    // Without --seeds, a time budget alone ends the soak.
    let open_ended = args.seeds.is_none() && duration.is_some();
    let seeds = match (&args.seeds, duration) {
        (Some(spec), _) => match parse_seeds(spec) {
            Ok(seeds) => seeds,
            Err(message) => return usage("soak", &format!("--seeds {message}")),
        },
        (None, Some(_)) => 0..u64::MAX,
        (None, None) => 0..DEFAULT_SEEDS,
    };
    let keeping = match corpus::keeping(&args.save, agents.home.as_deref(), args.save_limit) {
        Ok(keeping) => keeping,
        Err(message) => return usage("soak", &message),
    };
    let baseline = match triage::baseline(&args.triage) {
        Ok(baseline) => baseline,
        Err(message) => return usage("soak", &message),
    };
    let shard = args.shard.unwrap_or(Shard::WHOLE);
    let jobs = jobs_or_all_cores(args.jobs);
    let checks = Checks::default();
    let hang = match args.hang_after.as_deref().map(parse_duration).transpose() {
        Ok(hang) => hang.unwrap_or_else(livesim::executor::hang_bound),
        Err(message) => return usage("soak", &format!("--hang-after {message}")),
    };
    let soaks: Vec<Soak> = soaks(&agents, checks)
        .into_iter()
        .map(|soak| soak.explore(!args.no_explore).hang_after(hang))
        .collect();
    let names: Vec<&str> = agents.agents.iter().map(|a| a.name.as_str()).collect();
    note!(
        "livesim sim soak: {} ({}), seeds {}, {jobs} jobs{}",
        names.join(", "),
        if names.len() == 1 {
            "1 agent".to_string()
        } else {
            format!("{} agents", names.len())
        },
        if open_ended {
            format!("from {} until the time is up", seeds.start)
        } else {
            format!("{}..{}", seeds.start, seeds.end)
        },
        if shard == Shard::WHOLE {
            String::new()
        } else {
            format!(", shard {shard}")
        }
    );
    let total = shard
        .count(&seeds)
        .checked_mul(soaks.len() as u64)
        .filter(|t| *t < 1 << 40);
    let display = Display::new("soak", total);
    // The failures kept before run first: "it runs first from now on".
    let update = |p| display.update(p);
    let mut summary = match &keeping.corpus {
        Some(corpus) => soak_corpus_first(
            &soaks, corpus, seeds, shard, jobs, duration, checks, &update,
        ),
        None => soak_all(&soaks, seeds, shard, jobs, duration, checks, &update),
    };
    display.finish();
    // Shrunk first, so the report page shows the shrunk scripts.
    let (saved_ok, lines) = corpus::keep_failures(&mut summary, &soaks, &keeping, args.save_limit);
    // Triaged after keeping: signatures come from the shrunk scripts.
    let triaged = triage::Triaged::new(&summary, baseline, &args.triage);
    let status = report(&summary, &soaks, &args, &triaged);
    for line in lines.iter().chain(triaged.section().as_ref()) {
        match args.format {
            Format::Text => say!("{line}"),
            // stdout carries the JSON alone.
            Format::Json => note!("{line}"),
        }
    }
    if let Err(message) = triaged.write(&summary, &args.triage, open_ended) {
        note!("livesim sim soak: {message}");
        return ExitCode::from(2);
    }
    if !saved_ok {
        return ExitCode::from(2);
    }
    status
}

fn report(
    summary: &Summary,
    soaks: &[Soak],
    args: &SoakArgs,
    triaged: &triage::Triaged,
) -> ExitCode {
    let mut page = SoakPage::new(summary);
    page.kept(&summary.kept);
    if let Some(path) = &args.html {
        match page.write(path, soaks) {
            Ok(timelines) => note!(
                "livesim sim soak: report written to {} ({} failure timelines beside it)",
                path.display(),
                timelines.len()
            ),
            Err(e) => {
                note!("livesim sim soak: cannot write the report page: {e}");
                return ExitCode::from(2);
            }
        }
    }
    match args.format {
        Format::Text => say!("{summary}"),
        Format::Json => say!("{:#}", page.to_json()),
    }
    if let Some(path) = args.junit.as_deref() {
        if let Err(e) = triaged.write_junit(summary, path) {
            note!("livesim sim soak: cannot write the JUnit file: {e}");
            return ExitCode::from(2);
        }
        note!("livesim sim soak: JUnit written to {}", path.display());
    }
    if summary.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn find_agent(reference: &str) -> Result<Agents, String> {
    let as_path = Path::new(reference);
    if Agent::holds_agent_file(as_path) {
        return load_agents(Some(as_path));
    }
    let sim = nearest_sim()?;
    let dir = sim.join(reference);
    if !Agent::holds_agent_file(&dir) {
        let known: Vec<String> = agent_dirs(&sim)
            .iter()
            .filter_map(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect();
        return Err(format!(
            "no agent {reference:?}: not a folder holding agent.json, and not an agent in {} \
             (agents: {})",
            sim.display(),
            known.join(", ")
        ));
    }
    Ok(Agents {
        agents: vec![Agent::load(&dir).map_err(|e| e.to_string())?],
        named_by_path: false,
        home: Some(sim),
    })
}

fn run_one(args: RunArgs) -> ExitCode {
    let agents = match find_agent(&args.agent) {
        Ok(agents) => agents,
        Err(message) => return usage("run", &message),
    };
    let checks = Checks {
        determinism_every: 0,
    };
    let soak = soaks(&agents, checks).remove(0);
    let run = soak.run_seed(args.seed);
    let (script, faults) = soak.script_for(args.seed);
    if let Some(path) = &args.save_script
        && let Err(e) = script.save(path)
    {
        return usage("run", &e.to_string());
    }
    if args.html.is_some() || args.format == Format::Json {
        let timeline = Timeline::of_seed(&soak, args.seed, &run);
        if let Some(path) = &args.html {
            if let Err(e) = timeline.write_html(path) {
                return usage("run", &format!("cannot write the timeline: {e}"));
            }
            note!("livesim sim run: timeline written to {}", path.display());
        }
        if args.format == Format::Json {
            say!("{:#}", timeline.to_json());
            return exit_for(&run);
        }
    }
    match &run.record {
        Some(record) => {
            say!("{}", record.header());
            say!(
                "script: {}{}",
                actions(record.script.actions().len()),
                match &args.save_script {
                    Some(path) => format!(", saved to {}", path.display()),
                    None => " (--save-script FILE writes it)".to_string(),
                }
            );
            say_raw!("{}", record.timeline());
            if args.trace {
                say!("trace ({} entries):", record.trace.len());
                say_raw!("{}", record.trace.tail(record.trace.len()));
            }
        }
        None => say!("{} seed {} | faults: {faults}", soak.name(), args.seed),
    }
    say!("invariants:");
    // An agent's own invariant may name long tools: its name runs past
    // the column rather than pad every row (or past what `format!` pads).
    let width = run
        .verdicts
        .iter()
        .map(|(n, _)| n.len())
        .max()
        .unwrap_or(0)
        .min(48);
    for (name, verdict) in &run.verdicts {
        match verdict {
            Ok(()) => say!("  {name:<width$}  ok"),
            Err(why) => say!("  {name:<width$}  FAILED: {}", why.replace('\n', "\n    ")),
        }
    }
    if !run.reached.is_empty() {
        say!("sometimes: {}", run.reached.join(", "));
    }
    if let Some(record) = &run.record {
        say!(
            "trace hash: {:#018x} ({} entries, {} simulated)",
            record.trace_hash,
            record.trace.len(),
            livesim::executor::format_time(record.virtual_time)
        );
    }
    exit_for(&run)
}

/// 0 when every invariant held; 1, each failure on stderr, otherwise.
fn exit_for(run: &livesim::soak::SeedRun) -> ExitCode {
    if run.failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        for failure in &run.failures {
            note!("{failure}");
        }
        ExitCode::from(1)
    }
}
