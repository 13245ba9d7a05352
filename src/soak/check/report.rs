//! What a soak reports: each failure with everything needed to replay it,
//! and the summary (agents, sessions, simulated and wall time, invariant
//! checks, "sometimes" counts, failures), as text and as JUnit XML
//! (`docs/formats/junit.md` shows the XML).

use std::fmt;
use std::ops::Range;
use std::path::Path;
use std::time::Duration;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use crate::executor::{Seed, Swarm, format_time};
use crate::jsonl::thousands;
use crate::simulation::junit::visible;
use crate::soak::check::distribution::Distribution;
use crate::soak::check::latency::Measure;
use crate::soak::check::sometimes::GOALS_JUDGED_FROM;
use crate::soak::generate::faults::Faults;
use crate::soak::keep::kept::Kept;
use crate::soak::run::engine::human;
use crate::soak::run::shard::Shard;
use crate::testing::ScriptedServer;

/// Failures printed per agent; the rest are counted.
const SHOWN_PER_AGENT: usize = 10;

/// Failures kept per agent, scripts and all; later ones are counted only
/// (a soak where every seed fails would otherwise keep every script).
/// Any seed's script can be made again with `Soak::script_for`.
pub const KEPT_PER_AGENT: usize = 200;

/// One broken invariant in one run: everything needed to see it again.
#[derive(Clone, Debug)]
pub struct Failure {
    /// The agent.
    pub agent: String,
    /// The seed.
    pub seed: Seed,
    /// The executor's swarm for the seed.
    pub swarm: Swarm,
    /// The seed's conversation faults.
    pub faults: Faults,
    /// The invariant's name.
    pub invariant: String,
    /// What broke it.
    pub message: String,
    /// The script the run played (save it to replay it elsewhere).
    pub script: ScriptedServer,
    /// The one line that replays the run.
    pub replay: String,
    /// What happened in the run: tool calls and their times, which
    /// overlapped, state writes and their writers, the frames and events
    /// around the failure (empty when the session's simulation itself
    /// failed: the message then ends with the trace).
    pub excerpt: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "FAILED {} seed {}: {}",
            self.agent, self.seed, self.invariant
        )?;
        writeln!(f, "  swarm: {}", self.swarm)?;
        writeln!(f, "  faults: {}", self.faults)?;
        for line in self.message.lines() {
            writeln!(f, "  {line}")?;
        }
        for line in self.excerpt.lines() {
            writeln!(f, "  {line}")?;
        }
        write!(f, "  replay: {}", self.replay)
    }
}

impl Failure {
    /// The failure in a few lines: what broke and the replay line,
    /// without the excerpt.
    pub fn brief(&self) -> String {
        let mut out = format!(
            "FAILED {} seed {}: {}\n",
            self.agent, self.seed, self.invariant
        );
        for line in self.message.lines().take(3) {
            out.push_str(&format!("  {line}\n"));
        }
        out.push_str(&format!("  replay: {}", self.replay));
        out
    }
}

/// One agent's share of a soak.
#[derive(Clone, Debug)]
pub struct AgentSummary {
    /// The agent.
    pub name: String,
    /// Sessions run.
    pub sessions: u64,
    /// Virtual time, summed over the sessions.
    pub virtual_time: Duration,
    /// Reconnects the sessions began (`Reconnecting` events), summed.
    pub reconnects: u64,
    /// Sessions that ran over the simulated network (the `network` fault
    /// kind), and the connections that died on it, summed.
    pub networked: (u64, u64),
    /// Each invariant checked: (name, runs it held in, runs it broke in),
    /// in the order first checked.
    pub checks: Vec<(String, u64, u64)>,
    /// Each "sometimes" goal and how many runs reached it.
    pub goals: Vec<(String, u64)>,
    /// The first [`KEPT_PER_AGENT`] failures, in seed order.
    pub failures: Vec<Failure>,
    /// Failures found beyond those kept.
    pub failures_not_kept: u64,
    /// Of the sessions, those that were variants explored (see
    /// [`Soak::explore`](crate::soak::Soak::explore)).
    pub explored: u64,
    /// Distinct event orders the runs left: pairs of event kinds, one
    /// delivered right after the other, with how often (to the power of
    /// two); what exploration follows. Kept cases are not counted.
    pub orders: u64,
    /// How each latency spread over the runs of fresh seeds and explored
    /// variants (not kept cases), one per [`Measure`], in
    /// [`Measure::ALL`]'s order.
    pub latencies: Vec<Distribution>,
    /// Distinct whole-run signatures: the kinds of the events delivered,
    /// in order, a run of one kind counted once (nearly every run's is
    /// new; [`orders`](Self::orders) is the coverage that saturates).
    pub signatures: u64,
}

