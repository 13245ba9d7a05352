//! The timeline model: a run as lanes, entries, tool spans, aggregated
//! texts, verdicts and the failure point, ready to draw or to export as
//! JSON. [`Timeline::from_trace`] (in `read.rs`) builds one from a trace;
//! `sources.rs` adds what a failure or a soak run's record knows.

use std::time::Duration;

use serde::{Serialize, Serializer};

use super::read::names_id;
use crate::executor::TraceEntry;
use crate::wire::scrub_known;

/// What kind of lane a lane is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LaneKind {
    /// The session's wire lane; frames in and out are drawn on it.
    Wire,
    /// The fast lane: text, transcripts, media.
    Fast,
    /// The control lane: tool calls and answers, turns, the flow gate.
    Control,
    /// The telemetry lane: usage, session signals.
    Telemetry,
    /// One tool task (`tool:<name>(<id>)`).
    Tool,
    /// Any other task or label (the test's own code, a script, the
    /// runtime).
    Other,
}

/// One swimlane.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Lane {
    /// The label it draws (`control`, `tool:pay(call-2)`).
    pub name: String,
    /// What it is.
    pub kind: LaneKind,
    /// The times the scheduler picked it (scheduling entries, drawn as a
    /// faint strip and left out of the JSON).
    #[serde(skip)]
    pub picks: Vec<Duration>,
    /// How many times the scheduler picked it.
    pub pick_count: usize,
}

/// What a mark is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MarkKind {
    /// A frame the session received.
    FrameIn,
    /// A frame the session sent.
    FrameOut,
    /// Another delivery from a seeded queue.
    Delivery,
    /// A partial text or transcript.
    Partial,
    /// A full text or transcript (the aggregation's flush).
    Full,
    /// The model called tools.
    ToolCall,
    /// The session answered a call.
    ToolAnswer,
    /// The server cancelled calls.
    Cancel,
    /// The flow refused a call (a `tool_denied` event, or the journal's
    /// `flow:tool_denied` write).
    Refusal,
    /// Another flow decision (a `flow:` state write).
    Decision,
    /// A state write.
    StateWrite,
    /// A step of a tool task (start, waits, resumes, finish): drawn as
    /// part of its span.
    ToolStep,
    /// A panic.
    Panic,
    /// Anything else.
    Event,
}

impl MarkKind {
    /// The name the page and the JSON use.
    pub fn name(self) -> &'static str {
        match self {
            MarkKind::FrameIn => "frame-in",
            MarkKind::FrameOut => "frame-out",
            MarkKind::Delivery => "delivery",
            MarkKind::Partial => "partial",
            MarkKind::Full => "full",
            MarkKind::ToolCall => "tool-call",
            MarkKind::ToolAnswer => "tool-answer",
            MarkKind::Cancel => "cancel",
            MarkKind::Refusal => "refusal",
            MarkKind::Decision => "decision",
            MarkKind::StateWrite => "state-write",
            MarkKind::ToolStep => "tool-step",
            MarkKind::Panic => "panic",
            MarkKind::Event => "event",
        }
    }
}

/// One trace entry on its lane.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Entry {
    /// Its index in the trace (what a divergence report numbers).
    pub index: usize,
    /// Virtual time.
    #[serde(rename = "at_ns", serialize_with = "nanos")]
    pub at: Duration,
    /// The lane it is drawn on (an index into [`Timeline::lanes`]).
    pub lane: usize,
    /// The trace label that recorded it (a frame out is recorded by the
    /// task that received it, and drawn on the wire lane).
    pub label: String,
    /// What happened, as the trace says it.
    pub event: String,
    /// What the run's record adds (a frame's content).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// What kind of mark it is.
    pub kind: MarkKind,
}

impl Entry {
    /// The entry as the trace prints it: `[    0.040s] control    | …`.
    pub fn line(&self) -> String {
        TraceEntry {
            at: self.at,
            label: &self.label,
            event: &self.event,
        }
        .to_string()
    }
}

