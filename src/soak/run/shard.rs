//! Shards: one of N disjoint slices of a seed range, so a nightly soak
//! spreads over a matrix of machines.

use std::ops::Range;

/// Which of N shards to run: the seeds whose offset from the start of the
/// range, modulo `of`, is `index - 1`. Shards 1..=N of a range are
/// disjoint and together cover it.
///
/// ```
/// use livesim::soak::Shard;
///
/// let shard: Shard = "2/3".parse().unwrap();
/// assert_eq!(shard.seeds(10..20).collect::<Vec<_>>(), [11, 14, 17]);
/// assert!("4/3".parse::<Shard>().is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// This shard, from 1.
    pub index: u64,
    /// How many shards.
    pub of: u64,
}

impl Shard {
    /// All the seeds, as one shard.
    pub const WHOLE: Shard = Shard { index: 1, of: 1 };

    /// The seeds of `range` this shard takes, in order.
    pub fn seeds(self, range: Range<u64>) -> impl Iterator<Item = u64> {
        let first = range.start.saturating_add(self.index - 1);
        (first..range.end).step_by(self.of as usize)
    }

    /// How many seeds of `range` this shard takes.
    pub fn count(self, range: &Range<u64>) -> u64 {
        let len = range.end.saturating_sub(range.start);
        let skip = self.index - 1;
        if len <= skip {
            0
        } else {
            (len - skip).div_ceil(self.of)
        }
    }
}

impl std::str::FromStr for Shard {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || format!("`{s}` is not a shard: write K/N with 1 ≤ K ≤ N, such as 2/8");
        let (k, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, of) = (
            k.trim().parse::<u64>().map_err(|_| bad())?,
            n.trim().parse::<u64>().map_err(|_| bad())?,
        );
        if index == 0 || of == 0 || index > of || of > u64::from(u32::MAX) {
            return Err(bad());
        }
        Ok(Shard { index, of })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.of)
    }
}