impl AgentSummary {
    pub(crate) fn new<'a>(name: &str, goals: impl Iterator<Item = &'a str>) -> Self {
        AgentSummary {
            name: name.to_string(),
            sessions: 0,
            virtual_time: Duration::ZERO,
            reconnects: 0,
            networked: (0, 0),
            checks: Vec::new(),
            goals: goals.map(|g| (g.to_string(), 0)).collect(),
            failures: Vec::new(),
            failures_not_kept: 0,
            explored: 0,
            orders: 0,
            signatures: 0,
            latencies: Measure::ALL.into_iter().map(Distribution::new).collect(),
        }
    }

    /// Adds a run's latencies, measured in the run of `seed`.
    pub(crate) fn add_latencies(&mut self, seed: Seed, samples: &[(Measure, Duration)]) {
        for &(measure, took) in samples {
            if let Some(d) = self.latencies.iter_mut().find(|d| d.measure() == measure) {
                d.add(took, seed);
            }
        }
    }

    /// How `measure` spread over the runs; `None` if nothing measured it.
    pub fn latency(&self, measure: Measure) -> Option<&Distribution> {
        self.latencies
            .iter()
            .find(|d| d.measure() == measure && d.count() > 0)
    }

    pub(crate) fn add(
        &mut self,
        virtual_time: Duration,
        reconnects: u64,
        network: Option<u64>,
        verdicts: &[(String, bool)],
        reached: &[String],
        failures: Vec<Failure>,
    ) {
        self.sessions += 1;
        self.virtual_time += virtual_time;
        self.reconnects += reconnects;
        if let Some(died) = network {
            self.networked.0 += 1;
            self.networked.1 += died;
        }
        for (name, held) in verdicts {
            let at = match self.checks.iter().position(|(n, _, _)| n == name) {
                Some(at) => at,
                None => {
                    self.checks.push((name.clone(), 0, 0));
                    self.checks.len() - 1
                }
            };
            if *held {
                self.checks[at].1 += 1;
            } else {
                self.checks[at].2 += 1;
            }
        }
        for goal in reached {
            if let Some(entry) = self.goals.iter_mut().find(|(g, _)| g == goal) {
                entry.1 += 1;
            }
        }
        self.failures.extend(failures);
        // Runs finish in any order; keep the lowest seeds.
        if self.failures.len() >= 2 * KEPT_PER_AGENT {
            self.keep_lowest_seeds();
        }
    }

    fn keep_lowest_seeds(&mut self) {
        // Stable: one run's failures stay in the order it checked them.
        self.failures.sort_by_key(|f| f.seed);
        if self.failures.len() > KEPT_PER_AGENT {
            self.failures_not_kept += (self.failures.len() - KEPT_PER_AGENT) as u64;
            self.failures.truncate(KEPT_PER_AGENT);
        }
    }

    /// Puts what runs finishing in any order added in a fixed order: the
    /// failures by seed, the checks as `order` lists them (then the
    /// engine's own: `determinism`, and any failure of a whole run).
    pub(crate) fn finish(&mut self, order: &[String]) {
        self.keep_lowest_seeds();
        let rank = |name: &str| match order.iter().position(|n| n == name) {
            Some(at) => (0, at, String::new()),
            None => (1, 0, name.to_string()),
        };
        self.checks.sort_by_cached_key(|(name, ..)| rank(name));
    }

    /// Whether this agent ran enough sessions for a goal no run reached
    /// to be flagged ([`GOALS_JUDGED_FROM`]).
    pub fn goals_judged(&self) -> bool {
        self.sessions >= GOALS_JUDGED_FROM
    }

    /// Failures found, kept or not.
    pub fn failures_found(&self) -> u64 {
        self.failures.len() as u64 + self.failures_not_kept
    }

    /// Invariant checks made.
    pub fn checks_made(&self) -> u64 {
        self.checks
            .iter()
            .map(|(_, held, broke)| held + broke)
            .sum()
    }
}

