//! Variant seeds: how exploration names the runs it derives from a seed.
//!
//! A seed whose top 16 bits are zero is a fresh seed. A seed with a
//! number `k` in its top 16 bits is variant `k` of the seed in its low 48
//! bits (its *parent*): the parent's conversation, written from the
//! parent's faults with one or two of them changed, played under the
//! variant's own scheduling (its swarm, tool latencies, the user's
//! timing). A variant is still one seed: the replay line that prints it
//! plays it again, bit for bit, like any other.
//!
//! ```
//! use livesim::Seed;
//! use livesim::soak::variant;
//!
//! let seed = variant::of(Seed::new(42), 3);
//! assert_eq!(seed.to_string(), "0x300000000002a");
//! assert_eq!(variant::split(seed), (Seed::new(42), 3));
//! assert_eq!(variant::split(Seed::new(42)), (Seed::new(42), 0));
//! ```

use crate::executor::Seed;

/// Where a variant's number starts in a seed.
pub const SHIFT: u32 = 48;

/// The largest variant number.
pub const MAX: u64 = (1 << (64 - SHIFT)) - 1;

/// Variant `number` of `parent` (its low 48 bits): `number` 0 is the
/// parent itself; numbers above [`MAX`] wrap into range.
pub fn of(parent: Seed, number: u64) -> Seed {
    let low = parent.value() & ((1 << SHIFT) - 1);
    Seed::new(low | ((number & MAX) << SHIFT))
}

/// The parent and the variant number of `seed` (0 for a fresh seed).
pub fn split(seed: Seed) -> (Seed, u64) {
    let value = seed.value();
    (Seed::new(value & ((1 << SHIFT) - 1)), value >> SHIFT)
}
