//! A turn's tool calls, with every fault that can land on them at once.
//!
//! A turn calls tools in one message, or in several (`call-chain`). Each
//! message may open with a thought (`thoughts`), carries one call or
//! several (`parallel-calls`), any of them with arguments that do not fit
//! (`bad-args`) or to a tool the session does not declare
//! (`unknown-tool`), and perhaps an id used before (`duplicate-id`).
//! While its calls run, frames may arrive (`frames-mid-call`: model text,
//! a transcription, usage, a `goAway`, a cancellation of one call) and the
//! user may type (`typing`); then a cancellation may race one of the
//! calls or all of them (`cancel-race`), the turn may be interrupted over
//! them (`interrupt-call`, cancelling one, all or none), or, for a session
//! that resumes, the connection may end under them (`reconnect`). Each
//! fault fires from its own stream, so any of them can meet any other on
//! the same calls.
//!
//! Calls are waited for (the script goes on once each is answered, as a
//! real model does) unless something happens while they run: then the
//! script goes on at once and the answers come when they come.

use std::time::Duration;

use serde_json::json;

use crate::soak::generate::args;
use crate::soak::generate::faults::FaultKind;
use crate::soak::generate::script::Generator;
use crate::testing::{Action, Call};

/// A thought the model has before calling tools.
const CALL_THOUGHTS: [&str; 2] = [
    "I should look this up before answering.",
    "Two lookups at once will be quicker.",
];

