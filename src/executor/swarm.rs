//! Swarm options: which perturbations a seed turns on, and how hard.
//!
//! Swarm testing (TigerBeetle's VOPR, FoundationDB's knob randomisation)
//! draws the whole configuration from the seed instead of fixing one: some
//! seeds run calm, some yield at every hand-off, some pick lanes by PCT
//! priorities. Every run records the options it drew as the first entry of
//! its trace, so a failure report says what was on.
//!
//! Each option is drawn from its own stream (`swarm/<name>`), so adding an
//! option never changes the others' values for an existing seed.

use std::fmt;
use std::time::Duration;

use super::seed::Seed;
use super::stream::Stream;

/// How a lane set chooses which ready lane to poll next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LaneStrategy {
    /// Poll ready lanes in the order they were added. What production does.
    Fixed,
    /// Pick uniformly among the ready lanes at every step (as madsim does).
    Random,
    /// Probabilistic concurrency testing (Burckhardt et al., ASPLOS '10):
    /// lanes get random priorities, the highest ready lane runs, and at
    /// `depth` random steps the running lane drops to the lowest priority.
    /// Finds bugs that need a few specific preemptions far more often than
    /// uniform picking does.
    Pct {
        /// How many priority changes a run makes.
        depth: u32,
    },
}

/// The perturbations one seed turns on. Draw with [`Swarm::draw`]; use
/// [`Swarm::calm`] for a run that perturbs nothing.
///
/// ```
/// use livesim::Seed;
/// use livesim::executor::Swarm;
///
/// let swarm = Swarm::draw(Seed::new(7));
/// assert_eq!(swarm, Swarm::draw(Seed::new(7))); // a function of the seed
/// println!("{swarm}"); // one line, as in the trace header
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Swarm {
    /// How lane sets pick among ready lanes.
    pub lanes: LaneStrategy,
    /// Chance that a [`yield_point`](super::yield_point) yields.
    pub yield_chance: f64,
    /// Most times a yield point yields in a row.
    pub yield_max: u32,
    /// Chance that a yield point sleeps a short virtual delay instead.
    pub sleep_chance: f64,
    /// Longest such delay.
    pub sleep_max: Duration,
    /// Chance that a task spawned through [`spawn`](super::spawn) goes to
    /// the back of the run queue instead of being polled.
    pub task_yield_chance: f64,
    /// Largest extra virtual delay added to a scheduled delivery.
    pub delivery_jitter: Duration,
}

impl Swarm {
    /// No perturbation at all: lanes in fixed order, no yields, no jitter.
    pub fn calm() -> Self {
        Swarm {
            lanes: LaneStrategy::Fixed,
            yield_chance: 0.0,
            yield_max: 0,
            sleep_chance: 0.0,
            sleep_max: Duration::ZERO,
            task_yield_chance: 0.0,
            delivery_jitter: Duration::ZERO,
        }
    }

    /// The options seed `seed` turns on.
    pub fn draw(seed: Seed) -> Self {
        let option = |name: &str| Stream::joined(seed, "swarm/", name);
        let rate = |name: &str| {
            // A quarter of seeds leave each perturbation off entirely.
            *option(name).pick(&[0.0, 0.05, 0.2, 0.5]).unwrap_or(&0.0)
        };
        let lanes = {
            let mut s = option("lanes");
            if s.chance(0.5) {
                LaneStrategy::Random
            } else {
                LaneStrategy::Pct {
                    depth: s.range(1..=3) as u32,
                }
            }
        };
        Swarm {
            lanes,
            yield_chance: rate("yield"),
            yield_max: option("yield_max").range(1..=4) as u32,
            sleep_chance: rate("sleep") / 2.0,
            sleep_max: Duration::from_millis(option("sleep_max").range(1..=20)),
            task_yield_chance: rate("task_yield"),
            delivery_jitter: Duration::from_millis(
                *option("delivery_jitter")
                    .pick(&[0, 0, 1, 5, 20])
                    .unwrap_or(&0),
            ),
        }
    }
}

