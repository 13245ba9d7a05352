//! `livesim sim import`: a recorded wire log (the recording transport's
//! file, from production or anywhere) or a state journal (a
//! `FileJournalSink` file) made into a script and a seeds-corpus entry of
//! an agent, which replays, soaks and shrinks like any other.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use livesim::Seed;
use livesim::executor::fnv1a64;
use livesim::soak::{Case, CorpusEntry, Saved, import_journal, import_wire_log, is_journal};

use super::corpus::{SaveArgs, keeping};
use super::{find_agent, soaks, usage};

#[derive(Args, Debug)]
pub struct ImportArgs {
    /// The wire log (JSONL, as the recording transport or `livesim serve
    /// --record` writes it) or state journal (JSONL, as `FileJournalSink`
    /// writes it); its header line says which.
    #[arg(value_name = "RECORDING")]
    pub file: PathBuf,
    /// The agent whose session it recorded: a name under the nearest
    /// `sim/`, or a folder holding agent.json.
    #[arg(long)]
    pub agent: String,
    /// The entry's seed (default: one drawn from the log's bytes, so the
    /// same log gives the same entry).
    #[arg(long)]
    pub seed: Option<Seed>,
    /// Also write the bare script here (`livesim serve` plays it).
    #[arg(long, value_name = "FILE")]
    pub script: Option<PathBuf>,
    #[command(flatten)]
    pub save: SaveArgs,
}

pub fn run(args: ImportArgs) -> ExitCode {
    let agents = match find_agent(&args.agent) {
        Ok(agents) => agents,
        Err(message) => return usage("import", &message),
    };
    // The flags before the work: a bad --shrink-time costs no import.
    let keeping = match keeping(&args.save, agents.home.as_deref(), 1) {
        Ok(keeping) => keeping,
        Err(message) => return usage("import", &message),
    };
    let file = args.file.display().to_string();
    let bytes = match livesim::jsonl::read_bytes(&args.file) {
        Ok(bytes) => bytes,
        Err(e) => return usage("import", &e.to_string()),
    };
    let soak = soaks(&agents, livesim::soak::Checks::default()).remove(0);
    let stem = args
        .file
        .file_stem()
        .map_or("wire-log".to_string(), |s| s.to_string_lossy().into_owned());
    let name = format!("{}-{stem}", soak.name());
    let journal = is_journal(&bytes);
    let imported = if journal {
        import_journal(&file, &bytes, &name, &agents.agents[0])
    } else {
        import_wire_log(&file, &bytes, &name)
    };
    let imported = match imported {
        Ok(imported) => imported,
        Err(message) => return usage("import", &message),
    };
    for damage in &imported.damaged {
        note!("livesim sim import: skipped {damage}");
    }
    for note in &imported.notes {
        note!("livesim sim import: note: {note}");
    }
    if let Some(path) = &args.script
        && let Err(e) = imported.script.save(path)
    {
        return usage("import", &e.to_string());
    }
    let seed = args.seed.unwrap_or_else(|| Seed::new(fnv1a64(&bytes) >> 4));
    // Production ran calm: no perturbation of its own, no injected fault.
    let case = Case::calm(seed, imported.script.clone());
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    let (read, handles) = if journal {
        (
            if imported.frames == 1 {
                "journal entry"
            } else {
                "journal entries"
            },
            format!(
                "{} resumption{} recorded",
                imported.handles,
                plural(imported.handles)
            ),
        )
    } else {
        (
            if imported.frames == 1 {
                "frame"
            } else {
                "frames"
            },
            format!(
                "{} resumption handle{} replaced",
                imported.handles,
                plural(imported.handles)
            ),
        )
    };
    say!(
        "{file}: {} {read}, {} damaged line{} skipped, {handles}: {} for {}",
        imported.frames,
        imported.damaged.len(),
        plural(imported.damaged.len()),
        super::actions(case.actions()),
        soak.name()
    );
    let run = soak.run_case(&case);
    if let Some(failure) = run.failures.first() {
        // It fails here: keep it shrunk, like a failure the soak found.
        say!(
            "it breaks {}: {}",
            failure.invariant,
            failure.message.lines().next().unwrap_or_default()
        );
        let kept =
            keeping.keep_failure(&soak, failure, &|line| note!("livesim sim import: {line}"));
        match &kept.saved {
            Saved::Failed(e) => return usage("import", e),
            Saved::NotWritten => {}
            _ => say!("{}", kept.line()),
        }
        return ExitCode::from(1);
    }
    let entry = CorpusEntry {
        agent: soak.name().to_string(),
        invariant: livesim::soak::invariants::IMPORTED.to_string(),
        message: format!(
            "imported from {file} ({} {read}, {} damaged lines skipped); every invariant held",
            imported.frames,
            imported.damaged.len()
        ),
        case,
        shrunk: None,
    };
    say!("it passes every invariant");
    match &keeping.corpus {
        Some(dir) => match entry.save(dir) {
            Ok(path) => {
                say!("saved {}", path.display());
                say!("replay: livesim sim replay {}", path.display());
            }
            Err(e) => return usage("import", &format!("cannot save the entry: {e}")),
        },
        None => say!("not saved (--no-save)"),
    }
    ExitCode::SUCCESS
}
