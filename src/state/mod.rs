//! Session state: a key/value store of JSON values with a clock and a
//! journal.
//!
//! [`State`] is what tools, callbacks, extractors and the flow monitor read
//! and write. Every clone and every prefix-scoped view shares one store and
//! one clock. Every write becomes a [`StateMutation`] with a sequence number
//! and a timestamp from that clock, and goes to the configured
//! [`JournalSink`]s, so a run leaves a record that later becomes a scenario.
//! Under simulation every write is also traced (`state <key> = <value>
//! (seq <n>)`) under the lane or task that made it.

mod journal;
mod store;

pub use journal::{
    FileJournalSink, JOURNAL_KIND, JOURNAL_VERSION, JournalSink, MemoryJournalSink, StateMutation,
};
pub(crate) use store::Brief;
pub use store::{State, StateChanges};
