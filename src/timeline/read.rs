//! Reading a trace into the timeline model.
//!
//! Entries are sorted onto lanes: the session's `wire`, `fast`, `control`
//! and `telemetry` first, then one lane per tool task `tool:<name>(<id>)`,
//! then any other label in the order it first appears. The session's own
//! vocabulary says what each entry is: a delivery on a transport queue is a
//! frame in (`…/b->a`) or out (`…/a->b`) and sits on the wire lane
//! whichever task popped it; a tool task's `start` … `finish` is a span
//! (cut short by a `tool_cancelled` naming its id); `state <key> = …` is a
//! state write, and a `flow:` key or a `tool_denied` is a flow decision;
//! `text_delta`s up to their `text_complete` are one aggregated text.
//! Lane picks are counted per lane, not kept as entries: they are what a
//! seed varies, and listed they would drown the rest.
//!
//! Every text is scrubbed of remembered secrets as it enters the model.

use std::collections::BTreeMap;
use std::time::Duration;

use super::model::{Entry, Lane, LaneKind, MarkKind, Span, SpanEnd, TextRun, Timeline};
use crate::executor::{Trace, TraceEntry};
use crate::wire::scrub_known;

/// The session's own lanes, in the order they are drawn.
const SESSION_LANES: [(&str, LaneKind); 4] = [
    ("wire", LaneKind::Wire),
    ("fast", LaneKind::Fast),
    ("control", LaneKind::Control),
    ("telemetry", LaneKind::Telemetry),
];

/// Where an entry goes, before lanes are numbered.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Place {
    Session(usize),
    Tool(usize),
    Other(usize),
}

/// The tool name and call id of a task label `tool:<name>(<id>)`.
pub(crate) fn tool_task(label: &str) -> Option<(&str, &str)> {
    let rest = label.strip_prefix("tool:")?;
    let open = rest.rfind('(')?;
    let id = rest[open + 1..].strip_suffix(')')?;
    Some((&rest[..open], id))
}

/// The queue and sequence number of a delivery entry (`deliver q #3`).
fn delivery(event: &str) -> Option<(&str, &str)> {
    let rest = event.strip_prefix("deliver ")?;
    rest.rsplit_once(" #")
}

/// What a non-scheduling event says it is.
fn kind_of(lane: LaneKind, event: &str) -> MarkKind {
    let word = event.split([' ', ':']).next().unwrap_or("");
    if lane == LaneKind::Tool {
        return match word {
            "start" | "waits" | "resumes" | "finish" => MarkKind::ToolStep,
            "panic" => MarkKind::Panic,
            "state" => state_kind(event),
            _ => MarkKind::Event,
        };
    }
    match word {
        "text_delta" | "input_transcript_delta" | "output_transcript_delta" => MarkKind::Partial,
        "text_complete" | "input_transcript" | "output_transcript" => MarkKind::Full,
        "tool_call" => MarkKind::ToolCall,
        "tool_response" => MarkKind::ToolAnswer,
        "tool_cancelled" => MarkKind::Cancel,
        "tool_denied" => MarkKind::Refusal,
        "panic" => MarkKind::Panic,
        "state" => state_kind(event),
        _ => MarkKind::Event,
    }
}

fn state_kind(event: &str) -> MarkKind {
    // The flow's journal says what it decided; a denial is a refusal
    // whether or not the gate then kept to it.
    if event.starts_with("state flow:tool_denied ") {
        MarkKind::Refusal
    } else if event.starts_with("state flow:") {
        MarkKind::Decision
    } else if event.starts_with("state ") {
        MarkKind::StateWrite
    } else {
        MarkKind::Event
    }
}

/// Where `text` first names `id` as a whole word (`call-1` is not in
/// `call-12`).
pub(crate) fn word_at(text: &str, id: &str) -> Option<usize> {
    if id.is_empty() {
        return None;
    }
    let word = |c: char| c.is_alphanumeric() || c == '-' || c == '_';
    text.match_indices(id).map(|(at, _)| at).find(|&at| {
        let before = text[..at].chars().next_back();
        let after = text[at + id.len()..].chars().next();
        !before.is_some_and(word) && !after.is_some_and(word)
    })
}

