//! `handle-secret`: no resumption handle the script gave shows anywhere
//! a person or a file could read it.
//!
//! A resuming run keeps thousands of texts (its log lines at every level,
//! its trace, its events): each is searched once for all the handles at
//! once, and only a text that holds one is searched again handle by
//! handle, to name the first the script gave.
//!
//! A handle shorter than [`SHORT`] bytes (a toy script's `"h"`) would be
//! found inside ordinary words ("the", "hot"): it counts only where it
//! stands as a whole token, with no letter, digit, `-` or `_` touching
//! it. Real handles are long and opaque, and are searched for anywhere.

use std::fmt::Write as _;

use aho_corasick::{AhoCorasick, AhoCorasickKind};

use crate::session::LiveEvent;
use crate::soak::run::record::{RunRecord, TimedEvent};
use crate::testing::Action;

/// `handle-secret`.
pub(crate) fn handle_secret(run: &RunRecord) -> Result<(), String> {
    // Every handle the script gave, and the action that gave it.
    let mut handles: Vec<(usize, &str)> = Vec::new();
    for (i, action) in run.script.actions().iter().enumerate() {
        let handle = match action {
            Action::ResumptionUpdate(update) => update.handle.as_deref(),
            Action::Reconnect(reconnect) => reconnect.handle.as_deref(),
            _ => None,
        };
        if let Some(handle) = handle.filter(|h| !h.is_empty())
            && !handles.iter().any(|(_, h)| *h == handle)
        {
            handles.push((i, handle));
        }
    }
    if handles.is_empty() {
        return Ok(());
    }
    // One automaton per run: the plainest kind is the cheapest to build,
    // and its prefilter skips most text anyway. Handles are short
    // literals, so it builds; if it did not, the search handle by handle
    // below still decides.
    let any = AhoCorasick::builder()
        .kind(Some(AhoCorasickKind::NoncontiguousNFA))
        .build(handles.iter().map(|(_, h)| h))
        .ok();
    // The place is named only when a handle is found there; each text
    // is written into one buffer, reused.
    let leak = |place: &dyn Fn() -> String, text: &str| -> Result<(), String> {
        if any.as_ref().is_some_and(|any| !any.is_match(text)) {
            return Ok(());
        }
        match handles.iter().find(|(_, h)| holds(text, h)) {
            Some((action, _)) => Err(format!(
                "the handle of action #{} is in {}: a resumption handle is a secret",
                action + 1,
                place()
            )),
            None => Ok(()),
        }
    };
    let mut shown = String::new();
    for (i, timed) in run.events.iter().enumerate() {
        shown.clear();
        let _ = write!(shown, "{} {:?}", timed.event, timed.event);
        leak(&|| format!("delivered event #{i}"), &shown)?;
    }
    // A stored event equal to a delivered one shows the same text, searched
    // already: most of the stored log is the delivered events again, in
    // wire order rather than the lanes' (so each is looked for near where
    // the last one was found).
    let mut near = 0;
    for (i, event) in run.session_log.iter().enumerate() {
        if let Some(at) = delivered_near(&run.events, near, event) {
            near = at + 1;
            continue;
        }
        shown.clear();
        let _ = write!(shown, "{event} {event:?}");
        leak(&|| format!("stored event #{i}"), &shown)?;
    }
    for entry in &run.journal {
        shown.clear();
        shown.push_str(&entry.key);
        let _ = write!(shown, " {}", entry.value);
        leak(
            &|| format!("journal entry {} ({})", entry.seq, entry.key),
            &shown,
        )?;
    }
    for (i, entry) in run.trace.entries().enumerate() {
        shown.clear();
        shown.push_str(entry.label);
        shown.push(' ');
        shown.push_str(entry.event);
        leak(&|| format!("trace entry #{i}"), &shown)?;
    }
    for (i, line) in run.logs.iter().enumerate() {
        leak(&|| format!("log line #{}", i + 1), line)?;
    }
    for error in &run.replay_errors {
        leak(
            &|| "the script's error report".to_string(),
            &error.to_string(),
        )?;
    }
    if let Some(error) = &run.connect_error {
        leak(&|| "the connect error".to_string(), error)?;
    }
    for execution in &run.executions {
        shown.clear();
        let _ = write!(shown, "{:?} {:?}", execution.args, execution.outcome);
        leak(
            &|| format!("the record of a {} run", execution.tool),
            &shown,
        )?;
    }
    leak(&|| "the run's header".to_string(), &run.header())
}

/// Where in `delivered`, within a few dozen places of `near`, an event
/// equal to `event` is.
fn delivered_near(delivered: &[TimedEvent], near: usize, event: &LiveEvent) -> Option<usize> {
    let from = near.saturating_sub(16);
    let to = near.saturating_add(48).min(delivered.len());
    (from..to).find(|&at| delivered[at].event == *event)
}

/// Below this length a handle is looked for as a whole token only.
const SHORT: usize = 8;

/// Whether `text` shows `handle`: anywhere for a long handle, as a whole
/// token for a short one.
fn holds(text: &str, handle: &str) -> bool {
    if handle.len() >= SHORT {
        return text.contains(handle);
    }
    let token = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '-' || c == '_');
    text.match_indices(handle).any(|(at, _)| {
        !token(text[..at].chars().next_back()) && !token(text[at + handle.len()..].chars().next())
    })
}

#[cfg(test)]
mod tests {
    use super::holds;

    #[test]
    fn a_short_handle_counts_only_as_a_whole_token() {
        assert!(!holds("the weather is hot", "h"));
        assert!(!holds("h-2 and h_2 and 2h", "h"));
        assert!(holds("resuming with h.", "h"));
        assert!(holds("handle=h", "h"));
        assert!(holds("h", "h"));
        assert!(holds("\"ab\"", "ab"));
        assert!(!holds("cab", "ab"));
    }

    #[test]
    fn a_long_handle_counts_anywhere() {
        assert!(holds("xxhandle-0001yy", "handle-0001"));
        assert!(holds("handle-0001", "handle-0001"));
        assert!(!holds("handle-0002", "handle-0001"));
    }
}
