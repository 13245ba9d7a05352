//! Calibration: what a Rust agent's own tools do, measured before the
//! soak draws its first conversation.
//!
//! An agent file declares each simulated tool's latency; a Rust tool's
//! latency is whatever its code takes. The faults that race a tool (a
//! cancellation sent while it runs or just after it answered, a goAway or
//! a dropped connection mid-call) must be drawn around that time, or a
//! tool that takes 300 ms is always cancelled early and `cancel-race`
//! never happens. So before the first case, the soak plays a short fixed
//! script against the agent: each tool called three times with arguments
//! that fit and once with arguments that do not, waited for one by one,
//! under three fixed seeds, with the flow observing rather than refusing.
//! Each tool's latency becomes the range of virtual time its answers took
//! (its failures', when it never answered; a latency declared with
//! `Soak::tool_latency` is kept as declared).
//!
//! The measurement also says which goals this agent can reach at all: a
//! tool that never takes time cannot be cancelled mid-run, a tool that
//! accepts any arguments never refuses bad ones, and tools that never
//! fail cannot reach `tool-failure`. Those goals are not flagged when no
//! run reaches them.
//!
//! Calibration is a function of the agent alone (fixed seeds, a fixed
//! script), so a replay of one seed draws the same conversation as the
//! soak that found it.

use std::collections::BTreeSet;
use std::ops::RangeInclusive;
use std::time::Duration;

use crate::executor::{Seed, Stream, Swarm};
use crate::flow::Enforcement;
use crate::soak::agent::repertoire::Repertoire;
use crate::soak::case::Case;
use crate::soak::generate::args;
use crate::soak::generate::faults::Faults;
use crate::soak::run::engine::{Target, simulate};
use crate::soak::run::record::ExecutionOutcome;
use crate::testing::{Action, Call, ScriptedServer};

/// The seeds calibration runs under (its own, never a soak's).
const SEEDS: [u64; 3] = [0xca1, 0xca2, 0xca3];
/// Calls with fitting arguments per tool per seed.
const CALLS_PER_TOOL: usize = 3;

/// What calibration found.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Calibration {
    /// The repertoire, each tool's latency measured (or as declared).
    pub repertoire: Repertoire,
    /// Some tool takes virtual time to answer (it can be caught running).
    pub slow_tools: bool,
    /// Some tool run failed.
    pub failing_tools: bool,
    /// Some tool refused arguments that did not fit its parameters.
    pub checks_args: bool,
}

/// The script calibration plays: every tool, called one at a time.
fn script(repertoire: &Repertoire, seed: Seed) -> ScriptedServer {
    let mut draw = Stream::new(seed, "soak/calibrate/args");
    let mut script = ScriptedServer::new().named("calibration");
    let mut id = 0;
    let mut call = |name: &str, args| {
        id += 1;
        Action::Call(Call {
            id: format!("call-{id}"),
            name: name.to_string(),
            args,
            wait: true,
        })
    };
    for tool in &repertoire.tools {
        for _ in 0..CALLS_PER_TOOL {
            let fitting = args::valid(tool.parameters.as_ref(), &tool.examples, &mut draw);
            script = script.action(call(&tool.name, fitting));
        }
        let bad = args::bad(tool.parameters.as_ref(), &tool.examples, &mut draw);
        script = script.action(call(&tool.name, bad));
    }
    script.says("Done.")
}

/// Measures `target`'s tools; `declared` names the tools whose latency
/// the user gave, which keep it.
pub(crate) fn calibrate(target: &Target, declared: &BTreeSet<String>) -> Calibration {
    let mut observing = target.clone();
    let builder = target.builder.clone();
    // Refusals would keep a tool from running at all.
    observing.builder = std::sync::Arc::new(move |ctx| {
        let mut built = builder(ctx);
        if let Some(governance) = built.inner.config.governance.as_mut() {
            governance.enforcement = Enforcement::Observe;
        }
        built
    });
    // Per tool: how long its answers took, and how long its failures did
    // (a refusal of bad arguments takes no time, and says nothing of how
    // long the tool's work takes).
    let mut took: Vec<Vec<Duration>> = vec![Vec::new(); target.repertoire.tools.len()];
    let mut failed: Vec<Vec<Duration>> = vec![Vec::new(); target.repertoire.tools.len()];
    let (mut failing_tools, mut checks_args) = (false, false);
    for seed in SEEDS.map(Seed::new) {
        let case = Case {
            seed,
            swarm: Swarm::calm(),
            faults: Faults::calm(),
            script: script(&target.repertoire, seed),
            decisions: None,
        };
        // A run that fails (a tool that panics or never returns) only
        // leaves fewer measurements.
        let Ok(outcome) = simulate(&observing, &case, None) else {
            continue;
        };
        for run in &outcome.value.executions {
            let (Some(finished), Some(at)) = (
                run.finished,
                target
                    .repertoire
                    .tools
                    .iter()
                    .position(|t| t.name == run.tool),
            ) else {
                continue;
            };
            let duration = finished.saturating_sub(run.started);
            match &run.outcome {
                ExecutionOutcome::Failed(why) => {
                    failing_tools = true;
                    checks_args |= why.contains("invalid arguments");
                    failed[at].push(duration);
                }
                _ => took[at].push(duration),
            }
        }
    }
    let mut repertoire = target.repertoire.clone();
    for ((tool, took), failed) in repertoire.tools.iter_mut().zip(&took).zip(&failed) {
        if declared.contains(&tool.name) {
            continue;
        }
        if let Some(range) = spread(took).or_else(|| spread(failed)) {
            tool.latency = range;
        }
    }
    let slow_tools = repertoire
        .tools
        .iter()
        .any(|t| *t.latency.end() > Duration::ZERO);
    Calibration {
        repertoire,
        slow_tools,
        failing_tools,
        checks_args,
    }
}

/// The range the measurements span.
fn spread(took: &[Duration]) -> Option<RangeInclusive<Duration>> {
    Some(*took.iter().min()?..=*took.iter().max()?)
}
