//! Where timelines come from: a failed seed of a test (its report, the
//! executor's failure, the first divergence of a determinism check) and a
//! seeded soak run (its record, each check's verdict, the script).
//!
//! A failure is placed where the run says it happened: a panic at its
//! trace entry, a divergence at the first entry the two runs disagree on,
//! a broken invariant at the trace entry its message numbers, else on the
//! tool span (or control-lane entry) of the call its message names first,
//! else at the first `t=` time it quotes, else at the end of the run.

use std::time::Duration;

use serde_json::Value;

use super::model::{FailurePoint, MarkKind, Timeline, Verdict};
use super::read::word_at;
use crate::executor::{Divergence, Failure, FailureKind, Report, Seed, format_time};
use crate::soak::{Case, RunRecord, SeedRun, Soak, invariants};
use crate::testing::ScriptedServer;
use crate::transport::scrub::FrameScrubber;
use crate::wire::{clip, known_secrets};

/// The most of a frame's text a page shows.
const FRAME_TEXT: usize = 4000;

impl Timeline {
    /// A failed seed: its trace, the failure where it happened.
    pub fn of_failure(failure: &Failure) -> Timeline {
        let mut timeline = Timeline::from_trace(&failure.trace);
        // The seed and swarm facts say what the header entry says.
        timeline.facts.retain(|(name, _)| name != "run");
        let timeline = timeline
            .titled(format!("seed {}", failure.seed))
            .fact("seed", failure.seed.to_string())
            .fact("swarm", failure.swarm.to_string())
            .fact("virtual time", format_time(failure.at));
        let (kind, title) = match &failure.kind {
            FailureKind::Panic { .. } => ("panic", "panic"),
            FailureKind::Deadlock => ("deadlock", "deadlock"),
            FailureKind::TimeLimit { .. } => ("time-limit", "time limit"),
            FailureKind::Livelock { .. } => ("livelock", "livelock"),
            FailureKind::Error(_) => ("error", "error"),
            FailureKind::Setup(_) => ("setup", "setup failed"),
        };
        let mut point = FailurePoint {
            kind: kind.to_string(),
            title: title.to_string(),
            message: crate::wire::scrub_known(&failure.summary()),
            at: failure.at,
            lane: None,
            entry: None,
            span: None,
        };
        if kind == "panic"
            && let Some(entry) = timeline
                .entries
                .iter()
                .rposition(|e| e.kind == MarkKind::Panic)
        {
            place_at_entry(&timeline, &mut point, entry);
        }
        timeline.failed(point)
    }

    /// A failed test's report: the failing seed's timeline, titled with the
    /// test, its replay line, and the first divergence when two runs of
    /// the seed differed.
    pub fn of_report(report: &Report) -> Timeline {
        let mut timeline = Timeline::of_failure(&report.failure)
            .titled(format!("{} seed {}", report.test.name, report.failure.seed))
            .fact("test", report.test.to_string())
            .fact("replay", report.replay_command());
        if let Some(nd) = &report.nondeterminism {
            timeline = timeline.diverged(&nd.divergence, &nd.to_string());
        }
        timeline
    }

    /// Marks the first divergence of a determinism check (`self` being the
    /// first run's timeline), with `message` saying what each run did.
    pub fn diverged(self, divergence: &Divergence, message: &str) -> Timeline {
        let at = divergence
            .first
            .as_ref()
            .or(divergence.before.as_ref())
            .map_or(self.end, |e| e.at);
        let mut point = FailurePoint {
            kind: "divergence".to_string(),
            title: "non-determinism".to_string(),
            message: crate::wire::scrub_known(message),
            at,
            lane: None,
            entry: None,
            span: None,
        };
        match self
            .entries
            .iter()
            .position(|e| e.index == divergence.index)
        {
            Some(entry) => place_at_entry(&self, &mut point, entry),
            None => {
                point.lane = divergence.first.as_ref().and_then(|e| self.lane(&e.label));
            }
        }
        self.failed(point)
    }

