//! Keep: what a soak does with a failure once it has one. [`shrink`]
//! cuts its case down to what it needs; the [`corpus`] keeps the small
//! case as a file (`seeds/<agent>/<seed>.json`) that every later run
//! replays; [`kept`] does both for every failure of a soak, and draws
//! each kept case's timeline; [`import`] and [`import_journal`] make a
//! recorded production session (a wire log, a state journal) a case to keep.

pub(crate) mod corpus;
pub(crate) mod corpus_decode;
pub(crate) mod import;
pub(crate) mod import_args;
pub(crate) mod import_journal;
pub(crate) mod import_lines;
pub(crate) mod kept;
pub(crate) mod replay;
pub(crate) mod shrink;
