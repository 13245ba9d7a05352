//! An agent file's `"temporal"`: named conditions on state that must hold
//! for a length of clock time ("a basket waits unordered for 3 s"), given
//! to the session as [`TemporalPattern`]s and checked by
//! `patterns-follow-spec`.
//!
//! ```json
//! "temporal": [
//!   {"name": "basket-waiting", "for_ms": 3000,
//!    "when": {"all": [{"exists": "basket"}, {"not": {"is_true": "ordered"}}]}}
//! ]
//! ```
//!
//! A condition is a state guard on keys the agent's tools write, as a
//! phase's is.

use std::time::Duration;

use crate::flow::Guard;
use crate::session::TemporalPattern;
use crate::soak::agent::tools::SimTool;
use crate::soak::agent::{final_state, state_guard};
use crate::soak::check;
use crate::soak::file_reader::{Decoded, Node};
use crate::soak::run::record::RunRecord;

/// The longest a condition may be asked to hold: an hour.
const HOUR_MS: u64 = 3_600_000;

/// A condition that must hold for a while before its pattern fires.
///
/// ```
/// use std::time::Duration;
/// use livesim::flow::Guard;
/// use livesim::soak::Sustained;
///
/// let waiting = Sustained {
///     name: "basket-waiting".into(),
///     when: Guard::Exists("basket".into()),
///     lasting: Duration::from_secs(3),
/// };
/// let builder = livesim::prelude::Live::builder().temporal(waiting.pattern());
/// # let _ = builder;
/// // And in a soak:
/// // soak.invariant("patterns-follow-spec", move |run| Sustained::check(&[waiting.clone()], run))
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Sustained {
    /// The pattern's name, as its `pattern_matched` events carry it.
    pub name: String,
    /// The state condition.
    pub when: Guard,
    /// How long it must hold, in clock time.
    pub lasting: Duration,
}

impl Sustained {
    /// The session's pattern: the condition evaluated on its state.
    pub fn pattern(&self) -> TemporalPattern {
        let when = self.when.clone();
        TemporalPattern::sustained(self.name.clone(), self.lasting, move |state| {
            state_guard::holds(&when, state)
        })
    }

    /// `patterns-follow-spec` on one run: `Ok` when the session's
    /// `pattern_matched` events are what `patterns` imply for the run's
    /// state journal, or what went wrong.
    pub fn check(patterns: &[Sustained], run: &RunRecord) -> Result<(), String> {
        check::temporal::check(patterns, run)
    }
}

/// `"temporal"`: a list of `{"name", "when", "for_ms"}`, names unique,
/// conditions on the keys `tools` (and `others`: the extractor, the
/// resolvers) write.
pub(crate) fn decode(
    node: &Node<'_>,
    tools: &[SimTool],
    others: &[&str],
) -> Decoded<Vec<Sustained>> {
    let keys = final_state::state_keys(tools, others);
    let mut patterns: Vec<Sustained> = Vec::new();
    for item in node.list("a list of {\"name\", \"when\", \"for_ms\"}")? {
        let fields = item.object("a temporal pattern", &["name", "when", "for_ms"])?;
        let name_node = fields.require("name", "the pattern's name")?;
        let name = name_node.string("a pattern name")?;
        if name.trim().is_empty() {
            return name_node.fail("expected a pattern name, found an empty string");
        }
        if patterns.iter().any(|p| p.name == name) {
            return name_node.fail(format!("a second pattern named {name:?}: names are unique"));
        }
        let when = state_guard::decode(
            &fields.require("when", "the state condition")?,
            "a temporal pattern's condition",
            &keys,
        )?;
        let lasting = fields
            .require("for_ms", "how long the condition must hold, in ms")?
            .whole("milliseconds", 0..=HOUR_MS)?;
        patterns.push(Sustained {
            name,
            when,
            lasting: Duration::from_millis(lasting),
        });
    }
    Ok(patterns)
}
