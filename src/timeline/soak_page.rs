//! The soak report as a page, and as JSON: the summary, each agent's
//! "sometimes" goals as a bar chart (goals no run reached flagged),
//! each agent's latencies as histograms with their percentiles and worst
//! seed, sessions per second over the run, and each failure with its swarm,
//! faults, invariant, message, script, replay line and a link to its
//! timeline, written beside the page.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::model::Timeline;
use super::page::{self, escape};
use super::soak_latency::{LatencyEntry, latency_charts};
use crate::executor::format_time;
use crate::soak::{Case, CorpusEntry, Failure, Kept, Soak, Summary};
use crate::wire::scrub_known;

/// Failures per agent the page shows, each with its timeline.
pub const FAILURES_SHOWN: usize = 10;

/// One invariant's count.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CheckCount {
    /// The invariant.
    pub name: String,
    /// Runs it held in.
    pub held: u64,
    /// Runs it broke in.
    pub broke: u64,
}

/// One "sometimes" goal's count.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GoalCount {
    /// The goal.
    pub name: String,
    /// Runs that reached it.
    pub hits: u64,
}

/// One failure, as the page shows it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FailureEntry {
    /// The seed (`0x1f`).
    pub seed: String,
    /// The broken invariant.
    pub invariant: String,
    /// What broke it.
    pub message: String,
    /// The executor's swarm.
    pub swarm: String,
    /// The conversation's faults.
    pub faults: String,
    /// The one line that replays it.
    pub replay: String,
    /// The script the failure carries (shrunk, once a shrinker has been
    /// at it), resumption handles hidden.
    pub script: serde_json::Value,
    /// The script's actions before it was shrunk (`None`: not shrunk).
    pub shrunk_from: Option<usize>,
    /// Its timeline, relative to the page, once written.
    pub timeline: Option<String>,
    /// The shrunk case, which its timeline draws.
    #[serde(skip)]
    pub case: Option<Case>,
}

/// One agent's share.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AgentEntry {
    /// The agent.
    pub name: String,
    /// Sessions run.
    pub sessions: u64,
    /// Of the sessions, the variants exploration added.
    pub explored: u64,
    /// Distinct event orders its runs left (the coverage exploration
    /// follows).
    pub orders: u64,
    /// Virtual time over its sessions, in nanoseconds.
    pub virtual_time_ns: u64,
    /// Each invariant's counts.
    pub checks: Vec<CheckCount>,
    /// Each goal's count.
    pub sometimes: Vec<GoalCount>,
    /// Whether enough sessions ran for a goal no run reached to be
    /// flagged.
    pub goals_judged: bool,
    /// Its measured latencies, with their histograms.
    pub latencies: Vec<LatencyEntry>,
    /// Failures found, kept or not.
    pub failures_found: u64,
    /// The failures kept, lowest seeds first.
    pub failures: Vec<FailureEntry>,
}

/// A soak's report: what the page draws and the JSON says.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SoakPage {
    /// The seed range, `A..B`.
    pub seeds: String,
    /// The shard that ran, `K/N`.
    pub shard: String,
    /// Runs at once.
    pub jobs: usize,
    /// Sessions run.
    pub sessions: u64,
    /// Of the sessions, the variants exploration added.
    pub explored: u64,
    /// Wall time, in seconds.
    pub wall_seconds: f64,
    /// Sessions per second of wall time, over the whole soak.
    pub sessions_per_second: f64,
    /// Sessions finished in each second of wall time.
    pub throughput: Vec<u64>,
    /// Virtual time over every session, in nanoseconds.
    pub virtual_time_ns: u64,
    /// Whether the time budget ran out before the seeds did.
    pub stopped_by_budget: bool,
    /// Each agent's share.
    pub agents: Vec<AgentEntry>,
}

