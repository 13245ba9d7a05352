//! Tools: named async functions the model may call, declared in setup.
//!
//! [`T`] makes them (`T::simple` for JSON arguments, `T::typed` for a
//! struct), and a [`ToolComposite`] carries one or more of them to the
//! session builder; composites combine with `|`. A tool returns
//! `Ok(json)` or an error; the session turns an error (or a panic, or a
//! timeout) into `{"error": "…"}` for the model, and wraps a result that
//! is not a JSON object as `{"result": …}`, because the protocol only
//! accepts objects. While a session runs a tool, [`call_id`] names the
//! call it is answering.

use std::fmt;
use std::future::Future;
use std::ops::BitOr;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// What a tool fails with: any error type converts into it, so `?` and
/// `Err("unknown city".into())` both work.
pub type ToolError = Box<dyn std::error::Error + Send + Sync>;

/// What a tool returns.
pub type ToolResult = Result<Value, ToolError>;

type ToolFn = dyn Fn(Value) -> BoxFuture<'static, ToolResult> + Send + Sync;

/// One tool: its declaration and its implementation.
#[derive(Clone)]
pub struct Tool {
    name: String,
    description: String,
    parameters: Option<Value>,
    timeout: Option<Duration>,
    run: Arc<ToolFn>,
}

/// A tool's `functionDeclarations` entry: its name, what it does, and
/// its parameters' schema when it has one.
pub(crate) struct Declaration<'a>(&'a Tool);

impl serde::Serialize for Declaration<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let tool = self.0;
        let mut declaration = serializer.serialize_map(None)?;
        declaration.serialize_entry("name", &tool.name)?;
        declaration.serialize_entry("description", &tool.description)?;
        if let Some(parameters) = &tool.parameters {
            declaration.serialize_entry("parameters", parameters)?;
        }
        declaration.end()
    }
}

impl fmt::Debug for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.name)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl Tool {
    /// The name the model calls it by.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What the model is told it does.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// How long a call may run before it is answered with a timeout error.
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// The `functionDeclarations` entry sent in setup.
    pub fn declaration(&self) -> Value {
        // Infallible: string keys, JSON values.
        serde_json::to_value(self.declared()).unwrap_or(Value::Null)
    }

    /// The declaration, to write without building it.
    pub(crate) fn declared(&self) -> Declaration<'_> {
        Declaration(self)
    }

    /// Runs the tool on `args`. A panic inside the tool is not caught here;
    /// the session's dispatcher catches it.
    pub fn call(&self, args: Value) -> BoxFuture<'static, ToolResult> {
        (self.run)(args)
    }

    /// The same tool (name, description, parameters, timeout) with every
    /// run passed through `around`, which gets the call's arguments and
    /// the tool's own run: how the soak records each execution of a
    /// user's tools without changing what they do.
    #[cfg(feature = "simulation")]
    pub(crate) fn around<F>(&self, around: F) -> Tool
    where
        F: Fn(Value, BoxFuture<'static, ToolResult>) -> BoxFuture<'static, ToolResult>
            + Send
            + Sync
            + 'static,
    {
        let inner = self.run.clone();
        Tool {
            run: Arc::new(move |args: Value| around(args.clone(), inner(args))),
            ..self.clone()
        }
    }
}

tokio::task_local! {
    static CALL_ID: String;
}

/// The id of the tool call being answered, while a session runs a tool's
/// future; `None` anywhere else (a task the tool spawns included).
///
/// A tool can use it to tell two calls with the same arguments apart in
/// its own records, or as an idempotency key within one connection: ids
/// belong to the connection that issued them, and a server may number a
/// new connection's calls from `call-1` again.
///
/// ```
/// use livesim::compose::tools::{T, call_id};
/// use serde_json::json;
///
/// let charge = T::simple("charge", "Charges a card once per call", |_args| async move {
///     Ok(json!({ "receipt": call_id().unwrap_or_default() }))
/// });
/// assert_eq!(call_id(), None); // not inside a session's tool run
/// # let _ = charge;
/// ```
pub fn call_id() -> Option<String> {
    CALL_ID.try_with(Clone::clone).ok()
}

/// Runs `run` as the answer to call `id`: [`call_id`] returns it inside.
pub(crate) async fn answering<F: std::future::Future>(id: String, run: F) -> F::Output {
    CALL_ID.scope(id, run).await
}

/// One or more tools, as the session builder takes them.
///
/// ```
/// use livesim::compose::tools::{T, ToolComposite};
/// use serde_json::json;
///
/// let tools: ToolComposite = T::simple("ping", "Answers pong", |_| async { Ok(json!("pong")) })
///     | T::simple("echo", "Echoes its arguments", |args| async move { Ok(args) });
/// assert_eq!(tools.names(), ["ping", "echo"]);
/// ```
#[derive(Clone, Debug, Default)]
pub struct ToolComposite {
    tools: Vec<Tool>,
}

impl ToolComposite {
    /// No tools.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds every tool of `other`.
    pub fn with(mut self, other: impl Into<ToolComposite>) -> Self {
        self.tools.extend(other.into().tools);
        self
    }

    /// Gives every tool in the composite a per-call deadline.
    pub fn timeout(mut self, deadline: Duration) -> Self {
        for tool in &mut self.tools {
            tool.timeout = Some(deadline);
        }
        self
    }

