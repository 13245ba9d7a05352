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
//! Both JUnit reports livesim writes, as examples: `docs/formats/junit.md`.

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
            let mut suite = TestSuite::new(spec);
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
                .set_message(result.detail())
                .set_type("scenario failure")
                .set_description(failure.to_string());
            status
        }
        ScenarioOutcome::Error { .. } => {
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
            status
                .set_message(result.detail())
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
    let mut case = TestCase::new(name, status);
    case.set_classname(class);
    case
}