    /// A soak run from its record: the trace's lanes, each frame's content
    /// on its wire mark (when the run had one connection, so a frame's
    /// place in its queue is its place in the record), the script, and
    /// the run's facts. Frames and the script are scrubbed of secrets,
    /// resumption handles replaced by placeholders.
    pub fn of_record(record: &RunRecord) -> Timeline {
        let mut timeline = Timeline::from_trace(&record.trace);
        timeline.facts.retain(|(name, _)| name != "run");
        let mut timeline = timeline
            .titled(format!("{} seed {}", record.agent, record.seed))
            .fact("agent", &record.agent)
            .fact("seed", record.seed.to_string())
            .fact("swarm", record.swarm.to_string())
            .fact("faults", record.faults.to_string())
            .fact("trace hash", format!("{:#018x}", record.trace_hash))
            .fact("virtual time", format_time(record.virtual_time));
        timeline.end = timeline.end.max(record.virtual_time);
        let mut scrubber = handle_scrubber(record);
        let frames_in: Vec<String> = record
            .server_frames
            .iter()
            .map(|frame| frame_text(&mut scrubber, frame.payload().unwrap_or_default()))
            .collect();
        let frames_out: Vec<String> = record
            .sent
            .iter()
            .map(|message| {
                let mut message = message.clone();
                scrubber.scrub_json(&mut message);
                clip(&message.to_string(), FRAME_TEXT).into_owned()
            })
            .collect();
        attach_frames(&mut timeline, MarkKind::FrameIn, &frames_in);
        attach_frames(&mut timeline, MarkKind::FrameOut, &frames_out);
        timeline.script = Some(script_json(&record.script, &mut scrubber));
        // A handle the frames taught the scrubber is replaced wherever the
        // run quotes it; so are the record's, when checks add text.
        timeline.scrub_texts(|text| scrubber.scrub_text(text));
        timeline
    }

    /// Adds each check's verdict; the first that broke becomes the failure
    /// point, placed where its message says it happened.
    pub fn checked(mut self, verdicts: &[(String, Result<(), String>)]) -> Timeline {
        self.verdicts = verdicts
            .iter()
            .map(|(name, verdict)| Verdict {
                name: crate::wire::scrub_known(name),
                failed: verdict.as_ref().err().map(|m| crate::wire::scrub_known(m)),
            })
            .collect();
        let Some((name, message)) = verdicts
            .iter()
            .find_map(|(name, v)| v.as_ref().err().map(|m| (name, m)))
        else {
            return self;
        };
        let point = locate(&self, name, &crate::wire::scrub_known(message));
        self.failed(point)
    }

    /// The timeline of one seed of a soak, from the run already made:
    /// its record, or, when the session's simulation itself failed (a
    /// panic, a deadlock), the trace of running the seed again (runs are
    /// deterministic). Titled with the agent and seed, with every verdict
    /// and the replay line.
    ///
    /// ```no_run
    /// use livesim::Seed;
    /// use livesim::soak::{Agent, Soak};
    /// use livesim::timeline::Timeline;
    ///
    /// let soak = Soak::agent(&Agent::load("sim/payment").unwrap());
    /// let run = soak.run_seed(Seed::new(0x1f));
    /// Timeline::of_seed(&soak, Seed::new(0x1f), &run)
    ///     .write_html("payment-0x1f.html")
    ///     .unwrap();
    /// ```
    pub fn of_seed(soak: &Soak, seed: Seed, run: &SeedRun) -> Timeline {
        Timeline::of_case(soak, &soak.case(seed), run)
    }

    /// The timeline of one case of a soak (a seed's own, a shrunk one, a
    /// corpus entry's), from the run already made, as
    /// [`of_seed`](Self::of_seed) draws a seed's.
    ///
    /// ```no_run
    /// use livesim::soak::{Agent, CorpusEntry, Soak};
    /// use livesim::timeline::Timeline;
    ///
    /// let entry = CorpusEntry::load("seeds/payment/0x1f.json").unwrap();
    /// let soak = Soak::agent(&Agent::load("sim/payment").unwrap());
    /// let run = soak.replay(&entry);
    /// Timeline::of_case(&soak, &entry.case, &run)
    ///     .write_html("payment-0x1f.html")
    ///     .unwrap();
    /// ```
    pub fn of_case(soak: &Soak, case: &Case, run: &SeedRun) -> Timeline {
        let seed = case.seed;
        let timeline = match &run.record {
            Some(record) => Timeline::of_record(record),
            None => {
                let mut timeline = Timeline::from_trace(&soak.trace_case(case))
                    .titled(format!("{} seed {seed}", soak.name()))
                    .fact("agent", soak.name())
                    .fact("seed", seed.to_string())
                    .fact("faults", case.faults.to_string());
                let mut scrubber = FrameScrubber::new(known_secrets());
                timeline.script = Some(script_json(&case.script, &mut scrubber));
                timeline.scrub_texts(|text| scrubber.scrub_text(text));
                timeline
            }
        };
        let replay = run.failures.first().map(|f| f.replay.clone());
        let mut timeline = timeline.checked(&run.verdicts);
        if let Some(line) = replay {
            timeline = timeline.fact("replay", line);
        }
        // A verdict may quote a frame, and with it a handle.
        if let Some(record) = &run.record {
            let scrubber = handle_scrubber(record);
            timeline.scrub_texts(|text| scrubber.scrub_text(text));
        }
        timeline
    }
}

