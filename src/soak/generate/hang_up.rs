//! The user hanging up while calls run, or while the session reconnects
//! after the script ended its connection (`hang-up`): how a conversation
//! ends in it, and how a run tells that its script ends so.
//!
//! The last turn's tool message is not waited for and nothing follows it
//! but a pause shorter than its fastest tool's quickest run, so the
//! script's end lands while the tools run. A run whose faults have
//! `hang-up` on and whose script ends that way hangs up there
//! ([`ends_in_hang_up`]); every other run waits for its calls' answers.
//! Both read only the script and the faults, so a saved or shrunk case
//! hangs up where it did.

use crate::soak::generate::faults::{FaultKind, Faults};
use crate::soak::generate::script::Generator;
use crate::testing::{Action, Call};

impl Generator<'_> {
    /// The last turn, cut short by the user hanging up: the user speaks,
    /// the model calls one tool or several at once (`parallel-calls`),
    /// and the script ends while they run.
    pub(super) fn hang_up_turn(&mut self) {
        self.user_says();
        let n = if self.fires(FaultKind::ParallelCalls) {
            self.shape.range(2..=3)
        } else {
            1
        };
        let mut calls: Vec<Call> = (0..n)
            .map(|_| Call {
                wait: false,
                ..self.one_call()
            })
            .collect();
        let quickest = calls
            .iter()
            .map(|c| self.latency_of(&c.name).start().as_millis() as u64)
            .min()
            .unwrap_or(0);
        match calls.len() {
            1 => self.push(Action::Call(calls.remove(0))),
            _ => self.push(Action::CallMany(calls)),
        }
        if quickest > 1 {
            let ms = self.gaps.range(0..=quickest / 2);
            if ms > 0 {
                self.push(Action::PauseMs(ms));
            }
        }
    }
}

/// Whether a run of `actions` under `faults` ends with the user hanging
/// up: `hang-up` is on and the script's last action, pauses aside, is a
/// tool message none of whose calls it waits for, or the script's own
/// end of the connection (a `close` or an `abort`): a session that
/// resumes is then reconnecting, and must stop.
///
/// ```
/// use livesim::soak::{FaultKind, Faults, ends_in_hang_up};
/// use livesim::testing::{Action, Call};
/// use serde_json::json;
///
/// let call = Call { id: "call-1".into(), name: "pay".into(), args: json!({}), wait: false };
/// let actions = [Action::Call(call), Action::PauseMs(20)];
/// assert!(ends_in_hang_up(&Faults::calm().with(FaultKind::HangUp, 0.2), &actions));
/// assert!(!ends_in_hang_up(&Faults::calm(), &actions));
/// // The script's own end of its connection: the user hangs up on the reconnect.
/// assert!(ends_in_hang_up(&Faults::calm().with(FaultKind::HangUp, 0.2), &[Action::Abort]));
/// ```
pub fn ends_in_hang_up(faults: &Faults, actions: &[Action]) -> bool {
    faults.is_on(FaultKind::HangUp)
        && match actions
            .iter()
            .rev()
            .find(|a| !matches!(a, Action::PauseMs(_)))
        {
            Some(Action::Call(call)) => !call.wait,
            Some(Action::CallMany(calls)) => calls.iter().all(|c| !c.wait),
            _ => ends_its_connection(actions),
        }
}

/// Whether the script's last action, pauses aside, ends its connection
/// (a `close` or an `abort`): a user who hangs up then does so once the
/// session says it is reconnecting, if it does.
pub(crate) fn ends_its_connection(actions: &[Action]) -> bool {
    matches!(
        actions
            .iter()
            .rev()
            .find(|a| !matches!(a, Action::PauseMs(_))),
        Some(Action::Close(_) | Action::Abort)
    )
}
