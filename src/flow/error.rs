//! What can be wrong with a flow or a conversation, and with a call the
//! monitor is asked about.
//!
//! Every message names the step (or stage) involved and says what to do;
//! the `noun` field is "step" for a [`Flow`](super::Flow) and "stage" for a
//! [`Conversation`](super::Conversation), so a conversation's author reads
//! their own vocabulary.

/// Why a flow or conversation cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FlowError {
    /// A builder method that configures a step came before any step.
    #[error("{method} was called before any {noun}: start with .{noun}(\"id\")")]
    OutsideStep {
        /// "step" or "stage".
        noun: &'static str,
        /// The method, as written (`allow([..])`).
        method: &'static str,
    },
    /// A step with an empty id.
    #[error("{noun} number {position} has an empty id: give every {noun} a name")]
    EmptyId {
        /// "step" or "stage".
        noun: &'static str,
        /// 1-based position in declaration order.
        position: usize,
    },
    /// Two steps with the same id.
    #[error("{noun} `{id}` is declared twice: {noun} ids must be unique")]
    DuplicateId {
        /// "step" or "stage".
        noun: &'static str,
        /// The repeated id.
        id: String,
    },
    /// `after` names something that is not a step.
    #[error(
        "{noun} `{step}` comes after `{target}`, which is not a {noun} (the {noun}s are: {known})"
    )]
    UnknownAfter {
        /// "step" or "stage".
        noun: &'static str,
        /// The step whose `after` is wrong.
        step: String,
        /// The id it names.
        target: String,
        /// The declared ids, comma-separated.
        known: String,
    },
    /// Steps that wait for each other, so none can ever start.
    #[error(
        "{noun}s wait for each other in a cycle, so none of them can ever start: {}; \
         remove one of these `after` links",
        cycle_text(.cycle)
    )]
    Cycle {
        /// "step" or "stage".
        noun: &'static str,
        /// The ids around the cycle; each comes after the next, and the last
        /// after the first.
        cycle: Vec<String>,
    },
    /// Something else clearly wrong inside one step.
    #[error("{noun} `{step}`: {problem}")]
    Invalid {
        /// "step" or "stage".
        noun: &'static str,
        /// The step.
        step: String,
        /// What is wrong and what to do.
        problem: String,
    },
    /// A slot declared by two stages.
    #[error(
        "slot `{slot}` is declared by stage `{first}` and again by stage `{second}`: a slot belongs to one stage"
    )]
    DuplicateSlot {
        /// The state key.
        slot: String,
        /// The stage that declared it first.
        first: String,
        /// The stage that declared it again.
        second: String,
    },
    /// A resolver attached to a slot that is not declared as resolved.
    #[error(
        "slot `{slot}` is not resolved by a resolver in this conversation (resolved slots: {known})"
    )]
    UnknownResolvedSlot {
        /// The slot named.
        slot: String,
        /// The slots that take resolvers, comma-separated.
        known: String,
    },
}

fn cycle_text(cycle: &[String]) -> String {
    let mut text = String::new();
    for (i, id) in cycle.iter().enumerate() {
        if i == 0 {
            text.push_str(&format!("`{id}` comes after "));
        } else {
            text.push_str(&format!("`{id}`, which comes after "));
        }
    }
    if let Some(first) = cycle.first() {
        text.push_str(&format!("`{first}`"));
    }
    text
}

/// Why the monitor cannot take a call event it was given.
///
/// These are mistakes in the caller's bookkeeping (a call id reused, a
/// result for a call that was never admitted), not flow decisions.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// The call id was already gated once.
    #[error("call `{id}` ({tool}) was already decided: every call id is gated exactly once")]
    AlreadyDecided {
        /// The call id.
        id: String,
        /// The tool of the first call with this id.
        tool: String,
    },
    /// A result for an id the monitor never gated.
    #[error("no call `{id}` was gated: gate a call before recording its result")]
    UnknownCall {
        /// The call id.
        id: String,
    },
    /// A result for a call that was refused.
    #[error("call `{id}` ({tool}) was refused, so it has no result: a refused tool never runs")]
    Refused {
        /// The call id.
        id: String,
        /// Its tool.
        tool: String,
    },
    /// A result for a call the server cancelled (or a second cancellation).
    #[error(
        "call `{id}` ({tool}) was cancelled, so it has no result: a cancelled call never completes"
    )]
    Cancelled {
        /// The call id.
        id: String,
        /// Its tool.
        tool: String,
    },
    /// A second result for one call.
    #[error("call `{id}` ({tool}) already has its result: a call completes once")]
    AlreadyCompleted {
        /// The call id.
        id: String,
        /// Its tool.
        tool: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cycle_message_walks_the_cycle() {
        let err = FlowError::Cycle {
            noun: "step",
            cycle: vec!["a".into(), "b".into()],
        };
        assert_eq!(
            err.to_string(),
            "steps wait for each other in a cycle, so none of them can ever start: \
             `a` comes after `b`, which comes after `a`; remove one of these `after` links"
        );
    }
}