fn nanos(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn failure_entry(failure: &Failure) -> FailureEntry {
    let mut scrubber = super::sources::scrubber();
    let script = super::sources::script_json(&failure.script, &mut scrubber);
    FailureEntry {
        seed: failure.seed.to_string(),
        invariant: scrubber.scrub_text(&failure.invariant),
        message: scrubber.scrub_text(&failure.message),
        swarm: failure.swarm.to_string(),
        faults: failure.faults.to_string(),
        replay: scrubber.scrub_text(&failure.replay),
        script,
        shrunk_from: None,
        timeline: None,
        case: None,
    }
}

/// A name safe as a file name and in a link: letters, digits, `.`, `-`
/// and `_`; anything else becomes `_`.
fn file_safe(name: &str) -> String {
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    match safe.trim_start_matches('.') {
        "" => "page".to_string(),
        rest => rest.to_string(),
    }
}

impl SoakPage {
    /// The report of `summary`.
    pub fn new(summary: &Summary) -> SoakPage {
        let wall = summary.wall_time.as_secs_f64();
        SoakPage {
            seeds: format!("{}..{}", summary.seeds.start, summary.seeds.end),
            shard: summary.shard.to_string(),
            jobs: summary.jobs,
            sessions: summary.sessions(),
            explored: summary.explored(),
            wall_seconds: wall,
            sessions_per_second: summary.sessions() as f64 / wall.max(1e-9),
            throughput: summary.throughput.clone(),
            virtual_time_ns: nanos(summary.virtual_time()),
            stopped_by_budget: summary.stopped_by_budget,
            agents: summary
                .agents
                .iter()
                .map(|agent| AgentEntry {
                    name: scrub_known(&agent.name),
                    sessions: agent.sessions,
                    explored: agent.explored,
                    orders: agent.orders,
                    virtual_time_ns: nanos(agent.virtual_time),
                    checks: agent
                        .checks
                        .iter()
                        .map(|(name, held, broke)| CheckCount {
                            name: name.clone(),
                            held: *held,
                            broke: *broke,
                        })
                        .collect(),
                    sometimes: agent
                        .goals
                        .iter()
                        .map(|(name, hits)| GoalCount {
                            name: name.clone(),
                            hits: *hits,
                        })
                        .collect(),
                    goals_judged: agent.goals_judged(),
                    latencies: LatencyEntry::of(&agent.latencies),
                    failures_found: agent.failures_found(),
                    failures: agent.failures.iter().map(failure_entry).collect(),
                })
                .collect(),
        }
    }

    /// Shows each failure that `entries` holds shrunk (same agent, same
    /// seed) with its shrunk script, and draws its timeline from the
    /// shrunk case.
    pub fn shrunk(&mut self, entries: &[CorpusEntry]) {
        for entry in entries {
            self.show_kept(entry, None);
        }
    }

    /// Shows each failure a soak kept as [`shrunk`](Self::shrunk) does,
    /// with the line that replays the kept case in place of the seed's.
    pub fn kept(&mut self, kept: &[Kept]) {
        for kept in kept {
            let replay = kept.path().map(|_| kept.replay.as_str());
            self.show_kept(&kept.entry, replay);
        }
    }

    fn show_kept(&mut self, entry: &CorpusEntry, replay: Option<&str>) {
        for agent in &mut self.agents {
            if scrub_known(&entry.agent) != agent.name {
                continue;
            }
            for failure in &mut agent.failures {
                if entry.case.seed.to_string() != failure.seed {
                    continue;
                }
                let mut scrubber = super::sources::scrubber();
                if let Some(line) = replay {
                    failure.replay = scrubber.scrub_text(line);
                }
                if entry.shrunk.is_none() {
                    continue;
                }
                failure.script = super::sources::script_json(&entry.case.script, &mut scrubber);
                failure.shrunk_from = entry.shrunk.as_ref().map(|n| n.actions_before);
                failure.case = Some(entry.case.clone());
            }
        }
    }

    /// The report as JSON, led by its format: `"v"`
    /// ([`SOAK_REPORT_VERSION`](super::SOAK_REPORT_VERSION)) and `"kind":
    /// "soak_report"`.
    pub fn to_json(&self) -> serde_json::Value {
        let report = serde_json::to_value(self).unwrap_or(serde_json::Value::Null);
        page::versioned("soak_report", page::SOAK_REPORT_VERSION, report)
    }

    /// Writes the page to `path` and, in a folder beside it
    /// (`<name>-timelines/`), the timeline of each failure the page shows
    /// ([`FAILURES_SHOWN`] per agent), made by running its seed again with
    /// the soak among `soaks` that has its agent's name. Returns the
    /// timelines written.
    pub fn write(
        &mut self,
        path: impl AsRef<Path>,
        soaks: &[Soak],
    ) -> std::io::Result<Vec<PathBuf>> {
        let path = path.as_ref();
        let stem = path
            .file_stem()
            .map_or("soak".to_string(), |s| s.to_string_lossy().into_owned());
        let folder = format!("{}-timelines", file_safe(&stem));
        let dir = path.parent().unwrap_or(Path::new("")).join(&folder);
        let mut written = Vec::new();
        for agent in &mut self.agents {
            let Some(soak) = soaks.iter().find(|s| s.name() == agent.name) else {
                continue;
            };
            for failure in agent.failures.iter_mut().take(FAILURES_SHOWN) {
                let Ok(seed) = failure.seed.parse::<crate::Seed>() else {
                    continue;
                };
                let file = format!("{}-{}.html", file_safe(&agent.name), failure.seed);
                let target = dir.join(&file);
                if !written.contains(&target) {
                    let timeline = match &failure.case {
                        Some(case) => {
                            // The page names the line that replays this
                            // case, which a shrunk case's seed does not.
                            let mut run = soak.run_case(case);
                            for broken in &mut run.failures {
                                broken.replay = failure.replay.clone();
                            }
                            Timeline::of_case(soak, case, &run)
                        }
                        None => Timeline::of_seed(soak, seed, &soak.run_seed(seed)),
                    };
                    timeline.write_html(&target)?;
                    written.push(target);
                }
                failure.timeline = Some(format!("{folder}/{file}"));
            }
        }
        page::write(path, &self.html())?;
        Ok(written)
    }

    /// The page.
    pub fn html(&self) -> String {
        let mut body = String::with_capacity(16_384);
        let failures: u64 = self.agents.iter().map(|a| a.failures_found).sum();
        let _ = write!(
            body,
            "<header><h1>livesim soak: {} agent{}, seeds {}</h1>",
            self.agents.len(),
            if self.agents.len() == 1 { "" } else { "s" },
            escape(&self.seeds)
        );
        let _ = write!(
            body,
            "<dl class=\"facts\"><dt>sessions</dt><dd>{} in {:.1}s wall ({:.0} sessions/s)</dd>\
             <dt>simulated</dt><dd>{}</dd><dt>shard</dt><dd>{}</dd><dt>jobs</dt><dd>{}</dd></dl>",
            self.sessions,
            self.wall_seconds,
            self.sessions_per_second,
            format_time(std::time::Duration::from_nanos(self.virtual_time_ns)),
            escape(&self.shard),
            self.jobs
        );
        if self.stopped_by_budget {
            body.push_str("<p>The time budget ran out before the seeds did.</p>");
        }
        if failures == 0 {
            body.push_str("<div class=\"banner passed\"><strong>No failures.</strong></div>");
        } else {
            let _ = write!(
                body,
                "<div class=\"banner\"><strong>{failures} failure{}</strong>: each is listed \
                 below with its seed, swarm, script and timeline.</div>",
                if failures == 1 { "" } else { "s" }
            );
        }
        body.push_str("</header>\n");
        self.agents_table(&mut body);
        self.rate_chart(&mut body);
        for agent in &self.agents {
            goals_chart(&mut body, agent);
        }
        for agent in &self.agents {
            latency_charts(&mut body, &agent.name, &agent.latencies);
        }
        self.failures(&mut body);
        page::page(
            page::Format {
                kind: "soak_report",
                version: page::SOAK_REPORT_VERSION,
            },
            &format!("livesim soak {}", self.seeds),
            STYLE,
            &body,
            None,
        )
    }

    fn agents_table(&self, out: &mut String) {
        out.push_str(
            "<section><h2>Agents</h2><table id=\"agents\"><tr><th>agent</th><th class=\"num\">\
             sessions</th><th class=\"num\">simulated</th><th>invariant checks (held / broke)</th>\
             <th class=\"num\">failures</th></tr>",
        );
        for agent in &self.agents {
            let checks: Vec<String> = agent
                .checks
                .iter()
                .map(|c| {
                    if c.broke == 0 {
                        format!("{} {}", escape(&c.name), c.held)
                    } else {
                        format!(
                            "<span class=\"never\">{} {} / {} broke</span>",
                            escape(&c.name),
                            c.held,
                            c.broke
                        )
                    }
                })
                .collect();
            let _ = write!(
                out,
                "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td>\
                 <td class=\"num\">{}</td></tr>",
                escape(&agent.name),
                agent.sessions,
                format_time(std::time::Duration::from_nanos(agent.virtual_time_ns)),
                checks.join(", "),
                agent.failures_found
            );
        }
        out.push_str("</table></section>\n");
    }

    /// Sessions per second over the run: one bar per second, or per
    /// group of seconds on a long soak.
    fn rate_chart(&self, out: &mut String) {
        out.push_str("<section><h2>Sessions per second over the run</h2>");
        if self.throughput.is_empty() {
            out.push_str("<p>No session finished.</p></section>\n");
            return;
        }
        let per_bar = self.throughput.len().div_ceil(300).max(1);
        let rates: Vec<f64> = self
            .throughput
            .chunks(per_bar)
            .map(|c| c.iter().sum::<u64>() as f64 / c.len() as f64)
            .collect();
        let peak = rates.iter().copied().fold(1.0, f64::max);
        let (w, h) = (((900 / rates.len()).clamp(2, 40)) as f64, 120.0);
        let width = (w * rates.len() as f64 + 60.0).max(360.0);
        let _ = write!(
            out,
            "<svg id=\"rate\" width=\"{width}\" height=\"{}\" role=\"img\" aria-label=\"sessions \
             per second\"><text x=\"0\" y=\"12\">{peak:.0}/s</text><text x=\"0\" y=\"{h}\">0</text>",
            h + 20.0
        );
        for (i, rate) in rates.iter().enumerate() {
            let bar = rate / peak * (h - 10.0);
            let from = i * per_bar;
            let _ = write!(
                out,
                "<rect class=\"rate\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{bar:.1}\" \
                 fill=\"#1e6fd9\"><title>seconds {}–{}: {rate:.0} sessions/s</title></rect>",
                50.0 + w * i as f64,
                h - bar,
                (w - 1.0).max(1.0),
                from,
                from + per_bar
            );
        }
        let _ = writeln!(
            out,
            "<text x=\"50\" y=\"{}\">each bar: {per_bar} s of wall time, {} s in all</text>\
             </svg></section>",
            h + 16.0,
            self.throughput.len()
        );
    }

    fn failures(&self, out: &mut String) {
        if self.agents.iter().all(|a| a.failures.is_empty()) {
            return;
        }
        out.push_str("<section id=\"failures\"><h2>Failures</h2>");
        for agent in &self.agents {
            for failure in agent.failures.iter().take(FAILURES_SHOWN) {
                let _ = write!(
                    out,
                    "<article class=\"failure\"><h3>{} seed {}: <span class=\"never\">{}</span></h3>\
                     <dl class=\"facts\"><dt>swarm</dt><dd>{}</dd><dt>faults</dt><dd>{}</dd>\
                     <dt>replay</dt><dd>{}</dd>",
                    escape(&agent.name),
                    escape(&failure.seed),
                    escape(&failure.invariant),
                    escape(&failure.swarm),
                    escape(&failure.faults),
                    escape(&failure.replay)
                );
                if let Some(link) = &failure.timeline {
                    let _ = write!(
                        out,
                        "<dt>timeline</dt><dd><a class=\"timeline-link\" href=\"{}\">{}</a></dd>",
                        escape(link),
                        escape(link)
                    );
                }
                let actions = failure
                    .script
                    .get("actions")
                    .and_then(|a| a.as_array())
                    .map_or(0, Vec::len);
                let shrunk = failure
                    .shrunk_from
                    .map_or(String::new(), |before| format!(", shrunk from {before}"));
                let _ = write!(
                    out,
                    "</dl><pre>{}</pre><details><summary>its script ({actions} actions{shrunk})</summary>\
                     <pre>{}</pre></details></article>",
                    escape(&failure.message),
                    escape(&serde_json::to_string_pretty(&failure.script).unwrap_or_default())
                );
            }
            let more = agent.failures_found.saturating_sub(FAILURES_SHOWN as u64);
            if more > 0 {
                let _ = write!(
                    out,
                    "<p>… and {more} more {} failures (the JSON report lists the {} kept).</p>",
                    escape(&agent.name),
                    agent.failures.len()
                );
            }
        }
        out.push_str("</section>\n");
    }
}

const STYLE: &str = "article.failure { border-left: 4px solid var(--bad); padding: 4px 12px; \
                     margin: 10px 0; } article h3 { font-size: 14px; margin: 4px 0; } \
                     .goal-bar { fill: #2e7d32; } .goal-never { fill: var(--bad); } \
                     .latency .charts { display: flex; flex-wrap: wrap; gap: 12px; } \
                     figure.histogram { margin: 0; } figcaption { font-size: 12px; }";

/// One agent's goals as horizontal bars: the share of its sessions that
/// reached each, a goal no run reached in red and flagged.
fn goals_chart(out: &mut String, agent: &AgentEntry) {
    let _ = write!(
        out,
        "<section><h2>Sometimes: {} (runs that reached each goal)</h2>",
        escape(&agent.name)
    );
    if agent.sometimes.is_empty() {
        out.push_str("<p>No goal applies to this agent.</p></section>\n");
        return;
    }
    let row = 20.0;
    let height = row * agent.sometimes.len() as f64 + 4.0;
    let _ = write!(
        out,
        "<svg class=\"goals\" width=\"760\" height=\"{height}\" role=\"img\" aria-label=\"sometimes goals of {}\">",
        escape(&agent.name)
    );
    let sessions = agent.sessions.max(1) as f64;
    for (i, goal) in agent.sometimes.iter().enumerate() {
        let y = row * i as f64;
        let share = goal.hits as f64 / sessions;
        let bar = (share * 400.0).max(if goal.hits > 0 { 1.0 } else { 0.0 });
        let never = goal.hits == 0 && agent.goals_judged;
        let label = if never {
            "0 NEVER REACHED".to_string()
        } else if goal.hits == 0 {
            "0 (too few sessions to judge)".to_string()
        } else {
            format!("{} ({:.1}%)", goal.hits, share * 100.0)
        };
        let (class, text_class) = if never {
            ("goal-never", " class=\"never\"")
        } else {
            ("goal-bar", "")
        };
        let _ = write!(
            out,
            "<text x=\"0\" y=\"{:.0}\"{text_class}>{}</text><rect class=\"{class}\" x=\"200\" \
             y=\"{:.0}\" width=\"{bar:.1}\" height=\"14\" data-goal=\"{}\" data-hits=\"{}\"/>\
             <text x=\"{:.1}\" y=\"{:.0}\"{text_class}>{}</text>",
            y + 14.0,
            escape(&goal.name),
            y + 3.0,
            escape(&goal.name),
            goal.hits,
            206.0 + bar,
            y + 14.0,
            label
        );
        if never {
            let _ = write!(
                out,
                "<rect x=\"200\" y=\"{:.0}\" width=\"4\" height=\"14\" class=\"goal-never\"/>",
                y + 3.0
            );
        }
    }
    out.push_str("</svg></section>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_keep_only_safe_characters() {
        assert_eq!(file_safe("pay ment/../x"), "pay_ment_.._x");
        assert_eq!(file_safe("..."), "page");
        assert_eq!(file_safe("a<b>\"c"), "a_b__c");
    }
}
