//! A timeline drawn as one self-contained HTML page: inline SVG lanes
//! over a linear virtual-time axis, a little plain JavaScript for hovering
//! and clicking, every trace entry embedded for it.
//!
//! What is drawn, per lane: the scheduler's picks as a faint strip; marks
//! (frames in and out on the wire lane, text partials and flushes, tool
//! calls and answers, refusals and other flow decisions, state writes,
//! panics, other events) as thin ticks, one SVG path per lane and kind so
//! a run of 100,000 entries is a few dozen elements; each tool task as a
//! span from its start to its finish or cancellation, waits shaded; each
//! aggregated text as a bar from its first partial to its flush, labelled
//! with the text where it fits; the failure as a dashed line across every
//! lane and a mark on the lane it happened on.
//!
//! The axis is linear where the run is busy, long quiet stretches cut
//! short (see [`Axis`]): a span's width is its duration at
//! `data-px-per-ms` (on the chart), and the page's script maps pixels
//! back to time through `data-pieces`.

use std::fmt::Write as _;
use std::time::Duration;

use super::axis::{Axis, CUT_WIDTH};
use super::model::{LaneKind, MarkKind, SpanEnd, Timeline};
use super::page::{self, embedded_json, escape, escape_into};
use crate::executor::format_time;

const STYLE: &str = include_str!("timeline.css");
const SCRIPT: &str = include_str!("timeline.js");

/// Height of the time axis above the lanes.
const AXIS: f64 = 26.0;
/// Height of one lane.
const LANE: f64 = 24.0;
/// Width of the lane names' column.
const NAMES: f64 = 230.0;

/// Where each kind of mark sits in its lane: (top, height).
fn band(kind: MarkKind) -> (f64, f64) {
    match kind {
        MarkKind::FrameIn => (3.0, 8.0),
        MarkKind::FrameOut => (13.0, 8.0),
        MarkKind::Partial => (8.0, 9.0),
        MarkKind::Full | MarkKind::Panic | MarkKind::Refusal => (2.0, 20.0),
        _ => (4.0, 16.0),
    }
}

impl Timeline {
    /// Pixels per millisecond of virtual time on the page, wherever the
    /// axis is not cut (it never is under a tool span).
    pub fn px_per_ms(&self) -> f64 {
        Axis::new(self).px_per_ms
    }

    /// The page.
    pub fn html(&self) -> String {
        let mut body = String::with_capacity(self.entries.len() * 160 + 16_384);
        self.header(&mut body);
        self.chart(&mut body);
        body.push_str(
            "<div id=\"tip\"></div>\n<section id=\"detail\">Hover over a lane to see its \
             trace entries; click to list them here.</section>\n",
        );
        self.appendix(&mut body);
        let data = EntriesJson { timeline: self };
        let _ = writeln!(
            body,
            "<script type=\"application/json\" id=\"entries\">{}</script>",
            embedded_json(&data)
        );
        page::page(
            page::Format {
                kind: "timeline",
                version: page::TIMELINE_VERSION,
            },
            &format!("livesim timeline: {}", self.title),
            STYLE,
            &body,
            Some(SCRIPT),
        )
    }

    /// Writes [`html`](Self::html) to `path` (its folder made if needed).
    pub fn write_html(&self, path: impl AsRef<std::path::Path>) -> std::io::Result<()> {
        page::write(path.as_ref(), &self.html())
    }

    /// The model as JSON (every entry, lane, span, text, verdict, the
    /// failure; times in nanoseconds), for other tools, led by its format:
    /// `"v"` ([`TIMELINE_VERSION`](super::TIMELINE_VERSION)) and `"kind":
    /// "timeline"`.
    pub fn to_json(&self) -> serde_json::Value {
        let model = serde_json::to_value(self).unwrap_or(serde_json::Value::Null);
        page::versioned("timeline", page::TIMELINE_VERSION, model)
    }

