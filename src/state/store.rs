//! The store behind [`State`]: values, clock, journal sinks and change
//! subscribers, shared by every clone and view.

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::mpsc;

use super::journal::{JournalSink, StateMutation};
use crate::clock::{IntoSharedClock, SharedClock, Timestamp, default_clock};

/// The session's key/value state.
///
/// Cloning is cheap and shares everything; [`State::scoped`] makes a view
/// whose keys live under a prefix of the same store.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use livesim::clock::ManualClock;
/// use livesim::state::State;
/// use serde_json::json;
///
/// let clock = Arc::new(ManualClock::new());
/// let state = State::new().with_clock(clock.clone());
/// let t0 = state.clock().now();
/// clock.advance(Duration::from_secs(5));
/// assert_eq!(state.clock().now() - t0, Duration::from_secs(5));
///
/// state.set("confirmed", true);
/// assert!(state.is_true("confirmed"));
/// let user = state.scoped("user:");
/// user.set("name", "Ada");
/// assert_eq!(state.get("user:name"), Some(json!("Ada")));
/// ```
#[derive(Clone)]
pub struct State {
    store: Arc<Store>,
    prefix: Arc<str>,
}

struct Store {
    inner: Mutex<Inner>,
    clock: RwLock<SharedClock>,
}

struct Inner {
    values: BTreeMap<String, Value>,
    next_seq: u64,
    last_timestamp: Timestamp,
    sinks: Vec<Arc<dyn JournalSink>>,
    subscribers: Vec<mpsc::UnboundedSender<StateMutation>>,
}

impl Default for State {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("State")
            .field("prefix", &&*self.prefix)
            .field("values", &self.snapshot())
            .finish()
    }
}

impl State {
    /// An empty state with the default clock (virtual under simulation,
    /// the system clock elsewhere) and no journal sink.
    pub fn new() -> Self {
        State {
            store: Arc::new(Store {
                inner: Mutex::new(Inner {
                    values: BTreeMap::new(),
                    next_seq: 1,
                    last_timestamp: Timestamp::EPOCH,
                    sinks: Vec::new(),
                    subscribers: Vec::new(),
                }),
                clock: RwLock::new(default_clock()),
            }),
            prefix: Arc::from(""),
        }
    }

    fn inner(&self) -> MutexGuard<'_, Inner> {
        // Every write leaves the map consistent before it can panic, so a
        // poisoned lock still guards a valid store.
        self.store.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn full_key(&self, key: &str) -> String {
        // Two copies, not `format!`: every write (the session's telemetry
        // writes three keys a tick) builds its key here.
        let mut full = String::with_capacity(self.prefix.len() + key.len());
        full.push_str(&self.prefix);
        full.push_str(key);
        full
    }

    /// Uses `clock` for this state and everything sharing it.
    pub fn with_clock(self, clock: impl IntoSharedClock) -> Self {
        self.set_clock(clock);
        self
    }

    /// Replaces the clock of this state and everything sharing it. Set it
    /// before a session starts: some components capture the clock when
    /// they are built.
    pub fn set_clock(&self, clock: impl IntoSharedClock) {
        *self.store.clock.write().unwrap_or_else(|p| p.into_inner()) = clock.into_shared_clock();
    }

    /// The clock this state's timestamps come from.
    pub fn clock(&self) -> SharedClock {
        self.store
            .clock
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Sends every later write to `sink` too.
    pub fn with_journal_sink<S: JournalSink + 'static>(self, sink: Arc<S>) -> Self {
        self.add_journal_sink(sink);
        self
    }

    /// Sends every later write to `sink` too.
    pub fn add_journal_sink(&self, sink: Arc<dyn JournalSink>) {
        self.inner().sinks.push(sink);
    }

    /// A view of this state whose keys are prefixed with `prefix`; it
    /// shares the store, the clock and the journal.
    pub fn scoped(&self, prefix: &str) -> State {
        State {
            store: self.store.clone(),
            prefix: Arc::from(format!("{}{prefix}", self.prefix)),
        }
    }

    /// The value at `key`.
    pub fn get(&self, key: &str) -> Option<Value> {
        self.inner().values.get(&self.full_key(key)).cloned()
    }

    /// The value at `key`, deserialized; `None` if absent or of another
    /// shape.
    pub fn get_as<T: DeserializeOwned>(&self, key: &str) -> Option<T> {
        self.get(key).and_then(|v| serde_json::from_value(v).ok())
    }