impl fmt::Display for Swarm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("lanes=")?;
        match self.lanes {
            LaneStrategy::Fixed => f.write_str("fixed")?,
            LaneStrategy::Random => f.write_str("random")?,
            LaneStrategy::Pct { depth } => write!(f, "pct(depth {depth})")?,
        }
        f.write_str(" yield=")?;
        write_rate(f, self.yield_chance, 2)?;
        write!(f, "x{} sleep=", self.yield_max)?;
        write_rate(f, self.sleep_chance, 3)?;
        write!(f, "<={}ms task_yield=", self.sleep_max.as_millis())?;
        write_rate(f, self.task_yield_chance, 2)?;
        write!(
            f,
            " delivery_jitter<={}ms",
            self.delivery_jitter.as_millis()
        )
    }
}

/// Writes `rate` as `{:.decimals$}` does. Every run's trace begins with
/// its swarm, and formatting a float costs more than the rest of that
/// line: the rates [`Swarm::draw`] gives are written from a table, any
/// other value the usual way.
fn write_rate(f: &mut fmt::Formatter<'_>, rate: f64, decimals: usize) -> fmt::Result {
    const DRAWN: [(f64, usize, &str); 8] = [
        (0.0, 2, "0.00"),
        (0.05, 2, "0.05"),
        (0.2, 2, "0.20"),
        (0.5, 2, "0.50"),
        (0.0, 3, "0.000"),
        (0.025, 3, "0.025"),
        (0.1, 3, "0.100"),
        (0.25, 3, "0.250"),
    ];
    // By bits: -0.0 equals 0.0 but is written "-0.00".
    match DRAWN
        .iter()
        .find(|(value, places, _)| value.to_bits() == rate.to_bits() && *places == decimals)
    {
        Some((_, _, text)) => f.write_str(text),
        None => write!(f, "{rate:.decimals$}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The line as `format!` writes it, field by field: what the table
    /// of rates must not change.
    fn formatted(swarm: &Swarm) -> String {
        let lanes = match swarm.lanes {
            LaneStrategy::Fixed => "fixed".to_string(),
            LaneStrategy::Random => "random".to_string(),
            LaneStrategy::Pct { depth } => format!("pct(depth {depth})"),
        };
        format!(
            "lanes={lanes} yield={:.2}x{} sleep={:.3}<={}ms task_yield={:.2} delivery_jitter<={}ms",
            swarm.yield_chance,
            swarm.yield_max,
            swarm.sleep_chance,
            swarm.sleep_max.as_millis(),
            swarm.task_yield_chance,
            swarm.delivery_jitter.as_millis(),
        )
    }

    #[test]
    fn a_swarm_is_written_as_its_fields_format() {
        let mut swarms: Vec<Swarm> = (0..500).map(|s| Swarm::draw(Seed::new(s))).collect();
        swarms.push(Swarm::calm());
        for odd in [-0.0, 0.125, 0.005, 1.0 / 3.0, f64::NAN, 2.5e-7] {
            swarms.push(Swarm {
                yield_chance: odd,
                sleep_chance: odd,
                task_yield_chance: odd,
                ..Swarm::calm()
            });
        }
        for swarm in &swarms {
            assert_eq!(swarm.to_string(), formatted(swarm));
        }
    }

    #[test]
    fn seeds_draw_varied_swarms() {
        let swarms: Vec<Swarm> = (0..200).map(|s| Swarm::draw(Seed::new(s))).collect();
        assert!(swarms.iter().any(|s| s.lanes == LaneStrategy::Random));
        assert!(
            swarms
                .iter()
                .any(|s| matches!(s.lanes, LaneStrategy::Pct { .. }))
        );
        assert!(swarms.iter().any(|s| s.yield_chance == 0.0));
        assert!(swarms.iter().any(|s| s.yield_chance > 0.0));
        assert!(swarms.iter().any(|s| s.delivery_jitter > Duration::ZERO));
    }
}