    /// Declares the parameters (a JSON schema in the Live API's OpenAPI
    /// subset) of every tool in the composite; use on a single tool.
    pub fn parameters(mut self, schema: Value) -> Self {
        for tool in &mut self.tools {
            tool.parameters = Some(schema.clone());
        }
        self
    }

    /// The tools, in the order they were added.
    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }

    /// The tools' names, in order.
    pub fn names(&self) -> Vec<&str> {
        self.tools.iter().map(|t| t.name.as_str()).collect()
    }

    /// Whether there is no tool.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

impl FromIterator<Tool> for ToolComposite {
    fn from_iter<I: IntoIterator<Item = Tool>>(tools: I) -> Self {
        ToolComposite {
            tools: tools.into_iter().collect(),
        }
    }
}

impl From<Tool> for ToolComposite {
    fn from(tool: Tool) -> Self {
        ToolComposite { tools: vec![tool] }
    }
}

impl BitOr for ToolComposite {
    type Output = ToolComposite;

    fn bitor(self, rhs: ToolComposite) -> ToolComposite {
        self.with(rhs)
    }
}

/// The tool factory of the fluent API.
pub struct T;

impl T {
    /// A tool whose arguments arrive as JSON.
    ///
    /// ```
    /// use livesim::compose::tools::T;
    /// use serde_json::json;
    ///
    /// let weather = T::simple("get_weather", "Weather for a city", |args| async move {
    ///     Ok(json!({ "city": args["city"], "sky": "sunny" }))
    /// });
    /// assert_eq!(weather.tools()[0].declaration()["name"], "get_weather");
    /// ```
    pub fn simple<F, Fut>(
        name: impl Into<String>,
        description: impl Into<String>,
        f: F,
    ) -> ToolComposite
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ToolResult> + Send + 'static,
    {
        Tool {
            name: name.into(),
            description: description.into(),
            parameters: None,
            timeout: None,
            run: Arc::new(move |args| f(args).boxed()),
        }
        .into()
    }

    /// A tool whose arguments deserialize into `A`; arguments that do not
    /// fit are answered with an error naming the tool and the problem, and
    /// the function is not called.
    ///
    /// ```
    /// use livesim::compose::tools::T;
    /// use serde::Deserialize;
    /// use serde_json::json;
    ///
    /// #[derive(Deserialize)]
    /// struct Party { size: u32 }
    ///
    /// let set_party = T::typed("set_party", "Sets the party size", |party: Party| async move {
    ///     Ok(json!({ "size": party.size }))
    /// });
    /// # let _ = set_party;
    /// ```
    pub fn typed<A, F, Fut>(
        name: impl Into<String>,
        description: impl Into<String>,
        f: F,
    ) -> ToolComposite
    where
        A: DeserializeOwned + Send + 'static,
        F: Fn(A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ToolResult> + Send + 'static,
    {
        let name = name.into();
        let tool_name = name.clone();
        let f = Arc::new(f);
        Tool {
            name,
            description: description.into(),
            parameters: None,
            timeout: None,
            run: Arc::new(move |args| {
                let parsed = serde_json::from_value::<A>(args);
                let f = f.clone();
                let tool_name = tool_name.clone();
                async move {
                    match parsed {
                        Ok(args) => f(args).await,
                        Err(e) => Err(format!("invalid arguments for {tool_name}: {e}").into()),
                    }
                }
                .boxed()
            }),
        }
        .into()
    }
}

/// The `response` object for a tool's outcome: the result when it is an
/// object, `{"result": …}` when it is not, `{"error": "…"}` for an error.
pub fn response_object(outcome: &Result<Value, String>) -> Value {
    response_of(outcome.clone())
}

/// [`response_object`] of an outcome the caller gives up: an object
/// result is moved into place rather than copied.
pub(crate) fn response_of(outcome: Result<Value, String>) -> Value {
    let (key, value) = match outcome {
        Ok(Value::Object(map)) => return Value::Object(map),
        Ok(other) => ("result", other),
        Err(message) => ("error", Value::String(message)),
    };
    crate::wire::object([(key, value)])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn typed_tools_reject_arguments_that_do_not_fit() {
        #[derive(serde::Deserialize)]
        struct Args {
            #[allow(dead_code)]
            size: u32,
        }
        let tool = T::typed("set_party", "", |_: Args| async { Ok(json!({})) });
        let err = tool.tools()[0]
            .call(json!({ "size": "four" }))
            .await
            .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("invalid arguments for set_party:")
        );
    }

    #[test]
    fn responses_are_always_objects() {
        assert_eq!(response_object(&Ok(json!({"a": 1}))), json!({"a": 1}));
        assert_eq!(response_object(&Ok(json!(3))), json!({"result": 3}));
        assert_eq!(
            response_object(&Err("boom".into())),
            json!({"error": "boom"})
        );
    }

    #[test]
    fn composites_combine_and_configure() {
        let tools = (T::simple("a", "", |_| async { Ok(json!(1)) })
            | T::simple("b", "", |_| async { Ok(json!(2)) }))
        .timeout(Duration::from_secs(120));
        assert!(
            tools
                .tools()
                .iter()
                .all(|t| t.timeout() == Some(Duration::from_secs(120)))
        );
        let with_schema =
            T::simple("c", "d", |_| async { Ok(json!(0)) }).parameters(json!({"type": "OBJECT"}));
        assert_eq!(
            with_schema.tools()[0].declaration(),
            json!({"name": "c", "description": "d", "parameters": {"type": "OBJECT"}})
        );
    }
}
