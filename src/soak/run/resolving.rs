//! Slot resolvers, recorded: every run of the resolvers of a session's
//! conversation, each wrapped as the builder gave it, kept for
//! `resolvers-follow-spec`.

use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use serde_json::Value;

use crate::executor;
use crate::flow::{CompiledConversation, Resolver};
use crate::soak::run::shared_log::SharedLog;

/// A resolved slot of the session's conversation, as declared.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedSlot {
    /// The stage it belongs to.
    pub stage: String,
    /// The state key it fills.
    pub slot: String,
    /// The state keys its resolver reads.
    pub inputs: Vec<String>,
}

/// One run of a slot's resolver.
#[derive(Clone, Debug, PartialEq)]
pub struct Resolution {
    /// The slot.
    pub slot: String,
    /// What the resolver was given: an object of input key → value.
    pub args: Value,
    /// When it started (virtual time).
    pub started: Duration,
    /// When it ended, if it did.
    pub finished: Option<Duration>,
    /// Its value, or its error; `None` while unfinished.
    pub outcome: Option<Result<Value, String>>,
}

/// The resolver runs of one session, shared with the recorders.
pub(crate) type ResolveLog = SharedLog<Resolution>;

/// The conversation's resolved slots, and its resolvers wrapped to record
/// each run in `log` (each still runs as given).
pub(crate) fn recorded(
    conversation: &CompiledConversation,
    log: &ResolveLog,
) -> (CompiledConversation, Vec<ResolvedSlot>) {
    let slots = conversation
        .resolved_slots_by_stage()
        .map(|(stage, slot)| ResolvedSlot {
            stage: stage.to_string(),
            slot: slot.key.clone(),
            inputs: slot.resolve_from.clone().unwrap_or_default(),
        })
        .collect();
    let mut conversation = conversation.clone();
    conversation.wrap_resolvers(|slot, inner| {
        let (log, slot) = (log.clone(), slot.to_string());
        let wrapped: Resolver = Arc::new(move |args: Value| {
            let (log, slot, inner) = (log.clone(), slot.clone(), inner.clone());
            async move {
                let index = {
                    let mut runs = log.lock();
                    runs.push(Resolution {
                        slot,
                        args: args.clone(),
                        started: executor::now(),
                        finished: None,
                        outcome: None,
                    });
                    runs.len() - 1
                };
                let outcome = inner(args).await;
                if let Some(run) = log.lock().get_mut(index) {
                    run.finished = Some(executor::now());
                    run.outcome = Some(outcome.clone());
                }
                outcome
            }
            .boxed()
        });
        wrapped
    });
    (conversation, slots)
}
