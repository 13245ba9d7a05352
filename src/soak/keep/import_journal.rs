//! Production sessions as seeds, from a state journal: what a governed
//! session's flow decisions and state writes left behind (a
//! `FileJournalSink` file) turned into a script of the agent that wrote it.
//!
//! A journal holds what the session decided, not what was said, so the
//! script is rebuilt from the decisions, entry by entry in `seq` order:
//!
//! | entries | script |
//! |---|---|
//! | the first entry of a turn | the recorded pause, then a wait for the user's `clientContent` |
//! | `flow:tool_call` / `flow:tool_denied` written in the same millisecond | one `toolCall` message with those ids and tools, each waited for when the journal shows it answered before the turn ended |
//! | `flow:tool_cancelled` | a `toolCallCancellation` of that id where it was journaled, or right after the call when the tool, run calm (at its shortest latency, as an imported case runs it), would be over by then |
//! | `flow:interrupted` | a word of the model's line, then `interrupted` |
//! | `flow:active` | one of the agent's model lines (unless interrupted), then `turnComplete` |
//! | `session:go_away_remaining_ms`, first on a connection | a `goAway` with that much time left (a session that does not resume) |
//! | `session:reconnect_attempt` then `session:connection` | the connection dropped, then the next one: resuming the latest handle when the journal says `resumed`, else refused as stale and opened fresh |
//!
//! A resuming agent's script hands out a handle when each connection opens
//! and after each turn, as the service does. Its goAways are not sent: a
//! session told to go away moves in a race with the handles that follow,
//! so the import drops the connection where the journal shows it moved,
//! which keeps the handle it resumes certain.
//!
//! Arguments are not journaled: each call gets one of the tool's examples
//! (or values drawn from its schema), with every argument its `writes`
//! templates name taken back from the state the call wrote (a write
//! `"paid": "{args.amount}"` of `42.5` gives `amount: 42.5`). A call the
//! journal shows failing is given arguments that do not fit the tool's
//! parameters, so it fails again; where that cannot be done (a tool with
//! no required parameter, a timeout the journal does not tie to an id),
//! a note says so. A damaged line is skipped and named; every good entry
//! is kept.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::{Value, json};

use super::import::Imported;
use super::import_args::{invert, set_path, unfit};
use super::import_lines::{self, Kind};
use crate::Seed;
use crate::executor::Stream;
use crate::flow::{FlowEntry, keys};
use crate::soak::agent::Agent;
use crate::soak::agent::tools::SimTool;
use crate::soak::generate::args;
use crate::state::{JOURNAL_KIND, StateMutation};
use crate::testing::{Action, Call, CloseAction, Reconnect, ResumptionUpdate, ScriptedServer};

/// Reads journal `bytes` (named `file` in messages), written by a session
/// of `agent`, into a script named `name`. `Err` only when nothing usable
/// is there: no entry at all, or a file of another kind.
///
/// ```
/// use livesim::soak::{Agent, import_journal};
///
/// # let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sim/payment");
/// let agent = Agent::load(dir)?;
/// let journal = br#"{"v":1,"kind":"journal"}
/// {"seq":1,"key":"flow:tool_call","value":{"tool":"verify_identity","id":"call-1"},"timestamp":1000}
/// {"seq":2,"key":"verified","value":true,"timestamp":1200}
/// {"seq":3,"key":"customer","value":"Ada Byron","timestamp":1200}
/// {"seq":4,"key":"flow:tool_result","value":{"tool":"verify_identity","id":"call-1","ok":true},"timestamp":1200}
/// {"seq":5,"key":"flow:active","value":["pay"],"timestamp":1300}
/// "#;
/// let imported = import_journal("prod.journal.jsonl", journal, "payment-prod", &agent).unwrap();
/// let script = imported.script.to_json().to_string();
/// // The name comes back from what the call wrote.
/// assert!(script.contains(r#""name":"Ada Byron""#), "{script}");
/// # Ok::<(), livesim::soak::AgentFileError>(())
/// ```
pub fn import_journal(
    file: &str,
    bytes: &[u8],
    name: &str,
    agent: &Agent,
) -> Result<Imported, String> {
    let (entries, damaged) = read(file, bytes)?;
    let mut walk = Walk::new(name, agent, &entries);
    walk.hand_out_handle();
    for k in 0..entries.len() {
        walk.entry(k);
    }
    Ok(Imported {
        script: walk.script,
        frames: entries.len(),
        damaged,
        handles: walk.handles,
        notes: walk.notes,
    })
}

