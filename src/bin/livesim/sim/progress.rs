//! Progress of a long `livesim sim` command: a bar on a terminal, a line
//! per tenth of the way otherwise (logs and CI keep them readable).

use std::io::IsTerminal;
use std::sync::Mutex;

use indicatif::{ProgressBar, ProgressStyle};
use livesim::soak::Progress;

/// Shows progress: a bar on a terminal, a line per tenth otherwise.
pub struct Display {
    command: &'static str,
    /// Whether the command has a total to show: a soak that only its
    /// time budget ends has none.
    counted: bool,
    bar: Option<ProgressBar>,
    printed: Mutex<u64>,
}

impl Display {
    pub fn new(command: &'static str, total: Option<u64>) -> Display {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = match total {
                Some(total) => ProgressBar::new(total),
                None => ProgressBar::new_spinner(),
            };
            // No total, no bar: only the count.
            let template = match total {
                Some(_) => "{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} sessions {msg}",
                None => "{spinner} [{elapsed_precise}] {pos} sessions {msg}",
            };
            bar.set_style(
                ProgressStyle::with_template(template)
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            bar
        });
        Display {
            command,
            counted: total.is_some(),
            bar,
            printed: Mutex::new(0),
        }
    }

    pub fn update(&self, progress: Progress) {
        let total = self.total(progress);
        if let Some(bar) = &self.bar {
            if let Some(total) = total {
                bar.set_length(total);
            }
            bar.set_position(progress.done);
            bar.set_message(match progress.failures {
                0 => String::new(),
                n => format!("{n} failures"),
            });
            return;
        }
        if let Some(line) = self.line(progress) {
            note!("{line}");
        }
    }

    /// The runs planned so far (exploration adds some as it goes): none
    /// for a command without a count (a soak only its time budget ends),
    /// and never fewer than are done.
    fn total(&self, progress: Progress) -> Option<u64> {
        progress
            .total
            .filter(|total| self.counted && *total >= progress.done)
    }

    /// The line to print for `progress` without a terminal, if one is due:
    /// one per tenth of the total, or per thousand runs without one.
    fn line(&self, progress: Progress) -> Option<String> {
        let total = self.total(progress);
        let step = total.map_or(1000, |t| (t / 10).max(1));
        let mut printed = self.printed.lock().unwrap_or_else(|p| p.into_inner());
        if progress.done < printed.saturating_add(step) && Some(progress.done) != total {
            return None;
        }
        *printed = progress.done;
        let (command, done, failures) = (self.command, progress.done, progress.failures);
        Some(match total {
            Some(total) => {
                format!("livesim sim {command}: {done}/{total} sessions, {failures} failures")
            }
            None => format!("livesim sim {command}: {done} sessions, {failures} failures"),
        })
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The display without a terminal, whatever the test runs in.
    fn lines(counted: bool) -> Display {
        Display {
            command: "soak",
            counted,
            bar: None,
            printed: Mutex::new(0),
        }
    }

    fn at(done: u64, total: Option<u64>) -> Progress {
        Progress {
            done,
            total,
            failures: 0,
        }
    }

    // A soak only its time budget ends shows a count, never a total
    // smaller than it (it showed `257/63 sessions`).
    #[test]
    fn an_open_ended_soak_shows_no_total() {
        let display = lines(false);
        assert_eq!(
            display.line(at(1000, Some(63))).as_deref(),
            Some("livesim sim soak: 1000 sessions, 0 failures")
        );
        assert_eq!(display.line(at(1500, Some(63))), None);
    }

    // A counted soak shows its total as exploration grows it, but never
    // one below the count.
    #[test]
    fn a_counted_soak_never_shows_fewer_planned_than_done() {
        let display = lines(true);
        assert_eq!(
            display.line(at(1, Some(12))).as_deref(),
            Some("livesim sim soak: 1/12 sessions, 0 failures")
        );
        assert_eq!(
            lines(true).line(at(1000, Some(63))).as_deref(),
            Some("livesim sim soak: 1000 sessions, 0 failures")
        );
    }
}