impl Generator<'_> {
    /// A tool to call and its arguments (ones that do not fit when `bad`).
    fn pick_call(&mut self, bad: bool) -> (String, serde_json::Value) {
        let Some(tool) = self.args.pick(&self.repertoire.tools).cloned() else {
            return ("no_tools_declared".to_string(), json!({}));
        };
        let args = if bad {
            args::bad(tool.parameters.as_ref(), &tool.examples, &mut self.args)
        } else {
            args::valid(tool.parameters.as_ref(), &tool.examples, &mut self.args)
        };
        (tool.name, args)
    }

    /// A new call with the next id, each of its own faults drawn.
    pub(super) fn one_call(&mut self) -> Call {
        let bad = self.fires(FaultKind::BadArgs);
        let (mut name, mut args) = self.pick_call(bad);
        if self.fires(FaultKind::UnknownTool) {
            name = format!("no_such_tool_{}", self.shape.range(1..=9));
            args = json!({});
        }
        // No arguments may come as no `args` at all (null in the script):
        // the session must hand the tool `{}` all the same.
        if args == json!({}) && self.bare_args.chance(0.5) {
            args = serde_json::Value::Null;
        }
        Call {
            id: self.next_id(),
            name,
            args,
            wait: true,
        }
    }

    /// How long a tool usually takes, as the repertoire says.
    pub(super) fn latency_of(&self, name: &str) -> std::ops::RangeInclusive<Duration> {
        self.repertoire
            .tools
            .iter()
            .find(|t| t.name == name)
            .map(|t| t.latency.clone())
            .unwrap_or(Duration::ZERO..=Duration::from_millis(100))
    }

    /// The turn's tool calls. Returns true when the turn ended here (an
    /// interruption over the calls).
    pub(super) fn tool_phase(&mut self) -> bool {
        let messages = if self.fires(FaultKind::CallChain) {
            self.shape.range(2..=3)
        } else {
            1
        };
        for _ in 0..messages {
            if self.call_message() {
                return true;
            }
        }
        false
    }

    /// One `toolCall` message and what happens while its calls run.
    /// Returns true when the turn ended here.
    fn call_message(&mut self) -> bool {
        if self.fires(FaultKind::Thoughts) {
            let thought = self
                .text
                .pick(&CALL_THOUGHTS)
                .copied()
                .unwrap_or("")
                .to_string();
            self.thought(&thought);
        }
        let n = if self.fires(FaultKind::ParallelCalls) {
            self.shape.range(2..=3)
        } else {
            1
        };
        let mut calls: Vec<Call> = (0..n).map(|_| self.one_call()).collect();
        // What lands on these calls, each from its own stream.
        let duplicate = self.fires(FaultKind::DuplicateId);
        let during = self.fires(FaultKind::FramesMidCall);
        let typing = self.fires(FaultKind::Typing);
        let cancel = self.fires(FaultKind::CancelRace);
        let interrupt = self.fires(FaultKind::InterruptCall);
        let cut = !interrupt && self.cuts_mid_call();
        let waited = !(duplicate || during || typing || cancel || interrupt || cut);
        for call in &mut calls {
            call.wait = waited;
        }
        if duplicate {
            // An id seen before on this connection (ids belong to their
            // connection), or one of this message's own: the session
            // answers only the first call with an id.
            let first = self.connections.as_ref().map_or(0, |c| c.first_call);
            let id = self
                .args
                .pick(&self.issued[first..])
                .cloned()
                .unwrap_or_default();
            let (name, args) = self.pick_call(false);
            calls.push(Call {
                id,
                name,
                args,
                wait: false,
            });
        }
        let ids: Vec<String> = calls.iter().map(|c| c.id.clone()).collect();
        let slowest = calls.first().map(|c| c.name.clone()).unwrap_or_default();
        // Usage may ride on the tool call's own frame: the count drawn
        // from the `usage` kind's stream, so other kinds' draws stay.
        if self.fires(FaultKind::Usage) && self.fault_stream(FaultKind::Usage).chance(0.5) {
            let tokens = self.fault_stream(FaultKind::Usage).range(20..=900);
            let mut usage = serde_json::Map::new();
            usage.insert(
                "usageMetadata".to_string(),
                json!({ "totalTokenCount": tokens }),
            );
            self.push(Action::Attach(usage));
        }
        match calls.len() {
            1 => self.push(Action::Call(calls.remove(0))),
            _ => self.push(Action::CallMany(calls)),
        }
        if during {
            self.frames_mid_call(&ids);
        }
        if typing {
            self.user_types();
        }
        if cancel {
            let latency = self.latency_of(&slowest);
            let lo = latency.start().as_millis() as u64;
            let hi = latency.end().as_millis() as u64;
            let ms = self.gaps.range(lo..=hi.max(lo) + 3);
            self.push(Action::PauseMs(ms));
            let which = self.some_of(&ids);
            self.send(json!({ "toolCallCancellation": { "ids": which } }));
        }
        if interrupt {
            if self.fires(FaultKind::GoAway) {
                self.go_away(true);
            }
            self.small_gap();
            self.send(json!({ "serverContent": { "interrupted": true } }));
            match self.shape.below(3) {
                0 => {}
                _ => {
                    let which = self.some_of(&ids);
                    self.send(json!({ "toolCallCancellation": { "ids": which } }));
                }
            }
            self.send(json!({ "serverContent": { "turnComplete": true } }));
            return true;
        }
        if cut {
            self.cut_mid_call(&slowest);
        }
        false
    }

    /// One of `ids`, or all of them (each half the time).
    fn some_of(&mut self, ids: &[String]) -> Vec<String> {
        if ids.len() > 1 && self.shape.chance(0.5) {
            ids.to_vec()
        } else {
            self.args.pick(ids).cloned().into_iter().collect()
        }
    }

    /// Frames that arrive while calls run: one to three of model text, a
    /// transcription chunk, usage, a `goAway`, a cancellation of one call.
    fn frames_mid_call(&mut self, ids: &[String]) {
        let n = self.shape.range(1..=3);
        for _ in 0..n {
            self.small_gap();
            match self.shape.below(5) {
                0 => {
                    let line = self.model_line();
                    for chunk in self.split(&line) {
                        self.send(json!({ "serverContent": { "modelTurn": { "parts": [{ "text": chunk }] } } }));
                    }
                }
                1 => {
                    let line = self.user_line();
                    let key = if self.shape.chance(0.5) {
                        "inputTranscription"
                    } else {
                        "outputTranscription"
                    };
                    let word = line.split_whitespace().next().unwrap_or("Hm").to_string();
                    self.send(json!({ "serverContent": { key: { "text": word } } }));
                }
                2 => self.usage(),
                3 => self.go_away(true),
                _ => {
                    if let Some(id) = self.args.pick(ids).cloned() {
                        self.send(json!({ "toolCallCancellation": { "ids": [id] } }));
                    }
                }
            }
        }
    }
}
