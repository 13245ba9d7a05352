//! The offline test kit, used as the reference documents use it: every
//! example of seeds 000 and 001, and the kit's own guarantees.

mod seed_000;
