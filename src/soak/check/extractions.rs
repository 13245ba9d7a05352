//! The `extractor-input` invariant: what an agent's extractor was given
//! is the conversation the run had.
//!
//! An agent file's extractor asks its model (a tape, in a soak) about the
//! transcript at every turn's end; the run notes each question in state
//! (`soak:extractor_asked`, so the journal holds them in order). This
//! check reads those questions against the reference model of the frames
//! ([`super::model`]), not against the session's transcript:
//!
//! * the question is `Transcript:` and then lines `user: …` or `model: …`;
//! * no line is blank, and each says a text the run made whole: the
//!   model's text (not its thoughts) or its output transcription for
//!   `model`, an input transcription or a message the user typed for
//!   `user`;
//! * the question at the `n`-th turn's end has at least one line when the
//!   model had said something by the end of that turn;
//! * its lines are the last of those said by then, in order (what the user
//!   typed may stand among them), and all of them when the question is
//!   shorter than the extractor's window (at least its longest question).

use std::collections::BTreeSet;

use serde_json::Value;

use crate::session::LiveEvent;
use crate::soak::agent::{EXTRACTOR_ASKED, TAPE_MISS};
use crate::soak::check::model::{Expected, Stream};
use crate::soak::check::wire_order;
use crate::soak::run::record::RunRecord;

/// Checks each question the agent's extractor asked.
pub(crate) fn check(run: &RunRecord) -> Result<(), String> {
    let asked: Vec<String> = run
        .journal
        .iter()
        .filter(|m| m.key == EXTRACTOR_ASKED)
        .map(|m| transcript_of(&m.value))
        .collect();
    if asked.is_empty() {
        return Ok(());
    }
    let said = Said::of(run);
    // The extractor's window is at least the longest question: a question
    // shorter than that had room for every line said by then.
    let window = asked
        .iter()
        .filter_map(|q| q.strip_prefix("Transcript:\n"))
        .filter_map(|body| lines_of(body).ok())
        .map(|lines| lines.len())
        .max()
        .unwrap_or(0);
    for (n, question) in asked.iter().enumerate() {
        let turn = n + 1;
        let Some(body) = question.strip_prefix("Transcript:\n") else {
            return Err(format!(
                "the extractor's question at turn {turn} does not start with `Transcript:`: \
                 {question:?}"
            ));
        };
        let lines = lines_of(body).map_err(|line| {
            format!(
                "the extractor's question at turn {turn} starts with a line that is neither \
                 `user: …` nor `model: …`: {line:?}"
            )
        })?;
        for (speaker, text) in &lines {
            let (speaker, text) = (*speaker, text.as_str());
            if text.trim().is_empty() {
                return Err(format!(
                    "the extractor's question at turn {turn} has a blank {speaker} line"
                ));
            }
            let known = match speaker {
                "user" => said.user.contains(text),
                _ => said.model.contains(text),
            };
            if !known {
                return Err(format!(
                    "the extractor's question at turn {turn} says {speaker}: {text:?}, which the \
                     run never made whole"
                ));
            }
        }
        if lines.is_empty() && said.model_by_turn.get(n).is_some_and(|&count| count > 0) {
            return Err(format!(
                "the model had said {} line(s) by the end of turn {turn}, but the extractor was \
                 given no line",
                said.model_by_turn[n]
            ));
        }
        let so_far = &said.lines[..said.lines_by_turn.get(n).copied().unwrap_or(0)];
        let whole = lines.len() < window;
        if !ends_the_transcript(&lines, so_far, &said.typed, whole) {
            let what = if whole { "all" } else { "the last" };
            return Err(format!(
                "the extractor's question at turn {turn} holds {:?}, which is not {what} of the \
                 lines said by then, in order ({:?}), with what the user typed among them",
                lines, so_far
            ));
        }
    }
    Ok(())
}

