//! The tool dispatcher: runs the model's tool calls concurrently and hands
//! each outcome back to the control lane, exactly once per call id.
//!
//! Each call runs as its own task (through the executor's spawn facade, so
//! the seed perturbs the order calls finish in). A tool's error, panic or
//! timeout becomes an error outcome; the control lane turns it into
//! `{"error": "…"}`. Policies, decided here and tested:
//!
//! * **Duplicate call ids: the first call wins.** A call whose id this
//!   connection has already seen (running, answered, refused or cancelled)
//!   is not run and not answered, because the protocol allows at most one
//!   response per id; the session emits a warning.
//! * **Cancellation aborts.** A cancelled call's task is aborted and its
//!   outcome, even one already on its way, is never answered. A tool that
//!   had already returned when its cancellation came has done its work:
//!   its outcome still comes back, to be counted (by the flow) but not
//!   answered.
//! * **Unknown tools** are answered at once with an error naming the tools
//!   the session declares.
//!
//! Under simulation each call's task is labelled `tool:<name>(<id>)` and
//! traces when the tool starts (with its arguments), each time it waits
//! on something and resumes, and how it finishes; with the state writes
//! the store traces under the same label, a race between two calls on a
//! shared key reads straight off a failure report.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::time::Duration;

use futures::FutureExt;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::events::ToolCall;
use super::position::Position;
use crate::compose::tools::{Tool, ToolComposite, answering};
use crate::executor;
use crate::state::Brief;

/// A finished tool call.
#[derive(Debug)]
pub(crate) struct Completion {
    pub id: String,
    pub name: String,
    /// The tool's result, or the error message to answer with.
    pub outcome: Result<Value, String>,
    /// Where the response stands in the stored log.
    pub at: Position,
    /// Which dispatch this is (ids repeat across connections).
    serial: u64,
}

/// What a completion is to the connection that made its call.
#[derive(Debug)]
pub(crate) enum Completed {
    /// A call of this connection: answer it.
    Answer(Completion),
    /// A call of this connection cancelled after its tool had returned:
    /// it ran, so it counts, but it is not answered.
    Unanswered(Completion),
    /// A call of a connection the session has left.
    Left(Completion),
}

/// What happened to a call handed to the dispatcher.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Dispatched {
    /// The tool is running; its completion will come.
    Started,
    /// No tool by that name: answer with this error now.
    UnknownTool(String),
}

/// What a cancellation found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Cancelled {
    /// The call was running and is now aborted.
    Aborted,
    /// The call's tool had already returned: its completion is already
    /// queued, and comes back [`Completed::Unanswered`].
    Finished,
    /// The call was already answered (or refused); nothing to do.
    TooLate,
    /// No call with that id was seen on this connection.
    Unknown,
}

pub(crate) struct Dispatcher {
    tools: BTreeMap<String, Tool>,
    /// This connection's calls whose completion has not been handled.
    running: BTreeMap<String, Running>,
    /// Calls of earlier connections, still running.
    left: Vec<Running>,
    seen: BTreeSet<String>,
    done: mpsc::UnboundedSender<Completion>,
    next_serial: u64,
}

/// A dispatched call whose completion has not been handled yet.
struct Running {
    serial: u64,
    task: JoinHandle<()>,
    /// Cancelled after its tool had returned.
    cancelled: bool,
}

impl Dispatcher {
    /// A dispatcher for `tools`, and the stream its completions arrive on.
    pub fn new(tools: &ToolComposite) -> (Self, mpsc::UnboundedReceiver<Completion>) {
        let (done, completions) = mpsc::unbounded_channel();
        let tools = tools
            .tools()
            .iter()
            .map(|t| (t.name().to_string(), t.clone()))
            .collect();
        (
            Dispatcher {
                tools,
                running: BTreeMap::new(),
                left: Vec::new(),
                seen: BTreeSet::new(),
                done,
                next_serial: 0,
            },
            completions,
        )
    }

    /// Claims a call id for this connection: false if it was seen before
    /// (a duplicate, which must not be run or answered).
    pub fn claim(&mut self, id: &str) -> bool {
        self.seen.insert(id.to_string())
    }

    /// Starts a claimed call, whose response will stand at `at`.
    pub fn dispatch(&mut self, call: &ToolCall, at: Position) -> Dispatched {
        let Some(tool) = self.tools.get(&call.name) else {
            let known: Vec<&str> = self.tools.keys().map(String::as_str).collect();
            return Dispatched::UnknownTool(format!(
                "unknown tool {:?}: this session declares [{}]",
                call.name,
                known.join(", ")
            ));
        };
        let (id, name) = (call.id.clone(), call.name.clone());
        let args = call.args.clone();
        let run = Traced::new(answering(
            id.clone(),
            run_tool(tool.clone(), call.args.clone()),
        ));
        let done = self.done.clone();
        let task_id = id.clone();
        let serial = self.next_serial;
        self.next_serial += 1;
        let task = executor::spawn(format!("tool:{name}({id})"), async move {
            executor::record_detailed_with(
                |head| head.push_str("start"),
                |detail| {
                    detail.push(' ');
                    Brief(&args).write_to(detail);
                },
            );
            let outcome = run.await;
            match &outcome {
                Ok(value) => executor::record_detailed_with(
                    |head| head.push_str("finish ok"),
                    |detail| {
                        detail.push(' ');
                        Brief(value).write_to(detail);
                    },
                ),
                Err(message) => executor::record_detailed_with(
                    |head| head.push_str("finish error"),
                    |detail| {
                        let _ = write!(detail, " {message:?}");
                    },
                ),
            }
            // The control lane may be gone (session closed): nothing to do.
            let _ = done.send(Completion {
                id: task_id,
                name,
                outcome,
                at,
                serial,
            });
        });
        self.running.insert(
            id,
            Running {
                serial,
                task,
                cancelled: false,
            },
        );
        Dispatched::Started
    }

