//! Named random streams: every random choice in a run comes from one.
//!
//! A stream is identified by the run's [`Seed`] and a label such as
//! `"lanes"` or `"transport/split"`. Its generator is ChaCha8 (from
//! `rand_chacha`) keyed by the seed and placed on the ChaCha stream number
//! given by the label, so two labels never share draws: a new draw in one
//! component never reshuffles another's. The derivation is part of the
//! replay contract and is written down here so it never drifts:
//!
//! * **key** (32 bytes): four successive outputs of SplitMix64 started at
//!   the seed's value, each written little-endian;
//! * **stream number**: FNV-1a 64 of the label's UTF-8 bytes
//!   (see [`fnv1a64`](super::fnv1a64));
//! * **draws**: `next_u64` is ChaCha8's; every derived draw (ranges,
//!   chances, shuffles) is defined in this file, not borrowed from `rand`,
//!   whose algorithms may change between versions.

use std::ops::RangeInclusive;
use std::time::Duration;

use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};

use super::hash::{Fnv64, fnv1a64};
use super::seed::Seed;

/// A deterministic source of random draws for one labelled purpose.
///
/// ```
/// use livesim::Seed;
/// use livesim::executor::Stream;
///
/// let mut a = Stream::new(Seed::new(7), "tool-latency");
/// let mut b = Stream::new(Seed::new(7), "tool-latency");
/// assert_eq!(a.below(1000), b.below(1000)); // same seed and label, same draws
///
/// let mut other = Stream::new(Seed::new(7), "frames");
/// let _ = other.next_u64(); // drawing here leaves "tool-latency" untouched
/// assert_eq!(a.next_u64(), b.next_u64());
/// ```
#[derive(Clone, Debug)]
pub struct Stream {
    rng: ChaCha8Rng,
    draws: u64,
}

impl Stream {
    /// The stream named `label` of run `seed`.
    pub fn new(seed: Seed, label: &str) -> Self {
        Self::numbered(seed, fnv1a64(label.as_bytes()))
    }

    /// The stream named `prefix` followed by `name` (`"swarm/"`,
    /// `"yield"`: the stream `swarm/yield`), without building the label:
    /// runs open several such streams each, and the text would be thrown
    /// away at once.
    pub(crate) fn joined(seed: Seed, prefix: &str, name: &str) -> Self {
        let mut number = Fnv64::new();
        number.write(prefix.as_bytes());
        number.write(name.as_bytes());
        Self::numbered(seed, number.finish())
    }

    fn numbered(seed: Seed, number: u64) -> Self {
        let mut state = seed.value();
        let mut key = [0u8; 32];
        for chunk in key.chunks_exact_mut(8) {
            chunk.copy_from_slice(&splitmix64(&mut state).to_le_bytes());
        }
        let mut rng = ChaCha8Rng::from_seed(key);
        rng.set_stream(number);
        Stream { rng, draws: 0 }
    }

    /// How many raw 64-bit draws this stream has made.
    pub fn draws(&self) -> u64 {
        self.draws
    }

    /// A uniformly random `u64`.
    pub fn next_u64(&mut self) -> u64 {
        self.draws += 1;
        self.rng.next_u64()
    }

