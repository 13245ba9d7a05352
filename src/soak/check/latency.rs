//! What a voice-agent team measures, read from a run's events in virtual
//! time: how long the user waits for the model to answer, how long a tool
//! keeps the line silent, how long output goes on after a barge-in, how
//! long a tool call takes to be answered. Exact, per seed: the clock is
//! the simulation's.
//!
//! | measure | from | to |
//! |---|---|---|
//! | `first-response` | the end of the user's turn: the last thing the user sent (text, an audio chunk, `activityEnd`, `audioStreamEnd`) before the model's output | the model's first output after it: a text chunk (not a thought), an audio chunk or an output transcription |
//! | `tool-silence` | a tool call starting while none ran (a stretch of calls running, back to back or overlapping) | the model's first output while calls still run, or the stretch's end if it said nothing |
//! | `barge-in` | the session's `interrupted` | the last model output of the interrupted turn (before the user's next input, the turn's end or its connection's): zero when output stopped at once |
//! | `tool-round-trip` | the model's call (one the flow did not refuse; a repeated id is not run) | the session's answer to it, on the connection that issued it (a call whose connection ended unanswered has none) |
//!
//! [`Budget`](crate::soak::Budget)s bound them; the soak's summary reports
//! their distributions.

use std::collections::BTreeSet;
use std::fmt;
use std::time::Duration;

use crate::session::LiveEvent;
use crate::soak::check::calls_by_connection::events_by_connection;
use crate::soak::run::record::{RunRecord, TimedEvent};

/// A latency the soak measures (see the module docs for where each one
/// starts and ends).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Measure {
    /// From the end of the user's turn to the model's first output.
    FirstResponse,
    /// From the start of a stretch of running tool calls to the model's
    /// first output during it (or the stretch's end).
    ToolSilence,
    /// From `interrupted` to the interrupted turn's last output.
    BargeIn,
    /// From a tool call to its answer.
    ToolRoundTrip,
}

impl Measure {
    /// Every measure, in the order reports list them.
    pub const ALL: [Measure; 4] = [
        Measure::FirstResponse,
        Measure::ToolSilence,
        Measure::BargeIn,
        Measure::ToolRoundTrip,
    ];

    /// Its name in reports: `first-response`, `tool-silence`, `barge-in`,
    /// `tool-round-trip`.
    pub fn name(self) -> &'static str {
        match self {
            Measure::FirstResponse => "first-response",
            Measure::ToolSilence => "tool-silence",
            Measure::BargeIn => "barge-in",
            Measure::ToolRoundTrip => "tool-round-trip",
        }
    }
}

impl fmt::Display for Measure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One measured latency of a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sample {
    /// What was measured.
    pub measure: Measure,
    /// When it started (virtual time since the run began).
    pub from: Duration,
    /// How long it took.
    pub took: Duration,
    /// The tool, for `tool-round-trip` and `tool-silence` (the first
    /// call's); `None` otherwise.
    pub tool: Option<String>,
    /// What it was, for a report: `the user's turn ending at t=1.2s`,
    /// `take_payment (call-3)`.
    pub what: String,
}

/// Every latency of a run, in the order they started (measures
/// interleaved).
///
/// ```
/// use livesim::Seed;
/// use livesim::soak::{Agent, Measure, Soak, latency};
///
/// let agent = Agent::load("sim/payment").unwrap();
/// let run = Soak::agent(&agent).run_seed(Seed::new(3));
/// let samples = latency::measure(run.record.as_ref().unwrap());
/// assert!(samples.iter().any(|s| s.measure == Measure::FirstResponse));
/// ```
pub fn measure(run: &RunRecord) -> Vec<Sample> {
    let mut samples = first_responses(run);
    samples.extend(stretches(run).into_iter().map(|s| s.sample()));
    samples.extend(barge_ins(run));
    samples.extend(round_trips(run));
    samples.sort_by_key(|s| (s.from, s.measure));
    samples
}

/// [`measure`]'s samples of `run`, measured on first use and kept in the
/// record for every later reader (each budget, the summary).
pub(crate) fn samples(run: &RunRecord) -> &[Sample] {
    run.samples.get_or_init(|| measure(run))
}