/// A scrubber that knows the remembered secrets and every resumption
/// handle the run's script names and its frames carried.
fn handle_scrubber(record: &RunRecord) -> FrameScrubber {
    let mut scrubber = FrameScrubber::new(known_secrets());
    learn_script_handles(&mut scrubber, &record.script.to_json());
    for frame in &record.server_frames {
        if let Some(mut json) = frame
            .payload()
            .and_then(|p| serde_json::from_slice::<Value>(p).ok())
        {
            scrubber.scrub_json(&mut json);
        }
    }
    for message in &record.sent {
        scrubber.scrub_json(&mut message.clone());
    }
    scrubber
}

/// A frame's payload as text, its handles replaced and secrets scrubbed.
fn frame_text(scrubber: &mut FrameScrubber, payload: &[u8]) -> String {
    let text = match serde_json::from_slice::<Value>(payload) {
        Ok(mut json) => {
            scrubber.scrub_json(&mut json);
            json.to_string()
        }
        Err(_) => scrubber.scrub_unparsed(&String::from_utf8_lossy(payload)),
    };
    clip(&text, FRAME_TEXT).into_owned()
}

/// Puts each frame's text on its mark: the mark of the frame with
/// sequence number `n` on the direction's only queue gets `texts[n]`.
/// With several queues (a run that reconnected) numbers start again on
/// each, and marks keep only their trace entry.
fn attach_frames(timeline: &mut Timeline, kind: MarkKind, texts: &[String]) {
    let queue = |event: &str| {
        event
            .strip_prefix("deliver ")
            .and_then(|rest| rest.rsplit_once(" #"))
            .map(|(queue, seq)| (queue.to_string(), seq.parse::<usize>().ok()))
    };
    let mut queues: Vec<String> = timeline
        .entries
        .iter()
        .filter(|e| e.kind == kind)
        .filter_map(|e| queue(&e.event).map(|(q, _)| q))
        .collect();
    queues.dedup();
    queues.sort();
    queues.dedup();
    if queues.len() != 1 {
        return;
    }
    for entry in timeline.entries.iter_mut().filter(|e| e.kind == kind) {
        if let Some((_, Some(seq))) = queue(&entry.event)
            && let Some(text) = texts.get(seq)
        {
            entry.detail = Some(text.clone());
        }
    }
}

/// Teaches `scrubber` every `handle` a script names (a resumption
/// update's, a reconnect's): handles are secrets wherever they appear.
fn learn_script_handles(scrubber: &mut FrameScrubber, value: &Value) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                match child {
                    Value::String(handle) if key == "handle" => {
                        scrubber.scrub_json(&mut serde_json::json!({ "newHandle": handle }));
                    }
                    _ => learn_script_handles(scrubber, child),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|i| learn_script_handles(scrubber, i)),
        _ => {}
    }
}

/// A script as JSON, its handles replaced by placeholders (learned by
/// `scrubber`, so the trace's quotes of them get the same ones) and
/// remembered secrets scrubbed.
pub(crate) fn script_json(script: &ScriptedServer, scrubber: &mut FrameScrubber) -> Value {
    let mut json = script.to_json();
    learn_script_handles(scrubber, &json);
    scrubber.scrub_json(&mut json);
    json
}

/// A fresh scrubber: remembered secrets, no handles yet.
pub(crate) fn scrubber() -> FrameScrubber {
    FrameScrubber::new(known_secrets())
}

