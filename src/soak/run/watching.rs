//! Watchers, recorded: every call of a session's state watchers, each
//! wrapped as the builder gave it, kept for `watchers-follow-journal`.
//! (An agent file's session watches every key its tools write.)

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::executor;
use crate::session::WatchCallback;
use crate::soak::run::shared_log::SharedLog;
use crate::state::State;

/// One call of a watcher.
#[derive(Clone, Debug, PartialEq)]
pub struct WatchCall {
    /// Which watcher (an index into [`RunRecord::watched`](super::record::RunRecord::watched)).
    pub watcher: usize,
    /// When it was called (virtual time).
    pub at: Duration,
    /// The value it was told the key had before.
    pub old: Option<Value>,
    /// The value it was told the key has now (`null` once removed).
    pub new: Value,
}

/// A watcher the session had: its key and the key's value when the
/// session was built.
#[derive(Clone, Debug, PartialEq)]
pub struct Watched {
    /// The key it watches.
    pub key: String,
    /// The key's value in the state the session was given.
    pub initial: Option<Value>,
}

/// The calls of one session's watchers, shared with the recorders.
pub(crate) type WatchLog = SharedLog<WatchCall>;

/// The session's watchers, each still called and recording its calls in
/// `log`; and what each watches.
pub(crate) fn recorded(
    watchers: &[(String, WatchCallback)],
    state: &State,
    log: &WatchLog,
) -> (Vec<(String, WatchCallback)>, Vec<Watched>) {
    let mut out = Vec::new();
    let mut watched = Vec::new();
    for (index, (key, inner)) in watchers.iter().enumerate() {
        watched.push(Watched {
            key: key.clone(),
            initial: state.get(key),
        });
        let (log, inner) = (log.clone(), inner.clone());
        let callback: WatchCallback = Arc::new(move |key, old, new, state| {
            log.lock().push(WatchCall {
                watcher: index,
                at: executor::now(),
                old: old.cloned(),
                new: new.clone(),
            });
            inner(key, old, new, state);
        });
        out.push((key.clone(), callback));
    }
    (out, watched)
}