    /// Whether `key` holds a value.
    pub fn contains(&self, key: &str) -> bool {
        self.inner().values.contains_key(&self.full_key(key))
    }

    /// Whether `key` holds `true`.
    pub fn is_true(&self, key: &str) -> bool {
        self.get(key) == Some(Value::Bool(true))
    }

    /// Writes `value` at `key` and journals it.
    pub fn set(&self, key: impl AsRef<str>, value: impl Into<Value>) {
        self.write(self.full_key(key.as_ref()), value.into(), false);
    }

    /// Serializes `value` and writes it at `key`.
    ///
    /// # Errors
    /// When `value` cannot be represented as JSON (e.g. a map with
    /// non-string keys).
    pub fn set_serialized<T: Serialize + ?Sized>(
        &self,
        key: impl AsRef<str>,
        value: &T,
    ) -> Result<(), serde_json::Error> {
        let value = serde_json::to_value(value)?;
        self.set(key, value);
        Ok(())
    }

    /// Removes `key` (journaled as a removal). Returns the old value.
    pub fn remove(&self, key: &str) -> Option<Value> {
        let full = self.full_key(key);
        let old = self.inner().values.get(&full).cloned();
        if old.is_some() {
            self.write(full, Value::Null, true);
        }
        old
    }

    fn write(&self, key: String, value: Value, removed: bool) {
        // Read under the lock: no copy of the shared clock per write.
        let now = self
            .store
            .clock
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .now();
        let mut inner = self.inner();
        // Timestamps never go backwards, even if the clock is swapped for
        // an earlier one.
        let timestamp = now.max(inner.last_timestamp);
        inner.last_timestamp = timestamp;
        let seq = inner.next_seq;
        inner.next_seq += 1;
        if removed {
            inner.values.remove(&key);
        } else if let Some(slot) = inner.values.get_mut(&key) {
            // A key written before keeps its entry: no copy of the key.
            *slot = value.clone();
        } else {
            inner.values.insert(key.clone(), value.clone());
        }
        // Who wrote what, in order: a race between two writers on one key
        // shows in a failure report's trace.
        crate::executor::record_detailed_with(
            |head| {
                head.push_str("state ");
                head.push_str(&key);
            },
            |detail| {
                if removed {
                    detail.push_str(" removed");
                } else {
                    detail.push_str(" = ");
                    Brief(&value).write_to(detail);
                }
                detail.push_str(" (seq ");
                detail.push_str(itoa::Buffer::new().format(seq));
                detail.push(')');
            },
        );
        let mutation = StateMutation {
            seq,
            key,
            value,
            timestamp,
            removed,
        };
        // Sinks run under the lock so that the journal's order is the
        // order of the writes, even with writers on several threads.
        for sink in &inner.sinks {
            sink.record(&mutation);
        }
        send_to_all(&mut inner.subscribers, mutation);
    }

    /// Every key and value visible in this view (prefix removed), in key
    /// order.
    pub fn snapshot(&self) -> BTreeMap<String, Value> {
        let inner = self.inner();
        inner
            .values
            .range(self.prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(&*self.prefix))
            .map(|(k, v)| (k[self.prefix.len()..].to_string(), v.clone()))
            .collect()
    }

    /// Every key and value in the store, whatever this view's prefix, keys
    /// in full: what a journal of the whole store must rebuild (the soak's
    /// `journal-rebuilds-state`).
    #[cfg(feature = "simulation")]
    pub(crate) fn whole_store(&self) -> BTreeMap<String, Value> {
        self.inner().values.clone()
    }

    /// How many writes have been journaled (the last sequence number).
    pub fn last_seq(&self) -> u64 {
        self.inner().next_seq - 1
    }

    /// A stream of every later write to the store (any prefix), in order.
    /// Watchers read it; nothing is dropped while the receiver lives.
    pub fn changes(&self) -> StateChanges {
        let (tx, rx) = mpsc::unbounded_channel();
        self.inner().subscribers.push(tx);
        StateChanges { rx }
    }
}

/// Sends `mutation` to every subscriber, the last one taking it without
/// a copy; a subscriber whose receiver is gone is dropped.
fn send_to_all(
    subscribers: &mut Vec<mpsc::UnboundedSender<StateMutation>>,
    mutation: StateMutation,
) {
    let last = subscribers.len().wrapping_sub(1);
    let mut mutation = Some(mutation);
    let mut index = 0;
    subscribers.retain(|subscriber| {
        let this = if index == last {
            mutation.take()
        } else {
            mutation.clone()
        };
        index += 1;
        this.is_some_and(|m| subscriber.send(m).is_ok())
    });
}

