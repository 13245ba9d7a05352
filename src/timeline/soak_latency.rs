//! The soak report's latencies: each agent's measured latencies (time to
//! first response, silence while tools run, barge-in, tool round trip) as
//! figures for the JSON and as histograms for the page.

use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;

use super::page::escape;
use crate::executor::format_time;
use crate::soak::Distribution;

/// Bars in each latency histogram.
pub const HISTOGRAM_BINS: usize = 20;

/// One bar of a histogram: the samples up to `up_to_ms` (and over the
/// previous bar's bound).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Bin {
    /// The bar's upper bound, in milliseconds.
    pub up_to_ms: u64,
    /// Samples in it.
    pub count: u64,
}

/// One latency of an agent, over its runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LatencyEntry {
    /// The measure: `first-response`, `tool-silence`, `barge-in`,
    /// `tool-round-trip`.
    pub measure: String,
    /// Samples measured.
    pub count: u64,
    /// Median, in milliseconds.
    pub p50_ms: u64,
    /// 90th percentile, in milliseconds.
    pub p90_ms: u64,
    /// 99th percentile, in milliseconds.
    pub p99_ms: u64,
    /// The longest, in nanoseconds (exact).
    pub max_ns: u64,
    /// The seed whose run took the longest: replay it to see the worst.
    pub worst_seed: String,
    /// The samples as [`HISTOGRAM_BINS`] bars from zero to the longest.
    pub histogram: Vec<Bin>,
}

impl LatencyEntry {
    /// The entries of an agent's distributions that measured something.
    pub(crate) fn of(latencies: &[Distribution]) -> Vec<LatencyEntry> {
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        latencies
            .iter()
            .filter(|d| d.count() > 0)
            .map(|d| LatencyEntry {
                measure: d.measure().name().to_string(),
                count: d.count(),
                p50_ms: ms(d.p50()),
                p90_ms: ms(d.p90()),
                p99_ms: ms(d.p99()),
                max_ns: u64::try_from(d.max().as_nanos()).unwrap_or(u64::MAX),
                worst_seed: d.worst_seed().map(|s| s.to_string()).unwrap_or_default(),
                histogram: d
                    .histogram(HISTOGRAM_BINS)
                    .into_iter()
                    .map(|(up_to, count)| Bin {
                        up_to_ms: ms(up_to),
                        count,
                    })
                    .collect(),
            })
            .collect()
    }
}

/// One agent's latencies as a row of histograms, each titled with its
/// percentiles and the seed of its worst run.
pub(crate) fn latency_charts(out: &mut String, agent: &str, latencies: &[LatencyEntry]) {
    if latencies.is_empty() {
        return;
    }
    let _ = write!(
        out,
        "<section class=\"latency\"><h2>Latency of {} (virtual time)</h2><div class=\"charts\">",
        escape(agent)
    );
    let (w, h) = (300.0, 110.0);
    for entry in latencies {
        let peak = entry
            .histogram
            .iter()
            .map(|b| b.count)
            .max()
            .unwrap_or(1)
            .max(1) as f64;
        let bar = w / entry.histogram.len().max(1) as f64;
        let max = format_time(Duration::from_nanos(entry.max_ns));
        let ms = |v: u64| format_time(Duration::from_millis(v));
        let _ = write!(
            out,
            "<figure class=\"histogram\" data-measure=\"{measure}\"><figcaption><strong>{measure}\
             </strong> p50 {} · p90 {} · p99 {} · max {max} (seed {}, {} measured)</figcaption>\
             <svg width=\"{w}\" height=\"{}\" role=\"img\" aria-label=\"{measure} histogram\">",
            ms(entry.p50_ms),
            ms(entry.p90_ms),
            ms(entry.p99_ms),
            escape(&entry.worst_seed),
            entry.count,
            h + 16.0,
            measure = escape(&entry.measure),
        );
        let mut from = 0;
        for (i, bin) in entry.histogram.iter().enumerate() {
            let tall = bin.count as f64 / peak * (h - 4.0);
            let _ = write!(
                out,
                "<rect class=\"bin\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{tall:.1}\" \
                 fill=\"#1e6fd9\"><title>{}–{}: {}</title></rect>",
                bar * i as f64,
                h - tall,
                (bar - 1.0).max(1.0),
                ms(from),
                ms(bin.up_to_ms),
                bin.count
            );
            from = bin.up_to_ms;
        }
        let _ = write!(
            out,
            "<text x=\"0\" y=\"{y}\">0</text><text x=\"{w}\" y=\"{y}\" text-anchor=\"end\">{max}\
             </text></svg></figure>",
            y = h + 14.0
        );
    }
    out.push_str("</div></section>\n");
}
