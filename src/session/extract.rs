//! Records with resolved fields: `Extract::record(…).field_resolve(…)`.
//!
//! A record names a group of state keys. A resolved field is filled by a
//! [`Resolver`] from other state keys (its inputs) once all of them are
//! set, and written as `<record>:<field>`. Results are cached per input
//! values; a field's `ttl` says how long a cached value stays good, read
//! from the session's clock (no ttl: for the whole session), so a
//! [`ManualClock`](crate::clock::ManualClock) decides when a resolver is
//! called again.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::{Map, Value};

use super::extractors::{Extracted, Extractor, TurnContext};
use crate::clock::Timestamp;
use crate::flow::Resolver;
use crate::tape::canonical_json;

/// Entry point: `Extract::record(name)`.
pub struct Extract;

impl Extract {
    /// A record named `name`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use livesim::flow::resolver;
    /// use livesim::session::Extract;
    /// use serde_json::{Value, json};
    ///
    /// let account = Extract::record("account")
    ///     .field_resolve("balance", ["account_id"], Some(Duration::from_secs(60)),
    ///         resolver(|args: Value| async move { Ok(json!({ "for": args["account_id"] })) }))
    ///     .build();
    /// # let _ = account;
    /// ```
    pub fn record(name: impl Into<String>) -> RecordBuilder {
        RecordBuilder {
            name: name.into(),
            fields: Vec::new(),
        }
    }
}

struct Field {
    name: String,
    inputs: Vec<String>,
    ttl: Option<Duration>,
    resolver: Resolver,
}

/// A record being described.
pub struct RecordBuilder {
    name: String,
    fields: Vec<Field>,
}

impl RecordBuilder {
    /// A field filled by `resolver` from the state keys `inputs` (passed as
    /// an object of those keys), cached for `ttl` of clock time.
    pub fn field_resolve<I, S>(
        mut self,
        field: impl Into<String>,
        inputs: I,
        ttl: Option<Duration>,
        resolver: Resolver,
    ) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.fields.push(Field {
            name: field.into(),
            inputs: inputs.into_iter().map(Into::into).collect(),
            ttl,
            resolver,
        });
        self
    }

    /// The record, ready for `Live::builder().extract(…)`.
    pub fn build(self) -> RecordExtractor {
        RecordExtractor {
            inner: Arc::new(Record {
                name: self.name,
                fields: self.fields,
                cache: Mutex::new(BTreeMap::new()),
            }),
        }
    }
}

/// A record whose resolved fields are kept up to date after each turn.
#[derive(Clone)]
pub struct RecordExtractor {
    inner: Arc<Record>,
}

struct Record {
    name: String,
    fields: Vec<Field>,
    /// (field, canonical args) → (value, fetched at).
    cache: Mutex<BTreeMap<(String, String), (Value, Timestamp)>>,
}

impl RecordExtractor {
    /// The state key a field is written to: `<record>:<field>`.
    pub fn key(&self, field: &str) -> String {
        format!("{}:{field}", self.inner.name)
    }
}

impl Extractor for RecordExtractor {
    fn name(&self) -> &str {
        &self.inner.name
    }

    fn extract(&self, turn: TurnContext) -> BoxFuture<'static, Result<Extracted, String>> {
        let record = self.inner.clone();
        async move {
            let mut writes = Vec::new();
            for field in &record.fields {
                let args: Option<Map<String, Value>> = field
                    .inputs
                    .iter()
                    .map(|key| Some((key.clone(), turn.state.get(key).filter(|v| !v.is_null())?)))
                    .collect();
                let Some(args) = args else { continue };
                let args = Value::Object(args);
                let cache_key = (field.name.clone(), canonical_json(&args));
                let now = turn.clock.now();
                let cached = record
                    .cache
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .get(&cache_key)
                    .filter(|(_, at)| field.ttl.is_none_or(|ttl| now - *at < ttl))
                    .map(|(value, _)| value.clone());
                let value = match cached {
                    Some(value) => value,
                    None => {
                        let value = (field.resolver)(args)
                            .await
                            .map_err(|e| format!("field {}:{}: {e}", record.name, field.name))?;
                        record
                            .cache
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .insert(cache_key, (value.clone(), now));
                        value
                    }
                };
                let key = format!("{}:{}", record.name, field.name);
                if turn.state.get(&key).as_ref() != Some(&value) {
                    writes.push((key, value));
                }
            }
            Ok(writes)
        }
        .boxed()
    }
}
