//! Latency budgets: a bound on one of the [`latency`](super::latency)
//! measures, checked after every run like an invariant. A run that breaks
//! one fails with the seed, the measured value, the bound and the line
//! that replays it, like any other failure.
//!
//! Declared in `agent.json` (`"budgets"`) or on a [`Soak`](crate::soak::Soak)
//! with [`Soak::budget`](crate::soak::Soak::budget).

use std::fmt;
use std::time::Duration;

use crate::executor::format_time;
use crate::soak::check::invariants::Invariant;
use crate::soak::check::latency::{self, Measure, Sample};
use crate::soak::run::record::RunRecord;

/// A bound on a latency, in virtual time.
///
/// ```
/// use std::time::Duration;
/// use livesim::soak::{Agent, Budget, Soak};
///
/// let agent = Agent::load("sim/payment").unwrap();
/// let summary = Soak::agent(&agent)
///     .seeds(20)
///     .budget(Budget::tool_round_trip_of("take_payment", Duration::from_secs(30)))
///     .budget(Budget::barge_in(Duration::from_millis(500)))
///     .run();
/// assert!(summary.passed(), "{summary}");
/// assert_eq!(
///     Budget::first_response(Duration::from_millis(1500)).name(),
///     "budget(first-response <= 1.500s)"
/// );
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Budget {
    /// The model's first output comes at most this long after the end of
    /// each user turn.
    FirstResponse(Duration),
    /// Whenever tool calls keep running longer than `longer_than`, the
    /// model says something (an acknowledgement) within `within` of the
    /// first call.
    ToolSilence {
        /// Stretches of running calls at most this long are exempt.
        longer_than: Duration,
        /// The longest silence allowed from the first call.
        within: Duration,
    },
    /// After `interrupted`, the interrupted turn's output stops within
    /// this long.
    BargeIn(Duration),
    /// Every call (of `tool`, or of any tool) is answered at most this
    /// long after the model made it.
    ToolRoundTrip {
        /// The tool the bound is for; `None` for every tool.
        tool: Option<String>,
        /// The bound.
        within: Duration,
    },
}

impl Budget {
    /// The model answers each user turn within `within`.
    pub fn first_response(within: Duration) -> Budget {
        Budget::FirstResponse(within)
    }

    /// The model acknowledges within `within` whenever tools run longer
    /// than `longer_than`.
    pub fn tool_silence(longer_than: Duration, within: Duration) -> Budget {
        Budget::ToolSilence {
            longer_than,
            within,
        }
    }

    /// Output stops within `within` of a barge-in.
    pub fn barge_in(within: Duration) -> Budget {
        Budget::BargeIn(within)
    }

    /// Every tool call is answered within `within`.
    pub fn tool_round_trip(within: Duration) -> Budget {
        Budget::ToolRoundTrip { tool: None, within }
    }

    /// Every call of `tool` is answered within `within`.
    pub fn tool_round_trip_of(tool: impl Into<String>, within: Duration) -> Budget {
        Budget::ToolRoundTrip {
            tool: Some(tool.into()),
            within,
        }
    }

    /// What it bounds.
    pub fn measure(&self) -> Measure {
        match self {
            Budget::FirstResponse(_) => Measure::FirstResponse,
            Budget::ToolSilence { .. } => Measure::ToolSilence,
            Budget::BargeIn(_) => Measure::BargeIn,
            Budget::ToolRoundTrip { .. } => Measure::ToolRoundTrip,
        }
    }

    /// Its name as an invariant in reports: `budget(first-response <=
    /// 1.500s)`, `budget(tool-round-trip take_payment <= 2.000s)`,
    /// `budget(tool-silence <= 1.000s when tools run over 2.000s)`.
    pub fn name(&self) -> String {
        format!("budget({self})")
    }

    /// The bound the sample must keep, if the budget covers it.
    fn bound(&self, sample: &Sample) -> Option<Duration> {
        if sample.measure != self.measure() {
            return None;
        }
        match self {
            Budget::FirstResponse(within) | Budget::BargeIn(within) => Some(*within),
            Budget::ToolRoundTrip { tool, within } => match tool {
                Some(tool) if sample.tool.as_deref() != Some(tool.as_str()) => None,
                _ => Some(*within),
            },
            Budget::ToolSilence { .. } => None,
        }
    }

    /// Checks a run: `Err` names the first sample over the bound, what it
    /// measured and the bound.
    pub fn check(&self, run: &RunRecord) -> Result<(), String> {
        if let Budget::ToolSilence {
            longer_than,
            within,
        } = self
        {
            for stretch in latency::stretches(run) {
                let long = stretch.end - stretch.start;
                if long > *longer_than && stretch.silence() > *within {
                    return Err(format!(
                        "tools ran for {} from t={} ({}) and the model said nothing for {}{}: \
                         the budget asks for output within {} when tools run longer than {}",
                        format_time(long),
                        format_time(stretch.start),
                        stretch.calls.join(", "),
                        format_time(stretch.silence()),
                        if stretch.first_output.is_some() {
                            ""
                        } else {
                            " (nothing at all while they ran)"
                        },
                        format_time(*within),
                        format_time(*longer_than),
                    ));
                }
            }
            return Ok(());
        }
        for sample in latency::samples(run) {
            if let Some(bound) = self.bound(sample)
                && sample.took > bound
            {
                return Err(format!(
                    "{} took {} from {}, over the budget of {}",
                    sample.measure,
                    format_time(sample.took),
                    sample.what,
                    format_time(bound),
                ));
            }
        }
        Ok(())
    }

    /// The budget as an invariant, by [`name`](Self::name).
    pub fn invariant(&self) -> Invariant {
        let budget = self.clone();
        Invariant::new(self.name(), move |run| budget.check(run))
    }
}

impl fmt::Display for Budget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Budget::FirstResponse(within) => {
                write!(f, "first-response <= {}", format_time(*within))
            }
            Budget::BargeIn(within) => write!(f, "barge-in <= {}", format_time(*within)),
            Budget::ToolRoundTrip { tool, within } => match tool {
                Some(tool) => write!(f, "tool-round-trip {tool} <= {}", format_time(*within)),
                None => write!(f, "tool-round-trip <= {}", format_time(*within)),
            },
            Budget::ToolSilence {
                longer_than,
                within,
            } => write!(
                f,
                "tool-silence <= {} when tools run over {}",
                format_time(*within),
                format_time(*longer_than)
            ),
        }
    }
}
