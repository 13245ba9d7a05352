//! The `extractor-input` invariant: what an agent's extractor was given
//! is the conversation the run had.
//!
//! An agent file's extractor asks its model (a tape, in a soak) about the
//! transcript at every turn's end; the run notes each question in state
//! (`soak:extractor_asked`, so the journal holds them in order). This
//! check reads those questions against the reference model of the frames
//! ([`super::model`]) and the record of what the user typed
//! ([`super::typed_lines`]), not against the session's transcript:
//!
//! * the question is `Transcript:` and then lines `user: …` or `model: …`;
//! * no line is blank, and each says a text the run made whole: the
//!   model's text (not its thoughts) or its output transcription for
//!   `model`, an input transcription or a message the user typed for
//!   `user`;
//! * the question at the `n`-th turn's end has at least one line when the
//!   model had said something by the end of that turn;
//! * its lines are the last of those said by then, in order, and all of
//!   them when the question is shorter than the extractor's window (at
//!   least its longest question). What the user typed is among them: a
//!   message the session sent stands where it was typed, bounded by the
//!   times the run recorded ([`super::typed_lines`]: after the lines of
//!   frames read before it was typed, before those of frames read after
//!   the server got it, in every turn that ended after the server got
//!   it), even when it was typed while the session reconnected; one it
//!   never sent may stand among the user's lines or not.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::Value;

use crate::executor::format_time;
use crate::session::LiveEvent;
use crate::soak::agent::{EXTRACTOR_ASKED, TAPE_MISS};
use crate::soak::check::model::{Expected, Stream};
use crate::soak::check::typed_lines::{self, SentLine};
use crate::soak::check::wire_order;
use crate::soak::run::record::RunRecord;

/// A transcript line: who said it and what.
type Line = (&'static str, String);

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
        let whole = lines.len() < window;
        if !said.ends_turn(n, &lines, whole) {
            return Err(said.misfit(n, &lines, whole));
        }
    }
    Ok(())
}

/// Whether `question` is the end of a transcript made of `said`, the
/// frames' lines in order, and `sent`, the messages the session sent, in
/// order, each where its times allow (all of it when `whole`), with any
/// of `optional` among its user lines. Matched from the ends, every dead
/// end remembered: a text both said and typed may be either.
struct Tail<'a> {
    question: &'a [Line],
    said: &'a [Line],
    /// When the session read the frame that made each of `said` whole
    /// (read only while a message of `sent` is left to place).
    read: &'a [Duration],
    sent: &'a [SentLine],
    optional: &'a BTreeSet<String>,
    whole: bool,
    dead_ends: BTreeSet<(usize, usize, usize)>,
}

impl Tail<'_> {
    /// Whether `question[..i]` ends the transcript of `said[..j]` and
    /// `sent[..k]`.
    fn ends(&mut self, i: usize, j: usize, k: usize) -> bool {
        if self.dead_ends.contains(&(i, j, k)) {
            return false;
        }
        let found = self.search(i, j, k);
        if !found {
            self.dead_ends.insert((i, j, k));
        }
        found
    }

    fn search(&mut self, i: usize, j: usize, k: usize) -> bool {
        let Some(i) = i.checked_sub(1) else {
            return !self.whole || (j == 0 && k == 0);
        };
        let (speaker, text) = (self.question[i].0, self.question[i].1.as_str());
        // The frame's line last: the messages left stand before it, so
        // none of them was typed after the session read that frame.
        if let Some(j_last) = j.checked_sub(1)
            && self.said[j_last].0 == speaker
            && self.said[j_last].1 == text
            && k.checked_sub(1)
                .is_none_or(|k_last| self.read[j_last] >= self.sent[k_last].typed)
            && self.ends(i, j_last, k)
        {
            return true;
        }
        // The message last: the frames' lines left stand before it, so
        // the session read none of them after the server got it.
        if let Some(k_last) = k.checked_sub(1)
            && speaker == "user"
            && self.sent[k_last].text == text
            && j.checked_sub(1)
                .is_none_or(|j_last| self.read[j_last] <= self.sent[k_last].got)
            && self.ends(i, j, k_last)
        {
            return true;
        }
        speaker == "user" && self.optional.contains(text) && self.ends(i, j, k)
    }
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
    /// What the user typed, and where it stands.
    typed: typed_lines::Typed,
    /// Every text the user typed: the loose reading, each free to stand
    /// anywhere among the user's lines or not, that tells a message left
    /// out from a line that is wrong whatever the user typed.
    all_typed: BTreeSet<String>,
    /// How many model lines were whole by the end of each turn.
    model_by_turn: Vec<usize>,
    /// Every line the frames made whole, user's and model's, in order.
    lines: Vec<Line>,
    /// When the session read the frame that made each of `lines` whole.
    read: Vec<Duration>,
    /// How many of `lines` were whole by the end of each turn, and when
    /// the session read the frame that ended it.
    lines_by_turn: Vec<(usize, Option<Duration>)>,
}

