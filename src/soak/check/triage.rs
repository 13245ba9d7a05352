//! Triage: a soak's failures by signature, and what changed since the
//! last soak.
//!
//! A thousand failing seeds are usually a handful of bugs.
//! [`Triage::of_summary`] collapses a soak's failures by [`Signature`]
//! (the agent, the invariant and the shape of the shrunk script) into
//! [`TriageEntry`]s: how many seeds, the lowest one and its replay line.
//! [`Triage::compare`] sets them against a baseline, the previous night's
//! triage: each signature new, still failing or fixed. A failure the soak
//! did not shrink keeps its whole script's shape, which rarely matches
//! another seed's: such entries are mostly one seed each, marked not
//! shrunk.
//!
//! The file (`livesim sim soak --triage FILE`) is in `triage_file.rs`,
//! the reports (the text section, Markdown for a CI step summary, JUnit
//! properties) in `triage_report.rs`.

use std::collections::BTreeMap;
use std::fmt;

use crate::executor::Seed;
use crate::soak::check::report::{Failure, Summary};
use crate::soak::check::signature::{Signature, kept_case};
use crate::soak::keep::kept::Kept;

/// Failures of one signature: how many seeds, the lowest and how to
/// replay it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TriageEntry {
    /// The signature's id ([`Signature::id`]).
    pub signature: String,
    /// The agent.
    pub agent: String,
    /// The invariant broken.
    pub invariant: String,
    /// The script's shape on one line ([`Signature::shape`]).
    pub shape: String,
    /// How many failures (seeds) have this signature.
    pub count: u64,
    /// The lowest of those seeds.
    pub lowest_seed: Seed,
    /// The line that replays the lowest seed.
    pub replay: String,
    /// Whether the shape is a shrunk case's (one of the seeds was kept
    /// shrunk); otherwise a whole generated script's.
    pub shrunk: bool,
}

/// A soak's failures, one entry per signature: what `livesim sim soak
/// --triage FILE` writes and `--baseline FILE` reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Triage {
    /// The agents soaked (an agent with no failure has no entry, and was
    /// soaked all the same).
    pub agents: Vec<String>,
    /// One entry per signature, by agent, invariant and lowest seed.
    pub entries: Vec<TriageEntry>,
}

impl Triage {
    /// The failures of `summary`, collapsed by signature (kept cases'
    /// scripts preferred: see [`Signature::of_failure`]).
    pub fn of_summary(summary: &Summary) -> Self {
        let agents = summary.agents.iter().map(|a| a.name.clone()).collect();
        Self::of_failures(agents, summary.failures(), &summary.kept)
    }