/// Points `point` at entry `entry`: its time, its lane, and the span it
/// belongs to.
fn place_at_entry(timeline: &Timeline, point: &mut FailurePoint, entry: usize) {
    let e = &timeline.entries[entry];
    point.at = e.at;
    point.lane = Some(e.lane);
    point.entry = Some(entry);
    point.span = timeline
        .spans
        .iter()
        .position(|s| s.entries.contains(&entry));
}

/// The first number after `marker` in `text`.
fn number_after(text: &str, marker: &str) -> Option<usize> {
    let rest = &text[text.find(marker)? + marker.len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// The first `t=12.345s` time `text` quotes.
fn time_after_t(text: &str) -> Option<Duration> {
    let rest = &text[text.find("t=")? + 2..];
    let number: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    rest[number.len()..].starts_with('s').then_some(())?;
    Duration::try_from_secs_f64(number.parse().ok()?).ok()
}

/// Where a broken check happened, from what its message says.
fn locate(timeline: &Timeline, name: &str, message: &str) -> FailurePoint {
    let kind = match name {
        invariants::PANIC => "panic",
        invariants::DETERMINISM => "divergence",
        _ => "invariant",
    };
    let mut point = FailurePoint {
        kind: kind.to_string(),
        title: name.to_string(),
        message: message.to_string(),
        at: timeline.end,
        lane: None,
        entry: None,
        span: None,
    };
    // A divergence numbers its trace entry.
    if let Some(index) = number_after(message, "trace entry #")
        && let Some(entry) = timeline.entry_at_or_after(index)
    {
        place_at_entry(timeline, &mut point, entry);
        return point;
    }
    if kind == "panic"
        && let Some(entry) = timeline
            .entries
            .iter()
            .rposition(|e| e.kind == MarkKind::Panic)
    {
        place_at_entry(timeline, &mut point, entry);
        return point;
    }
    // The call the message names first: its tool span, or the first
    // control-lane entry naming it.
    let mut ids: Vec<(usize, &str)> = timeline
        .spans
        .iter()
        .map(|s| s.call.as_str())
        .chain(call_ids(timeline))
        .filter_map(|id| word_at(message, id).map(|at| (at, id)))
        .collect();
    ids.sort();
    if let Some((_, id)) = ids.first() {
        if let Some(span) = timeline.span_of_call(id) {
            let s = &timeline.spans[span];
            point.at = s.start;
            point.lane = Some(s.lane);
            point.span = Some(span);
            point.entry = s.entries.first().copied();
            return point;
        }
        if let Some(entry) = timeline.control_entry_naming(id) {
            place_at_entry(timeline, &mut point, entry);
            return point;
        }
    }
    if let Some(at) = time_after_t(message) {
        point.at = at;
    }
    point
}

/// The call ids the control lane's `tool_call` entries name
/// (`tool_call pay(call-1) {…}, check(call-2) {…}`).
fn call_ids(timeline: &Timeline) -> Vec<&str> {
    let mut ids = Vec::new();
    for entry in timeline
        .entries
        .iter()
        .filter(|e| e.kind == MarkKind::ToolCall)
    {
        let mut rest = entry.event.strip_prefix("tool_call ").unwrap_or("");
        // Each call is `name(id) args`; an id holds no parenthesis.
        while let Some(open) = rest.find('(') {
            let after = &rest[open + 1..];
            let Some(close) = after.find(')') else { break };
            let id = &after[..close];
            if !id.is_empty() && !id.contains([' ', '"', '{', ',']) {
                ids.push(id);
            }
            rest = &after[close + 1..];
        }
    }
    ids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_and_numbers_are_read_from_messages() {
        assert_eq!(
            time_after_t("refused but ran, from t=1.250s to t=2.000s"),
            Some(Duration::from_millis(1250))
        );
        assert_eq!(time_after_t("at=3 t=x"), None);
        assert_eq!(
            number_after("diverge at trace entry #42\n", "trace entry #"),
            Some(42)
        );
    }

    #[test]
    fn handles_in_scripts_are_hidden_wherever_they_appear() {
        let script = ScriptedServer::new()
            .resumption_update("SECRET-H", true)
            .says("the handle was SECRET-H");
        let json = script_json(&script, &mut scrubber());
        assert!(!json.to_string().contains("SECRET-H"), "{json}");
        assert!(json.to_string().contains("<handle-1>"), "{json}");
    }
}