impl Said {
    fn of(run: &RunRecord) -> Said {
        let mut typed = typed_lines::typed(run);
        let all_typed: BTreeSet<String> = run.typed.iter().cloned().collect();
        let mut said = Said {
            model: BTreeSet::new(),
            user: all_typed.clone(),
            typed: typed_lines::Typed::default(),
            all_typed,
            model_by_turn: Vec::new(),
            lines: Vec::new(),
            read: Vec::new(),
            lines_by_turn: Vec::new(),
        };
        let mut model_lines = 0;
        let frames = wire_order::connections(run)
            .iter()
            .flat_map(|connection| &connection.frames);
        let mut count = 0;
        for (f, frame) in frames.enumerate() {
            count += 1;
            let at = typed.frames_read.get(f).copied();
            for event in &frame.events {
                match event {
                    Expected::Whole { stream, text, .. } if !text.trim().is_empty() => {
                        let speaker = match stream {
                            Stream::Text { thought: true } => continue,
                            Stream::Text { thought: false } | Stream::Output => {
                                said.model.insert(text.clone());
                                model_lines += 1;
                                "model"
                            }
                            Stream::Input => {
                                said.user.insert(text.clone());
                                "user"
                            }
                        };
                        said.lines.push((speaker, text.clone()));
                        said.read.push(at.unwrap_or_default());
                    }
                    Expected::TurnEnd { .. } => {
                        said.model_by_turn.push(model_lines);
                        said.lines_by_turn.push((said.lines.len(), at));
                    }
                    _ => {}
                }
            }
        }
        if count != typed.frames_read.len() {
            // The record's times are not the frames': every typed line
            // may stand or not.
            typed = typed_lines::Typed {
                optional: said.all_typed.clone(),
                ..typed_lines::Typed::default()
            };
        }
        said.typed = typed;
        said
    }

    /// The lines said by the end of turn `n` (0-based), and which of the
    /// messages the session sent stand among them: the first `k` for each
    /// `k` in the range (all those the server got before the turn ended,
    /// and perhaps those typed by then).
    fn by_turn(&self, n: usize) -> (&[Line], &[Duration], std::ops::RangeInclusive<usize>) {
        let (end, at) = self.lines_by_turn.get(n).copied().unwrap_or((0, None));
        let sent = &self.typed.sent;
        let typed = match at {
            Some(at) => {
                let least = sent.iter().rposition(|s| s.got < at).map_or(0, |p| p + 1);
                let most = sent.iter().take_while(|s| s.typed <= at).count();
                least..=most.max(least)
            }
            None => 0..=0,
        };
        let read = if sent.is_empty() {
            &[][..]
        } else {
            &self.read[..end]
        };
        (&self.lines[..end], read, typed)
    }

    /// Whether `question` ends the transcript as it stood at the end of
    /// turn `n` (0-based), all of it when `whole`.
    fn ends_turn(&self, n: usize, question: &[Line], whole: bool) -> bool {
        let (said, read, typed) = self.by_turn(n);
        let mut tail = Tail {
            question,
            said,
            read,
            sent: &self.typed.sent,
            optional: &self.typed.optional,
            whole,
            dead_ends: BTreeSet::new(),
        };
        typed
            .into_iter()
            .any(|k| tail.ends(question.len(), said.len(), k))
    }

    /// Why `question` does not end the transcript at the end of turn `n`:
    /// a message the session sent and the question leaves out, when it
    /// would fit with that message free to stand or not.
    fn misfit(&self, n: usize, question: &[Line], whole: bool) -> String {
        let turn = n + 1;
        let (said, read, typed) = self.by_turn(n);
        let mut loose = Tail {
            question,
            said,
            read,
            sent: &[],
            optional: &self.all_typed,
            whole,
            dead_ends: BTreeSet::new(),
        };
        let due = typed.start().checked_sub(1).map(|k| &self.typed.sent[k]);
        if let Some(due) = due
            && loose.ends(question.len(), said.len(), 0)
        {
            let ended = self.lines_by_turn[n].1.unwrap_or_default();
            // The lines that may follow it: those of frames read once it
            // was typed.
            let after: Vec<&Line> = said
                .iter()
                .zip(read)
                .filter(|(_, at)| **at >= due.typed)
                .map(|(line, _)| line)
                .collect();
            return format!(
                "the extractor's question at turn {turn} holds {question:?}, which leaves out a \
                 message the user typed and the session sent: {:?}, typed at t={}, got by the \
                 server at t={}, before the turn ended at t={}; it stands in the transcript by \
                 then, and only lines of frames read since it was typed may follow it ({}: \
                 {after:?})",
                due.text,
                format_time(due.typed),
                format_time(due.got),
                format_time(ended),
                after.len(),
            );
        }
        let what = if whole { "all" } else { "the last" };
        format!(
            "the extractor's question at turn {turn} holds {question:?}, which is not {what} of \
             the lines said by then, in order ({said:?}), with what the user typed among them"
        )
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
