//! Check: what a run's record must hold and what it reached. The
//! [`invariants`] (with those of connections in [`reconnects`] and the
//! stored log's order in [`wire_order`]), the "sometimes" goals
//! ([`sometimes`]), the determinism check across runs ([`determinism`]),
//! and the [`report`] a soak ends with.

pub(crate) mod determinism;
pub(crate) mod excerpt;
pub mod invariants;
pub(crate) mod model;
pub(crate) mod reconnects;
pub(crate) mod report;
pub(crate) mod sometimes;
pub(crate) mod wire_order;