/// Whether `bytes` look like a state journal rather than a wire log: a
/// journal header, or (a file from before headers) a first line with a
/// `seq`. `livesim sim import` reads either.
///
/// ```
/// use livesim::soak::is_journal;
///
/// assert!(is_journal(b"{\"v\":1,\"kind\":\"journal\"}\n"));
/// assert!(!is_journal(b"{\"v\":1,\"kind\":\"wire_log\",\"started_at_ms\":0}\n"));
/// ```
pub fn is_journal(bytes: &[u8]) -> bool {
    let text = String::from_utf8_lossy(bytes);
    let Some(first) = text.lines().find(|l| !l.trim().is_empty()) else {
        return false;
    };
    match serde_json::from_str::<Value>(first) {
        Ok(value) => value["kind"] == JOURNAL_KIND || value.get("seq").is_some(),
        Err(_) => false,
    }
}

/// The good entries, in `seq` order, and each damaged line named. (A
/// journal written before headers existed has none: that is no damage.)
///
/// The journal reader's own checks decide what is damaged: its header
/// check (kind, version, no unknown key), its rule of order (seq strictly
/// increasing, timestamps never going back, judged against the last good
/// entry) and its refusal of a `flow:` key the flow does not write. A
/// journal `livesim session scenario` refuses is never imported as if
/// whole: each line it would refuse is skipped and named here.
fn read(file: &str, bytes: &[u8]) -> Result<(Vec<StateMutation>, Vec<String>), String> {
    let kind = Kind {
        header: JOURNAL_KIND,
        file: "journal",
        line: "journal entry",
        item: "journal entry",
        writer: "journal sink",
    };
    let lines = import_lines::read::<StateMutation>(file, bytes, &kind)?;
    // In `seq` order already: an entry out of order is damaged.
    Ok((lines.items, lines.damaged))
}

/// What became of a call, read ahead in the journal.
#[derive(Clone, Copy, PartialEq)]
enum Outcome {
    /// Refused: answered at once.
    Denied,
    /// Completed at this entry.
    Done { ok: bool, at: usize },
    /// Cancelled by the server at this entry.
    Cancelled { at: usize },
    /// Never answered in the journal.
    Open,
}

/// The script being built, entry by entry.
struct Walk<'a> {
    script: ScriptedServer,
    agent: &'a Agent,
    entries: &'a [StateMutation],
    /// Each call id's outcome.
    outcomes: BTreeMap<String, Outcome>,
    /// Calls cancelled right after they were made ([`Walk::cancel_right_after`]).
    cancelled_early: BTreeSet<String>,
    /// Which entries the script acts on ([`script_steps`]).
    steps: Vec<bool>,
    /// The time of the last entry the script or the session acted on.
    last_at: Option<u64>,
    /// The user has spoken and the turn has not ended.
    in_turn: bool,
    /// The turn was interrupted: it ends without the rest of its line.
    interrupted: bool,
    /// Turns ended so far (which model line comes next).
    turns: usize,
    /// Handles given out so far (`handle-1`, …).
    handles: usize,
    /// What the script cannot reproduce as recorded.
    notes: Vec<String>,
    /// Arguments drawn from a tool's schema when it has no example.
    draw: Stream,
}

impl<'a> Walk<'a> {
    fn new(name: &str, agent: &'a Agent, entries: &'a [StateMutation]) -> Self {
        let mut outcomes = BTreeMap::new();
        for (k, e) in entries.iter().enumerate() {
            let outcome = match FlowEntry::parse(&e.key, &e.value) {
                Ok(Some(FlowEntry::ToolCall { id, .. })) => (id, Outcome::Open),
                Ok(Some(FlowEntry::ToolDenied { id, .. })) => (id, Outcome::Denied),
                Ok(Some(FlowEntry::ToolResult { id, ok, .. })) => (id, Outcome::Done { ok, at: k }),
                Ok(Some(FlowEntry::ToolCancelled { id, .. })) => (id, Outcome::Cancelled { at: k }),
                _ => continue,
            };
            outcomes.insert(outcome.0, outcome.1);
        }
        Walk {
            script: ScriptedServer::new().named(name),
            agent,
            entries,
            outcomes,
            cancelled_early: BTreeSet::new(),
            steps: script_steps(entries, agent.repertoire.resumption.is_on()),
            last_at: None,
            in_turn: false,
            interrupted: false,
            turns: 0,
            handles: 0,
            notes: Vec::new(),
            draw: Stream::new(Seed::new(0), "import/args"),
        }
    }

