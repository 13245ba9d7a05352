//! Taped resolvers: a slot's or a field's fetch, recorded or replayed.

use std::future::Future;
use std::sync::Arc;

use futures::FutureExt;
use serde_json::Value;

use super::canonical::canonical_json;
use super::entry::{Tape, TapeEntry};
use crate::flow::Resolver;

/// Whether a taped resolver records calls or answers them from the tape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TapeMode {
    /// Call the real fetch and record each call.
    Record,
    /// Answer from the tape; the real fetch is never called.
    Replay,
}

/// Wraps a resolver's `fetch` so its calls are recorded on, or answered
/// from, `tape`. `name` scopes the recording (the entries' kind is
/// `resolver:<name>`), so two resolvers given the same arguments do not
/// answer for each other.
///
/// ```
/// use std::sync::Arc;
/// use livesim::tape::{MemoryTape, TapeMode, taped_resolver};
/// use serde_json::{Value, json};
///
/// async fn fetch_balance(args: Value) -> Result<Value, String> {
///     Ok(json!({ "account": args["account_id"], "balance": 42 }))
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let tape = Arc::new(MemoryTape::new());
/// let record = taped_resolver(tape.clone(), TapeMode::Record, "balance", fetch_balance);
/// record(json!({"account_id": "a1"})).await.unwrap();
///
/// let replay = taped_resolver(tape, TapeMode::Replay, "balance", fetch_balance);
/// assert_eq!(replay(json!({"account_id": "a1"})).await.unwrap()["balance"], 42);
/// assert!(replay(json!({"account_id": "zz"})).await.unwrap_err().contains(r#"{"account_id":"zz"}"#));
/// # });
/// ```
pub fn taped_resolver<T, F, Fut>(tape: Arc<T>, mode: TapeMode, name: &str, fetch: F) -> Resolver
where
    T: Tape + 'static,
    F: Fn(Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, String>> + Send + 'static,
{
    let kind = format!("resolver:{name}");
    let fetch = Arc::new(fetch);
    Arc::new(move |args: Value| {
        let tape = tape.clone();
        let kind = kind.clone();
        let fetch = fetch.clone();
        async move {
            match mode {
                TapeMode::Record => {
                    let outcome = fetch(args.clone()).await;
                    let entry = match &outcome {
                        Ok(value) => TapeEntry::ok(&kind, args, value.clone()),
                        Err(e) => TapeEntry::failed(&kind, args, Value::String(e.clone())),
                    };
                    tape.record(entry)
                        .map_err(|e| format!("{kind}: could not record the call: {e}"))?;
                    outcome
                }
                TapeMode::Replay => {
                    let canonical = canonical_json(&args);
                    let entry = tape.next(&kind, &canonical).ok_or_else(|| {
                        format!("{kind}: the tape holds no (more) recorded calls for {canonical}")
                    })?;
                    match (entry.output, entry.error) {
                        (_, Some(Value::String(e))) => Err(e),
                        (_, Some(other)) => Err(other.to_string()),
                        (Some(value), None) => Ok(value),
                        (None, None) => Err(format!("{kind}: a tape entry has no output")),
                    }
                }
            }
        }
        .boxed()
    })
}
