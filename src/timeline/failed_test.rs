//! A failing `#[livesim::test]`'s timeline: written under the cargo target
//! directory, at `<target>/livesim/<cargo target>/<test path>/<seed>.html`
//! (for example `target/livesim/timeline/pages.a_failing_test/0x2a.html`),
//! and named in the failure report, above the replay line. The same seed
//! failing again overwrites its page.
//!
//! The target directory is `CARGO_TARGET_DIR` when set, else the folder
//! above the test binary that holds cargo's `CACHEDIR.TAG`, else the
//! system's temporary folder.

use std::path::{Path, PathBuf};

use super::model::Timeline;
use crate::executor::{Report, Seed, Target, TestId};

/// The cargo target directory this process was built in, as far as it
/// can tell.
pub(crate) fn target_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR").filter(|d| !d.is_empty()) {
        let dir = PathBuf::from(dir);
        if dir.is_absolute() {
            return dir;
        }
        if let Ok(here) = std::env::current_dir() {
            return here.join(dir);
        }
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| {
            exe.ancestors()
                .find(|dir| dir.join("CACHEDIR.TAG").is_file())
                .map(Path::to_path_buf)
        })
        .unwrap_or_else(|| std::env::temp_dir().join("livesim-target"))
}

/// Keeps a path component to letters, digits, `.`, `-` and `_`.
pub(crate) fn path_component(text: &str) -> String {
    let safe: String = text
        .replace("::", ".")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_') {
                c
            } else {
                '.'
            }
        })
        .collect();
    let safe = safe.trim_matches('.');
    if safe.is_empty() {
        "test".to_string()
    } else {
        safe.to_string()
    }
}

/// Where the timeline of `seed` of `test` is written.
///
/// ```
/// use livesim::Seed;
/// use livesim::executor::{Target, TestId};
///
/// let id = TestId::new(Target::Test("pages".into()), "lanes::a_race");
/// let path = livesim::timeline::test_timeline_path(&id, Seed::new(0x2a));
/// assert!(path.ends_with("livesim/pages/lanes.a_race/0x2a.html"));
/// ```
pub fn test_timeline_path(test: &TestId, seed: Seed) -> PathBuf {
    let target = match &test.target {
        Target::Lib => "lib".to_string(),
        Target::Test(name) | Target::Bench(name) | Target::Example(name) => path_component(name),
    };
    target_dir()
        .join("livesim")
        .join(target)
        .join(path_component(&test.name))
        .join(format!("{seed}.html"))
}

/// Writes the failing seed's timeline (its trace in lanes, the failure
/// where it happened, the first divergence of a determinism check) to
/// [`test_timeline_path`], and names it in the report. What
/// `#[livesim::test]` runs when a seed fails; give it to
/// [`Runner::on_failure`](crate::executor::Runner::on_failure) to have
/// the same in a test of your own.
pub fn write_test_timeline(report: &mut Report) {
    let path = test_timeline_path(&report.test, report.failure.seed);
    report.timeline = Some(
        Timeline::of_report(report)
            .write_html(&path)
            .map(|()| path)
            .map_err(|e| e.to_string()),
    );
}
