//! `livesim sim passk`: one fixed conversation (a seeds-corpus entry, or a
//! script saved by `sim run --save-script`) played under many seeds, each
//! drawing its own interleavings, deliveries and tool outcomes; prints
//! pass^1 and pass^k, the seeds that failed, and how to replay one.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use livesim::Seed;
use livesim::soak::{Agent, Case, CorpusEntry, DEFAULT_K, Faults, Soak};
use livesim::testing::ScriptedServer;
use serde_json::json;

use super::{Format, find_agent, parse_seeds, usage};

/// Failing seeds listed by name before the rest are counted.
const LISTED: usize = 10;

#[derive(Args, Debug)]
pub struct PassKArgs {
    /// The conversation: a seeds-corpus entry (`seeds/<agent>/<seed>.json`:
    /// its script and fault rates), or a script file (`sim run
    /// --save-script`; give `--agent`).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The agent: a name under the nearest `sim/`, or a folder holding
    /// agent.json. Default: a corpus entry's own.
    #[arg(long)]
    pub agent: Option<String>,
    /// The seeds, one trial each: N (0..N), A..B or A..=B.
    #[arg(long, default_value = "100")]
    pub seeds: String,
    /// Play only this seed's trial, and print its failures in full (what
    /// the `replay one` line does).
    #[arg(long, conflicts_with = "seeds")]
    pub seed: Option<Seed>,
    /// The k of pass^k: the chance that k trials all pass.
    #[arg(long, default_value_t = DEFAULT_K)]
    pub k: u32,
    /// Exit status 1 when pass^k is below P (0 to 1).
    #[arg(long, value_name = "P")]
    pub at_least: Option<f64>,
    /// Text for people, or JSON.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// The conversation in FILE, and the agent it belongs to.
fn conversation(args: &PassKArgs) -> Result<(Agent, Case), String> {
    let file = &args.file;
    let origin = file.display().to_string();
    let text = livesim::jsonl::read_text(file).map_err(|problem| format!("{origin}: {problem}"))?;
    let is_entry = serde_json::from_str::<serde_json::Value>(&text)
        .is_ok_and(|v| v.get("regression").is_some());
    if is_entry {
        let entry = CorpusEntry::from_json_str(&text, &origin).map_err(|e| e.to_string())?;
        let mut agents = match args.agent.as_deref() {
            Some(name) => {
                let agents = find_agent(name)?;
                if let Some(agent) = agents.agents.first() {
                    super::corpus::belongs_to(&entry, agent, name)
                        .map_err(|e| format!("{origin}: {e}"))?;
                }
                agents
            }
            // The entry named it: say which entry.
            None => find_agent(&entry.agent).map_err(|e| {
                format!(
                    "{origin}: its agent `{}` cannot be used ({e}); name the agent to replay \
                     it against with --agent",
                    entry.agent
                )
            })?,
        };
        return Ok((agents.agents.remove(0), entry.case));
    }
    let script = ScriptedServer::from_json_str(&text, &origin).map_err(|e| e.to_string())?;
    let Some(name) = args.agent.as_deref() else {
        return Err(format!(
            "{origin} is a script, not a corpus entry: say whose conversation it is with \
             --agent NAME"
        ));
    };
    let agent = find_agent(name)?.agents.remove(0);
    let case = Case {
        seed: Seed::new(0),
        swarm: livesim::executor::Swarm::calm(),
        faults: Faults::calm(),
        script,
        decisions: None,
    };
    Ok((agent, case))
}

pub fn run(args: PassKArgs) -> ExitCode {
    let seeds = match parse_seeds(&args.seeds) {
        Ok(seeds) if !seeds.is_empty() => seeds,
        Ok(_) => return usage("passk", "--seeds: the range is empty"),
        Err(message) => return usage("passk", &format!("--seeds {message}")),
    };
    if args.k == 0 {
        return usage("passk", "--k must be at least 1");
    }
    if let Some(p) = args.at_least
        && !(0.0..=1.0).contains(&p)
    {
        return usage("passk", &format!("--at-least {p}: a share, 0 to 1"));
    }
    let (agent, case) = match conversation(&args) {
        Ok(found) => found,
        Err(message) => return usage("passk", &message),
    };
    let soak = Soak::agent(&agent);
    let file = args.file.display().to_string();
    let replay = |seed: Seed| {
        format!(
            "livesim sim passk {file} --agent {} --seed {seed}",
            agent.dir.display()
        )
    };
    if let Some(seed) = args.seed {
        // One trial: what happened in it, in full.
        let run = soak.run_case(&Soak::trial(&case, seed));
        say!(
            "{}: {} under seed {seed}",
            agent.name,
            super::actions(case.actions())
        );
        for failure in &run.failures {
            let mut failure = failure.clone();
            failure.replay = replay(seed);
            say!("{failure}");
        }
        if run.failures.is_empty() {
            say!("passed");
            return ExitCode::SUCCESS;
        }
        return ExitCode::from(1);
    }
    let passk = soak.pass_k(&case, seeds.clone(), args.k);
    let short = args
        .at_least
        .is_some_and(|p| passk.pass_k().is_nan() || passk.pass_k() < p);
    match args.format {
        Format::Json => {
            let failing: Vec<_> = passk
                .failing
                .iter()
                .map(|(seed, broken)| {
                    json!({"seed": seed.to_string(), "invariants": broken, "replay": replay(*seed)})
                })
                .collect();
            let number = |x: f64| if x.is_nan() { json!(null) } else { json!(x) };
            say!(
                "{:#}",
                json!({
                    "agent": agent.name,
                    "file": file,
                    "actions": case.actions(),
                    "seeds": format!("{}..{}", seeds.start, seeds.end),
                    "k": passk.k,
                    "trials": passk.trials,
                    "passed": passk.passed,
                    "pass_1": number(passk.pass_1()),
                    "pass_k": number(passk.pass_k()),
                    "failing": failing,
                })
            );
        }
        Format::Text => {
            say!(
                "{}: the conversation in {file} ({}, fault rates: {}), seeds {}..{}",
                agent.name,
                super::actions(case.actions()),
                case.faults,
                seeds.start,
                seeds.end
            );
            say!("{passk}");
            if passk.k as u64 > passk.trials {
                say!("(pass^{} needs at least {} seeds)", passk.k, passk.k);
            }
            if let Some((first, _)) = passk.failing.first() {
                let listed: Vec<String> = passk
                    .failing
                    .iter()
                    .take(LISTED)
                    .map(|(seed, broken)| format!("{seed} ({})", broken.join(", ")))
                    .collect();
                let more = passk.failing.len().saturating_sub(LISTED);
                say!(
                    "failing seeds: {}{}",
                    listed.join(", "),
                    if more > 0 {
                        format!(", and {more} more")
                    } else {
                        String::new()
                    }
                );
                say!("replay one: {}", replay(*first));
            }
            if short && let Some(p) = args.at_least {
                say!("pass^{} {:.3} is below {p}", passk.k, passk.pass_k());
            }
        }
    }
    if short {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
