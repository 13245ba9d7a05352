//! What a script can be cut into: turns, and runs of text chunks that
//! one frame could carry instead.

use serde_json::{Map, Value};

use crate::testing::{Action, ScriptedServer};

/// The script's actions in turns: each turn ends with the frame that
/// completes or interrupts the model's turn, and the pauses after it.
/// Whatever follows the last such frame is a turn of its own.
pub(crate) fn turns(actions: &[Action]) -> Vec<Vec<Action>> {
    let mut turns: Vec<Vec<Action>> = Vec::new();
    let mut current: Vec<Action> = Vec::new();
    let mut ended = false;
    for action in actions {
        if ended && !matches!(action, Action::PauseMs(_)) {
            turns.push(std::mem::take(&mut current));
            ended = false;
        }
        current.push(action.clone());
        if let Action::Send(message) = action {
            let content = message.get("serverContent");
            let flag = |key: &str| content.and_then(|c| c.get(key)) == Some(&Value::Bool(true));
            ended |= flag("turnComplete") || flag("interrupted");
        }
    }
    if !current.is_empty() {
        turns.push(current);
    }
    turns
}

/// Whether a cut-down script still says how each of its connections
/// ends: a `reconnect` needs the connection before it to end first (the
/// script's `close`, `abort` or refused setup, or a `goAway` after which
/// the client leaves). A script that waits for a new connection the
/// client has no reason to open fails every run, whatever the session
/// does, so the shrinker never keeps one.
pub(crate) fn connections_end(actions: &[Action]) -> bool {
    let mut ended = false;
    for action in actions {
        match action {
            Action::Reconnect(_) if !ended => return false,
            Action::Reconnect(_) => ended = false,
            _ if ends_a_connection(action) => ended = true,
            _ => {}
        }
    }
    true
}

/// Whether `action` ends its connection, or gives the client its reason
/// to leave it (a `goAway`).
pub(crate) fn ends_a_connection(action: &Action) -> bool {
    match action {
        Action::Close(_) | Action::Abort | Action::RejectSetup(_) | Action::GoAwayMs(_) => true,
        Action::Send(message) => message.get("goAway").is_some(),
        _ => false,
    }
}

/// A frame carrying one piece of a text stream: the stream's name, the
/// text, and whether the piece closes it (`finished`).
struct Piece<'a> {
    stream: String,
    text: &'a str,
    closes: bool,
}

/// `{"serverContent": {KEY: …}}` and nothing else: its one member.
fn only_member<'a>(message: &'a Value, key: &str) -> Option<&'a Map<String, Value>> {
    let top = message.as_object().filter(|m| m.len() == 1)?;
    let content = top.get("serverContent")?.as_object()?;
    if content.len() != 1 {
        return None;
    }
    content.get(key)?.as_object()
}

fn piece(action: &Action) -> Option<Piece<'_>> {
    let Action::Send(message) = action else {
        return None;
    };
    if let Some(turn) = only_member(message, "modelTurn") {
        let [part] = turn.get("parts")?.as_array()?.as_slice() else {
            return None;
        };
        let part = part.as_object()?;
        let thought = part.get("thought") == Some(&Value::Bool(true));
        let keys_ok = turn.len() == 1
            && part
                .keys()
                .all(|k| k == "text" || (k == "thought" && thought));
        if !keys_ok {
            return None;
        }
        return Some(Piece {
            stream: if thought { "thought" } else { "model" }.to_string(),
            text: part.get("text")?.as_str()?,
            closes: false,
        });
    }
    for key in ["inputTranscription", "outputTranscription"] {
        if let Some(transcription) = only_member(message, key) {
            if !transcription.keys().all(|k| k == "text" || k == "finished") {
                return None;
            }
            return Some(Piece {
                stream: key.to_string(),
                text: transcription.get("text")?.as_str()?,
                closes: transcription.get("finished") == Some(&Value::Bool(true)),
            });
        }
    }
    None
}