/// What a soak found.
#[derive(Clone, Debug)]
pub struct Summary {
    /// Each agent's share, in the order given.
    pub agents: Vec<AgentSummary>,
    /// Wall time the soak took.
    pub wall_time: Duration,
    /// The seed range.
    pub seeds: Range<u64>,
    /// The shard of it that ran.
    pub shard: Shard,
    /// How many runs went at once.
    pub jobs: usize,
    /// Whether the time budget ran out before the seeds did.
    pub stopped_by_budget: bool,
    /// Sessions finished in each second of wall time since the soak
    /// started: the rate over the run.
    pub throughput: Vec<u64>,
    /// Kept cases of the corpus that ran before the seeds.
    pub kept_cases_run: u64,
    /// Corpus files that could not be read (each names the file and
    /// what is wrong); the soak fails while there is one.
    pub corpus_errors: Vec<String>,
    /// The failures kept: shrunk, written to the corpus, drawn (see
    /// [`Keeping`](crate::soak::Keeping)); empty until kept.
    pub kept: Vec<Kept>,
    /// Failures not kept (beyond the limit per invariant), per agent.
    pub not_kept: Vec<(String, u64)>,
}

impl Summary {
    /// The seeds as the summary names them: `0..2000`, and the kept
    /// cases that ran first.
    fn seeds_text(&self) -> String {
        let explored = match self.explored() {
            0 => String::new(),
            n => format!(", {} explored", thousands(n)),
        };
        format!("{}{explored}", self.seeds_only())
    }

    /// The seeds and kept cases, without the variants explored.
    fn seeds_only(&self) -> String {
        let kept = match self.kept_cases_run {
            0 => String::new(),
            1 => "1 kept case".to_string(),
            n => format!("{n} kept cases"),
        };
        // One seed is named as its replay line names it (`seed 0x17`),
        // not as the range that holds it.
        let seeds = match self.seeds.end - self.seeds.start {
            1 => format!("seed {}", Seed::new(self.seeds.start)),
            _ => format!("seeds {}..{}", self.seeds.start, self.seeds.end),
        };
        match (self.seeds.is_empty(), kept.is_empty()) {
            (true, true) => "no seeds".to_string(),
            (true, false) => kept,
            (false, true) => seeds,
            (false, false) => format!("{seeds} after {kept}"),
        }
    }

    /// Sessions run, over all agents.
    pub fn sessions(&self) -> u64 {
        self.agents.iter().map(|a| a.sessions).sum()
    }

    /// Sessions that were explored variants, over all agents.
    pub fn explored(&self) -> u64 {
        self.agents.iter().map(|a| a.explored).sum()
    }

    /// Virtual time, over all sessions.
    pub fn virtual_time(&self) -> Duration {
        self.agents.iter().map(|a| a.virtual_time).sum()
    }

    /// Every failure kept, agent by agent, in seed order.
    pub fn failures(&self) -> impl Iterator<Item = &Failure> {
        self.agents.iter().flat_map(|a| a.failures.iter())
    }

    /// Whether every invariant held in every run (and every corpus file
    /// could be read).
    pub fn passed(&self) -> bool {
        self.failures().next().is_none() && self.corpus_errors.is_empty()
    }