/// A JSON value as a trace line shows it: compact, cut to a readable
/// length.
pub(crate) struct Brief<'a>(pub &'a Value);

/// The longest a [`Brief`] value gets before it is cut.
const BRIEF_MAX: usize = 120;

impl Brief<'_> {
    /// The text of a value that is written as it is (null, a flag, an
    /// integer's literal as it came, `-0` staying `-0`): the values written
    /// most (counters, flags, the session's telemetry), which need neither
    /// the serializer nor a cut.
    fn as_is(&self) -> Option<&str> {
        match self.0 {
            Value::Null => Some("null"),
            Value::Bool(true) => Some("true"),
            Value::Bool(false) => Some("false"),
            Value::Number(n) if is_short_integer(n.as_str()) => Some(n.as_str()),
            _ => None,
        }
    }

    /// Writes the value onto `out` as [`Display`](std::fmt::Display)
    /// shows it; a value written as it is is copied without the
    /// formatting machinery.
    pub(crate) fn write_to(&self, out: &mut String) {
        match self.as_is() {
            Some(text) => out.push_str(text),
            None => {
                let _ = write!(out, "{self}");
            }
        }
    }
}

/// Whether `literal` is an integer (`-`, then digits) short enough that
/// [`Brief`] never cuts it: the serializer would write it unchanged.
fn is_short_integer(literal: &str) -> bool {
    let digits = literal.strip_prefix('-').unwrap_or(literal);
    !digits.is_empty() && literal.len() <= BRIEF_MAX && digits.bytes().all(|b| b.is_ascii_digit())
}

impl std::fmt::Display for Brief<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(text) = self.as_is() {
            return f.write_str(text);
        }
        let text = crate::wire::to_json(self.0);
        let cut = crate::wire::truncate_at_char(&text, BRIEF_MAX);
        if cut.len() == text.len() {
            f.write_str(&text)
        } else {
            write!(f, "{cut}… ({} bytes)", text.len())
        }
    }
}

/// Writes to a [`State`], in order, from the moment of subscription.
#[derive(Debug)]
pub struct StateChanges {
    rx: mpsc::UnboundedReceiver<StateMutation>,
}

impl StateChanges {
    /// The next write; `None` once the state is gone.
    pub async fn next(&mut self) -> Option<StateMutation> {
        self.rx.recv().await
    }

    /// The next write if one is waiting.
    pub fn try_next(&mut self) -> Option<StateMutation> {
        self.rx.try_recv().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::state::MemoryJournalSink;
    use serde_json::json;

    /// A value's brief is its compact JSON, cut after 120 bytes with the
    /// length said: for every kind of value, the shortcut for flags and
    /// integers included.
    #[test]
    fn brief_is_the_compact_json_cut_to_length() {
        let long = "x".repeat(200);
        let literals = [
            "null",
            "true",
            "false",
            "0",
            "-0",
            "17",
            "-17",
            "18446744073709551615",
            "18446744073709551616",
            "-9223372036854775808",
            "1.5",
            "1e400",
            "\"short\"",
            "[1,2,3]",
            "{\"a\":{\"b\":[true,null]}}",
        ];
        let huge = "9".repeat(130);
        let with_huge: Vec<&str> = literals.iter().copied().chain([huge.as_str()]).collect();
        for literal in with_huge {
            let value: Value = serde_json::from_str(literal).unwrap();
            let whole = value.to_string();
            let expected = if whole.len() > 120 {
                format!("{}… ({} bytes)", &whole[..120], whole.len())
            } else {
                whole
            };
            assert_eq!(Brief(&value).to_string(), expected, "{literal}");
            // Written straight into a trace's text, the same.
            let mut written = String::from("> ");
            Brief(&value).write_to(&mut written);
            assert_eq!(written, format!("> {expected}"), "{literal}");
        }
        let value = Value::String(long.clone());
        let shown = Brief(&value).to_string();
        // The quote and 119 x's, then the whole length (202 with quotes).
        assert_eq!(shown, format!("\"{}… (202 bytes)", &long[..119]));
        let mut written = String::new();
        Brief(&value).write_to(&mut written);
        assert_eq!(written, shown);
    }
    use std::time::Duration;

    #[test]
    fn writes_are_journaled_in_order_with_clock_timestamps() {
        let clock = Arc::new(ManualClock::starting_at(Timestamp::from_unix_millis(1000)));
        let journal = Arc::new(MemoryJournalSink::new());
        let state = State::new()
            .with_clock(clock.clone())
            .with_journal_sink(journal.clone());
        state.set("a", 1);
        clock.advance(Duration::from_millis(250));
        state.scoped("user:").set("name", "Ada");
        assert_eq!(state.remove("a"), Some(json!(1)));
        assert_eq!(state.remove("a"), None);
        let entries = journal.entries();
        let seqs: Vec<u64> = entries.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [1, 2, 3]);
        assert_eq!(entries[1].key, "user:name");
        assert_eq!(entries[1].timestamp, Timestamp::from_unix_millis(1250));
        assert!(entries[2].removed);
        // A removal holds no value: the journal says `null`, not what went.
        assert_eq!(entries[2].value, Value::Null);
        assert_eq!(state.last_seq(), 3);
    }