    fn header(&self, out: &mut String) {
        out.push_str("<header>\n<h1>");
        escape_into(out, &self.title);
        out.push_str("</h1>\n<dl class=\"facts\">");
        for (name, value) in &self.facts {
            let _ = write!(out, "<dt>{}</dt><dd>{}</dd>", escape(name), escape(value));
        }
        let picks: usize = self.lanes.iter().map(|l| l.pick_count).sum();
        let _ = writeln!(
            out,
            "<dt>trace</dt><dd>{} entries ({} lane picks drawn as faint ticks), {} lanes, {} \
             tool spans, {} simulated</dd></dl>",
            self.trace_entries,
            picks,
            self.lanes.len(),
            self.spans.len(),
            format_time(self.end)
        );
        if let Some(failure) = &self.failure {
            let place = failure
                .lane
                .and_then(|l| self.lanes.get(l))
                .map(|l| format!(" on {}", l.name))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "<div class=\"banner\" id=\"banner\" title=\"show it on the lanes\"><strong>FAILED: \
                 {}</strong> ({}) at t={}{}<pre>{}</pre></div>",
                escape(&failure.title),
                escape(&failure.kind),
                format_time(failure.at),
                escape(&place),
                escape(&failure.message)
            );
        } else if !self.verdicts.is_empty() {
            out.push_str("<div class=\"banner passed\"><strong>Every check held.</strong></div>\n");
        }
        if !self.verdicts.is_empty() {
            out.push_str("<ul class=\"verdicts\">");
            for verdict in &self.verdicts {
                match &verdict.failed {
                    None => {
                        let _ = write!(out, "<li class=\"ok\">{}</li>", escape(&verdict.name));
                    }
                    Some(why) => {
                        let _ = write!(
                            out,
                            "<li class=\"bad\" title=\"{}\">{}</li>",
                            escape(why),
                            escape(&verdict.name)
                        );
                    }
                }
            }
            out.push_str("</ul>\n");
        }
        out.push_str("<div class=\"legend\">");
        for (class, what) in [
            ("#1e6fd9", "frame in"),
            ("#18a058", "frame out"),
            ("#a98ae0", "partial text"),
            ("#6b2fbf", "full text (flush)"),
            ("#e07b00", "tool call"),
            ("#8d4b00", "tool answer"),
            ("#d81b60", "cancellation"),
            ("#c62828", "refusal / panic / failure"),
            ("#f2a900", "flow decision"),
            ("#00838f", "state write"),
            ("#ffcc80", "tool running (pale: waiting)"),
        ] {
            let _ = write!(
                out,
                "<span><i style=\"background:{class}\"></i>{what}</span>"
            );
        }
        out.push_str("</div>\n</header>\n");
    }

    fn chart(&self, out: &mut String) {
        let axis = Axis::new(self);
        let width = (axis.width() + 40.0).ceil();
        let height = AXIS + LANE * self.lanes.len() as f64 + 2.0;
        out.push_str("<main class=\"timeline\">\n");
        // The lane names.
        let _ = write!(
            out,
            "<svg class=\"names\" width=\"{NAMES}\" height=\"{height}\" role=\"list\">"
        );
        for (i, lane) in self.lanes.iter().enumerate() {
            let y = AXIS + LANE * i as f64 + 16.0;
            let class = if lane.kind == LaneKind::Tool {
                " class=\"tool\""
            } else {
                ""
            };
            let name = clip_chars(&lane.name, 30);
            let _ = write!(
                out,
                "<text x=\"8\" y=\"{y}\"{class} role=\"listitem\"><title>{} ({} lane picks)</title>{}</text>",
                escape(&lane.name),
                lane.pick_count,
                escape(&name)
            );
        }
        out.push_str("</svg>\n<div class=\"plot\" id=\"plot\">\n");
        let pieces: Vec<[f64; 4]> = axis
            .pieces
            .iter()
            .map(|p| [p.t0 * 1e6, p.t1 * 1e6, p.x0, p.scale / 1e6])
            .collect();
        let _ = writeln!(
            out,
            "<svg id=\"chart\" width=\"{width}\" height=\"{height}\" data-px-per-ms=\"{}\" \
             data-axis=\"{AXIS}\" data-lane-h=\"{LANE}\" data-lanes=\"{}\" data-pieces=\"{}\">",
            axis.px_per_ms,
            self.lanes.len(),
            escape(&serde_json::to_string(&pieces).unwrap_or_default())
        );
        self.draw_axis(out, &axis, height);
        let mut by_lane: Vec<Vec<usize>> = vec![Vec::new(); self.lanes.len()];
        for (i, entry) in self.entries.iter().enumerate() {
            if let Some(list) = by_lane.get_mut(entry.lane) {
                list.push(i);
            }
        }
        for (i, entries) in by_lane.iter().enumerate() {
            self.draw_lane(out, i, entries, &axis, width);
        }
        for cut in axis.pieces.iter().filter(|p| p.cut) {
            let _ = write!(
                out,
                "<rect class=\"cut\" x=\"{:.1}\" y=\"{AXIS}\" width=\"{CUT_WIDTH}\" height=\"{}\"/>",
                cut.x0,
                height - AXIS
            );
        }
        self.failure_mark(out, &axis, height);
        out.push_str("</svg>\n</div>\n</main>\n");
    }

    fn draw_axis(&self, out: &mut String, axis: &Axis, height: f64) {
        // A tick every 1, 2 or 5 × 10^k ms, at least 90 px apart.
        let mut step = 1.0;
        'find: for power in 0..12 {
            for factor in [1.0, 2.0, 5.0] {
                step = factor * 10f64.powi(power);
                if step * axis.px_per_ms >= 90.0 {
                    break 'find;
                }
            }
        }
        out.push_str("<g class=\"axis\">");
        let mut last_label = f64::NEG_INFINITY;
        for piece in &axis.pieces {
            if piece.cut {
                let x = piece.x0;
                let _ = write!(
                    out,
                    "<path class=\"break\" d=\"M{:.1} 4l4 5l-4 5l4 5M{:.1} 4l4 5l-4 5l4 5\"/>\
                     <text class=\"cut-label\" x=\"{:.1}\" y=\"24\">+{}</text>",
                    x + 12.0,
                    x + 20.0,
                    x + 2.0,
                    format_time(Duration::from_secs_f64((piece.t1 - piece.t0) / 1000.0))
                );
                last_label = x + CUT_WIDTH;
                continue;
            }
            let mut t = (piece.t0 / step).ceil() * step;
            while t <= piece.t1 {
                let px = axis.x_ms(t);
                let _ = write!(
                    out,
                    "<line x1=\"{px:.1}\" x2=\"{px:.1}\" y1=\"18\" y2=\"{height}\"/>"
                );
                if px >= last_label + 6.0 {
                    let label = format_time(Duration::from_secs_f64(t / 1000.0));
                    let _ = write!(out, "<text x=\"{:.1}\" y=\"13\">{label}</text>", px + 2.0);
                    last_label = px + 7.0 * label.len() as f64;
                }
                t += step;
            }
        }
        out.push_str("</g>\n");
    }

    fn draw_lane(
        &self,
        out: &mut String,
        index: usize,
        entries: &[usize],
        axis: &Axis,
        width: f64,
    ) {
        let lane = &self.lanes[index];
        let y = AXIS + LANE * index as f64;
        let alt = if index % 2 == 1 { " alt" } else { "" };
        let _ = write!(
            out,
            "<g class=\"lane{alt}\" data-lane=\"{index}\" transform=\"translate(0,{y})\">\
             <rect class=\"lane-band\" width=\"{width}\" height=\"{LANE}\"/>"
        );
        // Picks: one path, a tick per pixel at most.
        if !lane.picks.is_empty() {
            out.push_str("<path class=\"m picks\" d=\"");
            ticks(out, lane.picks.iter().map(|&t| axis.x(t)), (21.0, 3.0));
            out.push_str("\"/>");
        }
        // Aggregated texts, under the marks.
        for text in self.texts.iter().filter(|t| t.lane == index) {
            let x0 = axis.x(text.start);
            let w = (axis.x(text.end) - x0).max(1.0);
            let class = if text.interrupted {
                "textrun interrupted"
            } else {
                "textrun"
            };
            // The output transcript mirrors the model's text: drawn lower,
            // unlabelled, so the two do not write over each other.
            let echo = text.stream == "output transcript";
            let _ = write!(
                out,
                "<rect class=\"{class}\" x=\"{x0:.1}\" y=\"{}\" width=\"{w:.1}\" height=\"3\"/>",
                if echo { 21 } else { 18 }
            );
            if w >= 40.0 && !echo {
                let label = clip_chars(&text.text.replace('\n', " "), (w / 7.0) as usize);
                let _ = write!(
                    out,
                    "<text class=\"textlabel\" x=\"{:.1}\" y=\"15\">{}</text>",
                    x0 + 2.0,
                    escape(&label)
                );
            }
        }
        // Spans.
        for span in self.spans.iter().filter(|s| s.lane == index) {
            let x0 = axis.x(span.start);
            let w = (axis.x(span.end) - x0).max(0.0);
            let class = match span.outcome {
                SpanEnd::Ok => "ok",
                SpanEnd::Failed => "failed",
                SpanEnd::Cancelled => "cancelled",
                SpanEnd::Unfinished => "unfinished",
            };
            let tip = format!(
                "{}({}) {}: {} from t={} to t={}",
                span.tool,
                span.call,
                class,
                format_time(span.duration()),
                format_time(span.start),
                format_time(span.end)
            );
            let _ = write!(
                out,
                "<rect class=\"span {class}\" x=\"{x0:.3}\" y=\"4\" width=\"{w:.3}\" height=\"16\" \
                 data-call=\"{}\" data-lane=\"{index}\" data-t0=\"{}\" data-t1=\"{}\" data-tip=\"{}\"/>",
                escape(&span.call),
                span.start.as_nanos(),
                span.end.as_nanos(),
                escape(&tip)
            );
            for (from, to) in &span.waiting {
                let a = axis.x(*from);
                let b = (axis.x(*to) - a).max(0.0);
                if b >= 1.0 {
                    let _ = write!(
                        out,
                        "<rect class=\"wait\" x=\"{a:.1}\" y=\"5\" width=\"{b:.1}\" height=\"14\"/>"
                    );
                }
            }
        }
        // Marks: one path per kind, a tick per pixel column at most.
        let mut paths: std::collections::BTreeMap<MarkKind, (String, f64)> = Default::default();
        for &i in entries {
            let entry = &self.entries[i];
            if entry.kind == MarkKind::ToolStep {
                continue;
            }
            let (path, last) = paths
                .entry(entry.kind)
                .or_insert_with(|| (String::new(), f64::NEG_INFINITY));
            let column = (axis.x(entry.at) * 2.0).round() / 2.0;
            if column != *last {
                *last = column;
                let (top, height) = band(entry.kind);
                let _ = write!(path, "M{column} {top}v{height}");
            }
        }
        // What matters most is drawn last, on top.
        let mut paths: Vec<(MarkKind, String)> = paths
            .into_iter()
            .map(|(kind, (path, _))| (kind, path))
            .collect();
        paths.sort_by_key(|(kind, _)| layer(*kind));
        for (kind, path) in paths {
            let _ = write!(out, "<path class=\"m {}\" d=\"{path}\"/>", kind.name());
        }
        out.push_str("</g>\n");
    }

    fn failure_mark(&self, out: &mut String, axis: &Axis, height: f64) {
        let Some(failure) = &self.failure else {
            return;
        };
        let x = axis.x(failure.at);
        let _ = write!(
            out,
            "<line class=\"failure-line\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"16\" y2=\"{height}\"/>"
        );
        let lane = failure.lane.map_or(String::new(), |l| l.to_string());
        let y = failure
            .lane
            .map_or(AXIS / 2.0 + 4.0, |l| AXIS + LANE * l as f64 + LANE / 2.0);
        let title = format!("FAILED: {} at t={}", failure.title, format_time(failure.at));
        let _ = write!(
            out,
            "<g id=\"failure\" class=\"failure-mark\" data-x=\"{x:.1}\" data-t=\"{}\" \
             data-lane=\"{lane}\" data-kind=\"{}\"><title>{}</title>",
            failure.at.as_nanos(),
            escape(&failure.kind),
            escape(&title)
        );
        if let Some(span) = failure.span.and_then(|s| self.spans.get(s)) {
            let x0 = axis.x(span.start);
            let w = (axis.x(span.end) - x0).max(2.0);
            let _ = write!(
                out,
                "<rect class=\"span-outline\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"20\" \
                 fill=\"none\" stroke=\"#c62828\" stroke-width=\"2.5\"/>",
                x0 - 1.5,
                y - 10.0,
                w + 3.0
            );
        }
        let _ = writeln!(out, "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"6\"/></g>");
    }

    fn appendix(&self, out: &mut String) {
        if let Some(script) = &self.script {
            let actions = script
                .get("actions")
                .and_then(|a| a.as_array())
                .map_or(0, Vec::len);
            let text = serde_json::to_string_pretty(script).unwrap_or_default();
            let _ = writeln!(
                out,
                "<section><details><summary>the script the run played ({actions} actions)</summary>\
                 <pre>{}</pre></details></section>",
                escape(&text)
            );
        }
    }
}