    /// `failures` of a soak of `agents`, collapsed by signature.
    pub fn of_failures<'a>(
        agents: Vec<String>,
        failures: impl IntoIterator<Item = &'a Failure>,
        kept: &[Kept],
    ) -> Self {
        let mut by_id: BTreeMap<String, TriageEntry> = BTreeMap::new();
        for failure in failures {
            let signature = Signature::of_failure(failure, kept);
            let shrunk = kept_case(failure, kept).is_some_and(|k| k.entry.shrunk.is_some());
            let id = signature.id();
            match by_id.get_mut(&id) {
                Some(entry) => {
                    entry.count += 1;
                    entry.shrunk |= shrunk;
                    if failure.seed < entry.lowest_seed {
                        entry.lowest_seed = failure.seed;
                        entry.replay = failure.replay.clone();
                    }
                }
                None => {
                    let entry = TriageEntry {
                        signature: id.clone(),
                        agent: signature.agent.clone(),
                        invariant: signature.invariant.clone(),
                        shape: signature.shape(),
                        count: 1,
                        lowest_seed: failure.seed,
                        replay: failure.replay.clone(),
                        shrunk,
                    };
                    by_id.insert(id, entry);
                }
            }
        }
        let mut entries: Vec<TriageEntry> = by_id.into_values().collect();
        entries.sort_by(|a, b| {
            (&a.agent, &a.invariant, a.lowest_seed, &a.signature).cmp(&(
                &b.agent,
                &b.invariant,
                b.lowest_seed,
                &b.signature,
            ))
        });
        Triage { agents, entries }
    }

    /// Failures over every entry.
    pub fn failures(&self) -> u64 {
        self.entries.iter().map(|e| e.count).sum()
    }

    /// The entry of signature `id`.
    pub fn entry(&self, id: &str) -> Option<&TriageEntry> {
        self.entries.iter().find(|e| e.signature == id)
    }

    /// This triage against `baseline` (an earlier soak's), which reports
    /// name as `name` (its file): each signature new, still failing, or
    /// fixed (in the baseline, of an agent soaked now, and not found
    /// now).
    ///
    /// ```
    /// use livesim::Seed;
    /// use livesim::soak::{Status, Triage, TriageEntry};
    ///
    /// let entry = |signature: &str| TriageEntry {
    ///     signature: signature.into(),
    ///     agent: "weather".into(),
    ///     invariant: "liveness".into(),
    ///     shape: "call call-1 get_weather".into(),
    ///     count: 1,
    ///     lowest_seed: Seed::new(7),
    ///     replay: "livesim sim run weather --seed 0x7".into(),
    ///     shrunk: true,
    /// };
    /// let night = |ids: &[&str]| Triage {
    ///     agents: vec!["weather".into()],
    ///     entries: ids.iter().map(|id| entry(id)).collect(),
    /// };
    /// let last = night(&["00000000000a", "00000000000b"]);
    /// let now = night(&["00000000000b", "00000000000c"]);
    /// let comparison = now.compare(&last, "last-night.json");
    /// assert_eq!(comparison.status("00000000000a"), Some(Status::Fixed));
    /// assert_eq!(comparison.status("00000000000b"), Some(Status::StillFailing));
    /// assert_eq!(comparison.status("00000000000c"), Some(Status::New));
    /// ```
    pub fn compare(&self, baseline: &Triage, name: impl Into<String>) -> Comparison {
        let (mut new, mut still_failing) = (Vec::new(), Vec::new());
        for entry in &self.entries {
            match baseline.entry(&entry.signature) {
                Some(_) => still_failing.push(entry.clone()),
                None => new.push(entry.clone()),
            }
        }
        let (mut fixed, mut not_compared) = (Vec::new(), 0);
        for entry in &baseline.entries {
            if self.entry(&entry.signature).is_some() {
                continue;
            }
            if self.agents.contains(&entry.agent) {
                fixed.push(entry.clone());
            } else {
                not_compared += 1;
            }
        }
        Comparison {
            baseline: name.into(),
            new,
            still_failing,
            fixed,
            not_compared,
        }
    }
}

/// Where a signature stands against the baseline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Failing now, not in the baseline.
    New,
    /// Failing now and in the baseline.
    StillFailing,
    /// In the baseline, not failing now.
    Fixed,
}

impl Status {
    /// `new`, `still failing` or `fixed`.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::New => "new",
            Status::StillFailing => "still failing",
            Status::Fixed => "fixed",
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A soak's triage against a baseline ([`Triage::compare`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Comparison {
    /// The baseline as reports name it (its file).
    pub baseline: String,
    /// Failing now, not in the baseline (this soak's entries).
    pub new: Vec<TriageEntry>,
    /// Failing now and in the baseline (this soak's entries).
    pub still_failing: Vec<TriageEntry>,
    /// In the baseline, not failing now (the baseline's entries).
    pub fixed: Vec<TriageEntry>,
    /// Baseline entries of agents this soak did not run: neither fixed
    /// nor failing, so not compared.
    pub not_compared: usize,
}

