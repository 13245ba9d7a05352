//! A corpus report as JUnit XML, for CI systems that show test results.
//!
//! One test suite per spec file, one test case per scenario: named by its
//! label, with the spec's path (without `.spec.json`) as its class name, so
//! `booking/booking.incident.scenario.json` shows as
//! `booking/booking.incident`. A scenario that fails at a step is a
//! `<failure>` whose message names the step (`failed at steps[10]
//! {"expect_allowed":"book_table"}: …`); one that cannot run is an
//! `<error>`. Nothing time-dependent is written, so the same corpus gives
//! the same file.
//!
//! Every text goes through [`visible`] first: a character XML 1.0 does
//! not allow (most C0 controls, U+FFFE, U+FFFF), or one the writer drops
//! (tab, carriage return, C1 controls), is written as a visible escape
//! (`\u{1b}`, `\t`), so the file always parses and no text is lost.
//!
//! Both JUnit reports livesim writes, as examples: `docs/formats/junit.md`.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use super::corpus::{CorpusReport, ScenarioOutcome, ScenarioResult};

impl CorpusReport {
    /// The report as JUnit XML. Fails only if the XML writer does.
    ///
    /// ```
    /// use std::path::PathBuf;
    /// use livesim::simulation::{CorpusReport, ScenarioOutcome, ScenarioResult};
    ///
    /// let report = CorpusReport {
    ///     root: PathBuf::from("sim"),
    ///     specs: 1,
    ///     specs_without_scenarios: vec![],
    ///     results: vec![ScenarioResult {
    ///         scenario: PathBuf::from("booking/booking.incident.scenario.json"),
    ///         spec: PathBuf::from("booking/booking.spec.json"),
    ///         label: "incident".into(),
    ///         outcome: ScenarioOutcome::Passed { steps: 15 },
    ///     }],
    /// };
    /// let xml = report.to_junit().unwrap();
    /// assert!(xml.contains(r#"<testcase name="incident" classname="booking/booking"/>"#), "{xml}");
    /// ```
    pub fn to_junit(&self) -> io::Result<String> {
        let mut suites: BTreeMap<String, Vec<TestCase>> = BTreeMap::new();
        for result in &self.results {
            suites
                .entry(result.spec.display().to_string())
                .or_default()
                .push(test_case(result));
        }
        let mut report = Report::new("livesim flow ci");
        for (spec, cases) in suites {
            let mut suite = TestSuite::new(visible(&spec));
            suite.add_test_cases(cases);
            report.add_test_suite(suite);
        }
        report
            .to_string()
            .map_err(|e| io::Error::other(format!("could not write the JUnit report: {e}")))
    }
}

fn test_case(result: &ScenarioResult) -> TestCase {
    let status = match &result.outcome {
        ScenarioOutcome::Passed { .. } => TestCaseStatus::success(),
        ScenarioOutcome::Failed { failure } => {
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
            status
                .set_message(visible(&result.detail()))
                .set_type("scenario failure")
                .set_description(visible(&failure.to_string()));
            status
        }
        ScenarioOutcome::Error { .. } => {
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
            status
                .set_message(visible(&result.detail()))
                .set_type("scenario error");
            status
        }
    };
    let name = if result.label.is_empty() {
        result.scenario.display().to_string()
    } else {
        result.label.clone()
    };
    let spec = result.spec.display().to_string();
    let class = spec.strip_suffix(".spec.json").unwrap_or(&spec).to_string();
    let mut case = TestCase::new(visible(&name), status);
    case.set_classname(visible(&class));
    case
}

/// `text` as the JUnit writer keeps it whole: each character XML 1.0
/// does not allow (the C0 controls but tab, newline and carriage return;
/// U+FFFE; U+FFFF) as a visible escape, `\u{fffe}`, and so each one the
/// writer drops (tab and carriage return as `\t` and `\r`, the C1
/// controls U+0080 to U+009F). The writer would otherwise write the first
/// as they are (a file no XML reader accepts) and drop the rest, and with
/// an escape character (`\u{1b}`, `\u{9b}`) the text after it too, as a
/// terminal escape sequence.
pub(crate) fn visible(text: &str) -> Cow<'_, str> {
    let escaped = |c: char| matches!(c, '\0'..='\x08' | '\t' | '\x0b'..='\x1f' | '\u{80}'..='\u{9f}' | '\u{fffe}' | '\u{ffff}');
    if !text.contains(escaped) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if escaped(c) => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn characters_xml_forbids_are_escaped_and_the_rest_kept() {
        assert_eq!(visible("plain\ntext é \u{a0}"), "plain\ntext é \u{a0}");
        assert_eq!(visible("a\tb\r\n\u{9b}31m"), "a\\tb\\r\n\\u{9b}31m");
        assert_eq!(
            visible("x\u{0}\u{1b}\u{d7ff}\u{fffe}\u{ffff}\u{10000} to"),
            "x\\u{0}\\u{1b}\u{d7ff}\\u{fffe}\\u{ffff}\u{10000} to"
        );
    }

    /// Every character but those escaped goes through the JUnit writer's
    /// own filter (which drops controls and terminal escapes) untouched.
    #[test]
    fn nothing_escaped_is_dropped_by_the_writer() {
        let every: String = (0..=0x10ffff_u32)
            .filter_map(char::from_u32)
            .flat_map(|c| [c, ' '])
            .collect();
        let escaped = visible(&every);
        let kept = quick_junit::XmlString::new(escaped.as_ref());
        assert!(kept.as_str() == escaped, "the writer changed the text");
    }
}
