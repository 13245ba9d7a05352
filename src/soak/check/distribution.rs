//! How each latency spread over an agent's runs: counts to the
//! millisecond, so the percentiles are exact at the resolution reports
//! print, memory stays bounded by the distinct values (not the runs: a
//! nightly soak measures millions), and runs finishing in any order add up
//! to the same figures.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::executor::Seed;
use crate::soak::check::latency::Measure;

/// One measure's spread over an agent's runs, to the millisecond.
///
/// ```
/// use livesim::soak::{Agent, Measure, Soak};
///
/// let agent = Agent::load("sim/weather").unwrap();
/// let summary = Soak::agent(&agent).seeds(20).run();
/// let tools = summary.agents[0].latency(Measure::ToolRoundTrip).unwrap();
/// assert!(tools.count() > 0);
/// assert!(tools.p50() <= tools.p90() && tools.p90() <= tools.p99());
/// assert!(tools.p99() <= tools.max());
/// println!("worst round trip {:?} in seed {}", tools.max(), tools.worst_seed().unwrap());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Distribution {
    measure: Measure,
    /// How many samples took each whole number of milliseconds.
    counts: BTreeMap<u64, u64>,
    total: u64,
    /// The longest sample, exactly, and the lowest seed that took it.
    worst: Option<(Duration, Seed)>,
}

impl Distribution {
    pub(crate) fn new(measure: Measure) -> Distribution {
        Distribution {
            measure,
            counts: BTreeMap::new(),
            total: 0,
            worst: None,
        }
    }

    pub(crate) fn add(&mut self, took: Duration, seed: Seed) {
        let ms = u64::try_from(took.as_millis()).unwrap_or(u64::MAX);
        *self.counts.entry(ms).or_default() += 1;
        self.total += 1;
        let worse = match self.worst {
            None => true,
            Some((longest, at)) => took > longest || (took == longest && seed < at),
        };
        if worse {
            self.worst = Some((took, seed));
        }
    }

    /// What it measures.
    pub fn measure(&self) -> Measure {
        self.measure
    }

    /// Samples measured.
    pub fn count(&self) -> u64 {
        self.total
    }

    /// The `p`-th percentile (0 < p ≤ 100), nearest rank, to the
    /// millisecond; zero when nothing was measured.
    pub fn percentile(&self, p: f64) -> Duration {
        if self.total == 0 {
            return Duration::ZERO;
        }
        let rank = ((p / 100.0) * self.total as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (&ms, &n) in &self.counts {
            seen += n;
            if seen >= rank {
                return Duration::from_millis(ms);
            }
        }
        self.max()
    }

    /// The median.
    pub fn p50(&self) -> Duration {
        self.percentile(50.0)
    }

    /// The 90th percentile.
    pub fn p90(&self) -> Duration {
        self.percentile(90.0)
    }

    /// The 99th percentile.
    pub fn p99(&self) -> Duration {
        self.percentile(99.0)
    }

    /// The longest, exactly.
    pub fn max(&self) -> Duration {
        self.worst.map_or(Duration::ZERO, |(took, _)| took)
    }

    /// The seed of the longest (the lowest, when several took as long):
    /// the run to replay to see the worst case.
    pub fn worst_seed(&self) -> Option<Seed> {
        self.worst.map(|(_, seed)| seed)
    }

    /// The samples in `bins` equal ranges from zero to the longest, each
    /// `(upper bound, how many)`: what a histogram draws.
    pub fn histogram(&self, bins: usize) -> Vec<(Duration, u64)> {
        let bins = bins.max(1) as u64;
        let top = self.counts.keys().next_back().copied().unwrap_or(0) + 1;
        let width = top.div_ceil(bins).max(1);
        let mut out: Vec<(Duration, u64)> = (1..=bins)
            .map(|i| (Duration::from_millis(i * width), 0))
            .collect();
        for (&ms, &n) in &self.counts {
            let bin = usize::try_from(ms / width).unwrap_or(usize::MAX);
            if let Some(slot) = out.get_mut(bin) {
                slot.1 += n;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nearest-rank percentiles of 1..=100 ms are the rank itself.
    #[test]
    fn percentiles_are_nearest_rank() {
        let mut d = Distribution::new(Measure::FirstResponse);
        for ms in (1..=100).rev() {
            d.add(Duration::from_millis(ms), Seed::new(ms));
        }
        assert_eq!(d.count(), 100);
        assert_eq!(d.p50(), Duration::from_millis(50));
        assert_eq!(d.p90(), Duration::from_millis(90));
        assert_eq!(d.p99(), Duration::from_millis(99));
        assert_eq!(d.max(), Duration::from_millis(100));
        assert_eq!(d.worst_seed(), Some(Seed::new(100)));
        let bins = d.histogram(4);
        assert_eq!(bins.iter().map(|b| b.1).sum::<u64>(), 100);
        assert_eq!(bins.len(), 4);
    }

    /// The worst is the longest, the lowest seed among equals, whatever
    /// order the runs came in.
    #[test]
    fn the_worst_seed_does_not_depend_on_order() {
        let mut a = Distribution::new(Measure::BargeIn);
        let mut b = Distribution::new(Measure::BargeIn);
        let samples = [(7, 3), (9, 5), (9, 2), (1, 1)];
        for (ms, seed) in samples {
            a.add(Duration::from_millis(ms), Seed::new(seed));
        }
        for (ms, seed) in samples.iter().rev() {
            b.add(Duration::from_millis(*ms), Seed::new(*seed));
        }
        assert_eq!(a, b);
        assert_eq!(a.worst_seed(), Some(Seed::new(2)));
    }
}
