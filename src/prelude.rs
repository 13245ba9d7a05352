//! The names most sessions and tests use, in one import:
//! `use livesim::prelude::*;`.

pub use crate::compose::tools::{T, ToolComposite, ToolError, ToolResult};
pub use crate::flow::{CompiledConversation, Conversation, Enforcement, Flow, FlowSpec, Guard};
pub use crate::session::Extract;
pub use crate::session::{
    Lane, Live, LiveBuilder, LiveEvent, LiveHandle, LiveSessionBuilder, Phases, TemporalPattern,
};
pub use crate::state::State;