    /// The one line a passing soak prints: sessions, seeds, checks, and
    /// the goals no run reached.
    pub fn line(&self) -> String {
        let names: Vec<&str> = self.agents.iter().map(|a| a.name.as_str()).collect();
        let checks: u64 = self.agents.iter().map(AgentSummary::checks_made).sum();
        let never: Vec<String> = self
            .never_reached()
            .iter()
            .map(|(agent, goal)| {
                if self.agents.len() == 1 {
                    goal.to_string()
                } else {
                    format!("{agent}/{goal}")
                }
            })
            .collect();
        let goals = if self.agents.iter().all(|a| !a.goals_judged()) {
            "goals not judged (too few sessions)".to_string()
        } else if never.is_empty() {
            "every goal reached".to_string()
        } else {
            format!("goals never reached: {}", never.join(", "))
        };
        format!(
            "livesim: soak {}: {} sessions passed ({}{}) in {:.1} s; {} checks; {goals}",
            names.join(", "),
            thousands(self.sessions()),
            self.seeds_text(),
            if self.shard == Shard::WHOLE {
                String::new()
            } else {
                format!(", shard {}", self.shard)
            },
            self.wall_time.as_secs_f64(),
            thousands(checks),
        )
    }

    /// The (agent, goal) pairs no run reached, for agents that ran
    /// enough sessions for it to mean something
    /// ([`GOALS_JUDGED_FROM`](crate::soak::GOALS_JUDGED_FROM)).
    pub fn never_reached(&self) -> Vec<(&str, &str)> {
        self.agents
            .iter()
            .filter(|a| a.goals_judged())
            .flat_map(|a| {
                a.goals
                    .iter()
                    .filter(|(_, hits)| *hits == 0)
                    .map(move |(goal, _)| (a.name.as_str(), goal.as_str()))
            })
            .collect()
    }

    /// The summary as JUnit XML: a suite per agent, a test case per
    /// invariant (failed with its first failures and their replay lines),
    /// the "sometimes" counts as properties.
    pub fn junit(&self) -> Report {
        let mut report = Report::new("livesim-soak");
        report.set_time(self.wall_time);
        for agent in &self.agents {
            let mut suite = TestSuite::new(visible(&agent.name));
            suite.add_property(("sessions", agent.sessions.to_string().as_str()));
            for (goal, hits) in &agent.goals {
                suite.add_property((
                    visible(&format!("sometimes.{goal}")).as_ref(),
                    hits.to_string().as_str(),
                ));
            }
            for (name, held, broke) in &agent.checks {
                let status = if *broke == 0 {
                    TestCaseStatus::success()
                } else {
                    let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
                    let failures: Vec<&Failure> = agent
                        .failures
                        .iter()
                        .filter(|f| &f.invariant == name)
                        .collect();
                    if let Some(first) = failures.first() {
                        status.set_message(visible(&format!(
                            "broken in {broke} of {} runs; first: seed {}: {}",
                            held + broke,
                            first.seed,
                            first.message.lines().next().unwrap_or_default()
                        )));
                    }
                    let text: Vec<String> = failures
                        .iter()
                        .take(SHOWN_PER_AGENT)
                        .map(|f| f.to_string())
                        .collect();
                    status.set_description(visible(&text.join("\n\n")));
                    status.set_type(visible(name));
                    status
                };
                let mut case = TestCase::new(visible(name), status);
                case.set_classname(visible(&agent.name));
                suite.add_test_case(case);
            }
            report.add_test_suite(suite);
        }
        report
    }

    /// Writes [`junit`](Self::junit) to `path`.
    pub fn write_junit(&self, path: impl AsRef<Path>) -> std::io::Result<()> {
        let path = path.as_ref();
        let xml = self
            .junit()
            .to_string()
            .map_err(|e| std::io::Error::other(format!("{}: {e}", path.display())))?;
        std::fs::write(path, xml)
            .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))
    }
}