impl Comparison {
    /// Where signature `id` stands, if it is failing now or fixed.
    pub fn status(&self, id: &str) -> Option<Status> {
        let has = |list: &[TriageEntry]| list.iter().any(|e| e.signature == id);
        if has(&self.new) {
            Some(Status::New)
        } else if has(&self.still_failing) {
            Some(Status::StillFailing)
        } else if has(&self.fixed) {
            Some(Status::Fixed)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::executor::Swarm;
    use crate::soak::case::Case;
    use crate::soak::generate::faults::Faults;
    use crate::soak::keep::corpus::{CorpusEntry, ShrinkNote};
    use crate::soak::keep::kept::Saved;
    use crate::testing::ScriptedServer;

    fn failure(agent: &str, invariant: &str, seed: u64, script: ScriptedServer) -> Failure {
        Failure {
            agent: agent.to_string(),
            seed: Seed::new(seed),
            swarm: Swarm::calm(),
            faults: Faults::calm(),
            invariant: invariant.to_string(),
            message: "broken".to_string(),
            script,
            replay: format!("livesim sim run {agent} --seed {}", Seed::new(seed)),
            excerpt: String::new(),
        }
    }

    /// The user asks, the model calls `tool` and answers; texts and
    /// pauses as given.
    fn asks(user: &str, tool: &str, pause: u64) -> ScriptedServer {
        ScriptedServer::new()
            .hears(user)
            .pause(Duration::from_millis(pause))
            .calls(tool, json!({"city": user}))
            .says(format!("{user}, done"))
    }

    /// `failure` kept, its case shrunk to `script`.
    fn kept(failure: &Failure, script: ScriptedServer) -> Kept {
        Kept {
            found: failure.clone(),
            entry: CorpusEntry {
                agent: failure.agent.clone(),
                invariant: failure.invariant.clone(),
                message: failure.message.clone(),
                case: Case {
                    script,
                    ..Case::from(failure)
                },
                shrunk: Some(ShrinkNote {
                    actions_before: failure.script.actions().len(),
                    runs: 10,
                    seconds: 0.1,
                    finished: true,
                }),
            },
            note: None,
            excerpt: String::new(),
            saved: Saved::NotWritten,
            replay: String::new(),
            page: None,
        }
    }

    #[test]
    fn seeds_of_one_signature_collapse_to_a_count_and_the_lowest_seed() {
        let long = asks("x", "get_weather", 1)
            .says("more")
            .calls("get_forecast", json!({}));
        let failures = [
            failure(
                "weather",
                "answered-once",
                9,
                asks("Paris", "get_weather", 10),
            ),
            failure(
                "weather",
                "answered-once",
                4,
                asks("Zürich, Kraków", "get_weather", 2),
            ),
            failure("weather", "liveness", 2, asks("Rome", "get_weather", 3)),
            failure(
                "weather",
                "answered-once",
                7,
                asks("Oslo", "get_forecast", 4),
            ),
            // Its own script is longer; its kept case, shrunk, is the
            // first shape.
            failure("weather", "answered-once", 3, long.clone()),
        ];
        let kept = [kept(&failures[4], asks("Lima", "get_weather", 0))];
        let triage = Triage::of_failures(vec!["weather".into()], &failures, &kept);
        let entries: Vec<(&str, u64, String, &str, bool)> = triage
            .entries
            .iter()
            .map(|e| {
                let seed = e.lowest_seed.to_string();
                (
                    e.invariant.as_str(),
                    e.count,
                    seed,
                    e.replay.as_str(),
                    e.shrunk,
                )
            })
            .collect();
        let replay = |seed: &str| format!("livesim sim run weather --seed {seed}");
        assert_eq!(
            entries,
            [
                (
                    "answered-once",
                    3,
                    "0x3".into(),
                    replay("0x3").as_str(),
                    true
                ),
                (
                    "answered-once",
                    1,
                    "0x7".into(),
                    replay("0x7").as_str(),
                    false
                ),
                ("liveness", 1, "0x2".into(), replay("0x2").as_str(), false),
            ]
        );
        assert_eq!(triage.failures(), 5);
        // Not kept, the long script is a shape of its own.
        let alone = Triage::of_failures(vec!["weather".into()], &failures, &[]);
        assert_eq!(alone.entries.len(), 4);
    }

    fn entry(signature: &str, agent: &str) -> TriageEntry {
        TriageEntry {
            signature: signature.into(),
            agent: agent.into(),
            invariant: "liveness".into(),
            shape: "abort".into(),
            count: 1,
            lowest_seed: Seed::new(1),
            replay: "livesim sim run x --seed 0x1".into(),
            shrunk: true,
        }
    }

    #[test]
    fn against_a_baseline_each_signature_is_new_still_failing_or_fixed() {
        let baseline = Triage {
            agents: vec!["a".into(), "b".into()],
            entries: vec![
                entry("000000000001", "a"),
                entry("000000000002", "a"),
                entry("000000000003", "b"),
            ],
        };
        let now = Triage {
            agents: vec!["a".into()],
            entries: vec![entry("000000000002", "a"), entry("000000000004", "a")],
        };
        let comparison = now.compare(&baseline, "last-night.json");
        let ids = |list: &[TriageEntry]| -> Vec<String> {
            list.iter().map(|e| e.signature.clone()).collect()
        };
        assert_eq!(ids(&comparison.new), ["000000000004"]);
        assert_eq!(ids(&comparison.still_failing), ["000000000002"]);
        // 3 is agent b's, which this soak did not run.
        assert_eq!(ids(&comparison.fixed), ["000000000001"]);
        assert_eq!(comparison.not_compared, 1);
        assert_eq!(comparison.status("000000000004"), Some(Status::New));
        assert_eq!(
            comparison.status("000000000002"),
            Some(Status::StillFailing)
        );
        assert_eq!(comparison.status("000000000001"), Some(Status::Fixed));
        assert_eq!(comparison.status("000000000003"), None);
        // Against itself: everything still failing.
        let same = now.compare(&now, "now");
        assert!(same.new.is_empty() && same.fixed.is_empty());
        assert_eq!(same.still_failing.len(), 2);
    }
}