/// How a tool span ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SpanEnd {
    /// The tool returned a result.
    Ok,
    /// The tool returned an error (or panicked, or timed out).
    Failed,
    /// The call was cancelled while the tool ran.
    Cancelled,
    /// The trace ended with the tool still running.
    Unfinished,
}

/// One tool task, from its start to its finish (or cancellation).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Span {
    /// Its lane.
    pub lane: usize,
    /// The tool.
    pub tool: String,
    /// The call id.
    pub call: String,
    /// When the tool started.
    #[serde(rename = "start_ns", serialize_with = "nanos")]
    pub start: Duration,
    /// When it finished, was cancelled, or the trace ended.
    #[serde(rename = "end_ns", serialize_with = "nanos")]
    pub end: Duration,
    /// How it ended.
    pub outcome: SpanEnd,
    /// The times it waited, each until it resumed.
    #[serde(rename = "waiting_ns", serialize_with = "nanos_pairs")]
    pub waiting: Vec<(Duration, Duration)>,
    /// Its entries (indexes into [`Timeline::entries`]).
    pub entries: Vec<usize>,
}

impl Span {
    /// How long it ran, in virtual time.
    pub fn duration(&self) -> Duration {
        self.end.saturating_sub(self.start)
    }
}

/// Partial texts of one stream and the full text that flushed them.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TextRun {
    /// `text`, `thought`, `input transcript` or `output transcript`.
    pub stream: String,
    /// Its lane (the fast lane, normally).
    pub lane: usize,
    /// When its first partial (or the full text) came.
    #[serde(rename = "start_ns", serialize_with = "nanos")]
    pub start: Duration,
    /// When the full text came (the last partial's time if none did).
    #[serde(rename = "end_ns", serialize_with = "nanos")]
    pub end: Duration,
    /// The partials (indexes into [`Timeline::entries`]).
    pub partials: Vec<usize>,
    /// The full text's entry, if one came.
    pub full: Option<usize>,
    /// The text: the full one, or the partials joined.
    pub text: String,
    /// Whether an interruption cut it.
    pub interrupted: bool,
}

/// Where and how the run failed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FailurePoint {
    /// `invariant`, `panic`, `divergence`, `deadlock`, `time-limit`,
    /// `livelock`, `error` or `setup`.
    pub kind: String,
    /// A short title: the invariant's name, `panic`, `non-determinism`.
    pub title: String,
    /// The whole message.
    pub message: String,
    /// When it happened, as far as the run says.
    #[serde(rename = "at_ns", serialize_with = "nanos")]
    pub at: Duration,
    /// The lane it happened on, when one can be named.
    pub lane: Option<usize>,
    /// The entry it happened at (an index into [`Timeline::entries`]).
    pub entry: Option<usize>,
    /// The tool span it concerns.
    pub span: Option<usize>,
}

/// A run's verdict on one check.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Verdict {
    /// The check's name.
    pub name: String,
    /// `None` when it held; why it broke otherwise.
    pub failed: Option<String>,
}

