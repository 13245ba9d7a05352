//! Flow governance: which tools a session may call, and when.
//!
//! A flow is a set of **steps**. Each step allows some tools, may come
//! **after** other steps, and is **done** once a [`Guard`] holds: a guard
//! reads the tool outcomes the monitor observed (`called_ok("verify_identity")`)
//! and state values (`is_true("confirmed")`). A step is active while
//! everything it comes after is done and it is not done itself; a tool call
//! is admitted only if some active step allows it.
//!
//! This layer owns:
//!
//! * the specs: [`Flow`] (steps) and [`Conversation`] (stages with slots,
//!   commit tools behind guards, escalation), both compiled to one
//!   [`FlowSpec`];
//! * the [`FlowMonitor`] the session's control lane calls for every tool
//!   call, result, failure, interruption and turn boundary, under an
//!   [`Enforcement`] (Enforce refuses, Observe only records); its
//!   semantics (evaluation points, latching, escalation) are documented on
//!   [`FlowMonitor`];
//! * the journal vocabulary: the `flow:*` keys and values the session writes
//!   ([`FlowEntry`], the keys in [`keys`]);
//! * [`Explanation`]s: active steps, what each waits for, which tools are
//!   refused and why;
//! * spec files (`<name>.spec.json`), schema on [`Spec`].
//!
//! It does no I/O except reading and writing spec files, and knows nothing
//! of the session: state comes in through [`StateView`].
//!
//! ```
//! use std::collections::BTreeMap;
//! use livesim::flow::{Enforcement, Flow, FlowEntry, FlowMonitor, Guard};
//!
//! let spec = Flow::new()
//!     .step("verify").allow(["verify_identity"]).done(Guard::called_ok("verify_identity"))
//!     .step("pay").after("verify").allow(["take_payment"]).done(Guard::called_ok("take_payment"))
//!     .build()
//!     .unwrap();
//! let mut monitor = FlowMonitor::new(spec, Enforcement::Enforce);
//! let state = BTreeMap::new();
//!
//! let early = monitor.gate("take_payment", "call-1", &state).unwrap();
//! assert_eq!(early.entries()[0].key(), "flow:tool_denied");
//! assert!(early.reason().unwrap().starts_with(
//!     "take_payment is not allowed now: active steps are [verify], which allow [verify_identity]"
//! ));
//!
//! let verify = monitor.gate("verify_identity", "call-2", &state).unwrap();
//! assert_eq!(verify.entries(), [FlowEntry::ToolCall { tool: "verify_identity".into(), id: "call-2".into() }]);
//! monitor.record_result("call-2", true, &state).unwrap();
//! assert!(monitor.gate("take_payment", "call-3", &state).unwrap().admitted());
//! ```

mod admission;
mod builder;
mod conversation;
mod decision;
mod error;
mod explain;
pub(crate) mod guard;
mod journal;
pub(crate) mod json_position;
mod monitor;
mod resolver;
mod spec;
mod spec_decode;
mod spec_file;
mod state_view;

pub use builder::Flow;
pub use conversation::{CompiledConversation, Conversation, SlotSpec, StageSpec};
pub use decision::{Decision, Enforcement, Verdict};
pub use error::{CallError, FlowError};
pub use explain::{ActiveStep, Explanation, GateState, ToolAnswer, WaitingStep};
pub use guard::{Guard, ToolTally, Unmet};
pub use journal::FlowEntry;

/// The `flow:*` keys of the session's state journal, one per kind of
/// [`FlowEntry`] (the table of values is on [`FlowEntry`]).
pub mod keys {
    pub use super::journal::{
        ACTIVE, ALL, ESCALATED, INTERRUPTED, TOOL_CALL, TOOL_CANCELLED, TOOL_DENIED, TOOL_FAILED,
        TOOL_RESULT, TOOL_WOULD_DENY,
    };
}
pub use monitor::{FlowMonitor, TurnEvaluation};
pub use resolver::{DueResolution, Resolver, resolver};
pub use spec::{Escalation, FlowSpec, StepSpec};
pub use spec_file::{SPEC_VERSION, Spec, SpecFileError};
pub use state_view::{NoState, StateView};
