//! The offline test kit, used as the reference documents use it: every
//! example of seeds 000 and 001, and the kit's own guarantees.

mod attach;
mod connections;
mod fixtures;
mod misuse;
mod replay;
mod seed_000;
mod seed_paths;
mod session_id;
mod stream;
mod strict;
