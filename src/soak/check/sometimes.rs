//! "Sometimes" goals (Antithesis' sometimes assertions): interesting
//! states a run may reach. A soak counts the runs that reached each; one
//! never reached means the soak did not explore what it was meant to,
//! and the summary flags it.
//!
//! The built-in goals, each counted only for agents where it can happen:
//!
//! | name | a run reached it when | counted for |
//! |---|---|---|
//! | `refusal` | the flow refused a call | agents whose flow enforces |
//! | `would-deny` | the flow admitted a call it would refuse if it enforced (`flow:tool_would_deny`) | agents whose flow observes |
//! | `escalation` | a step escalated | agents whose spec escalates |
//! | `tool-failure` | a tool run failed | agents whose tools can fail (a Rust agent: one failed while calibrating) |
//! | `bad-args` | a tool refused arguments that did not fit | agents whose tools check arguments (a Rust agent: one refused bad ones while calibrating) |
//! | `unknown-tool` | a call to an undeclared tool was answered with an error (or refused) | agents with tools |
//! | `parallel-call` | one message carried several calls | agents with tools |
//! | `duplicate-id` | a call id came again and was not run twice | agents with tools |
//! | `cancel-aborted` | a cancellation stopped a running tool | agents with a tool that takes time |
//! | `cancel-race` | a cancellation came for a call already answered | agents with tools |
//! | `hung-up-mid-call` | the user hung up while a tool ran, and the session stopped it | agents with a tool that takes time |
//! | `go-away-mid-call` | a go-away came while a tool ran | agents with a tool that takes time |
//! | `interrupted-flush` | an interruption cut the model's text | every agent |
//! | `user-typed` | the user typed a turn (`clientContent`) | every agent |
//! | `connection-closed` | the server ended the connection | every agent |
//! | `server-gave-up` | the server sent an in-band error and nothing else, ending the session | every agent |
//! | `tape-answer` | an extractor wrote an answer from its tape | agent files with an extractor |
//! | `tape-miss` | an extractor's question was not on its tape | agent files with an extractor |
//! | `resumed` | a connection ended (a close or a drop) and the session resumed on the next | agents that resume |
//! | `fresh-session` | a resume found no session (1008 "session not found") and a fresh one started | agents that resume |
//! | `typed-into-fresh` | the user typed while a reconnect that ended in a fresh session was under way (the session must drop it) | agents that resume |
//! | `resume-retried` | a resume took more than one attempt (a setup refused in passing) and still resumed the same session | agents that resume, with more than one attempt |
//! | `go-away-move` | the session moved to a new connection after a `goAway` | agents that resume |
//! | `go-away-unheld` | a `goAway` came before any handle, and the session ended with its connection, never reconnecting | agents that resume |
//! | `go-away-awaited` | a `goAway` came to a fresh session before its first handle, and the session moved with the handle the server gave after it | agents that resume |
//! | `move-refused` | a `goAway` move's new connection failed, the session stayed on its connection, and resumed once that one ended (its next reconnect counting the move as a try) | agents that resume, with more than one attempt |
//! | `hung-up-reconnecting` | the user hung up while the session reconnected (after the script ended its connection), and it stopped | agents that resume |
//! | `reconnect-gave-up` | every reconnect attempt failed and the session ended | agents that resume |
//! | `transparent-replay` | a resumed connection got again what the server had not consumed | agents that resume transparently |
//! | `stale-answer` | a tool finished after its call's connection ended, and its answer was not sent | agents that resume, with a tool that takes time |
//! | `id-reused` | a new connection issued a call id an earlier connection had issued (`id-restart`), and the session answered it as the new call it is | agents that resume, with tools |
//!
//! A Rust agent's tools are measured before its soak (see
//! `run/calibrate.rs`); an agent file's simulated tools take time, fail
//! and check their arguments. A goal that cannot happen for an agent is
//! not counted, so it is never flagged; and goals are judged only over
//! enough sessions ([`GOALS_JUDGED_FROM`]), so a one-seed replay flags
//! none.
//!
//! All goals, with the invariants: `docs/invariants.md`.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::session::LiveEvent;
use crate::soak::agent::TAPE_MISS;
use crate::soak::check::calls_by_connection::{self, events_by_connection};
use crate::soak::check::client_messages;
use crate::soak::check::model::Expected;
use crate::soak::check::wire_order;
use crate::soak::run::record::{ExecutionOutcome, RunRecord, reconnecting};
use crate::wire::JsonPath;

/// How many sessions of an agent a soak must run before a goal no run
/// reached is flagged: a replay of one seed reaches few goals, and says
/// nothing about the soak.
pub const GOALS_JUDGED_FROM: u64 = 50;

