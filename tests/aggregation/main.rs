//! Aggregation through the session: raw server frames from a scripted
//! server, decoded, aggregated, handed to the lanes, and read back from the
//! stored log, over many seeds and frame spacings. The stored log must be
//! the wire order of the conversation, the same on every seed.

mod notation;
mod properties;
mod rows;
mod session_events;
