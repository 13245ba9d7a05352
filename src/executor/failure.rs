//! What a failed run reports: which seed, what went wrong, and when.

use std::fmt;
use std::time::Duration;

use super::seed::Seed;
use super::swarm::Swarm;
use super::trace::{Trace, format_time};

/// What went wrong in a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FailureKind {
    /// The test future panicked (an assertion failed, typically).
    Panic {
        /// The panic's message, with where it happened.
        message: String,
    },
    /// Nothing could make progress and no timer was pending.
    Deadlock,
    /// The run was still going at its virtual time limit.
    TimeLimit {
        /// The limit it ran past.
        limit: Duration,
    },
    /// Lanes and tasks kept being polled without the run finishing.
    Livelock {
        /// How many polls it took to give up.
        polls: u64,
    },
    /// The test returned an error instead of panicking.
    Error(String),
    /// The runtime could not be set up.
    Setup(String),
}

/// A run that did not finish cleanly, with everything needed to replay it.
#[derive(Clone, Debug)]
pub struct Failure {
    /// The seed that failed.
    pub seed: Seed,
    /// The swarm options that seed drew.
    pub swarm: Swarm,
    /// What went wrong.
    pub kind: FailureKind,
    /// Virtual time of the failure (for a deadlock: when things stopped).
    pub at: Duration,
    /// The run's trace up to the failure.
    pub trace: Trace,
    /// What the run noticed that weakens the seed's hold on it (a task
    /// spawned outside the facade), once each.
    pub warnings: Vec<String>,
    /// The likely cause, when the runtime could tell one (a task blocked
    /// on an OS thread: see [`stall_report`](super::stall_report)).
    pub hint: Option<String>,
}

impl Failure {
    #[cfg(feature = "simulation")]
    pub(crate) fn new(
        seed: Seed,
        swarm: Swarm,
        kind: FailureKind,
        at: Duration,
        trace: Trace,
    ) -> Self {
        Failure {
            seed,
            swarm,
            kind,
            at,
            trace,
            warnings: Vec::new(),
            hint: None,
        }
    }

    /// The same failure with its likely cause.
    #[cfg(feature = "simulation")]
    pub(crate) fn with_hint(mut self, hint: Option<String>) -> Self {
        self.hint = hint;
        self
    }

    /// The one-line summary: `deadlock at t=12.000s, seed 0x2a`.
    pub fn summary(&self) -> String {
        let t = format_time(self.at);
        match &self.kind {
            FailureKind::Panic { message } => {
                format!("panic at t={t}, seed {}: {message}", self.seed)
            }
            FailureKind::Deadlock => format!(
                "deadlock at t={t}, seed {}: nothing can make progress and no timer is pending{}",
                self.seed,
                self.hint
                    .as_ref()
                    .map(|h| format!("; {h}"))
                    .unwrap_or_default()
            ),
            FailureKind::TimeLimit { limit } => format!(
                "time limit of {} passed, seed {}: the run was still going {}",
                format_time(*limit),
                self.seed,
                match &self.hint {
                    Some(hint) => format!("({hint})"),
                    None => "(timers kept it busy)".to_string(),
                }
            ),
            FailureKind::Livelock { polls } => format!(
                "livelock at t={t}, seed {}: {polls} polls without finishing (a lane or task that never waits?)",
                self.seed
            ),
            FailureKind::Error(e) => format!("error at t={t}, seed {}: {e}", self.seed),
            FailureKind::Setup(e) => format!("setup failed, seed {}: {e}", self.seed),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.summary())
    }
}

impl std::error::Error for Failure {}
