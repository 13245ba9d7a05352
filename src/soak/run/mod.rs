//! Run: one seeded session of an agent and a plan of many. The
//! [`session`] plays a case (the script, the user typing, the liveness
//! phase) inside the seed's simulation and leaves a [`record`]; the
//! [`engine`] runs cases on a pool of threads, applies every check and
//! merges the results in (agent, seed) order; and [`explore`] adds
//! variants of the runs that found something new; [`passk`] plays one
//! conversation under many seeds.

pub(crate) mod calibrate;
pub(crate) mod engine;
pub(crate) mod explore;
pub(crate) mod passk;
pub(crate) mod plan;
pub(crate) mod record;
pub(crate) mod resolving;
pub(crate) mod session;
pub(crate) mod shard;
pub(crate) mod shared_log;
pub(crate) mod user;
pub(crate) mod watching;
pub(crate) mod workers;