    fn push(&mut self, action: Action) {
        let script = std::mem::take(&mut self.script);
        self.script = script.action(action);
    }

    /// The recorded pause before an action at `ms`.
    fn pause_until(&mut self, ms: u64) {
        if let Some(before) = self.last_at
            && ms > before
        {
            self.push(Action::PauseMs(ms - before));
        }
        self.last_at = Some(ms);
    }

    /// A turn starts with the user: wait for what they send.
    fn turn_starts(&mut self, ms: u64) {
        if !self.in_turn {
            self.pause_until(ms);
            self.push(Action::Expect("clientContent".to_string()));
            self.in_turn = true;
        }
    }

    fn model_line(&self) -> String {
        let lines = &self.agent.repertoire.model_lines;
        if lines.is_empty() {
            "(imported)".to_string()
        } else {
            lines[self.turns % lines.len()].clone()
        }
    }

    fn entry(&mut self, k: usize) {
        let entry = &self.entries[k];
        let ms = entry.timestamp.unix_millis();
        match FlowEntry::parse(&entry.key, &entry.value) {
            Ok(Some(FlowEntry::ToolCall { .. } | FlowEntry::ToolDenied { .. })) => {
                if self.steps[k] {
                    self.turn_starts(ms);
                    self.pause_until(ms);
                    self.calls(k);
                }
            }
            Ok(Some(FlowEntry::ToolCancelled { id, .. })) => {
                if !self.cancelled_early.contains(&id) {
                    self.pause_until(ms);
                    self.push(Action::Send(json!({"toolCallCancellation": {"ids": [id]}})));
                }
            }
            Ok(Some(FlowEntry::ToolFailed { tool })) => {
                self.last_at = Some(ms);
                self.notes.push(format!(
                    "entry {}: a call of {tool} failed with no result of its own (a timeout); \
                     the journal does not say which call, so it runs as the agent's tool does",
                    entry.seq
                ));
            }
            Ok(Some(FlowEntry::ToolResult { .. })) => self.last_at = Some(ms),
            Ok(Some(FlowEntry::Interrupted)) => {
                self.turn_starts(ms);
                self.pause_until(ms);
                let line = self.model_line();
                let word = line.split_whitespace().next().unwrap_or("…").to_string();
                self.push(Action::Send(
                    json!({"serverContent": {"modelTurn": {"parts": [{"text": word}]}}}),
                ));
                self.push(Action::Send(
                    json!({"serverContent": {"interrupted": true}}),
                ));
                self.interrupted = true;
            }
            Ok(Some(FlowEntry::Active(_))) => {
                self.turn_starts(ms);
                self.pause_until(ms);
                if !self.interrupted {
                    let line = self.model_line();
                    self.push(Action::Send(
                        json!({"serverContent": {"modelTurn": {"parts": [{"text": line}]}}}),
                    ));
                }
                self.push(Action::Send(
                    json!({"serverContent": {"turnComplete": true}}),
                ));
                self.hand_out_handle();
                self.in_turn = false;
                self.interrupted = false;
                self.turns += 1;
            }
            Ok(_) => self.session_entry(k),
            Err(e) => self.notes.push(format!(
                "entry {} ({}): skipped, its value is not what the key holds: {}",
                entry.seq, entry.key, e
            )),
        }
    }

