//! Settings a soak refuses before it runs, each a slip that would
//! otherwise pass without a word: a tool named that the agent does not
//! declare (a latency or a budget for it would never apply), and an
//! invariant named as one of livesim's own (its failures would read as
//! livesim's check failing), a liveness bound too short for any session
//! to settle in. The agent-file reader refuses the same slips in a file.

use crate::soak::LIVENESS_BOUND;
use crate::soak::check::invariants::{self, DETERMINISM, HANG, IMPORTED, PANIC, SETUP};

use super::Soak;

impl Soak {
    /// Panics at the caller with [`mistakes`](Self::mistakes)' first.
    #[track_caller]
    pub(crate) fn refuse_mistakes(&self) {
        if let Err(e) = self.mistakes() {
            panic!("livesim: {e}");
        }
    }

    /// The first setting of this soak that cannot be what was meant,
    /// said with the nearest name that would be, and what to do.
    pub(crate) fn mistakes(&self) -> Result<(), String> {
        let tools: Vec<&str> = self
            .target
            .repertoire
            .tools
            .iter()
            .map(|t| t.name.as_str())
            .collect();
        for (tool, by) in &self.named_tools {
            if tools.contains(&tool.as_str()) {
                continue;
            }
            let declared = match tools.is_empty() {
                true => "it declares no tool".to_string(),
                false => format!("its tools: {}", tools.join(", ")),
            };
            return Err(format!(
                "soak `{}`: {by} names a tool the agent does not declare{} ({declared}); name \
                 one of its tools, or declare `{tool}` in the agent's builder",
                self.name(),
                crate::jsonl::did_you_mean(tool, &tools),
            ));
        }
        let builtin = invariants::builtin();
        let livesim: Vec<&str> = builtin
            .iter()
            .map(|i| i.name())
            .chain([PANIC, DETERMINISM, SETUP, HANG, IMPORTED])
            .collect();
        if let Some(clash) = self
            .target
            .invariants
            .iter()
            .find(|i| livesim.contains(&i.name()))
        {
            return Err(format!(
                "soak `{}`: an invariant of its own is named `{}`, as one of livesim's checks is, \
                 so its failures would read as that check's; give it a name of its own \
                 (livesim's: {})",
                self.name(),
                clash.name(),
                livesim.join(", ")
            ));
        }
        let (bound, window) = (self.target.liveness_bound, self.target.settle_window);
        if bound < window {
            return Err(format!(
                "soak `{}`: .liveness_bound({bound:?}) is shorter than the {window:?} of quiet a \
                 session needs to count as settled, so runs would fail `liveness` for want of \
                 time, not for a bug; give it at least {window:?} (the default is \
                 {LIVENESS_BOUND:?}; for tools that take up to T, 20 × T)",
                self.name(),
            ));
        }
        Ok(())
    }
}
