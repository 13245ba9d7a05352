//! What a triage tells: the section `livesim sim soak` prints after its
//! summary, the Markdown section a CI job's step summary gets, and the
//! signature of each broken invariant as JUnit properties.

use quick_junit::{Report, TestCaseStatus};

use crate::simulation::junit::visible;
use crate::soak::check::triage::{Comparison, Status, Triage, TriageEntry};

/// The status a triage without a baseline gives every signature.
const FAILING: &str = "failing";

impl Triage {
    /// The section printed after the summary: each signature with its
    /// status (`failing` without a baseline), count, lowest seed, shape
    /// and replay line; then the baseline's signatures that are fixed.
    pub fn text(&self, comparison: Option<&Comparison>) -> String {
        let mut out = format!(
            "triage: {} failure{}, {} signature{}",
            self.failures(),
            plural(self.failures()),
            self.entries.len(),
            plural(self.entries.len() as u64)
        );
        if let Some(c) = comparison {
            out.push_str(&format!(
                "; against {}: {} new, {} still failing, {} fixed",
                c.baseline,
                c.new.len(),
                c.still_failing.len(),
                c.fixed.len()
            ));
            if c.not_compared > 0 {
                out.push_str(&format!(
                    " ({} of agents not soaked now, not compared)",
                    c.not_compared
                ));
            }
        }
        let mut rows: Vec<(&str, &TriageEntry)> = Vec::new();
        for entry in &self.entries {
            let status = comparison
                .and_then(|c| c.status(&entry.signature))
                .map_or(FAILING, Status::as_str);
            rows.push((status, entry));
        }
        if let Some(c) = comparison {
            rows.extend(c.fixed.iter().map(|e| (Status::Fixed.as_str(), e)));
        }
        for (status, entry) in rows {
            let seeds = if status == Status::Fixed.as_str() {
                format!(
                    "{} in the baseline, lowest {}",
                    seeds(entry.count),
                    entry.lowest_seed
                )
            } else {
                format!("{}, lowest {}", seeds(entry.count), entry.lowest_seed)
            };
            out.push_str(&format!(
                "\n  {status:<13}  {}  {} {}: {seeds}\n    shape: {}\n    replay: {}",
                entry.signature,
                entry.agent,
                entry.invariant,
                shape(entry),
                entry.replay
            ));
        }
        out
    }

    /// A Markdown section headed `title`: the counts, then a table each
    /// of new, still failing and fixed signatures (or of failing ones,
    /// without a baseline). What `livesim sim soak` appends to a GitHub
    /// Actions step summary.
    ///
    /// ```
    /// use livesim::soak::Triage;
    ///
    /// let none = Triage { agents: vec!["weather".into()], entries: vec![] };
    /// let markdown = none.markdown("livesim sim soak: weather", None);
    /// assert!(markdown.starts_with("### livesim sim soak: weather\n\nNo failures."));
    /// ```
    pub fn markdown(&self, title: &str, comparison: Option<&Comparison>) -> String {
        let mut out = format!("### {}\n\n", cell(title));
        let failures = self.failures();
        if failures == 0 {
            out.push_str("No failures.");
        } else {
            out.push_str(&format!(
                "{} failure{}, {} signature{}.",
                failures,
                plural(failures),
                self.entries.len(),
                plural(self.entries.len() as u64)
            ));
        }
        match comparison {
            None => {
                out.push('\n');
                table(&mut out, "Failing", &self.entries);
            }
            Some(c) => {
                out.push_str(&format!(
                    " Against the baseline `{}`: **{} new**, {} still failing, {} fixed.\n",
                    c.baseline.replace('`', "'"),
                    c.new.len(),
                    c.still_failing.len(),
                    c.fixed.len()
                ));
                table(&mut out, "New", &c.new);
                table(&mut out, "Still failing", &c.still_failing);
                table(&mut out, "Fixed", &c.fixed);
            }
        }
        out
    }

    /// Adds each failing invariant's signatures to `report` (what
    /// [`Summary::junit`](crate::soak::Summary::junit) made): on the test
    /// case of the agent's suite named after the invariant, a property
    /// `triage.<signature>` whose value is its status (`new`, `still
    /// failing`, or `failing` without a baseline), and `fixed` for the
    /// baseline's signatures no longer failing.
    pub fn annotate_junit(&self, report: &mut Report, comparison: Option<&Comparison>) {
        let mut rows: Vec<(&TriageEntry, &str)> = self
            .entries
            .iter()
            .map(|e| {
                let status = comparison
                    .and_then(|c| c.status(&e.signature))
                    .map_or(FAILING, Status::as_str);
                (e, status)
            })
            .collect();
        if let Some(c) = comparison {
            rows.extend(c.fixed.iter().map(|e| (e, Status::Fixed.as_str())));
        }
        for (entry, status) in rows {
            let case = report
                .test_suites
                .iter_mut()
                .filter(|suite| suite.name.as_str() == visible(&entry.agent))
                .flat_map(|suite| suite.test_cases.iter_mut())
                .find(|case| case.name.as_str() == visible(&entry.invariant));
            let Some(case) = case else {
                continue;
            };
            // A fixed signature is told only where the invariant held.
            if status == Status::Fixed.as_str()
                && !matches!(case.status, TestCaseStatus::Success { .. })
            {
                continue;
            }
            let name = format!("triage.{}", entry.signature);
            case.add_property((visible(&name).as_ref(), status));
        }
    }
}