/// Whether `question` is the end of `said` (all of it when `whole`), in
/// order, with any of `typed` among its user lines (a typed message is in
/// the session's transcript from when it was sent, and in no frame).
/// Matched from the ends: a typed line may also stand for nothing said.
fn ends_the_transcript(
    question: &[(&'static str, String)],
    said: &[(&'static str, String)],
    typed: &BTreeSet<String>,
    whole: bool,
) -> bool {
    let Some(((speaker, text), earlier)) = question.split_last() else {
        return !whole || said.is_empty();
    };
    let matched = said.split_last().is_some_and(|(last, before)| {
        last.0 == *speaker && last.1 == *text && ends_the_transcript(earlier, before, typed, whole)
    });
    let is_typed = *speaker == "user" && typed.contains(text);
    matched || (is_typed && ends_the_transcript(earlier, said, typed, whole))
}

/// A transcript's lines as (speaker, text); a line that names no speaker
/// continues the text before it (a text may hold line breaks). Fails
/// with the first line when it names no speaker.
fn lines_of(body: &str) -> Result<Vec<(&'static str, String)>, String> {
    let mut lines: Vec<(&'static str, String)> = Vec::new();
    for line in body.lines() {
        let speaker = match line.split_once(": ") {
            Some(("user", text)) => Some(("user", text)),
            Some(("model", text)) => Some(("model", text)),
            _ => None,
        };
        match (speaker, lines.last_mut()) {
            (Some((speaker, text)), _) => lines.push((speaker, text.to_string())),
            (None, Some((_, text))) => {
                text.push('\n');
                text.push_str(line);
            }
            (None, None) => return Err(line.to_string()),
        }
    }
    Ok(lines)
}

/// The transcript text of a question: the text of its first part (the
/// question is a model request as JSON), or the question itself.
fn transcript_of(value: &Value) -> String {
    let raw = value.as_str().unwrap_or_default();
    serde_json::from_str::<Value>(raw)
        .ok()
        .and_then(|request| {
            request
                .pointer("/contents/0/parts/0/text")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .unwrap_or_else(|| raw.to_string())
}

/// What the run said, by the reference model and the user's typing.
struct Said {
    model: BTreeSet<String>,
    user: BTreeSet<String>,
    /// What the user typed.
    typed: BTreeSet<String>,
    /// How many model lines were whole by the end of each turn.
    model_by_turn: Vec<usize>,
    /// Every line made whole, user's and model's, in order.
    lines: Vec<(&'static str, String)>,
    /// How many of `lines` were whole by the end of each turn.
    lines_by_turn: Vec<usize>,
}

impl Said {
    fn of(run: &RunRecord) -> Said {
        let typed: BTreeSet<String> = run.typed.iter().cloned().collect();
        let mut said = Said {
            model: BTreeSet::new(),
            user: typed.clone(),
            typed,
            model_by_turn: Vec::new(),
            lines: Vec::new(),
            lines_by_turn: Vec::new(),
        };
        let mut model_lines = 0;
        for connection in wire_order::connections(run) {
            for event in connection.frames.iter().flat_map(|f| &f.events) {
                match event {
                    Expected::Whole { stream, text, .. } if !text.trim().is_empty() => match stream
                    {
                        Stream::Text { thought: true } => {}
                        Stream::Text { thought: false } | Stream::Output => {
                            said.model.insert(text.clone());
                            said.lines.push(("model", text.clone()));
                            model_lines += 1;
                        }
                        Stream::Input => {
                            said.user.insert(text.clone());
                            said.lines.push(("user", text.clone()));
                        }
                    },
                    Expected::TurnEnd { .. } => {
                        said.model_by_turn.push(model_lines);
                        said.lines_by_turn.push(said.lines.len());
                    }
                    _ => {}
                }
            }
        }
        said
    }
}

/// `extractor-every-turn`, for an agent file's extractor: it asks its
/// model once per extraction, and the session queues one extraction per
/// turn it completes and runs them in order, one at a time; a question
/// the tape answers becomes the extractor's state write, announced by an
/// `extracted` event, and one it does not is a failure. So the questions
/// (noted in the journal) are at most the turns completed (the stored
/// log's `turn_complete` events), and the `extracted` events at most the
/// questions the tape answered; once the run settled with its session
/// running, every queued extraction has run and both are equal.
pub(crate) fn every_turn(run: &RunRecord) -> Result<(), String> {
    let turns = run.turns_completed();
    let asked = run
        .journal
        .iter()
        .filter(|m| m.key == EXTRACTOR_ASKED)
        .count();
    let missed = run.journal.iter().filter(|m| m.key == TAPE_MISS).count();
    let answered = asked.saturating_sub(missed);
    let extracted = run
        .delivered()
        .filter(|e| matches!(e, LiveEvent::Extracted { .. }))
        .count();
    let settled = run.settling.settled_at.is_some() && !run.settling.ended;
    let by = if settled {
        " by the time the run settled"
    } else {
        ""
    };
    if asked > turns || (settled && asked < turns) {
        return Err(format!(
            "the session completed {turns} turns, but its extractor was asked {asked} \
             times{by}: one extraction per turn's end"
        ));
    }
    if extracted > answered || (settled && extracted < answered) {
        return Err(format!(
            "the tape answered {answered} of the extractor's {asked} questions, but the session \
             announced {extracted} extractions{by}: each answer is written to state"
        ));
    }
    Ok(())
}
