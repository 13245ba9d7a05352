//! Scenarios: flow governance tested without a session, a model or a
//! network.
//!
//! A [`Scenario`] is a named list of [`Step`]s: tool calls the flow must
//! admit or refuse, results, state writes, failures, interruptions, turn
//! boundaries and the steps that must then be active. [`Sim`] applies them
//! to a [`FlowMonitor`](crate::flow::FlowMonitor) with the same semantics
//! the session's control lane has; [`Scenario::from_journal`] turns a
//! recorded session's journal into a scenario, so a spec change can be
//! checked against what a real session did.
//!
//! This layer owns the scenario vocabulary and its JSON shape, the
//! simulator, the journal-to-scenario mapping ([`JournalFile`] reads a
//! journal file with the line of every entry), replays that report every
//! decision a spec makes differently from a recording
//! ([`Scenario::replay`], [`Scenario::replay_to`]), and scenario corpora
//! run as a CI job ([`Corpus`], with JUnit output). The `livesim session`
//! and `livesim flow` commands are thin layers over these.
//!
//! ```
//! use livesim::flow::{Enforcement, Flow, Guard};
//! use livesim::simulation::{Scenario, Step};
//!
//! let spec = Flow::new()
//!     .step("verify").allow(["verify_identity"]).done(Guard::called_ok("verify_identity"))
//!     .step("pay").after("verify").allow(["take_payment"]).done(Guard::called_ok("take_payment"))
//!     .build()
//!     .unwrap();
//! let scenario = Scenario::new("pay-after-verify", vec![
//!     Step::ExpectDenied("take_payment".into()),
//!     Step::ToolOk("verify_identity".into()),
//!     Step::ExpectActive(vec!["pay".into()]),
//!     Step::ExpectAllowed("take_payment".into()),
//! ]);
//! scenario.run_now(&spec, Enforcement::Enforce).unwrap();
//! ```

mod corpus;
mod from_journal;
mod journal_file;
#[cfg(feature = "junit")]
pub(crate) mod junit;
mod replay;
mod scenario;
mod sim;
mod step;

pub use corpus::{Corpus, CorpusError, CorpusReport, ScenarioOutcome, ScenarioResult};
#[cfg(feature = "simulation")]
pub(crate) use from_journal::not_a_flow_key;
pub use from_journal::{JournalError, JournalRecord, RUNTIME_PREFIXES};
#[cfg(feature = "simulation")]
pub(crate) use journal_file::out_of_order;
pub use journal_file::{JournalFile, JournalFileError, JournalLine};
pub use replay::{Divergence, ReplayLine, ReplayReport, TurnOutOfRange, TurnReplay};
pub use scenario::{Scenario, ScenarioFailure, ScenarioFileError};
pub use sim::Sim;
pub use step::Step;