/// Whether an event is the model's output the user hears or reads.
pub(crate) fn is_output(event: &LiveEvent) -> bool {
    match event {
        LiveEvent::TextDelta { thought, .. } => !thought,
        LiveEvent::OutputTranscriptDelta { .. } => true,
        LiveEvent::Media { mime_type, .. } => mime_type.starts_with("audio/"),
        _ => false,
    }
}

/// Whether something the user sent ends (or extends) their turn: all of
/// it but the marker that opens one.
fn ends_turn(typed: &str) -> bool {
    typed != "(activityStart)"
}

fn first_responses(run: &RunRecord) -> Vec<Sample> {
    let inputs = run
        .typed
        .iter()
        .zip(&run.typed_at)
        .filter(|(typed, _)| ends_turn(typed))
        .map(|(_, at)| *at);
    let outputs = run
        .events
        .iter()
        .filter(|e| is_output(&e.event))
        .map(|e| e.at);
    // Merged by time; at a tie the output goes first: output at the very
    // instant the user spoke cannot be the answer to it.
    let mut moments: Vec<(Duration, bool)> = inputs.map(|at| (at, true)).collect();
    moments.extend(outputs.map(|at| (at, false)));
    moments.sort();
    let mut samples = Vec::new();
    let mut turn_end = None;
    for (at, is_input) in moments {
        if is_input {
            turn_end = Some(at);
        } else if let Some(end) = turn_end.take() {
            samples.push(Sample {
                measure: Measure::FirstResponse,
                from: end,
                took: at - end,
                tool: None,
                what: format!(
                    "the user's turn ending at t={}",
                    crate::executor::format_time(end)
                ),
            });
        }
    }
    samples
}

/// A stretch of time in which at least one admitted tool call ran.
#[derive(Clone, Debug)]
pub(crate) struct Stretch {
    pub start: Duration,
    pub end: Duration,
    /// The calls that ran in it: `tool (id)`, in the order they came.
    pub calls: Vec<String>,
    /// The first call's tool.
    pub tool: String,
    /// The model's first output while calls ran.
    pub first_output: Option<Duration>,
}

impl Stretch {
    /// How long the line was silent from the stretch's start.
    pub fn silence(&self) -> Duration {
        self.first_output.unwrap_or(self.end) - self.start
    }

    fn sample(&self) -> Sample {
        Sample {
            measure: Measure::ToolSilence,
            from: self.start,
            took: self.silence(),
            tool: Some(self.tool.clone()),
            what: format!(
                "tools running from t={} ({})",
                crate::executor::format_time(self.start),
                self.calls.join(", ")
            ),
        }
    }
}

/// The stretches in which tool calls ran: a call runs from the model's
/// call until its answer, its refusal, the server's cancellation of it,
/// or the end of its connection.
pub(crate) fn stretches(run: &RunRecord) -> Vec<Stretch> {
    let mut running: Vec<String> = Vec::new();
    let mut stretches: Vec<Stretch> = Vec::new();
    // Whether a call of the last stretch was not refused at once.
    let mut ran = Vec::new();
    // The ids the current connection issued: a repeat is not run, nor
    // answered, so nobody waits for it.
    let mut issued: BTreeSet<&str> = BTreeSet::new();
    for timed in &run.events {
        let at = timed.at;
        let before = running.len();
        match &timed.event {
            LiveEvent::ToolCall { calls } => {
                for call in calls {
                    if !issued.insert(&call.id) {
                        continue;
                    }
                    if running.is_empty() {
                        stretches.push(Stretch {
                            start: at,
                            end: at,
                            calls: Vec::new(),
                            tool: call.name.clone(),
                            first_output: None,
                        });
                        ran.push(false);
                    }
                    if let Some(stretch) = stretches.last_mut() {
                        stretch.calls.push(format!("{} ({})", call.name, call.id));
                    }
                    running.push(call.id.clone());
                }
                continue;
            }
            LiveEvent::ToolDenied { id, .. } => {
                if let Some(i) = running.iter().position(|r| r == id) {
                    running.remove(i);
                }
            }
            LiveEvent::ToolResponse { id, .. } => {
                if let Some(i) = running.iter().position(|r| r == id) {
                    running.remove(i);
                }
            }
            LiveEvent::ToolCancelled { ids } => running.retain(|r| !ids.contains(r)),
            LiveEvent::Disconnected { .. } | LiveEvent::Resumed { .. } => {
                running.clear();
                issued.clear();
            }
            event if is_output(event) && !running.is_empty() => {
                if let Some(stretch) = stretches.last_mut() {
                    stretch.first_output.get_or_insert(at);
                }
            }
            _ => {}
        }
        if running.len() < before {
            if !matches!(timed.event, LiveEvent::ToolDenied { .. })
                && let Some(r) = ran.last_mut()
            {
                *r = true;
            }
            if running.is_empty()
                && let Some(stretch) = stretches.last_mut()
            {
                stretch.end = at;
            }
        }
    }
    // A stretch still running when the record ends lasts to its end.
    if !running.is_empty()
        && let Some(stretch) = stretches.last_mut()
    {
        stretch.end = run.virtual_time.max(stretch.start);
        if let Some(r) = ran.last_mut() {
            *r = true;
        }
    }
    // A stretch of calls all refused at once kept nobody waiting.
    stretches
        .into_iter()
        .zip(ran)
        .filter_map(|(stretch, ran)| ran.then_some(stretch))
        .collect()
}