    /// The session's own keys: goAway and reconnects.
    fn session_entry(&mut self, k: usize) {
        let entry = &self.entries[k];
        let ms = entry.timestamp.unix_millis();
        match entry.key.as_str() {
            // A resuming session moves when it is told to go away, in a
            // race with the handles that follow; dropping the connection
            // where it moved keeps the handle it resumes certain.
            "session:go_away_remaining_ms" if self.steps[k] => {
                self.pause_until(ms);
                // Sent as a message, not a `go_away` action: a session
                // that stayed past the deadline did so.
                let left = Duration::from_millis(entry.value.as_u64().unwrap_or(0));
                self.push(Action::Send(
                    json!({"goAway": {"timeLeft": crate::wire::format_duration(left)}}),
                ));
            }
            "session:reconnect_attempt" if self.steps[k] => {
                self.pause_until(ms);
                self.push(Action::Abort);
            }
            "session:connection" => {
                let held = (self.handles > 0).then(|| format!("handle-{}", self.handles));
                if held.is_some() && !self.resumed_at(k) {
                    // A fresh session where one was held: its handle had
                    // gone stale, and the service said so.
                    self.push(Action::Reconnect(Reconnect {
                        handle: held.clone(),
                    }));
                    self.push(Action::RejectSetup(CloseAction {
                        code: 1008,
                        reason: "session not found".to_string(),
                    }));
                    self.push(Action::Reconnect(Reconnect { handle: None }));
                } else {
                    self.push(Action::Reconnect(Reconnect { handle: held }));
                }
                self.last_at = Some(ms);
                self.hand_out_handle();
            }
            _ => {}
        }
    }

    /// A resuming session's connection starts with a handle: the service
    /// sends updates early and often, and a session without one does not
    /// reconnect.
    fn hand_out_handle(&mut self) {
        let resumption = &self.agent.repertoire.resumption;
        if resumption.is_on() {
            self.handles += 1;
            let handle = format!("handle-{}", self.handles);
            let transparent = resumption.is_transparent();
            self.push(Action::ResumptionUpdate(ResumptionUpdate {
                handle: Some(handle),
                resumable: true,
                transparent,
                behind: 0,
            }));
        }
    }

    /// Whether the connection opened at entry `k` resumed the session.
    fn resumed_at(&self, k: usize) -> bool {
        self.entries[k + 1..]
            .iter()
            .take_while(|e| e.key != "session:connection")
            .find(|e| e.key == "session:resumed")
            .is_some_and(|e| e.value == "resumed")
    }

    /// The `toolCall` message that entry `k` opens.
    fn calls(&mut self, k: usize) {
        let mut end = k + 1;
        while end < self.entries.len() && same_message(self.entries, end - 1, end) {
            end += 1;
        }
        let next_step = (end..self.entries.len()).find(|&j| self.steps[j]);
        let mut calls = Vec::new();
        for j in k..end {
            if let Ok(Some(
                FlowEntry::ToolCall { tool, id } | FlowEntry::ToolDenied { tool, id, .. },
            )) = FlowEntry::parse(&self.entries[j].key, &self.entries[j].value)
            {
                calls.push(self.call(tool, id, j, next_step));
            }
        }
        let early: Vec<String> = calls
            .iter()
            .filter(|call| self.cancel_right_after(call, k))
            .map(|call| call.id.clone())
            .collect();
        match <[Call; 1]>::try_from(calls) {
            Ok([call]) => self.push(Action::Call(call)),
            Err(calls) => self.push(Action::CallMany(calls)),
        }
        for id in early {
            self.push(Action::Send(json!({"toolCallCancellation": {"ids": [id]}})));
            self.cancelled_early.insert(id);
        }
    }

    /// Call `id` of `tool`, journaled at entry `k`; the script's next step
    /// after its message is at `next_step`.
    fn call(&mut self, tool: String, id: String, k: usize, next_step: Option<usize>) -> Call {
        let outcome = self.outcomes.get(&id).copied().unwrap_or(Outcome::Open);
        let wait = match outcome {
            Outcome::Denied => true,
            Outcome::Done { at, .. } => next_step.is_none_or(|next| at < next),
            Outcome::Cancelled { .. } | Outcome::Open => false,
        };
        if let Some((running, of)) = self.running_call(k) {
            let decided = if outcome == Outcome::Denied {
                "refused"
            } else {
                "admitted"
            };
            self.notes.push(format!(
                "{id}: {decided} in the journal while {running} ({of}) still ran; here {running} \
                 runs calm (as fast as its tool can) and may be over by then"
            ));
        }
        let Some(sim) = self.agent.tools.iter().find(|t| t.name == tool) else {
            self.notes.push(format!(
                "{id}: {tool} is not a tool of {}; called with no arguments",
                self.agent.name
            ));
            return Call {
                id,
                name: tool,
                args: json!({}),
                wait,
            };
        };
        let sim = sim.clone();
        let mut args = args::valid(sim.parameters.as_ref(), &sim.examples, &mut self.draw);
        match outcome {
            Outcome::Done { ok: true, at } => self.recover_args(&sim, &mut args, k, at),
            Outcome::Done { ok: false, .. } if !unfit(&sim, &mut args) => {
                self.notes.push(format!(
                    "{id}: {tool} failed in the journal, but it has no required parameter \
                     to leave out; here it runs as the agent's tool does"
                ));
            }
            _ => {}
        }
        Call {
            id,
            name: tool,
            args,
            wait,
        }
    }

