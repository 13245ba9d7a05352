//! The determinism check: run a seed twice and compare the traces.
//!
//! A seed is only worth printing if it replays. Anything that leaks real
//! time, OS randomness or `HashMap` order into a run makes two runs of the
//! same seed differ; this check catches it at the first trace entry where
//! they part, and says what each run did there.

use std::fmt;
use std::future::Future;

use super::failure::Failure;
use super::runtime::{Outcome, Simulation};
use super::seed::Seed;
use super::trace::{Divergence, Trace};

/// Two runs of one seed that did not produce the same trace.
#[derive(Clone, Debug)]
pub struct NonDeterminism {
    /// The seed that was run twice.
    pub seed: Seed,
    /// Where the traces part.
    pub divergence: Box<Divergence>,
    /// The two trace hashes.
    pub hashes: (u64, u64),
}

impl fmt::Display for NonDeterminism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "non-determinism: seed {} ran twice with different traces (hashes {:#018x} and {:#018x})",
            self.seed, self.hashes.0, self.hashes.1
        )?;
        write!(f, "{}", self.divergence)?;
        write!(
            f,
            "\n  something read real time, OS randomness or HashMap order, or ran on an OS thread; \
             see docs/determinism.md (what code must and must not do under simulation)"
        )
    }
}

impl std::error::Error for NonDeterminism {}

/// Compares two traces of `seed`.
pub(crate) fn compare(seed: Seed, first: &Trace, second: &Trace) -> Result<(), NonDeterminism> {
    match first.first_divergence(second) {
        None => Ok(()),
        Some(divergence) => Err(NonDeterminism {
            seed,
            divergence: Box::new(divergence),
            hashes: (first.hash(), second.hash()),
        }),
    }
}

/// Runs `simulation` twice with futures from `test` and checks that both
/// runs leave the same trace, whether they succeed or fail. Returns the
/// trace hash.
///
/// ```
/// use livesim::Seed;
/// use livesim::executor::{Simulation, check_determinism, record, yield_point};
///
/// let hash = check_determinism(&Simulation::new(Seed::new(4)), || async {
///     yield_point("a").await;
///     record("done");
/// })
/// .unwrap();
/// # let _ = hash;
/// ```
pub fn check_determinism<F, Fut>(simulation: &Simulation, test: F) -> Result<u64, NonDeterminism>
where
    F: Fn() -> Fut,
    Fut: Future + 'static,
    Fut::Output: 'static,
{
    fn trace_of<T>(result: Result<Outcome<T>, Box<Failure>>) -> Trace {
        match result {
            Ok(outcome) => outcome.trace,
            Err(failure) => failure.trace,
        }
    }
    let first = trace_of(simulation.run(&test));
    let second = trace_of(simulation.run(&test));
    compare(simulation.seed(), &first, &second)?;
    Ok(first.hash())
}