    /// A uniformly random integer in `0..n`; `0` when `n` is 0.
    ///
    /// Lemire's multiply-and-reject method: unbiased, usually one draw.
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        // Reject the low products that would make some results more likely.
        let threshold = n.wrapping_neg() % n;
        loop {
            let product = u128::from(self.next_u64()) * u128::from(n);
            if (product as u64) >= threshold {
                return (product >> 64) as u64;
            }
        }
    }

    /// A uniformly random integer in the inclusive range.
    pub fn range(&mut self, range: RangeInclusive<u64>) -> u64 {
        let (lo, hi) = (*range.start(), *range.end());
        if hi <= lo {
            return lo;
        }
        match (hi - lo).checked_add(1) {
            Some(span) => lo + self.below(span),
            None => self.next_u64(),
        }
    }

    /// A uniformly random index into a collection of `len` items.
    pub fn index(&mut self, len: usize) -> usize {
        self.below(len as u64) as usize
    }

    /// `true` with probability `p` (clamped to `0.0..=1.0`).
    pub fn chance(&mut self, p: f64) -> bool {
        if p <= 0.0 {
            return false;
        }
        if p >= 1.0 {
            return true;
        }
        self.unit() < p
    }

    /// A uniformly random `f64` in `[0, 1)` with 53 bits of precision.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A duration drawn uniformly from the range, in whole milliseconds
    /// (tokio's timer resolution, so virtual time stays exact).
    pub fn millis(&mut self, range: RangeInclusive<Duration>) -> Duration {
        let lo = range.start().as_millis() as u64;
        let hi = range.end().as_millis() as u64;
        Duration::from_millis(self.range(lo..=hi))
    }

    /// One item of the slice, or `None` when it is empty.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        if items.is_empty() {
            None
        } else {
            Some(&items[self.index(items.len())])
        }
    }

    /// Shuffles the slice in place (Fisher–Yates, from the back).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.index(i + 1);
            items.swap(i, j);
        }
    }
}

/// SplitMix64 (Steele, Lea and Flood): spreads a seed's bits into a key.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_joined_label_names_the_stream_of_the_whole_label() {
        for (prefix, name) in [("swarm/", "yield"), ("", "x"), ("lanes/", ""), ("a", "é/b")] {
            let mut joined = Stream::joined(Seed::new(11), prefix, name);
            let mut whole = Stream::new(Seed::new(11), &format!("{prefix}{name}"));
            for _ in 0..40 {
                assert_eq!(joined.next_u64(), whole.next_u64(), "{prefix}{name}");
            }
        }
    }

    #[test]
    fn the_derivation_is_frozen() {
        // If this changes, every recorded seed replays differently:
        // bump the file formats' versions rather than edit the expectation.
        let mut s = Stream::new(Seed::new(0x2a), "lanes");
        let first: Vec<u64> = (0..3).map(|_| s.next_u64()).collect();
        let mut again = Stream::new(Seed::new(0x2a), "lanes");
        assert_eq!(first, (0..3).map(|_| again.next_u64()).collect::<Vec<_>>());
        assert_eq!(first, FROZEN_0X2A_LANES);
    }

    const FROZEN_0X2A_LANES: [u64; 3] = [
        11429241623342918770,
        18379224156294594577,
        18077705099072050217,
    ];

    #[test]
    fn labels_and_seeds_give_different_streams() {
        let a = Stream::new(Seed::new(1), "a").next_u64();
        let b = Stream::new(Seed::new(1), "b").next_u64();
        let c = Stream::new(Seed::new(2), "a").next_u64();
        assert_ne!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn below_stays_in_range_and_covers_it() {
        let mut s = Stream::new(Seed::new(3), "t");
        let mut seen = [false; 7];
        for _ in 0..1000 {
            let v = s.below(7);
            assert!(v < 7);
            seen[v as usize] = true;
        }
        assert!(seen.iter().all(|&x| x));
        assert_eq!(s.below(0), 0);
        assert_eq!(s.range(5..=5), 5);
        let full = s.range(0..=u64::MAX);
        let _ = full;
    }

    #[test]
    fn shuffle_is_a_permutation() {
        let mut s = Stream::new(Seed::new(4), "t");
        let mut v: Vec<u32> = (0..50).collect();
        s.shuffle(&mut v);
        let mut sorted = v.clone();
        sorted.sort();
        assert_eq!(sorted, (0..50).collect::<Vec<_>>());
        assert_ne!(v, sorted);
    }

    #[test]
    fn chance_extremes() {
        let mut s = Stream::new(Seed::new(5), "t");
        assert!(!s.chance(0.0));
        assert!(s.chance(1.0));
        let hits = (0..10_000).filter(|_| s.chance(0.25)).count();
        assert!((2_000..3_000).contains(&hits), "{hits}");
    }
}