/// The runs of two or more neighbouring frames of one text stream (a
/// closing piece ends its run), as index ranges, last first.
pub(crate) fn text_runs(actions: &[Action]) -> Vec<std::ops::Range<usize>> {
    let mut runs = Vec::new();
    let mut start = 0;
    while start < actions.len() {
        let Some(first) = piece(&actions[start]) else {
            start += 1;
            continue;
        };
        let mut end = start + 1;
        let mut closed = first.closes;
        while !closed && end < actions.len() {
            match piece(&actions[end]) {
                Some(next) if next.stream == first.stream => {
                    closed = next.closes;
                    end += 1;
                }
                _ => break,
            }
        }
        if end - start > 1 {
            runs.push(start..end);
        }
        start = end;
    }
    runs.reverse();
    runs
}

/// One frame saying what the run of frames `actions[run]` says: the last
/// frame, carrying the whole text.
pub(crate) fn merged(actions: &[Action], run: std::ops::Range<usize>) -> Option<Action> {
    let text: String = actions[run.clone()]
        .iter()
        .map(|a| piece(a).map(|p| p.text.to_string()))
        .collect::<Option<String>>()?;
    let Action::Send(mut last) = actions[run.end - 1].clone() else {
        return None;
    };
    let slot = last
        .pointer_mut("/serverContent/modelTurn/parts/0/text")
        .is_some();
    let target = if slot {
        last.pointer_mut("/serverContent/modelTurn/parts/0/text")
    } else {
        let content = last.get_mut("serverContent")?.as_object_mut()?;
        let key = content.keys().next()?.clone();
        content.get_mut(&key)?.get_mut("text")
    }?;
    *target = Value::String(text);
    Some(Action::Send(last))
}

/// `script` with its actions replaced by `actions` (its name and settle
/// window kept), if the result is a valid script file: what a candidate
/// must be, so that every shrunk case can be saved and loaded.
pub(crate) fn with_actions(script: &ScriptedServer, actions: &[Action]) -> Option<ScriptedServer> {
    let mut json = script.to_json();
    json["actions"] = serde_json::to_value(actions).ok()?;
    ScriptedServer::from_json_str(&json.to_string(), script.name()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(t: &str) -> Action {
        Action::Send(json!({"serverContent": {"modelTurn": {"parts": [{"text": t}]}}}))
    }

    fn heard(t: &str, finished: bool) -> Action {
        let mut transcription = json!({"text": t});
        if finished {
            transcription["finished"] = json!(true);
        }
        Action::Send(json!({"serverContent": {"inputTranscription": transcription}}))
    }

    fn complete() -> Action {
        Action::Send(json!({"serverContent": {"turnComplete": true}}))
    }

    #[test]
    fn turns_end_at_the_model_turns_end_with_their_pauses() {
        let actions = vec![
            heard("Hi", true),
            text("Hello"),
            complete(),
            Action::PauseMs(300),
            text("Again"),
        ];
        let turns = turns(&actions);
        assert_eq!(turns.len(), 2);
        assert_eq!(turns[0].len(), 4);
        assert_eq!(turns[1], [text("Again")]);
    }

    #[test]
    fn neighbouring_chunks_merge_into_their_last_frame() {
        let actions = vec![
            heard("Pay ", false),
            heard("now", true),
            heard("and", false),
            text("It "),
            text("is "),
            Action::PauseMs(3),
            text("sunny."),
            complete(),
        ];
        assert_eq!(text_runs(&actions), [3..5, 0..2]);
        assert_eq!(merged(&actions, 3..5), Some(text("It is ")));
        assert_eq!(merged(&actions, 0..2), Some(heard("Pay now", true)));
    }

    #[test]
    fn frames_with_more_than_one_text_do_not_merge() {
        let two = Action::Send(json!({"serverContent": {
            "modelTurn": {"parts": [{"text": "a"}]}, "turnComplete": true}}));
        assert!(text_runs(&[text("x"), two, text("y")]).is_empty());
    }
}