    /// Whether any call is running (the planted bug's trigger).
    #[cfg(feature = "planted-bug")]
    pub fn is_running(&self) -> bool {
        !self.running.is_empty()
    }

    /// The ids of the calls running now (planted bugs' triggers).
    #[cfg(feature = "planted-bug")]
    pub fn running_ids(&self) -> Vec<String> {
        self.running.keys().cloned().collect()
    }

    /// Accepts a completion, and says whose call it was. (A completion
    /// always finds its call: an aborted call sends none.)
    pub fn complete(&mut self, completion: Completion) -> Completed {
        match self.running.get(&completion.id) {
            Some(call) if call.serial == completion.serial => {
                let cancelled = call.cancelled;
                self.running.remove(&completion.id);
                if cancelled {
                    Completed::Unanswered(completion)
                } else {
                    Completed::Answer(completion)
                }
            }
            _ => {
                self.left.retain(|call| call.serial != completion.serial);
                Completed::Left(completion)
            }
        }
    }

    /// Cancels a call by id.
    pub fn cancel(&mut self, id: &str) -> Cancelled {
        if let Some(call) = self.running.get_mut(id) {
            if call.cancelled {
                return Cancelled::TooLate;
            }
            // Aborting now would stop nothing: the tool has returned.
            if call.task.is_finished() {
                call.cancelled = true;
                return Cancelled::Finished;
            }
        }
        match self.running.remove(id) {
            Some(call) => {
                call.task.abort();
                Cancelled::Aborted
            }
            None if self.seen.contains(id) => Cancelled::TooLate,
            None => Cancelled::Unknown,
        }
    }

    /// A new connection: ids start over (they belong to their
    /// connection). Calls still running are left to finish (a half-run
    /// tool is worse than an unanswered one); their completions come back
    /// stale, and the control lane drops them.
    pub fn new_connection(&mut self) {
        self.seen.clear();
        self.left
            .extend(std::mem::take(&mut self.running).into_values());
    }

    /// A new connection that still holds the ids the old one saw (the
    /// planted bug `ids-outlive-their-connection`).
    #[cfg(feature = "planted-bug")]
    pub fn new_connection_keeping_ids(&mut self) {
        self.left
            .extend(std::mem::take(&mut self.running).into_values());
    }

    /// Lets every running call go on, unwatched (the planted bug
    /// `tools-outlive-hang-up`): its task is detached, not aborted.
    #[cfg(feature = "planted-bug")]
    pub fn detach_all(&mut self) {
        self.running.clear();
        self.left.clear();
    }

    /// Aborts every running call (the session ended).
    pub fn abort_all(&mut self) {
        let left = std::mem::take(&mut self.left);
        for call in std::mem::take(&mut self.running).into_values().chain(left) {
            call.task.abort();
        }
    }
}

impl Drop for Dispatcher {
    fn drop(&mut self) {
        self.abort_all();
    }
}

/// Runs one tool call to an outcome: its result, or an error message for
/// an error, a panic or a timeout.
async fn run_tool(tool: Tool, args: Value) -> Result<Value, String> {
    let name = tool.name().to_string();
    let guarded = AssertUnwindSafe(tool.call(args)).catch_unwind();
    let finished = match tool.timeout() {
        Some(deadline) => match tokio::time::timeout(deadline, guarded).await {
            Ok(finished) => finished,
            Err(_) => return Err(format!("{name} timed out after {}", human(deadline))),
        },
        None => guarded.await,
    };
    match finished {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(e.to_string()),
        Err(payload) => {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".to_string());
            Err(format!("{name} panicked: {message}"))
        }
    }
}

/// A tool's future, tracing each time it waits and resumes.
struct Traced<F> {
    inner: std::pin::Pin<Box<F>>,
    waiting: bool,
}

impl<F> Traced<F> {
    fn new(inner: F) -> Self {
        Traced {
            inner: Box::pin(inner),
            waiting: false,
        }
    }
}

impl<F: Future> Future for Traced<F> {
    type Output = F::Output;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<F::Output> {
        if std::mem::take(&mut self.waiting) {
            crate::record!("resumes");
        }
        let polled = self.inner.as_mut().poll(cx);
        if polled.is_pending() {
            self.waiting = true;
            crate::record!("waits");
        }
        polled
    }
}

/// A duration as a person writes it: `2m`, `1.5s`, `250ms`.
pub(crate) fn human(d: Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(60_000) && ms > 0 {
        format!("{}m", ms / 60_000)
    } else if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else if ms >= 1000 {
        let fraction = format!("{:03}", ms % 1000);
        format!("{}.{}s", ms / 1000, fraction.trim_end_matches('0'))
    } else {
        format!("{ms}ms")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_naturally() {
        assert_eq!(human(Duration::from_secs(120)), "2m");
        assert_eq!(human(Duration::from_secs(5)), "5s");
        assert_eq!(human(Duration::from_millis(1500)), "1.5s");
        assert_eq!(human(Duration::from_millis(250)), "250ms");
    }
}
