//! Seeing a run: its timeline and the soak's report as pages.
//!
//! A failing seed is a story across lanes and time: a frame arrives, text
//! streams on the fast lane while a tool runs on the control lane, a
//! cancellation races its result, the flow refuses a call. A
//! [`Timeline`] reads a run's trace (and, for a soak run, its record)
//! into swimlanes over virtual time: frames in and out, tool spans,
//! aggregated text, flow decisions and state writes, and the failure where
//! it happened. It renders as one self-contained HTML page (inline SVG
//! and CSS, a little plain JavaScript, nothing from the network) or as
//! JSON. [`SoakPage`] does the same for a soak's summary.
//!
//! Where pages are written: `livesim sim run AGENT --seed S --html FILE`,
//! `livesim sim soak --html FILE` (failures' timelines beside it), and a
//! failing `#[livesim::test]` under the target directory
//! ([`test_timeline_path`]), its path printed in the report.
//!
//! This layer knows every layer below it (it reads executor traces and
//! soak records); nothing below knows it.

mod axis;
mod failed_test;
mod html;
mod model;
mod page;
mod read;
mod soak_latency;
mod soak_page;
mod sources;

pub(crate) use failed_test::{path_component, target_dir};
pub use failed_test::{test_timeline_path, write_test_timeline};
pub use model::{
    Entry, FailurePoint, Lane, LaneKind, MarkKind, Span, SpanEnd, TextRun, Timeline, Verdict,
};
pub use page::{SOAK_REPORT_VERSION, TIMELINE_VERSION, escape};
pub use soak_latency::{Bin, HISTOGRAM_BINS, LatencyEntry};
pub use soak_page::{AgentEntry, CheckCount, FAILURES_SHOWN, FailureEntry, GoalCount, SoakPage};