type Reached = dyn Fn(&RunRecord) -> bool + Send + Sync;

/// A named state a run may reach.
///
/// ```
/// use livesim::soak::Sometimes;
///
/// let long = Sometimes::new("long-session", |run| run.virtual_time.as_secs() > 60);
/// assert_eq!(long.name(), "long-session");
/// ```
#[derive(Clone)]
pub struct Sometimes {
    name: String,
    reached: Arc<Reached>,
}

impl fmt::Debug for Sometimes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Sometimes").field(&self.name).finish()
    }
}

impl Sometimes {
    /// A goal named `name`, reached by a run when `reached` says so.
    pub fn new(
        name: impl Into<String>,
        reached: impl Fn(&RunRecord) -> bool + Send + Sync + 'static,
    ) -> Self {
        Sometimes {
            name: name.into(),
            reached: Arc::new(reached),
        }
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether `run` reached it.
    pub fn reached(&self, run: &RunRecord) -> bool {
        (self.reached)(run)
    }
}

/// What an agent can reach, which decides the built-in goals it counts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Reach {
    pub tools: bool,
    /// Some tool takes time to answer, so it can be caught running.
    pub slow_tools: bool,
    /// Some tool can fail.
    pub failing_tools: bool,
    /// Some tool refuses arguments that do not fit.
    pub checks_args: bool,
    /// A flow governs the session and refuses what it does not admit.
    pub refuses: bool,
    /// A flow governs the session and only records what it would refuse.
    pub observes: bool,
    pub escalates: bool,
    /// The names (the state keys they write) of the extractors that answer
    /// from a tape: an agent file's.
    pub extractors: Vec<String>,
    /// The session resumes on new connections.
    pub resumes: bool,
    /// … transparently.
    pub transparent: bool,
    /// … trying more than once per reconnect.
    pub retries: bool,
}

/// The tools the session declared in its setup.
fn declared_tools(run: &RunRecord) -> Vec<&str> {
    run.sent
        .iter()
        .filter_map(|m| m.at("/setup/tools"))
        .filter_map(Value::as_array)
        .flatten()
        .filter_map(|t| t.get("functionDeclarations").and_then(Value::as_array))
        .flatten()
        .filter_map(|d| d.get("name").and_then(Value::as_str))
        .collect()
}

/// Whether a call id came twice on one connection (as the frames say)
/// and the session did not run it twice.
fn duplicate_not_run_twice(run: &RunRecord) -> bool {
    wire_order::connections(run).iter().any(|connection| {
        let mut seen: Vec<&str> = Vec::new();
        connection
            .frames
            .iter()
            .flat_map(|f| &f.events)
            .filter_map(|e| match e {
                Expected::Calls(calls) => Some(calls),
                _ => None,
            })
            .flatten()
            .any(|(id, _, _)| {
                let again = seen.contains(&id.as_str());
                seen.push(id);
                again
                    && run
                        .executions
                        .iter()
                        .filter(|e| e.call_id.as_deref() == Some(id.as_str()))
                        .count()
                        < seen.iter().filter(|s| **s == id.as_str()).count()
            })
    })
}

fn failed_with(run: &RunRecord, words: &str) -> bool {
    run.executions
        .iter()
        .any(|e| matches!(&e.outcome, ExecutionOutcome::Failed(m) if m.contains(words)))
}

