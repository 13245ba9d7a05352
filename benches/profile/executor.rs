//! Runs the executor benchmark's program 300 times in one variant, for
//! counting instructions under callgrind, which (unlike wall time) repeats
//! exactly from run to run:
//!
//! ```text
//! cargo build --release --example profile_executor
//! valgrind --tool=callgrind target/release/examples/profile_executor calm
//! ```
//!
//! Variants: `tokio` (hand-written tokio), `same` (the livesim program on a
//! plain paused runtime), `calm` (simulated, no perturbation), `seeded`
//! (simulated, seeds 0..300 with their drawn swarms), and `weather` (the
//! seed documents' weather test, seeds 0..300).

use livesim::Seed;
use livesim::executor::{Simulation, Swarm};

#[path = "../programs/three_lanes.rs"]
mod three_lanes;
use three_lanes::{livesim_program, paused_runtime, tokio_program};

#[path = "../programs/weather.rs"]
mod weather;

fn main() {
    let variant = std::env::args().nth(1).unwrap_or_default();
    for seed in 0..300 {
        match variant.as_str() {
            "tokio" => paused_runtime().block_on(tokio_program()),
            "same" => paused_runtime().block_on(livesim_program()),
            "calm" => {
                Simulation::new(Seed::new(1))
                    .swarm(Swarm::calm())
                    .run(livesim_program)
                    .expect("the program finishes");
            }
            "seeded" => {
                Simulation::new(Seed::new(seed))
                    .run(livesim_program)
                    .expect("the program finishes");
            }
            "weather" => {
                Simulation::new(Seed::new(seed))
                    .run(weather::weather)
                    .expect("the weather test passes");
            }
            _ => {
                eprintln!("usage: profile_executor tokio|same|calm|seeded|weather");
                std::process::exit(2);
            }
        }
    }
}
