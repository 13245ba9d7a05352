//! pass^k: how reliably one fixed conversation passes when everything
//! else varies.
//!
//! Voice-agent teams re-run a test many times because its results vary,
//! and report pass^k: the chance that k independent trials all pass. With
//! a model in the loop the variance mixes the model's with the system's;
//! here the conversation (the script) is fixed and each trial is a seed,
//! which draws the interleavings, the deliveries, the tools' latencies and
//! failures. So pass^k measures what a scheduling race or a fault costs,
//! and nothing else. From n trials with c passes the estimate is
//! C(c, k) / C(n, k) (the share of k-subsets of the trials that all pass).

use std::fmt;
use std::ops::Range;

use crate::executor::{Seed, Swarm};
use crate::soak::Case;
use crate::soak::Soak;

/// The k voice-agent teams usually report.
pub const DEFAULT_K: u32 = 8;

/// How a fixed conversation fared over many seeds.
#[derive(Clone, Debug, PartialEq)]
pub struct PassK {
    /// The k of pass^k.
    pub k: u32,
    /// Trials run: one per seed.
    pub trials: u64,
    /// Trials that passed every invariant.
    pub passed: u64,
    /// Each failing trial's seed and the invariants it broke, in seed
    /// order.
    pub failing: Vec<(Seed, Vec<String>)>,
}

impl PassK {
    /// The share of trials that passed.
    pub fn pass_1(&self) -> f64 {
        pass_at(self.trials, self.passed, 1)
    }

    /// The estimated chance that k trials all pass: C(c, k) / C(n, k); 0
    /// when fewer than k passed, `NaN` when fewer than k trials ran.
    pub fn pass_k(&self) -> f64 {
        pass_at(self.trials, self.passed, self.k)
    }
}

/// C(c, k) / C(n, k), as a product that neither overflows nor loses
/// precision for large n.
fn pass_at(n: u64, c: u64, k: u32) -> f64 {
    let k = u64::from(k);
    if k > n {
        return f64::NAN;
    }
    (0..k)
        .map(|i| c.saturating_sub(i) as f64 / (n - i) as f64)
        .product()
}

impl fmt::Display for PassK {
    /// `passed 93 of 100 seeds: pass^1 0.930, pass^8 0.555`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "passed {} of {} seed{}: pass^1 {:.3}, pass^{} {:.3}",
            self.passed,
            self.trials,
            if self.trials == 1 { "" } else { "s" },
            self.pass_1(),
            self.k,
            self.pass_k()
        )
    }
}

impl Soak {
    /// Plays `case`'s conversation (its script and fault rates) once per
    /// seed of `seeds`, each seed drawing its own interleavings, deliveries
    /// and tool outcomes, and reports pass^1 and pass^`k`. The trial of
    /// seed s replays alone with [`trial`](Self::trial).
    ///
    /// ```
    /// use livesim::Seed;
    /// use livesim::soak::{Agent, Soak};
    ///
    /// let agent = Agent::load("sim/payment").unwrap();
    /// let soak = Soak::agent(&agent);
    /// let conversation = soak.case(Seed::new(7));
    /// let passk = soak.pass_k(&conversation, 0..20, 8);
    /// assert_eq!(passk.trials, 20);
    /// assert_eq!(passk.passed, 20, "{:?}", passk.failing);
    /// assert_eq!(passk.pass_k(), 1.0);
    /// ```
    pub fn pass_k(&self, case: &Case, seeds: Range<u64>, k: u32) -> PassK {
        let mut outcome = PassK {
            k,
            trials: 0,
            passed: 0,
            failing: Vec::new(),
        };
        for seed in seeds.map(Seed::new) {
            let run = self.run_case(&Soak::trial(case, seed));
            outcome.trials += 1;
            if run.failures.is_empty() {
                outcome.passed += 1;
            } else {
                let mut broken: Vec<String> =
                    run.failures.iter().map(|f| f.invariant.clone()).collect();
                broken.dedup();
                outcome.failing.push((seed, broken));
            }
        }
        outcome
    }

    /// The trial of `case`'s conversation under `seed`: its script and
    /// fault rates, the seed's swarm, every decision as the seed draws it.
    pub fn trial(case: &Case, seed: Seed) -> Case {
        Case {
            seed,
            swarm: Swarm::draw(seed),
            faults: case.faults.clone(),
            script: case.script.clone(),
            decisions: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The estimate equals the share of k-subsets of the trials that all
    /// pass, counted one subset at a time.
    #[test]
    fn pass_k_is_the_share_of_all_passing_subsets() {
        for n in 1..=9u64 {
            for c in 0..=n {
                for k in 1..=n as u32 {
                    // Trials 0..c pass; count subsets (bitmasks) of size k.
                    let (mut all, mut good) = (0u64, 0u64);
                    for mask in 0u64..(1 << n) {
                        if mask.count_ones() != k {
                            continue;
                        }
                        all += 1;
                        if mask >> c == 0 {
                            good += 1;
                        }
                    }
                    let expected = good as f64 / all as f64;
                    let got = pass_at(n, c, k);
                    assert!((got - expected).abs() < 1e-12, "n={n} c={c} k={k}");
                }
            }
        }
        assert!(pass_at(3, 3, 4).is_nan(), "more k than trials");
    }
}
