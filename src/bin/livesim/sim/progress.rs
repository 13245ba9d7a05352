//! Progress of a long `livesim sim` command: a bar on a terminal, a line
//! per tenth of the way otherwise (logs and CI keep them readable).

use std::io::IsTerminal;
use std::sync::Mutex;

use indicatif::{ProgressBar, ProgressStyle};
use livesim::soak::Progress;

/// Shows progress: a bar on a terminal, a line per tenth otherwise.
pub struct Display {
    command: &'static str,
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
            bar.set_style(
                ProgressStyle::with_template(
                    "{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} sessions {msg}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            bar
        });
        Display {
            command,
            bar,
            printed: Mutex::new(0),
        }
    }

    pub fn update(&self, progress: Progress) {
        let message = match progress.failures {
            0 => String::new(),
            n => format!("{n} failures"),
        };
        if let Some(bar) = &self.bar {
            bar.set_position(progress.done);
            bar.set_message(message);
            return;
        }
        let step = progress.total.map_or(1000, |t| (t / 10).max(1));
        let mut printed = self.printed.lock().unwrap_or_else(|p| p.into_inner());
        if progress.done >= *printed + step || Some(progress.done) == progress.total {
            *printed = progress.done;
            match progress.total {
                Some(total) => eprintln!(
                    "livesim sim {}: {}/{total} sessions, {} failures",
                    self.command, progress.done, progress.failures
                ),
                None => eprintln!(
                    "livesim sim {}: {} sessions, {} failures",
                    self.command, progress.done, progress.failures
                ),
            }
        }
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
