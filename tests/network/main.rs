//! Sessions on the simulated network (turmoil) under the seed: the real
//! WebSocket transport between two hosts, faults drawn from the seed,
//! the same trace for the same seed.

#![cfg(feature = "network")]

mod faults;
mod resumption;
mod session;