/// A run, laid out in lanes over virtual time.
///
/// ```
/// use std::time::Duration;
/// use livesim::executor::Trace;
/// use livesim::timeline::{LaneKind, Timeline};
///
/// let ms = Duration::from_millis;
/// let mut trace = Trace::default();
/// trace.push(ms(1), "control".into(), "tool_call pay(call-1) {}");
/// trace.push(ms(1), "tool:pay(call-1)".into(), "start {}");
/// trace.push(ms(251), "tool:pay(call-1)".into(), "finish ok {}");
/// let timeline = Timeline::from_trace(&trace);
/// assert_eq!(timeline.lanes.len(), 2);
/// assert_eq!(timeline.lanes[1].kind, LaneKind::Tool);
/// assert_eq!(timeline.spans[0].duration(), ms(250));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Timeline {
    /// What the page is titled: `payment seed 0x1f`.
    pub title: String,
    /// Facts shown above the lanes (seed, swarm, faults, trace hash, …).
    pub facts: Vec<(String, String)>,
    /// The lanes, top to bottom.
    pub lanes: Vec<Lane>,
    /// Every entry but lane picks and the run's header, in trace order.
    pub entries: Vec<Entry>,
    /// Tool tasks.
    pub spans: Vec<Span>,
    /// Aggregated texts.
    pub texts: Vec<TextRun>,
    /// Each check's verdict, when the run was checked.
    pub verdicts: Vec<Verdict>,
    /// Where the run failed, if it did.
    pub failure: Option<FailurePoint>,
    /// The script the run played, when there was one.
    pub script: Option<serde_json::Value>,
    /// The last virtual instant the timeline covers.
    #[serde(rename = "end_ns", serialize_with = "nanos")]
    pub end: Duration,
    /// How many entries the trace had, lane picks included.
    pub trace_entries: usize,
}

fn nanos<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

fn nanos_pairs<S: Serializer>(pairs: &[(Duration, Duration)], s: S) -> Result<S::Ok, S::Error> {
    let ns = |d: &Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    s.collect_seq(pairs.iter().map(|(a, b)| [ns(a), ns(b)]))
}

impl Timeline {
    /// The same timeline titled `title`.
    pub fn titled(mut self, title: impl Into<String>) -> Self {
        self.title = scrub_known(&title.into());
        self
    }

    /// Adds a fact shown above the lanes.
    pub fn fact(mut self, name: impl Into<String>, value: impl AsRef<str>) -> Self {
        self.facts
            .push((scrub_known(&name.into()), scrub_known(value.as_ref())));
        self
    }

    /// The lane named `name`.
    pub fn lane(&self, name: &str) -> Option<usize> {
        self.lanes.iter().position(|l| l.name == name)
    }

    /// The entry that was trace entry `index`, or the first after it.
    pub fn entry_at_or_after(&self, index: usize) -> Option<usize> {
        let at = self.entries.partition_point(|e| e.index < index);
        (at < self.entries.len()).then_some(at)
    }

    /// The span of call `id`'s tool task: the first that ran it.
    pub fn span_of_call(&self, id: &str) -> Option<usize> {
        self.spans.iter().position(|s| s.call == id)
    }

    /// The first entry on the control lane that names call `id`.
    pub fn control_entry_naming(&self, id: &str) -> Option<usize> {
        let control = self.lane("control")?;
        self.entries
            .iter()
            .position(|e| e.lane == control && names_id(&e.event, id))
    }

    /// Passes every text of the model through `scrub` (a redactor that
    /// learned more secrets than the trace's own scrubbing knew).
    pub(crate) fn scrub_texts(&mut self, scrub: impl Fn(&str) -> String) {
        let apply = |text: &mut String| {
            let scrubbed = scrub(text);
            if scrubbed != *text {
                *text = scrubbed;
            }
        };
        apply(&mut self.title);
        for (name, value) in &mut self.facts {
            apply(name);
            apply(value);
        }
        self.lanes.iter_mut().for_each(|l| apply(&mut l.name));
        for entry in &mut self.entries {
            apply(&mut entry.label);
            apply(&mut entry.event);
            entry.detail.iter_mut().for_each(apply);
        }
        for span in &mut self.spans {
            apply(&mut span.tool);
            apply(&mut span.call);
        }
        self.texts.iter_mut().for_each(|t| apply(&mut t.text));
        for verdict in &mut self.verdicts {
            apply(&mut verdict.name);
            verdict.failed.iter_mut().for_each(apply);
        }
        if let Some(failure) = &mut self.failure {
            apply(&mut failure.title);
            apply(&mut failure.message);
        }
    }

    /// Sets where the run failed; the timeline then covers that instant.
    pub fn failed(mut self, failure: FailurePoint) -> Self {
        self.end = self.end.max(failure.at);
        self.failure = Some(failure);
        self
    }
}