/// The built-in goals for an agent that can reach `reach`.
pub(crate) fn builtin(reach: &Reach) -> Vec<Sometimes> {
    let mut goals = Vec::new();
    if reach.refuses {
        goals.push(Sometimes::new("refusal", |run| {
            run.delivered().any(|e| e.kind() == "tool_denied")
        }));
    }
    if reach.observes {
        goals.push(Sometimes::new("would-deny", |run| {
            run.journal
                .iter()
                .any(|m| m.key == crate::flow::keys::TOOL_WOULD_DENY)
        }));
    }
    if reach.escalates {
        goals.push(Sometimes::new("escalation", |run| {
            run.journal.iter().any(|m| m.key == "flow:escalated")
        }));
    }
    if reach.tools {
        if reach.failing_tools {
            goals.push(Sometimes::new("tool-failure", |run| {
                run.executions
                    .iter()
                    .any(|e| matches!(e.outcome, ExecutionOutcome::Failed(_)))
            }));
        }
        if reach.checks_args {
            goals.push(Sometimes::new("bad-args", |run| {
                failed_with(run, "invalid arguments")
            }));
        }
        goals.push(Sometimes::new("unknown-tool", |run| {
            let declared = declared_tools(run);
            let undeclared: Vec<&str> = run
                .delivered()
                .filter_map(|e| match e {
                    LiveEvent::ToolCall { calls } => Some(calls),
                    _ => None,
                })
                .flatten()
                .filter(|call| !declared.contains(&call.name.as_str()))
                .map(|call| call.id.as_str())
                .collect();
            run.responses().iter().any(|r| {
                r.get("id")
                    .and_then(Value::as_str)
                    .is_some_and(|id| undeclared.contains(&id))
                    && r.at("/response/error").is_some()
            })
        }));
        goals.push(Sometimes::new("parallel-call", |run| {
            run.delivered()
                .any(|e| matches!(e, LiveEvent::ToolCall { calls } if calls.len() > 1))
        }));
        goals.push(Sometimes::new("duplicate-id", |run| {
            duplicate_not_run_twice(run)
        }));
        if reach.slow_tools {
            goals.push(Sometimes::new("cancel-aborted", |run| {
                run.executions.iter().any(|e| {
                    e.outcome == ExecutionOutcome::Unfinished
                        && e.call_id
                            .as_ref()
                            .is_some_and(|id| run.calls.cancelled.contains(id))
                })
            }));
        }
        goals.push(Sometimes::new("cancel-race", |run| {
            !run.calls.late_answers.is_empty()
                || run
                    .calls
                    .cancelled
                    .iter()
                    .any(|id| run.calls.answered.contains(id))
        }));
        if reach.slow_tools {
            goals.push(Sometimes::new("hung-up-mid-call", |run| {
                run.settling.hung_up_at.is_some_and(|at| {
                    run.executions
                        .iter()
                        .any(|e| e.started <= at && e.finished.is_none())
                })
            }));
            goals.push(Sometimes::new("go-away-mid-call", |run| {
                run.events.iter().any(|timed| {
                    matches!(timed.event, LiveEvent::GoAway { .. })
                        && run.executions.iter().any(|e| {
                            e.started <= timed.at && e.finished.is_none_or(|end| end > timed.at)
                        })
                })
            }));
        }
    }
    goals.push(Sometimes::new("interrupted-flush", |run| {
        run.delivered().any(|e| {
            matches!(
                e,
                LiveEvent::TextComplete {
                    interrupted: true,
                    ..
                }
            )
        })
    }));
    goals.push(Sometimes::new("user-typed", |run| {
        run.sent.iter().any(|m| m.get("clientContent").is_some())
    }));
    goals.push(Sometimes::new("connection-closed", |run| {
        run.settling.ended_by_script
    }));
    goals.push(Sometimes::new("server-gave-up", wire_order::server_gave_up));
    if reach.resumes {
        goals.extend(resumption_goals(reach));
    }
    if !reach.extractors.is_empty() {
        let keys = reach.extractors.clone();
        goals.push(Sometimes::new("tape-answer", move |run| {
            run.journal.iter().any(|m| keys.contains(&m.key))
        }));
        goals.push(Sometimes::new("tape-miss", |run| {
            run.journal.iter().any(|m| m.key == TAPE_MISS)
        }));
    }
    goals
}