/// Whether `text` names `id` as a whole word.
pub(crate) fn names_id(text: &str, id: &str) -> bool {
    word_at(text, id).is_some()
}

/// Undoes Rust's `{:?}` escaping of a string (`"a\"b\u{200d}"`), for
/// showing the text itself; anything it cannot read is kept as it is.
pub(crate) fn unquote(debug: &str) -> String {
    let inner = debug
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(debug);
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('0') => out.push('\0'),
            Some('u') => {
                let rest: String = chars.clone().take_while(|&c| c != '}').collect();
                let code = rest
                    .strip_prefix('{')
                    .and_then(|hex| u32::from_str_radix(hex, 16).ok())
                    .and_then(char::from_u32);
                match code {
                    Some(decoded) => {
                        out.push(decoded);
                        chars.nth(rest.chars().count());
                    }
                    None => out.push_str("\\u"),
                }
            }
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

/// The stream a partial or full event belongs to, its quoted text and its
/// flags.
fn text_of(event: &str) -> Option<(&'static str, &str, bool)> {
    let (word, rest) = event.split_once(' ')?;
    // The quoted text ends at the last quote (quotes inside are escaped);
    // flags follow it.
    let end = rest.rfind('"').map_or(rest.len(), |i| i + 1);
    let (quoted, flags) = rest.split_at(end);
    let stream = match word {
        "text_delta" | "text_complete" if flags.contains("+thought") => "thought",
        "text_delta" | "text_complete" => "text",
        "input_transcript_delta" | "input_transcript" => "input transcript",
        "output_transcript_delta" | "output_transcript" => "output transcript",
        _ => return None,
    };
    Some((stream, quoted, flags.contains("+interrupted")))
}

/// Builds a timeline from a trace: lanes, entries, spans, texts.
struct Builder {
    lanes: Vec<(Place, Lane)>,
    by_label: BTreeMap<String, usize>,
    entries: Vec<Entry>,
    /// Open spans by lane.
    open: BTreeMap<usize, usize>,
    spans: Vec<Span>,
    /// Text runs being gathered, by stream.
    pending: BTreeMap<&'static str, TextRun>,
    texts: Vec<TextRun>,
    others: usize,
    tools: usize,
}

impl Builder {
    fn lane(&mut self, label: &str) -> usize {
        if let Some(&lane) = self.by_label.get(label) {
            return lane;
        }
        let (place, kind) = match SESSION_LANES.iter().position(|(name, _)| *name == label) {
            Some(i) => (Place::Session(i), SESSION_LANES[i].1),
            None if tool_task(label).is_some() => {
                self.tools += 1;
                (Place::Tool(self.tools), LaneKind::Tool)
            }
            None => {
                self.others += 1;
                (Place::Other(self.others), LaneKind::Other)
            }
        };
        self.lanes.push((
            place,
            Lane {
                name: label.to_string(),
                kind,
                picks: Vec::new(),
                pick_count: 0,
            },
        ));
        let lane = self.lanes.len() - 1;
        self.by_label.insert(label.to_string(), lane);
        lane
    }

    fn add(&mut self, index: usize, entry: TraceEntry<'_>, scheduling: bool) {
        if scheduling {
            match delivery(entry.event) {
                Some((queue, _)) => {
                    let kind = if queue.ends_with("/b->a") {
                        MarkKind::FrameIn
                    } else if queue.ends_with("/a->b") {
                        MarkKind::FrameOut
                    } else {
                        MarkKind::Delivery
                    };
                    let lane = match kind {
                        MarkKind::Delivery => self.lane(entry.label),
                        _ => self.lane("wire"),
                    };
                    self.push(index, entry, lane, kind);
                }
                None => {
                    let lane = self.lane(entry.label);
                    self.lanes[lane].1.picks.push(entry.at);
                    self.lanes[lane].1.pick_count += 1;
                }
            }
            return;
        }
        let lane = self.lane(entry.label);
        let kind = kind_of(self.lanes[lane].1.kind, entry.event);
        let at = self.push(index, entry, lane, kind);
        if self.lanes[lane].1.kind == LaneKind::Tool {
            self.tool_step(lane, at, entry);
        }
        match kind {
            MarkKind::Cancel => self.cancel(at, entry),
            MarkKind::Partial | MarkKind::Full => self.text(lane, at, entry, kind),
            _ => {}
        }
    }

    fn push(&mut self, index: usize, entry: TraceEntry<'_>, lane: usize, kind: MarkKind) -> usize {
        self.entries.push(Entry {
            index,
            at: entry.at,
            lane,
            label: scrub_known(entry.label),
            event: scrub_known(entry.event),
            detail: None,
            kind,
        });
        self.entries.len() - 1
    }

    fn tool_step(&mut self, lane: usize, at: usize, entry: TraceEntry<'_>) {
        let (tool, call) = tool_task(entry.label).unwrap_or_default();
        let word = entry.event.split(' ').next().unwrap_or("");
        if word == "start" {
            self.spans.push(Span {
                lane,
                tool: scrub_known(tool),
                call: scrub_known(call),
                start: entry.at,
                end: entry.at,
                outcome: SpanEnd::Unfinished,
                waiting: Vec::new(),
                entries: Vec::new(),
            });
            self.open.insert(lane, self.spans.len() - 1);
        }
        let Some(&open) = self.open.get(&lane) else {
            return;
        };
        let span = &mut self.spans[open];
        span.entries.push(at);
        span.end = entry.at;
        match word {
            "waits" => span.waiting.push((entry.at, entry.at)),
            "resumes" => {
                if let Some(last) = span.waiting.last_mut() {
                    last.1 = entry.at;
                }
            }
            "finish" => {
                span.outcome = if entry.event.starts_with("finish ok") {
                    SpanEnd::Ok
                } else {
                    SpanEnd::Failed
                };
                self.open.remove(&lane);
            }
            _ => {}
        }
    }

    /// A `tool_cancelled` ends every open span whose id it names.
    fn cancel(&mut self, at: usize, entry: TraceEntry<'_>) {
        let cancelled: Vec<usize> = self
            .open
            .iter()
            .filter(|(_, span)| names_id(entry.event, &self.spans[**span].call))
            .map(|(lane, _)| *lane)
            .collect();
        for lane in cancelled {
            if let Some(open) = self.open.remove(&lane) {
                let span = &mut self.spans[open];
                span.end = entry.at;
                span.outcome = SpanEnd::Cancelled;
                span.entries.push(at);
                if let Some(last) = span.waiting.last_mut()
                    && last.1 == last.0
                {
                    last.1 = entry.at;
                }
            }
        }
    }

    fn text(&mut self, lane: usize, at: usize, entry: TraceEntry<'_>, kind: MarkKind) {
        let Some((stream, quoted, interrupted)) = text_of(entry.event) else {
            return;
        };
        let run = self.pending.entry(stream).or_insert_with(|| TextRun {
            stream: stream.to_string(),
            lane,
            start: entry.at,
            end: entry.at,
            partials: Vec::new(),
            full: None,
            text: String::new(),
            interrupted: false,
        });
        run.end = entry.at;
        if kind == MarkKind::Partial {
            run.partials.push(at);
            run.text.push_str(&unquote(quoted));
            return;
        }
        run.full = Some(at);
        run.text = unquote(quoted);
        run.interrupted = interrupted;
        if let Some(done) = self.pending.remove(stream) {
            self.texts.push(done);
        }
    }

    fn finish(mut self, end: Duration) -> (Vec<Lane>, Vec<Entry>, Vec<Span>, Vec<TextRun>) {
        for open in self.open.values() {
            self.spans[*open].end = end;
        }
        self.texts
            .extend(std::mem::take(&mut self.pending).into_values());
        self.texts.sort_by_key(|t| (t.start, t.end));
        // Lanes in drawing order; entries, spans and texts renumbered.
        let mut order: Vec<usize> = (0..self.lanes.len()).collect();
        order.sort_by(|a, b| self.lanes[*a].0.cmp(&self.lanes[*b].0));
        let mut renumber = vec![0; order.len()];
        for (new, old) in order.iter().enumerate() {
            renumber[*old] = new;
        }
        for entry in &mut self.entries {
            entry.lane = renumber[entry.lane];
        }
        for span in &mut self.spans {
            span.lane = renumber[span.lane];
        }
        for text in &mut self.texts {
            text.lane = renumber[text.lane];
        }
        let mut lanes: Vec<Option<Lane>> = self.lanes.into_iter().map(|(_, l)| Some(l)).collect();
        let lanes = order.iter().filter_map(|i| lanes[*i].take()).collect();
        (lanes, self.entries, self.spans, self.texts)
    }
}

impl Timeline {
    /// Reads a trace into lanes, entries, tool spans and aggregated texts.
    /// The run's header entry (`run seed=… swarm: …`, first, from the
    /// runtime) becomes the `run` fact.
    pub fn from_trace(trace: &Trace) -> Timeline {
        let mut builder = Builder {
            lanes: Vec::new(),
            by_label: BTreeMap::new(),
            entries: Vec::with_capacity(trace.len()),
            open: BTreeMap::new(),
            spans: Vec::new(),
            pending: BTreeMap::new(),
            texts: Vec::new(),
            others: 0,
            tools: 0,
        };
        let mut facts = Vec::new();
        for (index, entry) in trace.entries().enumerate() {
            if index == 0 && entry.event.starts_with("run seed=") {
                facts.push(("run".to_string(), scrub_known(entry.event)));
                continue;
            }
            builder.add(index, entry, trace.is_scheduling(index));
        }
        let end = trace.last().map_or(Duration::ZERO, |e| e.at);
        let (lanes, entries, spans, texts) = builder.finish(end);
        Timeline {
            title: "run".to_string(),
            facts,
            lanes,
            entries,
            spans,
            texts,
            verdicts: Vec::new(),
            failure: None,
            script: None,
            end,
            trace_entries: trace.len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn lanes_come_in_session_tool_other_order() {
        let mut trace = Trace::default();
        trace.push(ms(0), "runtime".into(), "run seed=0x1 swarm: lanes=random");
        trace.push(ms(1), "main".into(), "hello");
        trace.push(ms(2), "tool:pay(c1)".into(), "start {}");
        trace.push(ms(3), "telemetry".into(), "usage {}");
        trace.push_scheduling(ms(3), "main".into(), format_args!("deliver memory/b->a #0"));
        trace.push_scheduling(ms(4), "fast".into(), format_args!("picked"));
        trace.push(ms(5), "control".into(), "turn_complete");
        let timeline = Timeline::from_trace(&trace);
        let names: Vec<&str> = timeline.lanes.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "wire",
                "fast",
                "control",
                "telemetry",
                "tool:pay(c1)",
                "main"
            ]
        );
        assert_eq!(timeline.facts[0].0, "run");
        // The frame the main task popped is drawn on the wire lane.
        let frame = &timeline.entries[3];
        assert_eq!(
            (frame.kind, frame.lane, frame.label.as_str()),
            (MarkKind::FrameIn, 0, "main")
        );
        assert_eq!(timeline.lanes[1].pick_count, 1);
        assert_eq!(timeline.entries.len(), 5);
        assert_eq!(timeline.spans[0].outcome, SpanEnd::Unfinished);
        assert_eq!(timeline.spans[0].end, ms(5));
    }

    #[test]
    fn a_cancellation_ends_the_span_it_names_only() {
        let mut trace = Trace::default();
        trace.push(ms(1), "tool:a(call-1)".into(), "start {}");
        trace.push(ms(1), "tool:a(call-1)".into(), "waits");
        trace.push(ms(1), "tool:a(call-12)".into(), "start {}");
        trace.push(
            ms(9),
            "control".into(),
            r#"tool_cancelled {"ids":["call-1"]}"#,
        );
        trace.push(ms(20), "tool:a(call-12)".into(), "finish error \"boom\"");
        let timeline = Timeline::from_trace(&trace);
        let spans = &timeline.spans;
        assert_eq!(
            (spans[0].outcome, spans[0].duration()),
            (SpanEnd::Cancelled, ms(8))
        );
        assert_eq!(spans[0].waiting, [(ms(1), ms(9))]);
        assert_eq!(
            (spans[1].outcome, spans[1].duration()),
            (SpanEnd::Failed, ms(19))
        );
    }

    /// A tool's waits run from each `waits` to the `resumes` after it;
    /// the span runs from its start to its finish.
    #[test]
    fn a_tools_waits_end_where_it_resumes() {
        let mut trace = Trace::default();
        trace.push(ms(2), "tool:pay(c1)".into(), "start {}");
        trace.push(ms(3), "tool:pay(c1)".into(), "waits");
        trace.push(ms(7), "tool:pay(c1)".into(), "resumes");
        trace.push(ms(8), "tool:pay(c1)".into(), "waits");
        trace.push(ms(15), "tool:pay(c1)".into(), "resumes");
        trace.push(ms(16), "tool:pay(c1)".into(), "finish ok {}");
        let timeline = Timeline::from_trace(&trace);
        let span = &timeline.spans[0];
        assert_eq!(span.waiting, [(ms(3), ms(7)), (ms(8), ms(15))]);
        assert_eq!(
            (span.outcome, span.start, span.end),
            (SpanEnd::Ok, ms(2), ms(16))
        );
        assert_eq!(span.entries, [0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn partials_gather_up_to_their_flush() {
        let mut trace = Trace::default();
        trace.push(ms(1), "fast".into(), "text_delta \"Hel\"");
        trace.push(ms(2), "fast".into(), "text_delta \"Plan\" +thought");
        trace.push(
            ms(3),
            "fast".into(),
            "text_delta \"lo \\\"you\\\" \\u{200d}\"",
        );
        trace.push(
            ms(4),
            "fast".into(),
            "text_complete \"Hello \\\"you\\\" \\u{200d}\" +interrupted",
        );
        let timeline = Timeline::from_trace(&trace);
        assert_eq!(timeline.texts.len(), 2);
        let text = &timeline.texts[0];
        assert_eq!((text.stream.as_str(), text.partials.len()), ("text", 2));
        assert_eq!(text.text, "Hello \"you\" \u{200d}");
        assert!(text.interrupted);
        assert_eq!((text.start, text.end), (ms(1), ms(4)));
        // The thought never flushed: kept, open, with its partial.
        assert_eq!(
            (timeline.texts[1].stream.as_str(), timeline.texts[1].full),
            ("thought", None)
        );
    }

    #[test]
    fn the_flows_denials_are_refusals_and_its_other_writes_decisions() {
        let mut trace = Trace::default();
        let at = Duration::from_millis(1);
        trace.push(at, "control".into(), "state flow:tool_denied = {} (seq 1)");
        trace.push(at, "control".into(), "tool_denied pay(c1): not now");
        trace.push(at, "control".into(), "state flow:tool_call = {} (seq 2)");
        trace.push(at, "tool:t(c2)".into(), "state cart = 1 (seq 3)");
        let kinds: Vec<MarkKind> = Timeline::from_trace(&trace)
            .entries
            .iter()
            .map(|e| e.kind)
            .collect();
        assert_eq!(
            kinds,
            [
                MarkKind::Refusal,
                MarkKind::Refusal,
                MarkKind::Decision,
                MarkKind::StateWrite
            ]
        );
    }

    #[test]
    fn ids_match_whole_words_only() {
        assert!(names_id("tool_cancelled {\"ids\":[\"call-1\"]}", "call-1"));
        assert!(!names_id("call-12 was answered", "call-1"));
        assert!(names_id("pay (call-1) was refused", "call-1"));
        assert!(!names_id("anything", ""));
    }

    #[test]
    fn unquoting_reads_debug_strings_and_keeps_what_it_cannot() {
        assert_eq!(unquote("\"a\\nb\\\\c\\u{1f600}\""), "a\nb\\c😀");
        assert_eq!(unquote("\"bad \\u{zz}\""), "bad \\u{zz}");
        assert_eq!(unquote("\"ends \\\""), "ends \\");
    }
}