    #[test]
    fn timestamps_never_go_backwards_when_the_clock_is_swapped() {
        let journal = Arc::new(MemoryJournalSink::new());
        let state = State::new()
            .with_clock(Arc::new(ManualClock::starting_at(
                Timestamp::from_unix_millis(5000),
            )))
            .with_journal_sink(journal.clone());
        state.set("x", 1);
        state.set_clock(Arc::new(ManualClock::starting_at(
            Timestamp::from_unix_millis(10),
        )));
        state.set("x", 2);
        let entries = journal.entries();
        assert!(entries[1].timestamp >= entries[0].timestamp);
    }

    #[test]
    fn scoped_views_share_store_and_clock() {
        let state = State::new();
        let a = state.scoped("a:");
        let ab = a.scoped("b:");
        ab.set("k", true);
        assert_eq!(state.get("a:b:k"), Some(json!(true)));
        assert_eq!(
            a.snapshot(),
            BTreeMap::from([("b:k".to_string(), json!(true))])
        );
        assert!(Arc::ptr_eq(&state.clock(), &ab.clock()));
        assert_eq!(state.snapshot().len(), 1);
    }

    /// A view's snapshot holds its own keys only: not the keys that sort
    /// after its prefix without starting with it, nor those before it.
    #[test]
    fn a_views_snapshot_holds_only_the_keys_under_its_prefix() {
        let state = State::new();
        for key in ["a", "user", "user:name", "user:x", "userz", "user;", "v"] {
            state.set(key, key);
        }
        let expected = BTreeMap::from([
            ("name".to_string(), json!("user:name")),
            ("x".to_string(), json!("user:x")),
        ]);
        assert_eq!(state.scoped("user:").snapshot(), expected);
        assert_eq!(state.snapshot().len(), 7);
    }

    #[test]
    fn journal_lines_have_the_documented_shape() {
        let m = StateMutation {
            seq: 3,
            key: "party_size".into(),
            value: json!(4),
            timestamp: Timestamp::from_unix_millis(1_767_225_600_250),
            removed: false,
        };
        let line = serde_json::to_string(&m).unwrap();
        assert_eq!(
            line,
            r#"{"seq":3,"key":"party_size","value":4,"timestamp":1767225600250}"#
        );
        assert_eq!(serde_json::from_str::<StateMutation>(&line).unwrap(), m);
    }

    #[tokio::test]
    async fn watchers_see_every_change_in_order() {
        let state = State::new();
        let mut changes = state.changes();
        for i in 0..5 {
            state.set("n", i);
        }
        for i in 0..5 {
            assert_eq!(changes.next().await.unwrap().value, json!(i));
        }
        assert!(changes.try_next().is_none());
    }

    /// Every live watcher gets every write, whichever of them was
    /// dropped (first, last, or in between), and a dropped one is let go.
    #[tokio::test]
    async fn every_live_watcher_sees_each_write() {
        for dropped in 0..3 {
            let state = State::new();
            let mut watchers: Vec<Option<StateChanges>> =
                (0..3).map(|_| Some(state.changes())).collect();
            watchers[dropped] = None;
            state.set("k", 1);
            state.set("k", 2);
            for watcher in watchers.iter_mut().flatten() {
                assert_eq!(watcher.next().await.unwrap().value, json!(1));
                assert_eq!(watcher.next().await.unwrap().value, json!(2));
            }
            assert_eq!(state.inner().subscribers.len(), 2, "dropped #{dropped}");
        }
    }
}