/// `### Title (n)` and a table of `entries`; nothing when there are none.
fn table(out: &mut String, title: &str, entries: &[TriageEntry]) {
    if entries.is_empty() {
        return;
    }
    out.push_str(&format!(
        "\n#### {title} ({})\n\n\
         | signature | agent | invariant | count | lowest seed | replay | shape |\n\
         |---|---|---|---:|---|---|---|\n",
        entries.len()
    ));
    for e in entries {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} |\n",
            code(&e.signature),
            cell(&e.agent),
            cell(&e.invariant),
            e.count,
            code(&e.lowest_seed.to_string()),
            code(&e.replay),
            cell(&shape(e))
        ));
    }
}

/// The entry's shape, marked when it is a whole script's (not shrunk).
fn shape(entry: &TriageEntry) -> String {
    if entry.shrunk {
        entry.shape.clone()
    } else {
        format!("(not shrunk) {}", entry.shape)
    }
}

/// Text made safe for a table cell: no `|` to end it, no line break.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// Text as code in a table cell (plain when it holds a backtick).
fn code(text: &str) -> String {
    if text.contains('`') {
        cell(text)
    } else {
        format!("`{}`", cell(text))
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn seeds(n: u64) -> String {
    format!("{n} seed{}", plural(n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::Seed;

    fn entry(signature: &str, invariant: &str, count: u64) -> TriageEntry {
        TriageEntry {
            signature: signature.into(),
            agent: "weather".into(),
            invariant: invariant.into(),
            shape: "call call-1 get_weather".into(),
            count,
            lowest_seed: Seed::new(2),
            replay: "livesim sim run weather --seed 0x2".into(),
            shrunk: true,
        }
    }

    #[test]
    fn the_markdown_has_a_table_per_status() {
        let baseline = Triage {
            agents: vec!["weather".into()],
            entries: vec![
                entry("aaaaaaaaaaaa", "liveness", 2),
                entry("bbbbbbbbbbbb", "protocol", 1),
            ],
        };
        let now = Triage {
            agents: vec!["weather".into()],
            entries: vec![
                entry("aaaaaaaaaaaa", "liveness", 5),
                entry("cccccccccccc", "a|b", 1),
            ],
        };
        let mut now = now;
        now.entries[1].shrunk = false;
        let comparison = now.compare(&baseline, "night-41.json");
        let markdown = now.markdown("livesim sim soak: weather", Some(&comparison));
        let expected = "### livesim sim soak: weather\n\n\
            6 failures, 2 signatures. Against the baseline `night-41.json`: **1 new**, 1 still failing, 1 fixed.\n\
            \n#### New (1)\n\n\
            | signature | agent | invariant | count | lowest seed | replay | shape |\n\
            |---|---|---|---:|---|---|---|\n\
            | `cccccccccccc` | weather | a\\|b | 1 | `0x2` | `livesim sim run weather --seed 0x2` | (not shrunk) call call-1 get_weather |\n\
            \n#### Still failing (1)\n\n\
            | signature | agent | invariant | count | lowest seed | replay | shape |\n\
            |---|---|---|---:|---|---|---|\n\
            | `aaaaaaaaaaaa` | weather | liveness | 5 | `0x2` | `livesim sim run weather --seed 0x2` | call call-1 get_weather |\n\
            \n#### Fixed (1)\n\n\
            | signature | agent | invariant | count | lowest seed | replay | shape |\n\
            |---|---|---|---:|---|---|---|\n\
            | `bbbbbbbbbbbb` | weather | protocol | 1 | `0x2` | `livesim sim run weather --seed 0x2` | call call-1 get_weather |\n";
        assert_eq!(markdown, expected);
        let text = now.text(Some(&comparison));
        assert!(
            text.starts_with(
                "triage: 6 failures, 2 signatures; against night-41.json: 1 new, 1 still failing, 1 fixed\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("\n  new            cccccccccccc  weather a|b: 1 seed, lowest 0x2\n"),
            "{text}"
        );
        assert!(
            text.contains("\n  fixed          bbbbbbbbbbbb  weather protocol: 1 seed in the baseline, lowest 0x2\n"),
            "{text}"
        );
        // Without a baseline: one table, of failing signatures.
        let alone = now.markdown("t", None);
        assert!(alone.contains("\n#### Failing (2)\n"), "{alone}");
        assert!(!alone.contains("New"), "{alone}");
    }
}