fn barge_ins(run: &RunRecord) -> Vec<Sample> {
    let mut samples = Vec::new();
    for (k, timed) in run.events.iter().enumerate() {
        if !matches!(timed.event, LiveEvent::Interrupted) {
            continue;
        }
        let from = timed.at;
        let next_input = run
            .typed_at
            .iter()
            .copied()
            .find(|&at| at > from)
            .unwrap_or(Duration::MAX);
        let last = run.events[k + 1..]
            .iter()
            // The interrupted turn ends with its connection too: a new
            // connection's output is another turn's.
            .take_while(|e| {
                e.at < next_input
                    && !matches!(
                        e.event,
                        LiveEvent::TurnComplete { .. }
                            | LiveEvent::Interrupted
                            | LiveEvent::Reconnecting { .. }
                            | LiveEvent::Disconnected { .. }
                    )
            })
            .filter(|e| is_output(&e.event))
            .map(|e| e.at)
            .last();
        samples.push(Sample {
            measure: Measure::BargeIn,
            from,
            took: last.map_or(Duration::ZERO, |at| at - from),
            tool: None,
            what: format!(
                "the interruption at t={}",
                crate::executor::format_time(from)
            ),
        });
    }
    samples
}

fn round_trips(run: &RunRecord) -> Vec<Sample> {
    // Ids belong to their connection: a call is answered on the one that
    // issued it, or never (a new connection may number its calls from
    // `call-1` again), and a repeated id is not run.
    let events: Vec<(usize, &TimedEvent)> = events_by_connection(&run.events).collect();
    let mut issued: BTreeSet<(usize, &str)> = BTreeSet::new();
    let mut samples = Vec::new();
    for (k, (connection, timed)) in events.iter().enumerate() {
        let LiveEvent::ToolCall { calls } = &timed.event else {
            continue;
        };
        for call in calls {
            if !issued.insert((*connection, &call.id)) {
                continue;
            }
            // A refusal is answered at once and runs nothing: not a trip.
            let answer = events[k + 1..]
                .iter()
                .take_while(|(on, _)| on == connection)
                .map(|(_, e)| e)
                .find(|e| match &e.event {
                    LiveEvent::ToolResponse { id, .. } | LiveEvent::ToolDenied { id, .. } => {
                        *id == call.id
                    }
                    _ => false,
                });
            if let Some(answer) =
                answer.filter(|a| matches!(a.event, LiveEvent::ToolResponse { .. }))
            {
                samples.push(Sample {
                    measure: Measure::ToolRoundTrip,
                    from: timed.at,
                    took: answer.at - timed.at,
                    tool: Some(call.name.clone()),
                    what: format!("{} ({})", call.name, call.id),
                });
            }
        }
    }
    samples
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_stable() {
        let names: Vec<&str> = Measure::ALL.iter().map(|m| m.name()).collect();
        assert_eq!(
            names,
            [
                "first-response",
                "tool-silence",
                "barge-in",
                "tool-round-trip"
            ]
        );
    }
}
