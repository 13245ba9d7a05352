//! Property fuzz of your own agent with proptest: strategies that draw a
//! conversation as [`Step`]s (calls waited for or not, parallel calls,
//! cancellations of earlier calls, pauses while tools finish, text cut
//! into frames anywhere, interruptions, goAways, turn ends, in any order)
//! and a seed, for [`Soak::run_steps`](crate::soak::Soak::run_steps).
//!
//! The seed is an input proptest never shrinks (a smaller seed is not a
//! simpler case: it decides tool latencies and lane orders); the steps
//! shrink, so a failing case comes back as the few steps it needs, and
//! proptest keeps it in your crate's `proptest-regressions/` to run first
//! next time. Behind the `proptest` feature (on by default).
//!
//! ```no_run
//! use livesim::prelude::*;
//! use livesim::soak::{Soak, fuzz};
//! use proptest::prelude::*;
//!
//! fn cart() -> LiveBuilder { Live::builder() /* your agent */ }
//!
//! proptest! {
//!     /// Whatever the model does, every invariant holds.
//!     #[test]
//!     fn the_cart_holds_up(seed in fuzz::seed(), steps in fuzz::steps(2, 1..12)) {
//!         let run = Soak::new("cart", cart).run_steps(seed, &steps);
//!         prop_assert_eq!(run.verdict(), Ok(()));
//!     }
//! }
//! ```

use std::ops::Range;

use proptest::prelude::*;

use crate::executor::Seed;
use crate::soak::generate::steps::Step;

/// One step against an agent with `tools` tools.
pub fn step(tools: usize) -> impl Strategy<Value = Step> {
    let tools = tools.max(1);
    prop_oneof![
        3 => (0..tools, any::<bool>()).prop_map(|(tool, wait)| Step::Call { tool, wait }),
        1 => prop::collection::vec(0..tools, 2..4).prop_map(Step::Parallel),
        2 => (0usize..8).prop_map(Step::Cancel),
        2 => (1u64..600).prop_map(Step::Pause),
        2 => ("[a-zé€ ]{1,24}", prop::collection::vec(0usize..24, 0..4))
            .prop_map(|(text, cuts)| Step::Text { text, cuts }),
        1 => Just(Step::Interrupt),
        1 => Just(Step::GoAway),
        1 => Just(Step::TurnComplete),
    ]
}

/// A conversation of `len` steps against an agent with `tools` tools.
pub fn steps(tools: usize, len: Range<usize>) -> impl Strategy<Value = Vec<Step>> {
    prop::collection::vec(step(tools), len)
}

/// A seed, never shrunk.
pub fn seed() -> impl Strategy<Value = Seed> {
    any::<u64>().no_shrink().prop_map(Seed::new)
}