/// The goals of an agent that resumes.
fn resumption_goals(reach: &Reach) -> Vec<Sometimes> {
    // Whether a move whose latest `reconnecting` was for `goAway` (or
    // not) reached a new connection with `fresh`. (A refused move's
    // connection ends later: that reconnect is not a move.)
    fn moved(run: &RunRecord, go_away: bool, fresh: bool) -> bool {
        let mut cause_go_away = None;
        run.delivered().any(|e| match e {
            LiveEvent::Reconnecting { cause, .. } => {
                cause_go_away = Some(cause == "goAway");
                false
            }
            LiveEvent::Resumed { fresh: f, .. } => {
                let hit = *f == fresh && (fresh || cause_go_away == Some(go_away));
                cause_go_away = None;
                hit
            }
            _ => false,
        })
    }
    let mut goals = vec![
        Sometimes::new("resumed", |run| moved(run, false, false)),
        Sometimes::new("fresh-session", |run| moved(run, false, true)),
        Sometimes::new("typed-into-fresh", |run| {
            client_messages::sent_during_fresh_reconnects(run) > 0
        }),
        Sometimes::new("go-away-move", |run| moved(run, true, false)),
        Sometimes::new("go-away-unheld", go_away_unheld),
        Sometimes::new("go-away-awaited", go_away_awaited),
        Sometimes::new("hung-up-reconnecting", |run| {
            run.settling.hung_up_at.is_some_and(|at| {
                reconnecting(&run.events[..run.events.partition_point(|e| e.at <= at)])
            })
        }),
        Sometimes::new("reconnect-gave-up", |run| {
            run.delivered().any(
                |e| matches!(e, LiveEvent::Disconnected { reason, .. } if reason.starts_with("gave up after")),
            )
        }),
    ];
    if reach.retries {
        goals.push(Sometimes::new("resume-retried", |run| {
            let mut retried = false;
            run.delivered().any(|e| match e {
                LiveEvent::Reconnecting { attempt, .. } => {
                    retried = *attempt >= 2;
                    false
                }
                LiveEvent::Resumed { fresh, .. } => retried && !fresh,
                _ => false,
            })
        }));
        goals.push(Sometimes::new("move-refused", |run| {
            // A move's `reconnecting`, then another before any new
            // connection: the move failed and the session stayed.
            let (mut moving, mut refused) = (false, false);
            run.delivered().any(|e| match e {
                LiveEvent::Reconnecting { cause, .. } => {
                    refused |= moving;
                    moving = cause == "goAway";
                    false
                }
                LiveEvent::Resumed { fresh, .. } => {
                    let hit = refused && !fresh;
                    (moving, refused) = (false, false);
                    hit
                }
                _ => false,
            })
        }));
    }
    if reach.transparent {
        goals.push(Sometimes::new("transparent-replay", |run| {
            !run.replays().is_empty()
        }));
    }
    if reach.tools {
        goals.push(Sometimes::new("id-reused", |run| {
            // A later connection's call with an earlier one's id, answered
            // as the new call it is.
            let issued = calls_by_connection::server_calls(run);
            events_by_connection(&run.events).any(|(connection, timed)| {
                matches!(&timed.event, LiveEvent::ToolResponse { id, .. }
                    if issued.connections_of(id).any(|earlier| earlier < connection))
            })
        }));
    }
    if reach.tools && reach.slow_tools {
        goals.push(Sometimes::new("stale-answer", |run| {
            // The tool ran to its end, but its call's connection was over:
            // the script never got an answer.
            run.executions.iter().any(|e| {
                e.finished.is_some()
                    && e.call_id
                        .as_ref()
                        .is_some_and(|id| run.calls.abandoned.contains(id))
            })
        }));
    }
    goals
}

/// `go-away-awaited`: after a fresh start, a `goAway` came before the new
/// session's first handle, and the session's move (`reconnecting`, cause
/// `goAway`) came after a handle that followed the notice. Read from the
/// delivered events: fresh start, notice, handle, move, in that order,
/// with no handle between the fresh start and the notice.
fn go_away_awaited(run: &RunRecord) -> bool {
    #[derive(PartialEq)]
    enum Since {
        Fresh,
        Notice,
        Handle,
    }
    let mut since = None;
    for event in run.delivered() {
        since = match (event, since) {
            (LiveEvent::Resumed { fresh: true, .. }, _) => Some(Since::Fresh),
            (LiveEvent::GoAway { .. }, Some(Since::Fresh)) => Some(Since::Notice),
            (LiveEvent::ResumptionUpdate { resumable: true }, Some(Since::Notice)) => {
                Some(Since::Handle)
            }
            (LiveEvent::ResumptionUpdate { resumable: true }, _) => None,
            (LiveEvent::Reconnecting { cause, .. }, Some(Since::Handle)) if cause == "goAway" => {
                return true;
            }
            (LiveEvent::Reconnecting { .. } | LiveEvent::Disconnected { .. }, _) => None,
            (_, since) => since,
        };
    }
    false
}

/// `go-away-unheld`: a `goAway` came before any frame gave a resumption
/// handle, and the session ended with that connection, never
/// reconnecting (it had nothing to resume). Read from the frames and the
/// events.
fn go_away_unheld(run: &RunRecord) -> bool {
    let says = |frame: &crate::wire::Frame, key: &[u8]| {
        frame
            .payload()
            .is_some_and(|bytes| memchr::memmem::find(bytes, key).is_some())
    };
    let go_away = run
        .frames_read()
        .iter()
        .position(|f| says(f, b"\"goAway\""));
    let handle = run
        .frames_read()
        .iter()
        .position(|f| says(f, b"\"newHandle\""));
    let unheld = match (go_away, handle) {
        (Some(go_away), handle) => handle.is_none_or(|h| h > go_away),
        (None, _) => false,
    };
    unheld
        && !run
            .delivered()
            .any(|e| matches!(e, LiveEvent::Reconnecting { .. }))
        && run
            .delivered()
            .any(|e| matches!(e, LiveEvent::Disconnected { .. }))
}