    /// Whether `call`, made at entry `k` and cancelled later, must be
    /// cancelled at once to be cancelled at all: its tool, run calm, would
    /// answer before the journaled cancellation's time.
    fn cancel_right_after(&self, call: &Call, k: usize) -> bool {
        let Some(Outcome::Cancelled { at }) = self.outcomes.get(&call.id) else {
            return false;
        };
        let shortest = self
            .agent
            .tools
            .iter()
            .find(|t| t.name == call.name)
            .map_or(0, |t| t.latency.start().as_millis() as u64);
        let took = self.entries[*at]
            .timestamp
            .unix_millis()
            .saturating_sub(self.entries[k].timestamp.unix_millis());
        took >= shortest
    }

    /// An admitted call journaled before entry `k` and not over by then,
    /// and its tool.
    fn running_call(&self, k: usize) -> Option<(String, String)> {
        self.entries[..k]
            .iter()
            .find_map(|e| match FlowEntry::parse(&e.key, &e.value) {
                Ok(Some(FlowEntry::ToolCall { tool, id })) => {
                    let over = match self.outcomes.get(&id) {
                        Some(Outcome::Done { at, .. } | Outcome::Cancelled { at }) => *at < k,
                        _ => false,
                    };
                    (!over).then_some((id, tool))
                }
                _ => None,
            })
    }

    /// Takes back the arguments `sim`'s writes templates name from what the
    /// call (entries `from..at`) wrote just before its result.
    fn recover_args(&self, sim: &SimTool, args: &mut Value, from: usize, at: usize) {
        let done = self.entries[at].timestamp;
        for (key, template) in &sim.writes {
            let Some(written) = self.entries[from..at]
                .iter()
                .rev()
                .find(|e| &e.key == key && e.timestamp == done)
            else {
                continue;
            };
            if let Some((path, value)) = invert(template, &written.value) {
                set_path(args, &path, value);
            }
        }
    }
}

/// Whether call entries `before` and `k` came in one `toolCall` message:
/// calls written in one millisecond, one after another.
fn same_message(entries: &[StateMutation], before: usize, k: usize) -> bool {
    let (a, b) = (&entries[before], &entries[k]);
    a.timestamp == b.timestamp
        && matches!(
            a.key.as_str(),
            keys::TOOL_CALL | keys::TOOL_DENIED | keys::TOOL_WOULD_DENY
        )
}

/// Which entries the script acts on (sends something for), in a first
/// pass: a call waits for its answer only when the journal shows it
/// answered before the next of these.
fn script_steps(entries: &[StateMutation], resuming: bool) -> Vec<bool> {
    let (mut go_away, mut breaking) = (false, false);
    (0..entries.len())
        .map(
            |k| match FlowEntry::parse(&entries[k].key, &entries[k].value) {
                Ok(Some(FlowEntry::ToolCall { .. } | FlowEntry::ToolDenied { .. })) => {
                    k == 0 || !same_message(entries, k - 1, k)
                }
                Ok(Some(
                    FlowEntry::ToolCancelled { .. } | FlowEntry::Interrupted | FlowEntry::Active(_),
                )) => true,
                Ok(_) => match entries[k].key.as_str() {
                    "session:go_away_remaining_ms" => {
                        !resuming && !std::mem::replace(&mut go_away, true)
                    }
                    "session:reconnect_attempt" => !std::mem::replace(&mut breaking, true),
                    "session:connection" => {
                        (go_away, breaking) = (false, false);
                        true
                    }
                    _ => false,
                },
                Err(_) => false,
            },
        )
        .collect()
}