/// The widest column a table pads its names to: a longer name (an agent's
/// own invariant over long tool names) runs past its column instead of
/// widening every row, and a width stays far inside what `format!` can pad
/// to (65,535) whatever a file named.
const WIDEST_COLUMN: usize = 48;

/// The width to pad a column of names of `widths` to: the widest, at least
/// `least`, at most [`WIDEST_COLUMN`].
pub(crate) fn column_width(widths: impl IntoIterator<Item = usize>, least: usize) -> usize {
    widths
        .into_iter()
        .fold(least, usize::max)
        .min(WIDEST_COLUMN)
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.agents.iter().map(|a| a.name.as_str()).collect();
        writeln!(
            f,
            "soak: {} agent{} ({}), {}{}, {} job{}",
            names.len(),
            if names.len() == 1 { "" } else { "s" },
            names.join(", "),
            self.seeds_text(),
            if self.shard == Shard::WHOLE {
                String::new()
            } else {
                format!(" shard {}", self.shard)
            },
            self.jobs,
            if self.jobs == 1 { "" } else { "s" },
        )?;
        let width = column_width(names.iter().map(|n| n.len()), 5);
        writeln!(
            f,
            "  {:<width$}  {:>9}  {:>8}  {:>6}  {:>10}  {:>9}  {:>8}",
            "agent", "sessions", "explored", "orders", "simulated", "checks", "failures"
        )?;
        for agent in &self.agents {
            writeln!(
                f,
                "  {:<width$}  {:>9}  {:>8}  {:>6}  {:>10}  {:>9}  {:>8}",
                agent.name,
                thousands(agent.sessions),
                thousands(agent.explored),
                thousands(agent.orders),
                human(agent.virtual_time),
                thousands(agent.checks_made()),
                thousands(agent.failures_found())
            )?;
        }
        let wall = self.wall_time.as_secs_f64().max(1e-9);
        let simulated = self.virtual_time();
        writeln!(
            f,
            "sessions: {} in {:.1}s wall ({:.0} sessions/s), {} simulated ({:.0}× real time){}",
            thousands(self.sessions()),
            wall,
            self.sessions() as f64 / wall,
            human(simulated),
            simulated.as_secs_f64() / wall,
            if self.stopped_by_budget {
                "; the time budget ran out before the seeds did"
            } else {
                ""
            }
        )?;
        let reconnects: u64 = self.agents.iter().map(|a| a.reconnects).sum();
        if reconnects > 0 {
            writeln!(
                f,
                "reconnects: {} ({:.0} per second of wall time)",
                thousands(reconnects),
                reconnects as f64 / wall
            )?;
        }
        let (networked, died) = self
            .agents
            .iter()
            .fold((0, 0), |(n, d), a| (n + a.networked.0, d + a.networked.1));
        if networked > 0 {
            writeln!(
                f,
                "network: {} sessions over the simulated network, {} connections died on it",
                thousands(networked),
                thousands(died)
            )?;
        }
        let checks: u64 = self.agents.iter().map(AgentSummary::checks_made).sum();
        let broke: u64 = self
            .agents
            .iter()
            .flat_map(|a| a.checks.iter().map(|(_, _, b)| b))
            .sum();
        writeln!(
            f,
            "invariant checks: {}, {} failed",
            thousands(checks),
            thousands(broke)
        )?;
        for agent in &self.agents {
            let checks: Vec<String> = agent
                .checks
                .iter()
                .map(|(name, held, broke)| {
                    if *broke == 0 {
                        format!("{name} {}", thousands(*held))
                    } else {
                        format!("{name} {} FAILED {}", thousands(*held), thousands(*broke))
                    }
                })
                .collect();
            writeln!(f, "  {:<width$}  {}", agent.name, checks.join(", "))?;
        }
        writeln!(f, "sometimes (runs that reached each goal):")?;
        for agent in &self.agents {
            let goals: Vec<String> = agent
                .goals
                .iter()
                .map(|(goal, hits)| {
                    if *hits == 0 && agent.goals_judged() {
                        format!("{goal} 0 (NEVER REACHED)")
                    } else {
                        format!("{goal} {}", thousands(*hits))
                    }
                })
                .collect();
            let judged = if agent.goals_judged() || agent.goals.is_empty() {
                String::new()
            } else {
                format!(
                    " (not judged over {} session{}: {GOALS_JUDGED_FROM} needed)",
                    agent.sessions,
                    if agent.sessions == 1 { "" } else { "s" }
                )
            };
            writeln!(f, "  {:<width$}  {}{judged}", agent.name, goals.join(", "))?;
        }
        if self
            .agents
            .iter()
            .any(|a| a.latencies.iter().any(|d| d.count() > 0))
        {
            writeln!(
                f,
                "latency (virtual time; p50 / p90 / p99 / max, and the seed of the max):"
            )?;
            for agent in &self.agents {
                let measured = agent.latencies.iter().filter(|d| d.count() > 0);
                for (i, d) in measured.enumerate() {
                    let name = if i == 0 { agent.name.as_str() } else { "" };
                    writeln!(
                        f,
                        "  {name:<width$}  {:<15} {:>8} / {:>8} / {:>8} / {:>8} ({}, {} measured)",
                        d.measure().name(),
                        format_time(d.p50()),
                        format_time(d.p90()),
                        format_time(d.p99()),
                        format_time(d.max()),
                        d.worst_seed().map(|s| s.to_string()).unwrap_or_default(),
                        thousands(d.count())
                    )?;
                }
            }
        }
        for error in &self.corpus_errors {
            writeln!(f, "corpus: {error}")?;
        }
        writeln!(
            f,
            "digest: {} (every count above, wall time aside: the same seeds give the same digest)",
            self.digest()
        )?;
        let total: u64 = self.agents.iter().map(AgentSummary::failures_found).sum();
        if total == 0 {
            return write!(f, "failures: none");
        }
        writeln!(f, "failures: {total}")?;
        // Kept failures in full, from their (shrunk) kept case; the rest
        // briefly, the first of each invariant with its excerpt.
        for kept in &self.kept {
            writeln!(f, "{kept}")?;
        }
        for agent in &self.agents {
            let mut told: Vec<&str> = self
                .kept
                .iter()
                .filter(|k| k.entry.agent == agent.name)
                .map(|k| k.found.invariant.as_str())
                .collect();
            let others: Vec<&Failure> = agent
                .failures
                .iter()
                .filter(|failure| {
                    !self.kept.iter().any(|k| {
                        k.found.agent == failure.agent
                            && k.found.seed == failure.seed
                            && k.found.invariant == failure.invariant
                    })
                })
                .collect();
            for failure in others.iter().take(SHOWN_PER_AGENT) {
                if told.contains(&failure.invariant.as_str()) {
                    writeln!(f, "{}", failure.brief())?;
                } else {
                    told.push(&failure.invariant);
                    writeln!(f, "{failure}")?;
                }
            }
            let shown = others.len().min(SHOWN_PER_AGENT) as u64
                + self
                    .kept
                    .iter()
                    .filter(|k| k.entry.agent == agent.name)
                    .count() as u64;
            if agent.failures_found() > shown {
                let more: Vec<String> = others
                    .iter()
                    .skip(SHOWN_PER_AGENT)
                    .take(20)
                    .map(|f| format!("{} {}", f.seed, f.invariant))
                    .collect();
                writeln!(
                    f,
                    "… and {} more {} failures ({}{})",
                    agent.failures_found() - shown,
                    agent.name,
                    more.join(", "),
                    if agent.failures_found() > shown + 20 {
                        ", …"
                    } else {
                        ""
                    }
                )?;
            }
        }
        for (agent, count) in &self.not_kept {
            writeln!(
                f,
                "{count} more {agent} failures not kept (the lowest seeds of each invariant were)"
            )?;
        }
        Ok(())
    }
}