/// The order marks are drawn in, bottom first: what matters most last.
fn layer(kind: MarkKind) -> u8 {
    match kind {
        MarkKind::Event | MarkKind::ToolStep => 0,
        MarkKind::StateWrite | MarkKind::Delivery => 1,
        MarkKind::Decision => 2,
        MarkKind::FrameIn | MarkKind::FrameOut | MarkKind::Partial => 3,
        MarkKind::Full => 4,
        MarkKind::ToolCall | MarkKind::ToolAnswer => 5,
        MarkKind::Cancel => 6,
        MarkKind::Refusal => 7,
        MarkKind::Panic => 8,
    }
}

/// One vertical tick per pixel column, as path commands.
fn ticks(out: &mut String, xs: impl Iterator<Item = f64>, (top, height): (f64, f64)) {
    let mut last = f64::NEG_INFINITY;
    for x in xs {
        // Entries come in time order, so a column repeats only next to
        // itself.
        let column = (x * 2.0).round() / 2.0;
        if column == last {
            continue;
        }
        last = column;
        let _ = write!(out, "M{column} {top}v{height}");
    }
}

/// At most `n` characters of `text`, with `…` when cut.
fn clip_chars(text: &str, n: usize) -> String {
    if text.chars().count() <= n {
        return text.to_string();
    }
    let mut out: String = text.chars().take(n.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// The entries as the page's script reads them.
struct EntriesJson<'a> {
    timeline: &'a Timeline,
}

impl serde::Serialize for EntriesJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct as _;
        struct Rows<'a>(&'a Timeline);
        impl serde::Serialize for Rows<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_seq(self.0.entries.iter().map(|e| {
                    (
                        e.index,
                        e.lane,
                        u64::try_from(e.at.as_nanos()).unwrap_or(u64::MAX),
                        e.line(),
                        e.detail.as_deref(),
                    )
                }))
            }
        }
        let lanes: Vec<&str> = self
            .timeline
            .lanes
            .iter()
            .map(|l| l.name.as_str())
            .collect();
        let mut state = s.serialize_struct("Entries", 2)?;
        state.serialize_field("lanes", &lanes)?;
        state.serialize_field("entries", &Rows(self.timeline))?;
        state.end()
    }
}
