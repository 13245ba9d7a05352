//! The page's time axis: linear where the run is busy, with long idle
//! stretches cut down to a fixed width.
//!
//! A session's story comes in bursts (a turn, its tools, its text) with
//! seconds of quiet between them; drawn linearly, the bursts would be
//! slivers in a sea of blank. So any gap longer than [`IDLE`] in which no
//! tool span and no aggregated text is open, and nothing but telemetry
//! happens, is drawn [`CUT_WIDTH`] pixels wide (its telemetry marks
//! squeezed into it), with a break on the axis saying how long it was.
//! Everywhere else one millisecond is the same number of pixels
//! ([`Axis::px_per_ms`]), so a tool span's width is its duration.

use std::time::Duration;

use super::model::{LaneKind, Timeline};

/// Quiet longer than this is cut.
pub(crate) const IDLE: Duration = Duration::from_millis(600);
/// Kept linear on each side of a cut.
const PAD_MS: f64 = 100.0;
/// How wide a cut is drawn.
pub(crate) const CUT_WIDTH: f64 = 36.0;
const DEFAULT_PX_PER_MS: f64 = 1.0;
const MIN_WIDTH: f64 = 1_000.0;
const MAX_WIDTH: f64 = 30_000.0;

/// One stretch of the axis: from `t0` to `t1` (ms), starting at pixel
/// `x0`, `scale` pixels per ms.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub(crate) struct Piece {
    pub t0: f64,
    pub t1: f64,
    pub x0: f64,
    pub scale: f64,
    pub cut: bool,
}

/// Virtual time to pixels.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Axis {
    pub pieces: Vec<Piece>,
    pub px_per_ms: f64,
}

pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

impl Axis {
    pub(crate) fn new(timeline: &Timeline) -> Axis {
        let end = ms(timeline.end).max(1.0);
        // Busy intervals: spans, texts, the failure, and every entry off
        // the telemetry lane.
        let mut busy: Vec<(f64, f64)> = Vec::new();
        busy.extend(timeline.spans.iter().map(|s| (ms(s.start), ms(s.end))));
        busy.extend(timeline.texts.iter().map(|t| (ms(t.start), ms(t.end))));
        busy.extend(timeline.failure.iter().map(|f| (ms(f.at), ms(f.at))));
        busy.extend(
            timeline
                .entries
                .iter()
                .filter(|e| {
                    timeline
                        .lanes
                        .get(e.lane)
                        .is_some_and(|l| l.kind != LaneKind::Telemetry)
                })
                .map(|e| (ms(e.at), ms(e.at))),
        );
        busy.push((0.0, 0.0));
        busy.push((end, end));
        busy.sort_by(|a, b| a.0.total_cmp(&b.0));
        // The gaps to cut: (from, to) in ms, padding left linear.
        let idle = ms(IDLE);
        let mut cuts = Vec::new();
        let mut reach = 0.0f64;
        for (start, stop) in busy {
            if start - reach > idle {
                cuts.push((reach + PAD_MS, start - PAD_MS));
            }
            reach = reach.max(stop);
        }
        let cut_ms: f64 = cuts.iter().map(|(a, b)| b - a).sum();
        let linear = (end - cut_ms).max(1.0);
        let fixed = CUT_WIDTH * cuts.len() as f64;
        let mut scale = DEFAULT_PX_PER_MS;
        if linear * scale + fixed > MAX_WIDTH {
            scale = ((MAX_WIDTH - fixed).max(MAX_WIDTH / 4.0)) / linear;
        } else if linear * scale + fixed < MIN_WIDTH {
            scale = ((MIN_WIDTH - fixed).max(MIN_WIDTH / 2.0) / linear).min(50.0);
        }
        let mut pieces = Vec::new();
        let (mut t, mut x) = (0.0, 0.0);
        for (a, b) in cuts {
            pieces.push(Piece {
                t0: t,
                t1: a,
                x0: x,
                scale,
                cut: false,
            });
            x += (a - t) * scale;
            pieces.push(Piece {
                t0: a,
                t1: b,
                x0: x,
                scale: CUT_WIDTH / (b - a),
                cut: true,
            });
            x += CUT_WIDTH;
            t = b;
        }
        pieces.push(Piece {
            t0: t,
            t1: end,
            x0: x,
            scale,
            cut: false,
        });
        Axis {
            pieces,
            px_per_ms: scale,
        }
    }

    /// The pixel of virtual time `at`.
    pub(crate) fn x(&self, at: Duration) -> f64 {
        self.x_ms(ms(at))
    }

    pub(crate) fn x_ms(&self, t: f64) -> f64 {
        let i = self
            .pieces
            .partition_point(|p| p.t1 < t)
            .min(self.pieces.len() - 1);
        let p = &self.pieces[i];
        p.x0 + (t - p.t0).max(0.0) * p.scale
    }

    /// The pixel where the axis ends.
    pub(crate) fn width(&self) -> f64 {
        let last = self.pieces[self.pieces.len() - 1];
        last.x0 + (last.t1 - last.t0) * last.scale
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::Trace;

    #[test]
    fn quiet_is_cut_and_busy_stays_linear() {
        let ms = Duration::from_millis;
        let mut trace = Trace::default();
        trace.push(ms(0), "control".into(), "connected");
        trace.push(ms(100), "tool:t(c1)".into(), "start {}");
        trace.push(ms(2_100), "tool:t(c1)".into(), "finish ok {}");
        for t in (2_500..20_000).step_by(500) {
            trace.push(
                ms(t),
                "telemetry".into(),
                "state session:elapsed_ms = 1 (seq 1)",
            );
        }
        trace.push(ms(20_000), "control".into(), "turn_complete");
        let axis = Axis::new(&Timeline::from_trace(&trace));
        // The two-second span is not cut: its width is its duration.
        assert_eq!(
            axis.x(ms(2_100)) - axis.x(ms(100)),
            2_000.0 * axis.px_per_ms
        );
        // The 17.9 s of telemetry are one cut.
        assert_eq!(axis.pieces.iter().filter(|p| p.cut).count(), 1);
        assert!(
            axis.width() < 2_100.0 + 2.0 * PAD_MS + CUT_WIDTH + 1.0,
            "{axis:?}"
        );
        // Monotonic.
        let xs: Vec<f64> = (0..=200).map(|i| axis.x(ms(i * 100))).collect();
        assert!(xs.windows(2).all(|w| w[0] <= w[1]));
    }
}
